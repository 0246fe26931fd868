"""``make preview``: manifests, report.json, exit codes 0 / 1 / 2, any stack file."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from tests.harness import ROOT
from tools import preview
from tools.policy_driver import PolicyPackProcess
from tools.schema_validation import FieldError, ManifestValidator


def _project(tmp_path: Path, stack: str, document: object | str) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    text = document if isinstance(document, str) else yaml.safe_dump(document)
    (root / f"Pulumi.{stack}.yaml").write_text(text)
    return root


def _preview(root: Path, stack: str, out: Path, *extra: str) -> int:
    return preview.main(
        ["--stack", stack, "--project-root", str(root), "--out", str(out), "--quiet", *extra]
    )


def test_dev_preview_writes_manifests_and_report(tmp_path, capsys):
    assert _preview(ROOT, "dev", tmp_path, "--no-policies") == 0
    report = json.loads((tmp_path / "dev" / "report.json").read_text())
    assert report["stackFile"] == "Pulumi.dev.yaml"
    assert report["schema"]["byStatus"] == {
        "valid": len(list((tmp_path / "dev" / "manifests").glob("*.yaml"))),
        "invalid": 0,
        "no-schema": 0,
    }
    namespace = next(r for r in report["resources"] if r["name"] == "research-namespace")
    assert namespace["type"] == "kubernetes:core/v1:Namespace"
    assert namespace["manifest"] == "Namespace_research.yaml"
    assert namespace["parent"].endswith("aiplatform:tenancy:TeamNamespace::research")
    assert set(namespace["options"]) >= {"protect", "retainOnDelete", "dependsOn", "provider"}
    assert set(report["timings"]) == {"config", "program", "render", "schema"}
    manifest = yaml.safe_load(
        (tmp_path / "dev" / "manifests" / "ResourceQuota_research_team-quota.yaml").read_text()
    )
    assert list(manifest)[:3] == ["apiVersion", "kind", "metadata"]
    assert "schema validation (Kubernetes 1.33.0, strict)" in capsys.readouterr().out


def test_any_stack_file_can_be_previewed_before_the_stack_exists(tmp_path):
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["ai-platform:cluster"]["name"] = "staging"
    document["config"]["ai-platform:cluster"]["environment"] = "staging"
    root = _project(tmp_path, "staging", document)
    assert _preview(root, "staging", tmp_path / "out", "--no-policies") == 0
    report = json.loads((tmp_path / "out" / "staging" / "report.json").read_text())
    assert report["outputs"]["environment"] == "staging"


def test_invalid_yaml_is_a_config_error(tmp_path, capsys):
    root = _project(tmp_path, "broken", "config:\n  ai-platform:cluster: [unclosed\n")
    assert _preview(root, "broken", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "Pulumi.broken.yaml: ai-platform:: not valid YAML (line 3, column 1)" in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_config_errors_exit_2_before_anything_is_rendered(tmp_path, capsys):
    document = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    document["config"]["ai-platform:teams"][2]["quota"]["gpus"] = -1
    document["config"]["ai-platform:teamz"] = []
    root = _project(tmp_path, "prod", document)
    assert _preview(root, "prod", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "  Pulumi.prod.yaml: ai-platform:teams[platform].quota.gpus: must be >= 0, got -1" in err
    assert "  Pulumi.prod.yaml: ai-platform:teamz: unknown key; did you mean 'teams'?" in err
    assert not (tmp_path / "out").exists()


def test_unsupported_kubernetes_version_names_the_key(tmp_path, capsys):
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["ai-platform:cluster"]["kubernetesVersion"] = "1.19"
    root = _project(tmp_path, "old", document)
    assert _preview(root, "old", tmp_path / "out") == 2
    assert "Pulumi.old.yaml: ai-platform:cluster.kubernetesVersion: " in capsys.readouterr().err


def test_schema_errors_exit_1(tmp_path, monkeypatch, capsys):
    original = ManifestValidator.validate

    def break_quotas(self, manifest):
        result = original(self, manifest)
        if manifest.get("kind") == "ResourceQuota":
            return dataclasses.replace(
                result,
                status="invalid",
                errors=(FieldError("spec.hard", "made invalid by the test"),),
            )
        return result

    monkeypatch.setattr(ManifestValidator, "validate", break_quotas)
    assert _preview(ROOT, "dev", tmp_path, "--no-policies") == 1
    assert "spec.hard: made invalid by the test" in capsys.readouterr().out


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_checked_in_stacks_preview_clean(stack, tmp_path):
    assert _preview(ROOT, stack, tmp_path, "--no-policies") == 0


def test_an_unsupported_kubernetes_version_comes_with_the_config_errors(tmp_path, capsys):
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["ai-platform:cluster"]["kubernetesVersion"] = "1.19"
    document["config"]["ai-platform:teams"][0]["quota"]["gpus"] = -1
    root = _project(tmp_path, "old", document)
    assert _preview(root, "old", tmp_path / "out") == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "2 stack config errors:"
    assert (
        lines[1]
        == "  Pulumi.old.yaml: ai-platform:teams[research].quota.gpus: must be >= 0, got -1"
    )
    assert lines[2].startswith("  Pulumi.old.yaml: ai-platform:cluster.kubernetesVersion: ")


@dataclasses.dataclass
class Launches:
    order: list[str] = dataclasses.field(default_factory=list)  # "launch" and "program"
    packs: list[PolicyPackProcess] = dataclasses.field(default_factory=list)


@pytest.fixture
def pack_launches(monkeypatch) -> Launches:
    """Every policy pack process the preview starts, in order with the program's run."""
    seen = Launches()
    launch, run_program = PolicyPackProcess.launch, preview.run_stack_program

    def recorded_launch(self: PolicyPackProcess) -> None:
        if self.pid is None:
            seen.order.append("launch")
            seen.packs.append(self)
        launch(self)

    def recorded_program(*args, **kwargs):
        seen.order.append("program")
        return run_program(*args, **kwargs)

    monkeypatch.setattr(PolicyPackProcess, "launch", recorded_launch)
    monkeypatch.setattr(preview, "run_stack_program", recorded_program)
    return seen


def test_the_policy_pack_is_launched_once_before_the_program_and_ends_with_the_preview(
    tmp_path, pack_launches
):
    assert _preview(ROOT, "dev", tmp_path) == 0
    assert pack_launches.order == ["launch", "program"]
    report = json.loads((tmp_path / "dev" / "report.json").read_text())
    assert report["policy"]["resourcesAnalyzed"] == len(report["resources"])
    assert pack_launches.packs[0].returncode is not None


def test_a_program_that_fails_leaves_no_policy_pack_running(tmp_path, pack_launches, monkeypatch):
    def failing(*args, **kwargs):
        raise RuntimeError("the program failed")

    monkeypatch.setattr(preview, "run_stack_program", failing)
    with pytest.raises(RuntimeError, match="the program failed"):
        _preview(ROOT, "dev", tmp_path)
    assert pack_launches.order == ["launch"]
    assert pack_launches.packs[0].returncode is not None


def test_the_policy_step_runs_beside_render_and_schema_and_its_line_comes_last(
    tmp_path, monkeypatch, capsys
):
    """Rendering starts only once the policy step has begun, on a thread of its own: run one
    after the other, the render would wait here in vain. The progress lines stay whole and in
    order, the policy step's last."""
    policy_begun = threading.Event()
    run_policies, write_manifests = preview.run_policies, preview.write_manifests

    def recorded_policies(*args, **kwargs):
        policy_begun.set()
        return run_policies(*args, **kwargs)

    def render_once_the_policy_step_runs(*args, **kwargs):
        assert policy_begun.wait(timeout=60), "the policy step did not start beside rendering"
        return write_manifests(*args, **kwargs)

    monkeypatch.setattr(preview, "run_policies", recorded_policies)
    monkeypatch.setattr(preview, "write_manifests", render_once_the_policy_step_runs)
    argv = ["--stack", "dev", "--project-root", str(ROOT), "--out", str(tmp_path)]
    assert preview.main(argv) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == [f"[{n}/5" for n in range(1, 6)]
    assert all(re.fullmatch(r"\[\d/5\] .+ \.\.\. \d+\.\d\ds", line) for line in lines)
    assert lines[-1].startswith("[5/5] policy pack over the analyzer protocol")
    report = json.loads((tmp_path / "dev" / "report.json").read_text())
    assert set(report["timings"]) == {"config", "program", "render", "schema", "policy"}


def test_a_render_that_fails_waits_for_the_policy_step_and_leaves_no_pack_running(
    tmp_path, pack_launches, monkeypatch
):
    def failing(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(preview, "write_manifests", failing)
    with pytest.raises(RuntimeError, match="rendering failed"):
        _preview(ROOT, "dev", tmp_path)
    assert not [t for t in threading.enumerate() if t.name.startswith("step-policy")]
    assert pack_launches.packs[0].returncode is not None


@pytest.mark.parametrize(
    ("stack", "breaks", "code", "line"),
    [
        ("dev", False, 0, "manifests and report.json in "),
        ("dev", True, 2, "  Pulumi.dev.yaml: ai-platform:teams[research].quota.gpus: must be >= 0"),
    ],
)
def test_the_command_ends_with_its_exit_code_and_all_its_output_piped(
    tmp_path, stack, breaks, code, line
):
    # The command leaves without the interpreter's teardown: what it printed must still arrive.
    root = ROOT
    if breaks:
        document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
        document["config"]["ai-platform:teams"][0]["quota"]["gpus"] = -1
        root = _project(tmp_path, stack, document)
    command = ["-m", "tools.preview", "--stack", stack, "--project-root", str(root)]
    done = subprocess.run(
        [sys.executable, *command, "--out", str(tmp_path / "out"), "--no-policies"],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},  # buffered, as piped
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == code, done.stderr
    output = done.stdout if code == 0 else done.stderr
    assert output.endswith("\n") and any(x.startswith(line) for x in output.splitlines())
    if code == 0:  # the summary's last line, last out of the buffer
        assert output.splitlines()[-1].startswith(line)
