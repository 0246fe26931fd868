"""The faults section's pure parts (tools/e2e/day2_faults.py): what it changes in the stack,
how it reads the CLI's output, the state and Helm's records, and what "converged" means.
The section itself runs on the real engine (``python -m tools.e2e day2 --section faults``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infra.config import validate_platform_config
from tests.harness import stack_config
from tools.e2e import day2_faults as faults
from tools.e2e.pulumi_cli import PulumiCli, kill_session, session_members
from tools.e2e.report import StepFailedError

URN = "urn:pulumi:dev::ai-platform::aiplatform:tenancy:TeamNamespace$kubernetes:core/v1:"


def _document() -> dict[str, Any]:
    return {"config": {f"ai-platform:{k}": v for k, v in stack_config("dev").items()}}


def _platform(document: dict[str, Any]) -> dict[str, Any]:
    return {k.removeprefix("ai-platform:"): v for k, v in document["config"].items()}


def test_the_added_teams_are_a_valid_change_of_the_stack() -> None:
    document = faults.with_teams(_document(), faults.fault_teams("fault-api"))
    names = [t["name"] for t in document["config"]["ai-platform:teams"]]
    assert names[-3:] == ["fault-api-1", "fault-api-2", "fault-api-3"]
    validate_platform_config(_platform(document), "Pulumi.dev.yaml")
    changed = faults.with_team_changes(
        document, ["fault-api-2"], {"priorityClasses": ["normal"], "env": {"A": "b"}}
    )
    validate_platform_config(_platform(changed), "Pulumi.dev.yaml")
    assert "priorityClasses" not in document["config"]["ai-platform:teams"][-2]  # a copy


def test_each_added_team_has_its_own_admin_group() -> None:
    groups = [g for team in faults.fault_teams("x", 4) for g in team["adminGroups"]]
    assert len(groups) == len(set(groups)) == 4


def test_loki_retention_moves_by_whole_days() -> None:
    document = _document()
    days = faults.retention_days(document)
    longer = faults.with_loki_retention_days(document, days + 1)
    assert faults.retention_days(longer) == days + 1
    validate_platform_config(_platform(longer), "Pulumi.dev.yaml")
    with pytest.raises(ValueError):
        faults.retention_days(
            {"config": {"ai-platform:monitoring": {"loki": {"retention": "72h"}}}}
        )


@pytest.mark.parametrize(
    ("line", "applying", "applied", "release"),
    [
        (" +  kubernetes:core/v1:Namespace fault-1-namespace creating (0s) ", True, False, None),
        (" +  kubernetes:core/v1:Namespace fault-1-namespace created (0.27s) ", False, True, None),
        (
            " ~  kubernetes:helm.sh/v3:Release monitoring-fluent-bit updating (0s) [diff: ~values]",
            True,
            False,
            "monitoring-fluent-bit",
        ),
        (" +  aiplatform:tenancy:TeamNamespace fault-1 creating (0s) ", False, False, None),
        ("@ updating....", False, False, None),
        ("    error: update failed", False, False, None),
    ],
)
def test_step_lines_of_the_cli(
    line: str, applying: bool, applied: bool, release: str | None
) -> None:
    assert bool(faults.APPLYING.search(line)) is applying
    assert bool(faults.APPLIED.search(line)) is applied
    match = faults.RELEASE_UPDATING.search(line)
    assert (match[1] if match else None) == release


def test_the_lock_holder_is_read_from_the_cli_message() -> None:
    message = (
        "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es)"
        " to end or delete the lock file with `pulumi cancel`.\n  file:///w/state/.pulumi/locks/"
        "organization/ai-platform/dev/5c7a.json?no_tmp_dir=true: created by root@vm (pid 4726) "
        "at 2026-12-01T17:59:04Z"
    )
    assert faults.lock_holder(message) == ("vm", 4726)
    assert faults.lock_holder("error: update failed") is None


def _secret(namespace: str, release: str, version: int, status: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": namespace,
            "name": f"sh.helm.release.v1.{release}.v{version}",
            "labels": {
                "owner": "helm",
                "name": release,
                "version": str(version),
                "status": status,
            },
        }
    }


def test_helm_records_left_mid_operation_are_found_and_counted() -> None:
    listing = {
        "items": [
            _secret("logging", "fluent-bit", 5, "pending-upgrade"),
            _secret("logging", "fluent-bit", 4, "deployed"),
            _secret("logging", "loki", 1, "deployed"),
            _secret("monitoring", "kps", 1, "superseded"),
            _secret("monitoring", "kps", 2, "failed"),
            {"metadata": {"namespace": "x", "name": "other", "labels": {"owner": "someone"}}},
        ]
    }
    revisions = faults.helm_revisions(listing)
    assert [r.describe() for r in revisions if r.pending] == [
        "logging/fluent-bit revision 5 (pending-upgrade)"
    ]
    assert [r.version for r in revisions if r.release == "fluent-bit"] == [4, 5]
    problems = faults.helm_problems(
        revisions, [("logging", "fluent-bit"), ("logging", "loki"), ("monitoring", "kps")]
    )
    assert problems == [
        "logging/fluent-bit revision 5 (pending-upgrade): left mid-operation",
        "monitoring/kps: 0 deployed revisions, not 1",
    ]


def _export(resources: list[dict[str, Any]], pending: list[dict[str, Any]]) -> dict[str, Any]:
    return {"deployment": {"resources": resources, "pending_operations": pending}}


def _pending(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "type": "creating",
        "resource": {
            "urn": f"{URN}{kind}::{name}",
            "inputs": {"apiVersion": "v1", "kind": kind, "metadata": meta},
        },
    }


def test_pending_creates_are_imported_when_they_exist_and_cleared_otherwise() -> None:
    export = _export(
        [],
        [
            _pending("Namespace", "fault-cli-1"),
            _pending("ConfigMap", "team-env", "fault-cli-1"),
            {"type": "updating", "resource": {"urn": "urn:x", "inputs": {}}},
        ],
    )
    operations = faults.pending_operations(export)
    assert [op.object_id for op in operations] == ["fault-cli-1", "fault-cli-1/team-env", ""]
    namespace_urn = f"{URN}Namespace::fault-cli-1"
    assert faults.refresh_pending_args(operations, {namespace_urn}) == [
        "--import-pending-creates",
        namespace_urn,
        "--import-pending-creates",
        "fault-cli-1",
        "--clear-pending-creates",
    ]
    everything = {op.urn for op in operations}
    assert "--clear-pending-creates" not in faults.refresh_pending_args(operations, everything)
    assert faults.refresh_pending_args(operations[2:], set()) == []


def _report(*urns: str) -> dict[str, Any]:
    return {"resources": [{"urn": urn, "type": urn.split("::")[2]} for urn in urns]}


def test_the_state_must_hold_each_declared_resource_once_and_nothing_pending() -> None:
    a, b = "urn:pulumi:dev::p::kubernetes:core/v1:Namespace::a", "urn:pulumi:dev::p::x:y:Z::b"
    engine = [
        {"urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "type": "pulumi:pulumi:Stack"},
        {
            "urn": "urn:pulumi:dev::p::pulumi:providers:random::default_4_19_1",
            "type": "pulumi:providers:random",
        },
        {
            "urn": "urn:pulumi:dev::p::pulumi:providers:kubernetes::default",
            "type": "pulumi:providers:kubernetes",
        },
    ]
    good = _export([*engine, {"urn": a, "type": "t"}, {"urn": b, "type": "t"}], [])
    assert faults.state_problems(good, _report(a, b)) == []
    bad = _export([{"urn": a, "type": "t"}, {"urn": a, "type": "t"}], [_pending("Namespace", "n")])
    assert faults.state_problems(bad, _report(a, b)) == [
        "pending operation: creating Namespace n",
        f"in the state twice: {a}",
        f"declared, not in the state: {b}",
    ]
    assert faults.state_problems(good, _report(a)) == [f"in the state, not declared: {b}"]


def _object(
    name: str, namespace: str = "", labels: dict[str, str] | None = None, owned: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    if owned:
        meta["ownerReferences"] = [{"kind": "Deployment", "name": "x"}]
    return {"metadata": meta}


def test_an_object_with_the_platforms_labels_that_nothing_declares_is_reported() -> None:
    platform = {
        "app.kubernetes.io/managed-by": "pulumi",
        "app.kubernetes.io/part-of": "ai-platform",
    }
    items = [
        _object("team-env", "research", platform),
        _object("team-env-copy", "research", platform),
        _object("chart-made", "research", {"app.kubernetes.io/managed-by": "Helm"}),
        _object("replica", "research", platform, owned=True),
    ]
    assert faults.undeclared_objects(items, {("research", "team-env")}, "ConfigMap") == [
        "ConfigMap research/team-env-copy: not declared by the stack"
    ]


def test_missing_drift_names_the_edits_the_refresh_did_not_show() -> None:
    shown = [
        "urn:sts: spec.replicas (update)",
        'urn:cm: metadata.labels["aiplatform.io/team"] (update)',
        "urn:np: (whole resource) (delete)",
    ]
    expected = {
        "urn:sts": "spec.replicas",
        "urn:cm": 'metadata.labels["aiplatform.io/team"]',
        "urn:np": "(deleted)",
    }
    assert faults.missing_drift(shown, expected) == []
    assert faults.missing_drift(shown[:1], expected) == [
        'urn:cm: metadata.labels["aiplatform.io/team"]',
        "urn:np: (deleted)",
    ]


def test_the_out_of_band_targets_come_from_what_the_stack_declares() -> None:
    report = _dev_report()
    targets = faults.OutOfBand.choose(report)
    assert targets.statefulset_replicas >= 1
    assert targets.deployment.startswith("search-serving/")
    verbs = [command[0] for command in targets.commands()]
    assert verbs == ["scale", "scale", "label", "delete"]
    assert targets.scale_to_zero()[-1] == "--replicas=0"
    assert targets.statefulset_selector  # its pods are found by the declared selector
    delete = targets.delete_pods()
    assert delete[:2] == ["delete", "pods"]
    assert delete[delete.index("-l") + 1] == targets.selector
    assert delete[delete.index("-n") + 1] == targets.statefulset.split("/")[0]
    assert targets.statefulset_urn.endswith(f"::{targets.statefulset_name}")
    assert set(targets.expected_drift()) == {
        targets.statefulset_urn,
        targets.config_map_urn,
        targets.network_policy_urn,
    }


def test_a_pod_left_behind_says_what_holds_it() -> None:
    pod: dict[str, dict[str, Any]] = {
        "metadata": {"name": "redis-0", "finalizers": ["kueue.x-k8s.io/managed"]},
        "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]},
        "status": {"phase": "Pending"},
    }
    assert faults.pod_state(pod) == (
        "redis-0 Pending node=- gates=kueue.x-k8s.io/admission finalizers=kueue.x-k8s.io/managed"
    )
    pod["metadata"]["deletionTimestamp"] = "2026-12-01T22:00:00Z"
    assert faults.pod_state(pod).endswith("deleting since 2026-12-01T22:00:00Z")


def _dev_report() -> dict[str, Any]:
    """The offline report of dev, as tools.preview writes it (its resources and inputs)."""
    from tests.harness import run_stack

    run = run_stack("dev")
    return {
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "custom": r.custom,
                "inputs": r.inputs,
                "options": r.options,
            }
            for r in run.resources
        ]
    }


def test_the_releases_of_a_report_and_the_loki_release() -> None:
    report = _dev_report()
    releases = faults.declared_releases(report)
    assert ("logging", "loki") in releases
    assert faults._release_resource(report, "loki") == "monitoring-loki"


def test_the_refusing_chart_refuses_what_the_platform_renders(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    pinned = tmp_path / "pinned"
    (pinned / "templates").mkdir(parents=True)
    (pinned / "Chart.yaml").write_text("name: loki\nversion: 6.55.0\n")
    (pinned / "values.schema.json").write_text(
        '{"properties": {"loki": {"type": "object", "properties": {"rulerConfig": {}}}}}'
    )
    target = tmp_path / "rebuilt"
    faults.build_refusing_chart(pinned, target)
    assert (target / "Chart.yaml").resolve() == (pinned / "Chart.yaml").resolve()
    assert (target / "templates").resolve() == (pinned / "templates").resolve()
    schema = json.loads((target / "values.schema.json").read_text())
    assert "rulerConfig" in schema["properties"]["loki"]["properties"]
    validator = jsonschema.Draft7Validator(schema)
    assert not list(validator.iter_errors({"loki": {"limits_config": {"retention_period": "3d"}}}))
    errors = list(validator.iter_errors({"loki": {"limits_config": {"retention_period": "72h"}}}))
    assert [list(e.path) for e in errors] == [["loki", "limits_config", "retention_period"]]


def test_wait_for_returns_the_first_result_and_fails_with_the_last_reason() -> None:
    answers = iter([(None, "not yet"), (None, "still not"), (3, "")])
    assert faults.wait_for("a thing", lambda: next(answers), 5, poll_s=0) == 3
    with pytest.raises(StepFailedError) as err:
        faults.wait_for("another thing", lambda: (None, "never"), 0.05, poll_s=0.01)
    assert "another thing: not within 0 s (never)" in str(err.value)


# --- the CLI in the background, and its session (real processes, no Pulumi) ----------------


def _fake_cli(tmp_path: Path) -> PulumiCli:
    """A PulumiCli whose ``pulumi`` is a script: it prints step lines, starts a "plugin" in a
    process group of its own (as the CLI does), and waits."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, subprocess, sys, time\n"
        "print(' +  kubernetes:core/v1:Namespace a creating (0s) ', flush=True)\n"
        f"subprocess.Popen([{sys.executable!r}, '-c', 'import time; time.sleep(60)'],"
        " process_group=0)\n"
        "print(' +  kubernetes:core/v1:Namespace a created (0.1s) ', flush=True)\n"
        "time.sleep(60)\n"
    )
    script.chmod(0o755)
    cli = PulumiCli(bin_dir, tmp_path / "work")
    cli.path_dir.mkdir(parents=True)
    (cli.path_dir / "pulumi").symlink_to(script)
    return cli


def test_a_background_call_is_timed_on_its_output_and_killed_with_its_plugins(
    tmp_path: Path,
) -> None:
    cli = _fake_cli(tmp_path)
    with cli.start(["up"], cwd=tmp_path) as up:
        line = up.wait_for_line(lambda text: bool(faults.APPLIED.search(text)), 30)
        assert line is not None and "created" in line
        deadline = time.monotonic() + 10
        while len(session_members(up.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        members = session_members(up.pid)
        assert len(members) == 2, "the CLI and its plugin, in a group of its own"
        killed = up.kill(signal.SIGKILL)
        assert sorted(killed) == sorted(members)
        done = up.wait(10)
        assert done.code == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while session_members(up.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(up.pid) == []
    assert "[exit -9]" in up.log.read_text()


def test_leaving_the_block_stops_a_call_that_still_runs(tmp_path: Path) -> None:
    cli = _fake_cli(tmp_path)
    with cli.start(["up"], cwd=tmp_path) as up:
        assert up.wait_for_line(lambda text: "creating" in text, 30)
    deadline = time.monotonic() + 10
    while session_members(up.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(up.pid) == []
    assert up.process.poll() is not None


def test_kill_session_signals_every_member() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "import subprocess,sys,time; subprocess.Popen([sys.executable,"
         "'-c','import time; time.sleep(60)'], process_group=0); time.sleep(60)"],
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while len(session_members(process.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(kill_session(process.pid)) == 2
        process.wait(10)
        deadline = time.monotonic() + 10
        while session_members(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert session_members(process.pid) == []
    finally:
        kill_session(process.pid)
        process.wait(10)
