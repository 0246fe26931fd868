"""The tenant guardrails on a real kube-apiserver (the local cluster: v1.33, KWOK nodes).

For dev and prod: the offline preview's manifests of what the guardrails need (namespaces with
their annotations, PriorityClasses, team RBAC and quotas, the policies and their bindings) are
applied to a fresh local cluster, with the Prometheus operator's CRDs for monitors and rules.
Then ``tools.e2e.guardrails.check_guardrails`` submits, as a member of each team's admin group,
every forbidden request (each must be refused with its message) and every allowed one (each must
pass), and the platform's own workloads must pass too.

Needs the binaries ``python -m tools.e2e build kubernetes etcd kwok`` makes; without them every
test here is skipped, saying so. Each cluster is stopped when its tests end.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.constants import KUEUE_QUEUE_LABEL, TENANT_PRIORITY_CLASSES_ANNOTATION
from components.guardrails import SHAPES, policy_name, rule
from tools import preview
from tools.e2e import cluster as clusters
from tools.e2e.cluster import LocalCluster, shared_dir
from tools.e2e.guardrails import Team, cases, check_guardrails, submit, teams

BINARIES, MISSING = clusters.find_binaries()
needs_binaries = pytest.mark.skipif(
    bool(MISSING),
    reason=f"not built: {', '.join(MISSING)} (python -m tools.e2e build kubernetes etcd kwok)",
)
pytestmark = [pytest.mark.real, needs_binaries]

GUARDED_KINDS = (
    "Namespace",
    "PriorityClass",
    "Role",
    "RoleBinding",
    "ResourceQuota",
    "LimitRange",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
)
"""What the checks need on the cluster: what ``pulumi up`` creates for the guardrails."""
WORKLOAD_KINDS = ("Job", "CronJob", "Deployment", "StatefulSet", "DaemonSet", "Pod")
MONITOR_CRDS = ("servicemonitors", "podmonitors", "prometheusrules")
READY_S = 60.0


def offline_report(stack: str, out: Path) -> dict[str, Any]:
    """``make preview STACK=<stack>`` without the policy pack: its report.json."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = preview.main(["--stack", stack, "--out", str(out), "--quiet", "--no-policies"])
    assert code == 0, f"the offline preview of {stack} failed"
    return dict(json.loads((out / stack / "report.json").read_text(encoding="utf-8")))


def manifests(report: dict[str, Any], kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    found = [
        r["inputs"]
        for r in report["resources"]
        if r.get("custom") and (r.get("inputs") or {}).get("kind") in kinds
    ]
    return sorted(found, key=lambda m: kinds.index(m["kind"]))


def _refused_by_policy(cluster: LocalCluster, team: Team) -> bool:
    (probe,) = [c for c in cases(team, [], []) if c.name == "node-name"]
    accepted, said = submit(cluster, team, probe.manifest)
    return not accepted and "ValidatingAdmissionPolicy" in said


@pytest.fixture(scope="module", params=["dev", "prod"])
def guarded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalCluster, dict[str, Any]]]:
    stack: str = request.param
    work = tmp_path_factory.mktemp(f"guardrails-{stack}")
    report = offline_report(stack, work / "offline")
    cluster = LocalCluster(stack, work_dir=work / "cluster", log=lambda _: None)
    with cluster.running():
        # What kube-prometheus-stack brings: the kinds a team's monitors and rules are.
        crds = shared_dir() / "crds" / "monitoring.coreos.com"
        for kind in MONITOR_CRDS:
            cluster.kubectl("apply", "--server-side", "-f", str(crds / f"crd-{kind}.yaml"))
        established = (f"crd/{kind}.monitoring.coreos.com" for kind in MONITOR_CRDS)
        cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", *established)
        cluster.kubectl(
            "apply", "-f", "-", input=yaml.safe_dump_all(manifests(report, GUARDED_KINDS))
        )
        first = teams(report)[0]
        deadline = time.monotonic() + READY_S
        while not _refused_by_policy(cluster, first):  # the policies compile asynchronously
            assert time.monotonic() < deadline, "the guardrails never started refusing"
            time.sleep(0.5)
        yield cluster, report


def test_every_guardrail_holds_for_every_team(guarded) -> None:
    cluster, report = guarded
    problems, facts = check_guardrails(cluster, report)
    assert not problems, "\n".join(problems)
    assert len(facts) == len(teams(report)) >= 3, facts  # no "monitor guardrails not met"


def test_the_platforms_own_workloads_pass_them(guarded) -> None:
    """The platform's Jobs, Deployments and StatefulSets in team namespaces, as rendered: each is
    accepted (a server-side dry run as cluster admin; the guardrails bind every requester)."""
    cluster, report = guarded
    workloads = manifests(report, WORKLOAD_KINDS)
    assert {m["kind"] for m in workloads} >= {"Job", "Deployment", "StatefulSet"}
    for manifest in workloads:
        done = cluster.kubectl(
            "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(manifest), check=False
        )
        assert done.returncode == 0, f"{manifest['kind']} {manifest['metadata']}: {done.stderr}"


def test_the_check_fails_where_the_guardrails_do_not_bind(guarded) -> None:
    """Not vacuous: the same requests sent into a namespace without the team label are
    accepted, and the check reports every forbidden one."""
    cluster, report = guarded
    cluster.kubectl("create", "namespace", "unguarded", check=False)

    def elsewhere(cluster_: Any, team: Team, manifest: dict[str, Any]) -> tuple[bool, str]:
        moved = {**manifest, "metadata": {**manifest["metadata"], "namespace": "unguarded"}}
        done = cluster_.kubectl(
            "create", "--dry-run=server", "-f", "-", input=yaml.safe_dump(moved), check=False
        )
        return done.returncode == 0, done.stderr

    problems, _ = check_guardrails(cluster, report, submit_as=elsewhere)
    assert any("accepted, but the guardrails forbid it" in p for p in problems), problems


def test_updates_are_judged_only_when_they_change_what_runs(guarded) -> None:
    """A Job created under the team's rules, then the rules narrowed: its metadata can still be
    touched (finalizers, annotations: controllers must never be blocked), its labels or pod
    template no longer can."""
    cluster, report = guarded
    team = next(t for t in teams(report) if len(t.priority_classes) > 1)
    chosen, others = team.priority_classes[0], team.priority_classes[1:]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "e2e-narrowed", "namespace": team.namespace},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "priorityClassName": chosen,
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        },
    }
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(job))
    annotation = f"{TENANT_PRIORITY_CLASSES_ANNOTATION}={','.join(others)}"
    try:
        cluster.kubectl("annotate", "namespace", team.namespace, annotation, "--overwrite")
        where = ("-n", team.namespace, "job/e2e-narrowed")
        cluster.kubectl("annotate", *where, "example.com/touched=yes")
        done = cluster.kubectl("label", *where, f"{KUEUE_QUEUE_LABEL}=x", check=False)
        assert done.returncode != 0
        message = rule("priority-class").message.text(
            **{"class": chosen, "namespace": team.namespace, "allowed": ", ".join(others)}
        )
        assert f"ValidatingAdmissionPolicy '{policy_name(SHAPES[1])}'" in done.stderr
        assert message in " ".join(done.stderr.split())
    finally:
        original = f"{TENANT_PRIORITY_CLASSES_ANNOTATION}={','.join(team.priority_classes)}"
        cluster.kubectl("annotate", "namespace", team.namespace, original, "--overwrite")
        cluster.kubectl("delete", "job", "-n", team.namespace, "e2e-narrowed", check=False)
