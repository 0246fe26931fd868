"""What the API server holds after ``pulumi up``, against what the offline preview declared.

Read-back: every Kubernetes object of the offline report exists with every field it declared
(the server may add fields and defaults, never change or drop declared ones; quantities compare
by value, ``1Gi`` equals ``1024Mi``). Workloads (Jobs, Deployments, and StatefulSets such as a
team's Redis): their pods exist, are admitted, and sit on the fake nodes of their pool, or wait
for a reason that is theirs (a Job Kueue keeps suspended); replicated ones have their replicas
ready. Ray clusters and Ray jobs: Kueue has a Workload for each, admitted or pending with Kueue's
reason; no Ray pod ever appears (the KubeRay operator's pod runs on a fake node).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any, Protocol

from components.constants import NODE_POOL_LABEL, TEAM_LABEL
from infra.config.quantity import parse_quantity
from tools.records import SECRET_MARK, UNKNOWN_MARK

NOT_OBJECTS = ("kubernetes:helm.sh/", "kubernetes:yaml/")
"""Resources of the report that are not one object with the declared fields (Helm releases)."""
PATCH_SUFFIX = "Patch"
REPLICATED_KINDS = ("Deployment", "StatefulSet")
"""Kinds whose ready replicas are counted; a Job's pods are placed and running."""
SERVED_KINDS = ("Job", *REPLICATED_KINDS)
WORKLOAD_TIMEOUT_S = 240.0
POLL_S = 1.0


class Cluster(Protocol):
    def get_json(self, *args: str) -> Any: ...


def _resource(api_version: str, kind: str) -> str:
    """``kubectl get`` name of a kind, unambiguous across groups: ``Kind.version.group``, and
    the bare kind for the core group (which kubectl resolves to core first)."""
    group, _, version = api_version.rpartition("/")
    return f"{kind}.{version}.{group}" if group else kind


def declared_objects(report: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource in report["resources"]:
        inputs = resource.get("inputs") or {}
        if (
            resource.get("custom")
            and resource["type"].startswith("kubernetes:")
            and not resource["type"].startswith(NOT_OBJECTS)
            and "kind" in inputs
            and "apiVersion" in inputs
        ):
            yield {**resource, "patch": resource["type"].endswith(PATCH_SUFFIX)}


def _quantity_equal(a: Any, b: Any) -> bool:
    if not isinstance(a, str | int) or not isinstance(b, str | int) or isinstance(a, bool):
        return False
    try:
        return parse_quantity(a) == parse_quantity(b)
    except ValueError:
        return False


def subset_problems(declared: Any, live: Any, path: str = "") -> Iterator[str]:
    """Where ``live`` lacks or changed something ``declared`` says."""
    if declared in (SECRET_MARK, UNKNOWN_MARK):
        return
    if isinstance(declared, dict):
        if not isinstance(live, dict):
            yield f"{path}: declared a mapping, live {type(live).__name__}"
            return
        for key, value in declared.items():
            sub = f"{path}.{key}" if path else str(key)
            if key not in live:
                if value not in (None, {}, [], SECRET_MARK, UNKNOWN_MARK):
                    yield f"{sub}: declared, absent on the server"
                continue
            yield from subset_problems(value, live[key], sub)
        return
    if isinstance(declared, list):
        if not isinstance(live, list) or len(live) != len(declared):
            yield f"{path}: declared {len(declared)} items, live {_count(live)}"
            return
        for index, (mine, theirs) in enumerate(zip(declared, live, strict=True)):
            yield from subset_problems(mine, theirs, f"{path}[{index}]")
        return
    if declared == live or _quantity_equal(declared, live):
        return
    if isinstance(declared, int | float) and isinstance(live, int | float) and declared == live:
        return
    yield f"{path}: declared {declared!r}, live {live!r}"


def _without(declared: dict[str, Any], path: list[str]) -> dict[str, Any]:
    """``declared`` minus the field at ``path``: what the component says another controller
    owns (its ``ignoreChanges``) is that controller's to change."""
    head, rest = path[0], path[1:]
    if head not in declared:
        return declared
    if not rest:
        return {k: v for k, v in declared.items() if k != head}
    inner = declared[head]
    return {**declared, head: _without(inner, rest) if isinstance(inner, dict) else inner}


def _count(value: Any) -> str:
    return str(len(value)) if isinstance(value, list) else type(value).__name__


def check_objects(cluster: Cluster, report: dict[str, Any]) -> tuple[list[str], int]:
    """``(problems, objects checked)``: one list call per kind, then a subset check per object."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for resource in declared_objects(report):
        inputs = resource["inputs"]
        by_kind[_resource(inputs["apiVersion"], inputs["kind"])].append(resource)
    problems: list[str] = []
    checked = 0
    for kind, resources in sorted(by_kind.items()):
        listing = cluster.get_json(kind, "--all-namespaces")
        live = {
            (item["metadata"].get("namespace", ""), item["metadata"]["name"]): item
            for item in listing.get("items", [])
        }
        for resource in resources:
            meta = resource["inputs"].get("metadata") or {}
            key = (meta.get("namespace", ""), meta.get("name", ""))
            where = f"{kind} {key[0] + '/' if key[0] else ''}{key[1]}"
            checked += 1
            if key not in live:
                problems.append(f"{where}: not on the server")
                continue
            declared = {k: v for k, v in resource["inputs"].items() if k not in ("apiVersion",)}
            for path in resource["options"].get("ignoreChanges") or []:
                declared = _without(declared, path.split("."))
            problems += [f"{where}: {p}" for p in subset_problems(declared, live[key])]
    return problems, checked


# --- workloads ------------------------------------------------------------------------------------


def _pool_of(pod_spec: dict[str, Any]) -> str | None:
    return (pod_spec.get("nodeSelector") or {}).get(NODE_POOL_LABEL)


def _why_pending(pod: dict[str, Any]) -> str:
    for condition in pod.get("status", {}).get("conditions", []):
        if condition.get("status") == "False" and condition.get("message"):
            return f"{condition['type']}: {condition['message']}"
    return pod.get("status", {}).get("phase", "unknown")


RAY_KINDS = ("RayCluster", "RayJob")
KUEUE_WORKLOADS = "workloads.kueue.x-k8s.io"


def _condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next(
        (c for c in workload.get("status", {}).get("conditions", []) if c.get("type") == kind),
        None,
    )


def ray_state(cluster: Cluster, report: dict[str, Any]) -> tuple[list[str], list[str], bool]:
    """``(problems, facts, settled)`` for every team RayCluster and RayJob of the report: the
    Kueue Workload that stands for it, and whether Kueue admitted it."""
    problems: list[str] = []
    facts: list[str] = []
    settled = True
    listing: dict[str, list[dict[str, Any]]] = {}
    for resource in declared_objects(report):
        inputs = resource["inputs"]
        kind, meta = inputs["kind"], inputs.get("metadata") or {}
        if kind not in RAY_KINDS or TEAM_LABEL not in (meta.get("labels") or {}):
            continue
        namespace, name = meta["namespace"], meta["name"]
        if namespace not in listing:
            listing[namespace] = cluster.get_json(KUEUE_WORKLOADS, "-n", namespace).get("items", [])
        owned = [
            w
            for w in listing[namespace]
            if any(
                o.get("kind") == kind and o.get("name") == name
                for o in w["metadata"].get("ownerReferences", [])
            )
        ]
        where = f"{kind} {namespace}/{name}"
        if not owned:
            settled = False
            problems.append(f"{where}: Kueue has no Workload for it")
            continue
        for workload in owned:
            admitted = _condition(workload, "Admitted")
            queue = (workload.get("status", {}).get("admission") or {}).get("clusterQueue")
            if admitted is not None and admitted.get("status") == "True":
                state = f"admitted by ClusterQueue {queue}"
            else:
                reserved = _condition(workload, "QuotaReserved") or {}
                state = f"pending: {reserved.get('message') or reserved.get('reason') or 'queued'}"
            pod_sets = ", ".join(
                f"{p.get('name')} x {p.get('count')}" for p in workload["spec"].get("podSets", [])
            )
            facts.append(
                f"{where}: Kueue Workload {workload['metadata']['name']} ({pod_sets}) {state}; "
                "no Ray pods (the KubeRay operator runs on a fake node)"
            )
    return problems, facts, settled


def workload_state(cluster: Cluster, report: dict[str, Any]) -> tuple[list[str], list[str], bool]:
    """``(problems, facts, settled)`` for every team Job, Deployment and StatefulSet (a team
    Redis, a service's dependency) of the report, then every Ray cluster and Ray job
    (:func:`ray_state`)."""
    nodes = {
        node["metadata"]["name"]: node["metadata"].get("labels", {})
        for node in cluster.get_json("nodes").get("items", [])
    }
    pods = cluster.get_json("pods", "--all-namespaces").get("items", [])
    problems: list[str] = []
    facts: list[str] = []
    settled = True
    for resource in declared_objects(report):
        inputs = resource["inputs"]
        kind, meta = inputs["kind"], inputs.get("metadata") or {}
        if kind not in SERVED_KINDS or TEAM_LABEL not in (meta.get("labels") or {}):
            continue
        namespace, name = meta["namespace"], meta["name"]
        live = cluster.get_json(_resource(inputs["apiVersion"], kind), "-n", namespace, name)
        where = f"{kind} {namespace}/{name}"
        template = inputs["spec"]["template"]
        want_pool = _pool_of(template.get("spec") or {})
        owned = [
            pod
            for pod in pods
            if pod["metadata"].get("namespace") == namespace
            and all(
                pod["metadata"].get("labels", {}).get(k) == v
                for k, v in (template.get("metadata", {}).get("labels") or {}).items()
            )
        ]
        if kind == "Job" and live["spec"].get("suspend"):
            facts.append(f"{where}: suspended (waiting for Kueue to admit it), {len(owned)} pods")
            continue
        if not owned:
            settled = False
            problems.append(f"{where}: no pods")
            continue
        for pod in owned:
            node = pod.get("spec", {}).get("nodeName")
            pod_name = pod["metadata"]["name"]
            if not node:
                settled = False
                problems.append(f"{where}: pod {pod_name} not scheduled: {_why_pending(pod)}")
                continue
            pool = nodes.get(node, {}).get(NODE_POOL_LABEL)
            if want_pool and pool != want_pool:
                problems.append(f"{where}: pod {pod_name} on {node} (pool {pool}), not {want_pool}")
        if kind in REPLICATED_KINDS:
            ready = live.get("status", {}).get("readyReplicas", 0)
            wanted = live.get("spec", {}).get("replicas", 1)
            if ready < wanted:
                settled = False
                problems.append(f"{where}: {ready}/{wanted} replicas ready")
            else:
                facts.append(f"{where}: {ready}/{wanted} ready on pool {want_pool or '(any)'}")
        else:
            phases = sorted({p.get("status", {}).get("phase", "?") for p in owned})
            facts.append(f"{where}: {len(owned)} pods {'/'.join(phases)} on pool {want_pool}")
    ray_problems, ray_facts, ray_settled = ray_state(cluster, report)
    return problems + ray_problems, facts + ray_facts, settled and ray_settled


def check_workloads(
    cluster: Cluster, report: dict[str, Any], timeout_s: float = WORKLOAD_TIMEOUT_S
) -> tuple[list[str], list[str]]:
    """Wait (bounded) until every workload is placed or waits for its own reason."""
    deadline = time.monotonic() + timeout_s
    while True:
        problems, facts, settled = workload_state(cluster, report)
        if (settled and not problems) or time.monotonic() > deadline:
            return problems, facts
        time.sleep(POLL_S)
