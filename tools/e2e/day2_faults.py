"""``make e2e-day2``, section ``faults``: interrupted updates and out-of-band edits on the real
engine, each recovered the way docs/operations.md says, and proved converged.

    python -m tools.e2e day2 --stack dev --section faults

After a first ``pulumi up``, four faults, one step each:

1. kube-apiserver is killed (SIGKILL) while ``pulumi up`` applies a change that touches many
   objects (three more teams: their namespaces and everything in them, plus two Helm releases
   whose values list the teams), in the middle of a Helm upgrade; it is restarted with the same
   command and ports (:meth:`LocalCluster.restart`).
2. The Pulumi CLI and every plugin it started are SIGKILLed in the middle of ``up`` (three more
   teams), as a crash of the machine would; the stack is left locked, with pending creates.
3. Objects are edited out of band (a StatefulSet scaled, a Deployment scaled past its HPA, a
   label changed, a NetworkPolicy deleted): ``pulumi refresh`` must show each edit, and
   ``pulumi up`` must restore what the stack declares.
4. A Helm release whose values the chart refuses: ``pulumi up`` must fail naming the release and
   the chart's reason, and leave the rest of the stack as it was.

After 1 and 2 the recovery is the procedure of docs/operations.md ("Recovering from an
interrupted ``pulumi up``"), and "converged" means: ``pulumi up --expect-no-changes`` holds, the
state has every resource of the offline report once and no pending operation, every declared
object is on the API server as declared and no other object carries the platform's labels, and
every Helm release has exactly one deployed revision and none pending.
"""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from components.charts import LOKI
from components.constants import (
    APP_MANAGED_BY_LABEL,
    APP_PART_OF_LABEL,
    MANAGED_BY,
    PROJECT,
    TEAM_LABEL,
)

from .cluster import ClusterError, LocalCluster, process_alive
from .pulumi_cli import session_members
from .readback import check_objects, declared_objects
from .report import fail
from .run import E2E, drift
from .stack import PROJECT_ROOT

T = TypeVar("T")

UP_TIMEOUT_S = 1800.0
"""A ``pulumi up`` of the dev stack takes about a minute here; a Helm wait can take ten."""
HELM_PENDING_WAIT_S = 60.0
"""How long the apiserver fault waits for Helm to record the upgrade it is running."""
SETTLE_TIMEOUT_S = 300.0
"""After a restart: nodes Ready, pods Ready again (KWOK), Kueue serving its webhooks."""
PROCESSES_GONE_S = 30.0
HPA_TIMEOUT_S = 120.0
"""The HPA controller syncs every 15 s."""
POLL_S = 0.5
TEAMS_PER_FAULT = 3
FORCE_ANNOTATION = "pulumi.com/patchForce"

APPLYING = re.compile(
    r"^\s*[-+~]{1,2}\s+kubernetes:\S+\s+\S+\s+(creating|updating|deleting|replacing)\b"
)
"""A step line of ``pulumi up --non-interactive``: the CLI started changing an object."""
APPLIED = re.compile(r"^\s*[-+~]{1,2}\s+kubernetes:\S+\s+\S+\s+(created|updated|deleted)\b")
"""A step line: the CLI finished changing an object (others are then in flight)."""
RELEASE_UPDATING = re.compile(r"^\s*~\s+kubernetes:helm\.sh/v3:Release\s+(\S+)\s+updating\b")
"""A step line: the CLI started a Helm upgrade."""
LOCK_HOLDER = re.compile(r"created by (?P<user>[^@\s]+)@(?P<host>\S+) \(pid (?P<pid>\d+)\)")
"""How the file backend names the holder of a stack lock."""
HELM_PENDING = ("pending-install", "pending-upgrade", "pending-rollback")
KUEUE_RESIZE = "spec.replicas: Invalid value"
"""Kueue's StatefulSet webhook refusing a resize (it allows only to and from zero)."""
SCHEMA_REFUSED = "values don't meet the specifications of the schema"
"""Helm's words when a chart's values.schema.json refuses the values."""
REFUSED_RETENTION = {"type": "string", "pattern": "^[0-9]+d$"}
"""The stricter chart's rule for ``loki.limits_config.retention_period``: days only, where the
platform renders hours (``72h``)."""


# --- pure parts (tests/e2e/test_day2_faults.py) ------------------------------------------------


def fault_teams(prefix: str, count: int = TEAMS_PER_FAULT) -> list[dict[str, Any]]:
    """Teams a fault adds: each is a namespace with its quota, limits, roles, bindings, service
    account, ConfigMap, NetworkPolicies and default queue, and a tenant of Fluent Bit's and
    Alertmanager's values (two Helm upgrades). Each has its own admin group: a group shared
    between teams would be refused by ``rbac-no-cluster-admin``."""
    return [
        {
            "name": f"{prefix}-{index}",
            "purpose": "training",
            "description": "Added by the e2e faults section.",
            "adminGroups": [f"{prefix}-{index}-admins"],
            "quota": {"cpu": "4", "memory": "16Gi", "gpus": 0, "storage": "10Gi"},
        }
        for index in range(1, count + 1)
    ]


def with_teams(document: dict[str, Any], teams: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """A copy of the stack document with ``teams`` appended to ``ai-platform:teams``."""
    result = copy.deepcopy(document)
    result["config"].setdefault(f"{PROJECT}:teams", []).extend(copy.deepcopy(list(teams)))
    return result


def with_team_changes(
    document: dict[str, Any], names: Iterable[str], changes: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy of the stack document with ``changes`` merged into each named team."""
    result = copy.deepcopy(document)
    wanted = set(names)
    for team in result["config"][f"{PROJECT}:teams"]:
        if team["name"] in wanted:
            team.update(copy.deepcopy(dict(changes)))
    return result


def with_loki_retention_days(document: dict[str, Any], days: int) -> dict[str, Any]:
    """A copy of the stack document keeping Loki's logs ``days`` days."""
    result = copy.deepcopy(document)
    monitoring = result["config"].setdefault(f"{PROJECT}:monitoring", {})
    monitoring.setdefault("loki", {})["retention"] = f"{days}d"
    return result


def retention_days(document: dict[str, Any]) -> int:
    """Loki's retention in the stack document, in days (the config default is 7d)."""
    loki = (document["config"].get(f"{PROJECT}:monitoring") or {}).get("loki") or {}
    text = str(loki.get("retention", "7d"))
    if not text.endswith("d") or not text[:-1].isdigit():
        raise ValueError(f"Loki retention {text!r} is not in days")
    return int(text[:-1])


def refusing_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The chart's values.schema.json with one more rule: Loki's retention in days only, which
    refuses the hours the platform renders. Stands for a chart build in the mirror stricter than
    the pinned release the platform was tested with (an upgrade's new schema, a rebuilt chart)."""
    result = copy.deepcopy(dict(schema))
    loki = result.setdefault("properties", {}).setdefault("loki", {"type": "object"})
    limits = loki.setdefault("properties", {}).setdefault("limits_config", {"type": "object"})
    limits.setdefault("properties", {})["retention_period"] = dict(REFUSED_RETENTION)
    return result


@dataclass(frozen=True)
class HelmRevision:
    """One revision of a Helm release, as Helm stores it (a Secret per revision)."""

    namespace: str
    secret: str
    release: str
    version: int
    status: str

    @property
    def pending(self) -> bool:
        return self.status in HELM_PENDING

    def describe(self) -> str:
        return f"{self.namespace}/{self.release} revision {self.version} ({self.status})"


def helm_revisions(listing: Mapping[str, Any]) -> list[HelmRevision]:
    """The revisions in a ``kubectl get secrets -l owner=helm -o json`` listing."""
    revisions = []
    for item in listing.get("items", []):
        meta = item["metadata"]
        labels = meta.get("labels") or {}
        if labels.get("owner") != "helm" or "name" not in labels:
            continue
        revisions.append(
            HelmRevision(
                namespace=meta.get("namespace", ""),
                secret=meta["name"],
                release=labels["name"],
                version=int(labels.get("version", "0")),
                status=labels.get("status", ""),
            )
        )
    return sorted(revisions, key=lambda r: (r.namespace, r.release, r.version))


def declared_releases(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(namespace, release name)`` of every Helm release of an offline report."""
    releases = []
    for resource in report["resources"]:
        if resource["type"] == "kubernetes:helm.sh/v3:Release":
            inputs = resource.get("inputs") or {}
            releases.append((str(inputs.get("namespace", "")), str(inputs.get("name", ""))))
    return sorted(releases)


def helm_problems(
    revisions: Iterable[HelmRevision], releases: Iterable[tuple[str, str]]
) -> list[str]:
    """What is wrong with the releases: not exactly one deployed revision, or one pending."""
    revisions = list(revisions)
    problems = [f"{r.describe()}: left mid-operation" for r in revisions if r.pending]
    for namespace, name in releases:
        deployed = [
            r
            for r in revisions
            if (r.namespace, r.release) == (namespace, name) and r.status == "deployed"
        ]
        if len(deployed) != 1:
            problems.append(f"{namespace}/{name}: {len(deployed)} deployed revisions, not 1")
    return problems


@dataclass(frozen=True)
class PendingOperation:
    """One operation a ``pulumi up`` began and never finished, from ``pulumi stack export``."""

    type: str
    urn: str
    api_version: str
    kind: str
    namespace: str
    name: str

    @property
    def object_id(self) -> str:
        """The Kubernetes provider's ID of the object: ``namespace/name``, or ``name``."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def describe(self) -> str:
        return f"{self.type} {self.kind} {self.object_id}"


def pending_operations(export: Mapping[str, Any]) -> list[PendingOperation]:
    """The pending operations of a stack export, with the object each one is about."""
    found = []
    for op in export.get("deployment", {}).get("pending_operations") or []:
        resource = op.get("resource") or {}
        inputs = resource.get("inputs") or {}
        meta = inputs.get("metadata") or {}
        found.append(
            PendingOperation(
                type=str(op.get("type", "")),
                urn=str(resource.get("urn", "")),
                api_version=str(inputs.get("apiVersion", "")),
                kind=str(inputs.get("kind", "")),
                namespace=str(meta.get("namespace") or ""),
                name=str(meta.get("name") or ""),
            )
        )
    return found


def refresh_pending_args(
    operations: Iterable[PendingOperation], existing: Iterable[str]
) -> list[str]:
    """``pulumi refresh`` flags that resolve pending creates as Pulumi documents them: the
    CREATE succeeded (the object exists: ``--import-pending-creates <urn> <id>``) or failed
    (``--clear-pending-creates`` drops the rest). Other pending operations need no flag: a
    refresh clears them."""
    exists = set(existing)
    args: list[str] = []
    creates = [op for op in operations if op.type == "creating"]
    for op in creates:
        if op.urn in exists:
            args += ["--import-pending-creates", op.urn, "--import-pending-creates", op.object_id]
    if any(op.urn not in exists for op in creates):
        args.append("--clear-pending-creates")
    return args


def lock_holder(output: str) -> tuple[str, int] | None:
    """``(host, pid)`` of the process the CLI says holds the stack's lock, if it says so."""
    match = LOCK_HOLDER.search(output)
    return (match["host"], int(match["pid"])) if match else None


def state_problems(export: Mapping[str, Any], report: Mapping[str, Any]) -> list[str]:
    """What the state holds that the offline report does not, or twice, or not at all, and
    any pending operation. The root stack and default providers are the engine's own."""
    deployment = export.get("deployment", {})
    urns = [
        str(r["urn"])
        for r in deployment.get("resources") or []
        if not _engine_own(str(r.get("type", "")), str(r["urn"]))
    ]
    problems = [f"pending operation: {op.describe()}" for op in pending_operations(export)]
    seen: set[str] = set()
    for urn in urns:
        if urn in seen:
            problems.append(f"in the state twice: {urn}")
        seen.add(urn)
    declared = {str(r["urn"]) for r in report["resources"]}
    problems += [f"declared, not in the state: {urn}" for urn in sorted(declared - seen)]
    problems += [f"in the state, not declared: {urn}" for urn in sorted(seen - declared)]
    return problems


def _engine_own(resource_type: str, urn: str) -> bool:
    """The root stack, and default providers (``::default``, or ``::default_4_19_1`` when a
    package asks for a version)."""
    return resource_type == "pulumi:pulumi:Stack" or (
        resource_type.startswith("pulumi:providers:")
        and urn.rpartition("::")[2].startswith("default")
    )


def undeclared_objects(
    items: Iterable[Mapping[str, Any]], declared: set[tuple[str, str]], kind: str
) -> list[str]:
    """Objects of ``kind`` that carry the platform's labels and no owner, but that no resource
    declares (a duplicate an interrupted run left, under another name)."""
    extra = []
    for item in items:
        meta = item["metadata"]
        labels = meta.get("labels") or {}
        if labels.get(APP_MANAGED_BY_LABEL) != MANAGED_BY or labels.get(APP_PART_OF_LABEL) != (
            PROJECT
        ):
            continue
        if meta.get("ownerReferences"):
            continue
        key = (meta.get("namespace", ""), meta["name"])
        if key not in declared:
            extra.append(f"{kind} {'/'.join(p for p in key if p)}: not declared by the stack")
    return extra


def missing_drift(shown: Iterable[str], expected: Mapping[str, str]) -> list[str]:
    """The expected drift (URN -> path prefix, or ``(deleted)``) that the lines of a refresh
    preview (:func:`tools.e2e.run.drift`: ``<urn>: <path> (<op>)``) do not show."""
    lines = list(shown)
    missing = []
    for urn, path in expected.items():
        wanted = f"{urn}: (whole resource) (delete)" if path == "(deleted)" else f"{urn}: {path}"
        if not any(line.startswith(wanted) for line in lines):
            missing.append(f"{urn}: {path}")
    return missing


def pod_state(pod: Mapping[str, Any]) -> str:
    """What holds a pod back, in one line: phase, node, gates, finalizers, deletion."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    gates = [gate["name"] for gate in spec.get("schedulingGates") or []]
    parts = [
        str(meta.get("name")),
        str((pod.get("status") or {}).get("phase")),
        f"node={spec.get('nodeName') or '-'}",
        f"gates={','.join(gates) or '-'}",
        f"finalizers={','.join(meta.get('finalizers') or []) or '-'}",
        f"deleting since {meta['deletionTimestamp']}" if meta.get("deletionTimestamp") else "",
    ]
    return " ".join(part for part in parts if part)


def kubectl_kind(api_version: str, kind: str) -> str:
    """``kubectl get`` name of a kind, unambiguous across groups."""
    group, _, version = api_version.rpartition("/")
    return f"{kind}.{version}.{group}" if group else kind


def wait_for(
    what: str, check: Callable[[], tuple[T | None, str]], timeout_s: float, poll_s: float = POLL_S
) -> T:
    """Poll ``check`` (``(result, why not yet)``) until it has a result; fail after
    ``timeout_s`` with the last reason."""
    deadline = time.monotonic() + timeout_s
    while True:
        result, why = check()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            fail(f"{what}: not within {timeout_s:.0f} s ({why})")
        time.sleep(poll_s)


# --- the section -------------------------------------------------------------------------------


class Faults:
    """The faults of one e2e session, in order: each builds on the stack the previous left."""

    def __init__(self, e2e: E2E) -> None:
        self.e2e = e2e
        assert e2e.cluster is not None and e2e.e2e_stack is not None and e2e.cli is not None
        self.cluster: LocalCluster = e2e.cluster
        self.stack_file = e2e.e2e_stack.stack_file
        self.report = e2e.offline_report
        self.previews = 0

    # --- the stack ---

    def document(self) -> dict[str, Any]:
        loaded: dict[str, Any] = yaml.safe_load(self.stack_file.read_text(encoding="utf-8"))
        return loaded

    def edit(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Rewrite the e2e stack file (keeping its header) and return the offline report of the
        result, which is what the stack now declares."""
        text = self.stack_file.read_text(encoding="utf-8")
        header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
        document = change(yaml.safe_load(text))
        self.stack_file.write_text(
            header + yaml.safe_dump(document, sort_keys=False, width=100), encoding="utf-8"
        )
        self.report = self.offline()
        return self.report

    def offline(self) -> dict[str, Any]:
        """The offline preview of the stack file as it is now."""
        self.previews += 1
        out = self.e2e.work_dir / f"offline-faults-{self.previews}"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tools.preview",
                "--stack",
                self.e2e.stack,
                "--stack-file",
                str(self.stack_file),
                "--out",
                str(out),
                "--quiet",
            ],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            fail(f"offline preview of the changed stack exited {done.returncode}:\n{done.stdout}")
        report: dict[str, Any] = json.loads(
            (out / self.e2e.stack / "report.json").read_text(encoding="utf-8")
        )
        return report

    def export(self) -> dict[str, Any]:
        exported: dict[str, Any] = self.e2e.pulumi("stack", "export").json()
        return exported

    # --- the cluster ---

    def helm_revisions(self) -> list[HelmRevision]:
        return helm_revisions(
            self.cluster.get_json("secrets", "--all-namespaces", "-l", "owner=helm")
        )

    def exists(self, op: PendingOperation) -> bool:
        if not op.kind or not op.name:
            return False
        scope = ["-n", op.namespace] if op.namespace else []
        done = self.cluster.kubectl(
            "get", kubectl_kind(op.api_version, op.kind), op.name, *scope, "-o", "name", check=False
        )
        return done.returncode == 0

    def kill_component(self, name: str) -> int:
        """SIGKILL a control-plane component's process group, as a crash would; its pid."""
        state = self.cluster.state
        component = state.components.get(name) if state else None
        if component is None or not component.alive():
            fail(f"{name} is not running")
        assert component is not None
        os.killpg(component.pid, signal.SIGKILL)
        wait_for(
            f"{name} (pid {component.pid}) to die",
            lambda: (True if not component.alive() else None, "still alive"),
            PROCESSES_GONE_S,
        )
        return component.pid

    def unsettled(self) -> tuple[bool | None, str]:
        """``True`` once every node is Ready and every running pod Ready again (Kueue's only
        once its process serves the webhooks), else why not."""
        try:
            nodes = self.cluster.get_json("nodes")["items"]
            pods = self.cluster.get_json("pods", "--all-namespaces")["items"]
        except ClusterError as exc:
            return None, str(exc).splitlines()[0]
        waiting = [
            f"node {n['metadata']['name']}"
            for n in nodes
            if {c["type"]: c["status"] for c in n["status"].get("conditions", [])}.get("Ready")
            != "True"
        ]
        for pod in pods:
            status = pod.get("status", {})
            ready = {c["type"]: c["status"] for c in status.get("conditions", [])}.get("Ready")
            if status.get("phase") == "Running" and ready != "True":
                waiting.append(f"pod {pod['metadata']['namespace']}/{pod['metadata']['name']}")
        return (True if not waiting else None), f"not Ready: {', '.join(waiting[:6])}"

    # --- recovery and convergence: what docs/operations.md tells an engineer to do ---

    def recover(self, detail: list[str]) -> None:
        """ "Recovering from an interrupted ``pulumi up``", step by step."""
        # 1. Helm releases the interruption left mid-operation: back to their deployed revision
        #    (`helm rollback`; without helm, delete the pending revision's record). Before the
        #    refresh, which would read the pending revision's values into the state.
        for revision in self.helm_revisions():
            if revision.pending:
                self.cluster.kubectl("delete", "secret", "-n", revision.namespace, revision.secret)
                detail.append(
                    f"helm: {revision.describe()} left mid-operation; its record "
                    f"{revision.namespace}/{revision.secret} deleted (back to the last deployed)"
                )
        # 2. Pending operations: each pending create's object looked up on the API server.
        operations = pending_operations(self.export())
        existing = {op.urn for op in operations if op.type == "creating" and self.exists(op)}
        for op in operations:
            state = "exists" if op.urn in existing else "absent"
            detail.append(f"pending operation: {op.describe()} ({state} on the API server)")
        args = refresh_pending_args(operations, existing)
        # 3. pulumi refresh, with the pending creates resolved; a lock left by a dead CLI is
        #    cancelled, as the CLI says, once its pid is known to be gone.
        done = self.e2e.pulumi("refresh", "--yes", *args, check=False, timeout=UP_TIMEOUT_S)
        printed = done.stdout + done.stderr
        if done.code != 0 and "currently locked" in printed:
            holder = lock_holder(printed)
            if holder is None:
                fail(f"the stack is locked and the CLI did not say by whom:\n{printed[-2000:]}")
            assert holder is not None
            host, pid = holder
            if host == socket.gethostname() and process_alive(pid):
                fail(f"the stack is locked by pid {pid}, which still runs")
            detail.append(f"stack locked by pid {pid} on {host}, which is gone: pulumi cancel")
            self.e2e.pulumi("cancel", "--yes")
            done = self.e2e.pulumi("refresh", "--yes", *args, check=False, timeout=UP_TIMEOUT_S)
            printed = done.stdout + done.stderr
        if done.code != 0:
            fail(f"pulumi refresh {' '.join(args)} exited {done.code}:\n{printed[-3000:]}")
        detail.append(f"pulumi refresh --yes {' '.join(args)}".strip())
        after = self.export()
        left = pending_operations(after)
        if left:
            fail("pending operations after the refresh: " + ", ".join(o.describe() for o in left))
        in_state = {str(r["urn"]) for r in after["deployment"].get("resources") or []}
        imported = [op for op in operations if op.urn in existing]
        if imported:
            landed = sum(op.urn in in_state for op in imported)
            detail.append(
                f"imported pending creates in the state after the refresh: {landed} of "
                f"{len(imported)} (the next pulumi up applies the rest onto the existing objects)"
            )
        # 4. pulumi up.
        self.e2e.pulumi("up", "--yes", "--skip-preview", timeout=UP_TIMEOUT_S)
        detail.append("pulumi up --yes: succeeded")

    def converged(self, detail: list[str]) -> None:
        """No duplicates, nothing lost, nothing pending: the state, the API server and Helm all
        hold exactly what the stack declares."""
        done = self.e2e.pulumi(
            "up", "--yes", "--expect-no-changes", check=False, timeout=UP_TIMEOUT_S
        )
        problems = []
        if done.code != 0:
            problems.append(f"pulumi up --expect-no-changes exited {done.code}")
            problems += [line for line in done.stdout.splitlines() if "[diff:" in line][:10]
        problems += state_problems(self.export(), self.report)
        object_problems, checked = check_objects(self.cluster, self.report)
        problems += object_problems
        problems += self.undeclared()
        problems += helm_problems(self.helm_revisions(), declared_releases(self.report))
        if problems:
            fail("not converged:\n" + "\n".join(problems))
        resources = len(self.report["resources"])
        detail.append(
            f"converged: pulumi up --expect-no-changes; {resources} resources in the state once "
            f"each, none pending; {checked} objects as declared, none undeclared; every Helm "
            "release one deployed revision"
        )

    def undeclared(self) -> list[str]:
        declared: dict[str, set[tuple[str, str]]] = {}
        for resource in declared_objects(self.report):
            inputs = resource["inputs"]
            meta = inputs.get("metadata") or {}
            kind = kubectl_kind(inputs["apiVersion"], inputs["kind"])
            declared.setdefault(kind, set()).add((meta.get("namespace", ""), meta.get("name", "")))
        selector = f"{APP_MANAGED_BY_LABEL}={MANAGED_BY},{APP_PART_OF_LABEL}={PROJECT}"
        extra = []
        for kind, keys in sorted(declared.items()):
            listing = self.cluster.get_json(kind, "--all-namespaces", "-l", selector)
            extra += undeclared_objects(listing.get("items", []), keys, kind)
        return extra

    # --- the faults ---

    def apiserver_killed(self, detail: list[str]) -> None:
        """kube-apiserver dies in the middle of a Helm upgrade of ``pulumi up``."""
        teams = fault_teams("fault-api")
        self.edit(lambda doc: with_teams(doc, teams))
        detail.append(f"change: teams {', '.join(t['name'] for t in teams)} added")
        assert self.e2e.cli is not None
        with self.e2e.cli.start(["up", "--yes", "--skip-preview"], cwd=self.e2e.project) as up:
            line = up.wait_for_line(lambda text: bool(RELEASE_UPDATING.search(text)), UP_TIMEOUT_S)
            if line is None:
                done = up.wait(UP_TIMEOUT_S)
                fail(f"pulumi up ended (exit {done.code}) before it upgraded a Helm release")
            detail.append(f"pulumi up applying: {str(line).strip()}")
            pending = self._helm_pending_soon()
            detail.append(
                f"helm recorded {pending.describe()}"
                if pending
                else f"no pending Helm revision within {HELM_PENDING_WAIT_S:.0f} s"
            )
            pid = self.kill_component("kube-apiserver")
            detail.append(f"kube-apiserver (pid {pid}) killed with SIGKILL")
            done = up.wait(UP_TIMEOUT_S)
        errors = [line.strip() for line in done.stdout.splitlines() if "error:" in line]
        detail.append(f"pulumi up exited {done.code}: {errors[0][:300] if errors else 'no error'}")
        if done.code == 0:
            fail("pulumi up succeeded although the API server died under it")
        outcome = self.cluster.restart("kube-apiserver")
        detail.append(f"kube-apiserver restarted with its command and ports ({outcome} before)")
        wait_for("the cluster to settle after the restart", self.unsettled, SETTLE_TIMEOUT_S)
        detail.append("nodes and pods Ready again, Kueue serving")
        self.recover(detail)
        self.converged(detail)

    def _helm_pending_soon(self) -> HelmRevision | None:
        """The first Helm revision found pending within :data:`HELM_PENDING_WAIT_S`: the upgrade
        the CLI just began has written its record, and the fault lands in the middle of it."""
        deadline = time.monotonic() + HELM_PENDING_WAIT_S
        while time.monotonic() < deadline:
            pending = [r for r in self.helm_revisions() if r.pending]
            if pending:
                return pending[0]
            time.sleep(POLL_S / 2)
        return None

    def cli_killed(self, detail: list[str]) -> None:
        """The CLI and its plugins die (SIGKILL) in the middle of ``pulumi up``."""
        teams = fault_teams("fault-cli")
        self.edit(lambda doc: with_teams(doc, teams))
        detail.append(f"change: teams {', '.join(t['name'] for t in teams)} added")
        assert self.e2e.cli is not None
        with self.e2e.cli.start(["up", "--yes", "--skip-preview"], cwd=self.e2e.project) as up:
            line = up.wait_for_line(lambda text: bool(APPLIED.search(text)), UP_TIMEOUT_S)
            if line is None:
                done = up.wait(UP_TIMEOUT_S)
                fail(f"pulumi up ended (exit {done.code}) before it applied an object")
            detail.append(f"pulumi up applying: {str(line).strip()}")
            killed = up.kill(signal.SIGKILL)
            names = sorted({_command_name(pid) for pid in killed} - {""})
            detail.append(f"SIGKILL to the CLI and its plugins: {len(killed)} processes")
            done = up.wait(PROCESSES_GONE_S)
            wait_for(
                "the CLI's processes to be gone",
                lambda: (True if not session_members(up.pid) else None, "some still run"),
                PROCESSES_GONE_S,
            )
            detail.append(f"pulumi exited {done.code}; none of {', '.join(names)} is left")
        self.recover(detail)
        self.converged(detail)
        # The objects whose create the killed run had sent are co-owned by its (dead) field
        # manager: a later change of their fields must still apply.
        self.edit(
            lambda doc: with_team_changes(
                doc,
                [t["name"] for t in teams],
                {"priorityClasses": ["normal"], "env": {"E2E_FAULT": "changed"}},
            )
        )
        self.e2e.pulumi("up", "--yes", "--skip-preview", timeout=UP_TIMEOUT_S)
        detail.append("a later change of those teams (priority classes, env) applies")
        self.converged(detail)

    def out_of_band(self, detail: list[str]) -> None:
        """Edits behind Pulumi's back: refresh shows each, up restores the declared state."""
        targets = OutOfBand.choose(self.report)
        for command in targets.commands():
            self.cluster.kubectl(*command)
            detail.append(f"kubectl {' '.join(command)}")
        preview = self.e2e.pulumi("refresh", "--preview-only", "--json", timeout=UP_TIMEOUT_S)
        declared = {
            r["urn"]: r["options"].get("ignoreChanges") or [] for r in self.report["resources"]
        }
        undeclared, owned = drift(preview.json(), declared)
        shown = undeclared + owned
        detail += [f"refresh shows {line}" for line in shown]
        missing = missing_drift(shown, targets.expected_drift())
        if missing:
            fail("pulumi refresh --preview-only does not show:\n" + "\n".join(missing))
        self.e2e.pulumi("refresh", "--yes", timeout=UP_TIMEOUT_S)
        detail.append("pulumi refresh --yes")
        done = self.e2e.pulumi("up", "--yes", "--skip-preview", check=False, timeout=UP_TIMEOUT_S)
        if done.code != 0:
            # Kueue manages the StatefulSets of the namespaces it manages and refuses any
            # resize but to or from zero; the scale subresource, which kubectl used, it does not
            # see, and the resize behind its back finished the StatefulSet's Workload: its pods
            # wait behind Kueue's scheduling gate for good. Scaled to zero, the Workload goes;
            # pulumi up then scales it from zero, which Kueue admits as a new Workload. At zero
            # the StatefulSet controller (OrderedReady) still removes no pod while one of them is
            # not Ready, and the gated ones never are: they are deleted by hand.
            printed = done.stdout + done.stderr
            refused = [line.strip() for line in printed.splitlines() if KUEUE_RESIZE in line]
            if not refused or targets.statefulset_name not in printed:
                fail(f"pulumi up exited {done.code}:\n{printed[-3000:]}")
            detail.append(f"pulumi up refused: {refused[0][:400]}")
            for command in (targets.scale_to_zero(), targets.delete_pods()):
                self.cluster.kubectl(*command)
                detail.append(f"kubectl {' '.join(command)}")
            wait_for(
                f"the pods of {targets.statefulset} to be gone",
                lambda: targets.no_pods(self.cluster),
                SETTLE_TIMEOUT_S,
            )
            self.e2e.pulumi("up", "--yes", "--skip-preview", timeout=UP_TIMEOUT_S)
        detail.append("pulumi up --yes: succeeded")
        problems, _ = check_objects(self.cluster, self.report)
        if problems:
            fail("not restored:\n" + "\n".join(problems))
        replicas = wait_for(
            f"the HPA to bring {targets.deployment} back within {targets.hpa_max}",
            lambda: targets.deployment_back(self.cluster),
            HPA_TIMEOUT_S,
        )
        detail.append(
            f"read back: {targets.statefulset} at {targets.statefulset_replicas} replicas, "
            f"{targets.config_map} labelled as declared, {targets.network_policy} recreated; "
            f"{targets.deployment} back to {replicas} replicas by its HPA"
        )
        self.converged(detail)

    def helm_rejected(self, detail: list[str]) -> None:
        """A Helm release whose values the chart refuses fails alone, by name and reason."""
        before = self.report
        revisions = {(r.namespace, r.release): r.version for r in self.helm_revisions()}
        mirror = self.e2e.work_dir / "charts" / LOKI.name / LOKI.version
        pinned = mirror.resolve()
        rebuilt = self.e2e.work_dir / "charts-rebuilt" / LOKI.name / LOKI.version
        build_refusing_chart(pinned, rebuilt)
        days = retention_days(self.document())
        mirror.unlink()
        mirror.symlink_to(rebuilt, target_is_directory=True)
        try:
            detail.append(
                f"the mirror's {LOKI.name} {LOKI.version}: a build whose values.schema.json "
                "wants loki.limits_config.retention_period in days"
            )
            self.edit(lambda doc: with_loki_retention_days(doc, days + 1))
            detail.append(f"change: monitoring.loki.retention {days}d -> {days + 1}d")
            done = self.e2e.pulumi(
                "up", "--yes", "--skip-preview", check=False, timeout=UP_TIMEOUT_S
            )
            printed = done.stdout + done.stderr
            named = [line.strip() for line in printed.splitlines() if SCHEMA_REFUSED in line]
            detail += named[:2]
            if done.code == 0:
                fail("pulumi up passed values the chart's schema refuses")
            release = _release_resource(before, LOKI.name)
            if not named or release not in printed or "retention_period" not in printed:
                fail(
                    f"pulumi up failed, but not naming {release} and the schema's reason:\n"
                    f"{printed[-3000:]}"
                )
            problems, checked = check_objects(self.cluster, before)
            after = {(r.namespace, r.release): r.version for r in self.helm_revisions()}
            problems += [
                f"helm release {key[0]}/{key[1]}: revision {revisions.get(key)} -> {version}"
                for key, version in sorted(after.items())
                if version != revisions.get(key)
            ]
            problems += helm_problems(self.helm_revisions(), declared_releases(before))
            problems += [f"pending: {op.describe()}" for op in pending_operations(self.export())]
            if problems:
                fail("the rest of the stack changed:\n" + "\n".join(problems))
            detail.append(
                f"the rest intact: {checked} objects as declared before, every Helm release at "
                "its revision, nothing pending"
            )
        finally:
            mirror.unlink()
            mirror.symlink_to(pinned, target_is_directory=True)
        detail.append(f"the mirror holds the pinned {LOKI.name} {LOKI.version} again")
        self.e2e.pulumi("up", "--yes", "--skip-preview", timeout=UP_TIMEOUT_S)
        detail.append("pulumi up --yes: succeeded")
        self.converged(detail)


def build_refusing_chart(pinned: Path, target: Path) -> None:
    """``target``: the pinned chart's files (links) with :func:`refusing_schema` as its
    values.schema.json."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in pinned.iterdir():
        link = target / entry.name
        if link.is_symlink() or link.exists():
            link.unlink()
        if entry.name != "values.schema.json":
            link.symlink_to(entry, target_is_directory=entry.is_dir())
    schema_file = pinned / "values.schema.json"
    schema = json.loads(schema_file.read_text(encoding="utf-8")) if schema_file.is_file() else {}
    (target / "values.schema.json").write_text(json.dumps(refusing_schema(schema), indent=2))


def _release_resource(report: Mapping[str, Any], chart: str) -> str:
    """The Pulumi name of the Release that installs ``chart``."""
    for resource in report["resources"]:
        if resource["type"] == "kubernetes:helm.sh/v3:Release" and (
            (resource.get("inputs") or {}).get("name") == chart
        ):
            return str(resource["name"])
    fail(f"no Helm release of {chart} in the stack")
    raise AssertionError  # unreachable


def _command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class OutOfBand:
    """The objects the out-of-band fault edits, chosen from what the stack declares."""

    statefulset: str
    statefulset_urn: str
    statefulset_replicas: int
    statefulset_selector: dict[str, str]
    deployment: str
    hpa_max: int
    config_map: str
    config_map_urn: str
    network_policy: str
    network_policy_urn: str

    @classmethod
    def choose(cls, report: Mapping[str, Any]) -> OutOfBand:
        """A StatefulSet that declares its replicas, a Deployment its HPA scales, a team's
        ConfigMap and NetworkPolicy."""
        objects = list(declared_objects(dict(report)))

        def where(resource: Mapping[str, Any]) -> str:
            meta = resource["inputs"].get("metadata") or {}
            return f"{meta.get('namespace')}/{meta.get('name')}"

        def first(kind: str, test: Callable[[Mapping[str, Any]], bool]) -> Mapping[str, Any]:
            for resource in objects:
                if resource["inputs"]["kind"] == kind and test(resource):
                    return resource
            fail(f"the stack declares no {kind} for the out-of-band fault")
            raise AssertionError  # unreachable

        def team(resource: Mapping[str, Any]) -> bool:
            return TEAM_LABEL in ((resource["inputs"].get("metadata") or {}).get("labels") or {})

        sts = first("StatefulSet", lambda r: "replicas" in (r["inputs"].get("spec") or {}))
        hpa = first("HorizontalPodAutoscaler", lambda r: True)
        target = hpa["inputs"]["spec"]["scaleTargetRef"]["name"]
        namespace = hpa["inputs"]["metadata"]["namespace"]
        config_map = first("ConfigMap", team)
        policy = first("NetworkPolicy", team)
        return cls(
            statefulset=where(sts),
            statefulset_urn=sts["urn"],
            statefulset_replicas=int(sts["inputs"]["spec"]["replicas"]),
            statefulset_selector=dict(sts["inputs"]["spec"]["selector"]["matchLabels"]),
            deployment=f"{namespace}/{target}",
            hpa_max=int(hpa["inputs"]["spec"]["maxReplicas"]),
            config_map=where(config_map),
            config_map_urn=config_map["urn"],
            network_policy=where(policy),
            network_policy_urn=policy["urn"],
        )

    def commands(self) -> list[list[str]]:
        """The kubectl commands of the edits."""

        def split(where: str) -> list[str]:
            namespace, name = where.split("/", 1)
            return [name, "-n", namespace]

        return [
            ["scale", "statefulset", *split(self.statefulset),
             f"--replicas={self.statefulset_replicas + 2}"],
            ["scale", "deployment", *split(self.deployment), f"--replicas={self.hpa_max + 2}"],
            ["label", "--overwrite", "configmap", *split(self.config_map),
             f"{TEAM_LABEL}=changed-out-of-band"],
            ["delete", "networkpolicy", *split(self.network_policy)],
        ]  # fmt: skip

    @property
    def statefulset_name(self) -> str:
        """The StatefulSet's Pulumi name, as the CLI prints it in its diagnostics."""
        return self.statefulset_urn.rpartition("::")[2]

    def scale_to_zero(self) -> list[str]:
        """The documented way back for a StatefulSet Kueue will not let Pulumi resize: to zero,
        from where ``pulumi up`` may scale it (docs/operations.md)."""
        namespace, name = self.statefulset.split("/", 1)
        return ["scale", "statefulset", name, "-n", namespace, "--replicas=0"]

    def delete_pods(self) -> list[str]:
        """The pods a StatefulSet at zero leaves behind: OrderedReady scales down only while
        every pod is Ready, and pods behind Kueue's scheduling gate never are."""
        namespace = self.statefulset.split("/", 1)[0]
        return ["delete", "pods", "-n", namespace, "-l", self.selector, "--wait=false"]

    @property
    def selector(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.statefulset_selector.items()))

    def no_pods(self, cluster: LocalCluster) -> tuple[bool | None, str]:
        namespace, name = self.statefulset.split("/", 1)
        pods = cluster.get_json("pods", "-n", namespace, "-l", self.selector)["items"]
        return (True if not pods else None), f"{len(pods)} pods of {name} left: " + "; ".join(
            pod_state(pod) for pod in pods
        )

    def expected_drift(self) -> dict[str, str]:
        """What the refresh preview must show for the edits Pulumi owns. The Deployment's
        replica count is its HPA's: the stack does not declare it."""
        return {
            self.statefulset_urn: "spec.replicas",
            self.config_map_urn: f'metadata.labels["{TEAM_LABEL}"]',
            self.network_policy_urn: "(deleted)",
        }

    def deployment_back(self, cluster: LocalCluster) -> tuple[int | None, str]:
        namespace, name = self.deployment.split("/", 1)
        replicas = int(cluster.get_json("deployment", name, "-n", namespace)["spec"]["replicas"])
        return (replicas if replicas <= self.hpa_max else None), f"{replicas} replicas"


def run_section(e2e: E2E) -> None:
    """The faults, in order, after a first ``pulumi up``; a fault that fails leaves the stack
    as it is, and the next one starts from there."""
    if not e2e.step("pulumi up", e2e.up):
        return
    faults = Faults(e2e)
    e2e.step(
        "kube-apiserver killed during pulumi up: recovered, converges", faults.apiserver_killed
    )
    e2e.step("pulumi CLI killed during pulumi up: recovered, converges", faults.cli_killed)
    e2e.step("out-of-band edits: refresh shows each, pulumi up restores", faults.out_of_band)
    e2e.step(
        "a Helm release the chart refuses: fails by name, the rest intact", faults.helm_rejected
    )
