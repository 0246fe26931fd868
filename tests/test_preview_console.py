"""What ``make preview`` prints, against golden files: a clean stack, a stack with violations
(whole and ``--quiet``), a stack with several config errors. Each case is the dev stack with
the edits below, so the files show what a new engineer sees with the real stack.

The files change whenever the console or the rendered platform does. Review the diff, then
regenerate with ``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_preview_console.py``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import ROOT
from tools import preview

GOLDEN = Path(__file__).with_name("golden") / "preview"
Edit = Callable[[dict[str, Any]], None]


def _workload(config: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in config["ai-platform:workloads"] if w["name"] == name)
    return found


def clean(config: dict[str, Any]) -> None:
    """The checked-in dev stack as it is."""


def violations(config: dict[str, Any]) -> None:
    """A mandatory violation from an extra manifest, an advisory one from a workload."""
    _workload(config, "llama-eval")["logLevel"] = "debug"
    config["ai-platform:extraManifests"] = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "leads-are-cluster-admins", "namespace": "research"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {
                    "kind": "Group",
                    "name": "ml-research-leads",
                    "apiGroup": "rbac.authorization.k8s.io",
                }
            ],
        }
    ]


def config_errors(config: dict[str, Any]) -> None:
    """A typo'd key, a job over its team's quota and its pool, a missing storage class and a
    broken team entry that holds back the checks that need it."""
    _workload(config, "llm-chat")["inference"]["minReplica"] = 2
    finetune = _workload(config, "llama-finetune")
    finetune["training"]["nodes"] = 3
    config["ai-platform:teams"][0]["volumes"][1]["storageClass"] = "fast-ssd"
    config["ai-platform:teams"][2]["quota"]["gpus"] = -1


CASES: list[tuple[str, Edit, tuple[str, ...], int]] = [
    ("clean", clean, (), 0),
    ("violations", violations, (), 1),
    ("violations-quiet", violations, ("--quiet",), 1),
    ("config-errors", config_errors, (), 2),
]


def _console(tmp_path: Path, edit: Edit, flags: tuple[str, ...], capfd: Any) -> tuple[int, str]:
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    edit(document["config"])
    stack_file = tmp_path / "Pulumi.dev.yaml"
    stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
    out = tmp_path / "out"
    argv = ["--stack", "dev", "--stack-file", str(stack_file), "--out", str(out), *flags]
    code = preview.main(argv)
    captured = capfd.readouterr()
    # Progress lines carry timings; everything else is stable once the paths are replaced.
    progress = [line for line in captured.err.splitlines() if line.startswith("[")]
    errors = [line for line in captured.err.splitlines() if not line.startswith("[")]
    text = captured.out + "".join(f"{line}\n" for line in errors)
    if "--quiet" not in flags and code != 2:
        assert progress, "progress lines go to stderr"
    return code, text.replace(str(out), "<out>")


@pytest.mark.parametrize(("name", "edit", "flags", "code"), CASES, ids=[c[0] for c in CASES])
def test_console_output(
    name: str, edit: Edit, flags: tuple[str, ...], code: int, tmp_path: Path, capfd: Any
) -> None:
    got_code, text = _console(tmp_path, edit, flags, capfd)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert got_code == code
    assert "Traceback" not in text
    assert text == golden.read_text(), (
        f"{golden.name} is stale: review the diff, then regenerate with UPDATE_GOLDEN=1 "
        ".venv/bin/python -m pytest tests/test_preview_console.py"
    )
