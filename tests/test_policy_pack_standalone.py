"""The policy pack is its folder alone: copied anywhere, with only its requirements installed, it
runs as ``pulumi preview --policy-pack <copy>`` runs it, and finds what the checkout's pack finds.

The values it shares with the platform are generated into ``aiplatform_policies/shared.py``, and
the quantity parser copied into ``aiplatform_policies/quantity_core.py``
(tools/gen_policy_constants.py); the copies must be current.
"""

from __future__ import annotations

import ast
import copy
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import venv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi_policy
import pytest

from tests.harness import ROOT
from tools.e2e.run import bad_manifest, policy_pack_copy
from tools.gen_policy_constants import GENERATED, OUTPUT, QUANTITY_OUTPUT
from tools.mockrun import MockRun
from tools.policy_driver import run_policy_pack

PACK = ROOT / "policies"
RUNTIME_IMPORTS = {"aiplatform_policies", "pulumi", "pulumi_policy", "grpc", "google", "yaml"}
"""What the pack's own code may import besides the standard library: itself and what
requirements.txt installs (PyYAML and protobuf come with pulumi)."""
PLATFORM = {"infra", "components", "tools", "bench", "tests"}


def test_the_project_installs_the_pulumi_policy_the_pack_pins() -> None:
    pack = re.findall(r"^pulumi-policy==\S+$", (PACK / "requirements.txt").read_text(), re.M)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert pack == [d for d in extras["preview"] if d.startswith("pulumi-policy")]


@pytest.mark.parametrize(
    ("output", "rendering"), GENERATED, ids=lambda item: getattr(item, "name", "")
)
def test_the_shared_values_are_current(output: Path, rendering: Callable[[], str]) -> None:
    assert output.read_text(encoding="utf-8") == rendering(), "stale: run `make schema`"


def test_the_pack_parses_quantities_with_the_platforms_parser() -> None:
    platform = (ROOT / "infra" / "config" / "quantity_core.py").read_text(encoding="utf-8")
    assert QUANTITY_OUTPUT.read_text(encoding="utf-8").endswith(platform)
    assert OUTPUT.parent == QUANTITY_OUTPUT.parent == PACK / "aiplatform_policies"


def _imports(path: Path) -> set[str]:
    """The top-level modules a file imports by absolute name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.partition(".")[0])
    return names


def test_the_pack_imports_only_itself_and_its_requirements() -> None:
    runtime = [PACK / "__main__.py", *sorted((PACK / "aiplatform_policies").glob("*.py"))]
    allowed = RUNTIME_IMPORTS | set(sys.stdlib_module_names)
    outside = {str(p.relative_to(ROOT)): sorted(_imports(p) - allowed) for p in runtime}
    assert {path: names for path, names in outside.items() if names} == {}
    tests = sorted((PACK / "tests").glob("*.py"))
    assert {str(p.relative_to(ROOT)): sorted(_imports(p) & PLATFORM) for p in tests} == {
        str(p.relative_to(ROOT)): [] for p in tests
    }


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter that has the pack's requirements and nothing of this checkout: a fresh
    virtualenv that sees this one's installed distributions as a plain path (so the editable
    install of the platform, a .pth hook there, never runs)."""
    env = tmp_path_factory.mktemp("bare") / "venv"
    venv.create(env, with_pip=False, symlinks=True)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    installed = Path(pulumi_policy.__file__).resolve().parents[1]
    platlib = sysconfig.get_paths()["platlib"]
    Path(purelib, "requirements.pth").write_text(f"{installed}\n{platlib}\n", encoding="utf-8")
    return str(python)


def test_the_bare_interpreter_has_the_requirements_and_nothing_of_the_checkout(
    bare_python: str, tmp_path: Path
) -> None:
    probe = (
        "import importlib.util, sys\n"
        "print(sorted(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))\n"
    )
    modules = ["pulumi_policy", "grpc", *sorted(PLATFORM), "aiplatform_policies"]
    done = subprocess.run(
        [bare_python, "-c", probe, *modules],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == str(sorted([*PLATFORM, "aiplatform_policies"]))


def _bad_pod(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The e2e's bad manifest (a GPU pod without the equal limit) as a record beside ``records``,
    in the namespace of the first team ConfigMap, named as it would be."""
    like = copy.deepcopy(next(r for r in records if r["type"] == "kubernetes:core/v1:ConfigMap"))
    manifest = bad_manifest(like["inputs"]["metadata"]["namespace"])
    name = manifest["metadata"]["name"]
    parent_types = like["urn"].rpartition("::")[0].rpartition("$")[0]
    return like | {
        "urn": f"{parent_types}$kubernetes:core/v1:Pod::{name}",
        "type": "kubernetes:core/v1:Pod",
        "name": name,
        "inputs": manifest,
        "propertyDependencies": {},
    }


def test_a_copy_of_the_pack_runs_alone_and_finds_what_the_checkout_finds(
    dev_run: MockRun[Any], bare_python: str, tmp_path: Path
) -> None:
    copied = tmp_path / "elsewhere" / "ai-platform-policies"
    shutil.copytree(PACK, copied, ignore=shutil.ignore_patterns("__pycache__"))
    records = [r.to_record() for r in dev_run.resources]
    records.append(_bad_pod(records))

    def violations(pack: Path, python: str | None) -> list[dict[str, Any]]:
        result = run_policy_pack(
            pack, records, config_path=pack / "config" / "prod.json", python=python, processes=1
        )
        return sorted(
            (v.to_dict() for v in result.violations), key=lambda v: (v["policyName"], v["urn"])
        )

    alone = violations(copied, bare_python)
    assert alone == violations(PACK, None)
    bad = records[-1]["name"]
    found = {(v["policyName"], v["enforcementLevel"]) for v in alone if v["resourceName"] == bad}
    assert ("gpu-limits-match-requests", "mandatory") in found


def test_the_e2e_previews_with_a_copy_outside_the_checkout() -> None:
    with policy_pack_copy() as copied:
        assert not copied.resolve().is_relative_to(ROOT)
        assert (copied / "PulumiPolicy.yaml").is_file()
        assert (copied / "aiplatform_policies" / "shared.py").is_file()
    assert not copied.exists()
