"""The tenant guardrails on the real API server, met as a team admin meets them.

For every team namespace of the offline report whose team has an admin group, requests go to the
API server as a member of that group (``kubectl --as=<user> --as-group=<group>``, server-side dry
run: nothing is created). Each forbidden one must be refused with the guardrail's own message
(``components.guardrails``: the same template the API server renders) and each allowed one must
pass. GPU limits that differ from requests are refused by the API server's validation, before
any admission policy: that refusal is checked with the API server's message.

Needs, on the cluster, what ``pulumi up`` creates: the policies and bindings, the team namespaces
(with the annotations the policies read), the team RBAC and the PriorityClasses; the monitor
cases run where the cluster serves the Prometheus operator's kinds (kube-prometheus-stack brings
them), and the facts say when it does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from components.constants import (
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    KUEUE_PRIORITY_LABEL,
    KUEUE_QUEUE_LABEL,
    NODE_POOL_LABEL,
    TEAM_ADMIN_ROLE,
    TEAM_LABEL,
    TENANT_GPU_QUEUE_ANNOTATION,
    TENANT_NODE_POOLS_ANNOTATION,
    TENANT_PRIORITY_CLASSES_ANNOTATION,
)
from components.guardrails import (
    MONITOR_POLICIES,
    POLICY_PREFIX,
    SHAPES,
    monitor_rule,
    policy_name,
    rule,
)
from components.monitoring.constants import (
    PLATFORM_ALERT_LABEL,
    PLATFORM_ALERT_VALUE,
    SERVICE_ACCOUNT_TOKEN_PATH,
)

API_VALIDATION_GPU_LIMIT = f"must be equal to {GPU_RESOURCE} limit"
"""What the API server's own validation says of a GPU request that differs from its limit."""
IMAGE = "registry.k8s.io/pause:3.10"


class Cluster(Protocol):
    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> Any: ...


@dataclass(frozen=True)
class Team:
    """A team namespace as the guardrails see it: what its annotations allow, who administers."""

    namespace: str
    group: str
    priority_classes: tuple[str, ...]
    node_pools: tuple[str, ...]
    gpu_queue: str | None


@dataclass(frozen=True)
class Case:
    """One request: refused with ``message`` by ``policy``, or allowed when ``message`` is None."""

    name: str
    manifest: dict[str, Any]
    message: str | None = None
    policy: str | None = None
    """The policy that must refuse it; None with a message: the API server's validation."""


def _objects(report: dict[str, Any], kind: str) -> Iterator[dict[str, Any]]:
    for resource in report["resources"]:
        inputs = resource.get("inputs") or {}
        if resource.get("custom") and inputs.get("kind") == kind:
            yield inputs


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(part for part in (value or "").split(",") if part)


def teams(report: dict[str, Any]) -> list[Team]:
    """Team namespaces with an admin group, from the report's Namespaces and RoleBindings."""
    admins: dict[str, str] = {}
    for binding in _objects(report, "RoleBinding"):
        meta = binding.get("metadata") or {}
        if (binding.get("roleRef") or {}).get("name") != TEAM_ADMIN_ROLE:
            continue
        groups = [s["name"] for s in binding.get("subjects") or [] if s.get("kind") == "Group"]
        if groups:
            admins.setdefault(meta.get("namespace", ""), groups[0])
    found = []
    for namespace in _objects(report, "Namespace"):
        meta = namespace.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        name = meta.get("name", "")
        if TEAM_LABEL not in (meta.get("labels") or {}) or name not in admins:
            continue
        found.append(
            Team(
                namespace=name,
                group=admins[name],
                priority_classes=_split(annotations.get(TENANT_PRIORITY_CLASSES_ANNOTATION)),
                node_pools=_split(annotations.get(TENANT_NODE_POOLS_ANNOTATION)),
                gpu_queue=annotations.get(TENANT_GPU_QUEUE_ANNOTATION),
            )
        )
    return sorted(found, key=lambda team: team.namespace)


def _pod_spec(
    gpus: int = 0,
    *,
    pool: str | None = None,
    priority: str | None = None,
    node_name: str | None = None,
    tolerate: bool = False,
    request_differs: bool = False,
) -> dict[str, Any]:
    resources: dict[str, Any] = {"requests": {"cpu": "100m", "memory": "64Mi"}}
    resources["limits"] = {"memory": "64Mi"}
    if gpus:
        resources["limits"][GPU_RESOURCE] = str(gpus)
        if request_differs:
            resources["requests"][GPU_RESOURCE] = str(gpus + 1)
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "main",
                "image": IMAGE,
                "resources": resources,
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
    }
    if pool is not None:
        spec["nodeSelector"] = {NODE_POOL_LABEL: pool}
    if gpus or tolerate:
        spec["tolerations"] = [
            {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": GPU_TAINT_EFFECT}
        ]
    if priority is not None:
        spec["priorityClassName"] = priority
    if node_name is not None:
        spec["nodeName"] = node_name
    return spec


def _meta(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"name": f"e2e-guardrail-{name}", "namespace": namespace, "labels": labels or {}}


def _pod(name: str, team: Team, labels: dict[str, str] | None = None, **spec: Any) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(name, team.namespace, labels),
        "spec": _pod_spec(**spec),
    }


def _job(name: str, team: Team, labels: dict[str, str] | None = None, **spec: Any) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, team.namespace, labels),
        "spec": {"backoffLimit": 0, "template": {"spec": _pod_spec(**spec)}},
    }


def _daemonset(name: str, team: Team, **spec: Any) -> dict:
    pod = _pod_spec(**spec)
    pod["restartPolicy"] = "Always"
    selector = {"app.kubernetes.io/name": f"e2e-guardrail-{name}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(name, team.namespace),
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": selector}, "spec": pod},
        },
    }


def _cronjob(name: str, team: Team, job_labels: dict[str, str], **spec: Any) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": _meta(name, team.namespace),
        "spec": {
            "schedule": "0 0 1 1 *",
            "jobTemplate": {
                "metadata": {"labels": job_labels},
                "spec": {"backoffLimit": 0, "template": {"spec": _pod_spec(**spec)}},
            },
        },
    }


def cases(team: Team, all_classes: list[str], all_pools: list[str]) -> list[Case]:
    """What a team admin may and may not submit, with the message each refusal must carry."""
    ns = team.namespace
    pods, workloads, cronjobs = (policy_name(shape) for shape in SHAPES)
    pools = ", ".join(team.node_pools)
    classes = ", ".join(team.priority_classes)
    own_pool = team.node_pools[0] if team.node_pools else None
    found = [Case("cpu-pod", _pod("cpu", team))]
    if team.priority_classes:
        allowed_class = team.priority_classes[0]
        found.append(Case("allowed-class", _pod("class", team, priority=allowed_class)))
    for other in [c for c in all_classes if c not in team.priority_classes][:1]:
        found.append(
            Case(
                "foreign-priority-class",
                _pod("foreign-class", team, priority=other),
                rule("priority-class").message.text(
                    **{"class": other, "namespace": ns, "allowed": classes}
                ),
                pods,
            )
        )
        found.append(
            Case(
                "foreign-kueue-priority",
                _cronjob("kueue-class", team, {KUEUE_PRIORITY_LABEL: other}),
                rule("workload-priority-class").message.text(
                    **{
                        "class": other,
                        "label": KUEUE_PRIORITY_LABEL,
                        "namespace": ns,
                        "allowed": classes,
                    }
                ),
                cronjobs,
            )
        )
    found.append(
        Case(
            "tolerates-gpu-taint-without-gpus",
            _pod("tolerates", team, tolerate=True),
            rule("gpu-toleration").message.text(
                taint=f"{GPU_TAINT_KEY}=present:{GPU_TAINT_EFFECT}", namespace=ns, pools=pools
            ),
            pods,
        )
    )
    # A Job's template, not a bare Pod: in a team namespace Kueue gates every pod it manages
    # (manageJobsWithoutQueueName), and the API server refuses nodeName on a gated pod before
    # any admission policy sees it.
    found.append(
        Case(
            "node-name",
            _job("node-name", team, node_name="any-node"),
            rule("node-name").message.text(namespace=ns, pools=pools),
            workloads,
        )
    )
    if team.gpu_queue is None:
        found.append(
            Case(
                "gpu-job-without-a-team-queue",
                _job("no-queue", team, gpus=1),
                rule("gpu-needs-a-queue").message.text(namespace=ns),
                workloads,
            )
        )
        return found
    queued = {KUEUE_QUEUE_LABEL: team.gpu_queue}
    found += [
        Case(
            "unqueued-gpu-job",
            _job("unqueued", team, gpus=1, pool=own_pool),
            rule("gpu-queued").message.text(
                namespace=ns,
                kind="Job",
                label=KUEUE_QUEUE_LABEL,
                queue=team.gpu_queue,
                where="metadata.labels",
            ),
            workloads,
        ),
        Case(
            "unqueued-gpu-pod",
            _pod("unqueued-pod", team, gpus=1, pool=own_pool),
            rule("gpu-queued").message.text(
                namespace=ns,
                kind="Pod",
                label=KUEUE_QUEUE_LABEL,
                queue=team.gpu_queue,
                where="metadata.labels",
            ),
            pods,
        ),
        Case(
            "gpu-daemonset",
            _daemonset("daemonset", team, gpus=1, pool=own_pool),
            rule("gpu-daemonset").message.text(namespace=ns),
            workloads,
        ),
        Case(
            "gpu-request-differs-from-limit",
            _job("request-differs", team, queued, gpus=1, pool=own_pool, request_differs=True),
            API_VALIDATION_GPU_LIMIT,
        ),
    ]
    if own_pool is not None:
        found.append(Case("queued-gpu-job", _job("queued", team, queued, gpus=1, pool=own_pool)))
    for foreign in [p for p in all_pools if p not in team.node_pools][:1]:
        found.append(
            Case(
                "foreign-node-pool",
                _job("foreign-pool", team, queued, gpus=1, pool=foreign),
                rule("node-pool").message.text(namespace=ns, pools=pools, label=NODE_POOL_LABEL),
                workloads,
            )
        )
    return found


def _monitor(kind: str, name: str, team: Team, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": kind,
        "metadata": _meta(name, team.namespace),
        "spec": spec,
    }


def monitor_cases(team: Team) -> list[Case]:
    """What a team admin may and may not ask of Prometheus (its Role grants these kinds)."""
    ns = team.namespace
    policy = {m.name: f"{POLICY_PREFIX}{m.name}" for m in MONITOR_POLICIES}
    selector = {"matchLabels": {"app.kubernetes.io/name": "e2e"}}
    endpoint = {"port": "metrics"}
    alert = {"alert": "E2EAlert", "expr": "vector(1)", "labels": {"severity": "warning"}}
    return [
        Case(
            "own-service-monitor",
            _monitor(
                "ServiceMonitor", "own", team, {"selector": selector, "endpoints": [endpoint]}
            ),
        ),
        Case(
            "own-rule",
            _monitor(
                "PrometheusRule", "own-rule", team, {"groups": [{"name": "e2e", "rules": [alert]}]}
            ),
        ),
        Case(
            "monitor-of-every-namespace",
            _monitor(
                "ServiceMonitor",
                "everywhere",
                team,
                {"namespaceSelector": {"any": True}, "selector": selector, "endpoints": [endpoint]},
            ),
            monitor_rule("monitor-namespace").message.text(namespace=ns),
            policy["servicemonitors"],
        ),
        Case(
            "monitor-sending-prometheus-token",
            _monitor(
                "ServiceMonitor",
                "token",
                team,
                {
                    "selector": selector,
                    "endpoints": [{**endpoint, "bearerTokenFile": SERVICE_ACCOUNT_TOKEN_PATH}],
                },
            ),
            monitor_rule("monitor-files").message.text(namespace=ns),
            policy["servicemonitors"],
        ),
        Case(
            "pod-monitor-honouring-labels",
            _monitor(
                "PodMonitor",
                "honour",
                team,
                {"selector": selector, "podMetricsEndpoints": [{**endpoint, "honorLabels": True}]},
            ),
            monitor_rule("monitor-honor-labels").message.text(),
            policy["podmonitors"],
        ),
        Case(
            "rule-paging-the-platform",
            _monitor(
                "PrometheusRule",
                "page",
                team,
                {
                    "groups": [
                        {
                            "name": "e2e",
                            "rules": [
                                {**alert, "labels": {PLATFORM_ALERT_LABEL: PLATFORM_ALERT_VALUE}}
                            ],
                        }
                    ]
                },
            ),
            monitor_rule("rule-platform-label").message.text(label=PLATFORM_ALERT_LABEL),
            policy["prometheusrules"],
        ),
    ]


def serves_monitors(cluster: Cluster) -> bool:
    done = cluster.kubectl(
        "api-resources", "--api-group=monitoring.coreos.com", "-o", "name", check=False
    )
    return done.returncode == 0 and "servicemonitors.monitoring.coreos.com" in done.stdout


def submit(cluster: Cluster, team: Team, manifest: dict[str, Any]) -> tuple[bool, str]:
    """Create ``manifest`` as a member of the team's admin group; (accepted, kubectl's words)."""
    done = cluster.kubectl(
        f"--as=e2e-{team.namespace}-admin",
        f"--as-group={team.group}",
        "create",
        "--dry-run=server",
        "-o",
        "name",
        "-f",
        "-",
        input=yaml.safe_dump(manifest),
        check=False,
    )
    return done.returncode == 0, " ".join(f"{done.stdout} {done.stderr}".split())


def _judge(case: Case, accepted: bool, said: str) -> str | None:
    if case.message is None:
        return None if accepted else f"refused, but allowed by the guardrails: {said}"
    if accepted:
        return "accepted, but the guardrails forbid it"
    if case.policy is not None and f"ValidatingAdmissionPolicy '{case.policy}'" not in said:
        return f"refused, but not by {case.policy}: {said}"
    if case.message not in said:
        return f"refused without the message {case.message!r}: {said}"
    return None


def check_guardrails(
    cluster: Cluster,
    report: dict[str, Any],
    submit_as: Callable[[Cluster, Team, dict[str, Any]], tuple[bool, str]] = submit,
) -> tuple[list[str], list[str]]:
    """Every guardrail case for every team: ``(problems, facts)``; no problem means each
    forbidden request was refused with its message and each allowed one passed."""
    problems: list[str] = []
    facts: list[str] = []
    policies = sorted(
        (p.get("metadata") or {}).get("name", "")
        for p in _objects(report, "ValidatingAdmissionPolicy")
    )
    expected = sorted(
        [policy_name(shape) for shape in SHAPES]
        + [f"{POLICY_PREFIX}{m.name}" for m in MONITOR_POLICIES]
    )
    if [p for p in policies if p.startswith(POLICY_PREFIX)] != expected:
        problems.append(f"the report declares policies {policies}, expected {expected}")
        return problems, facts
    for name in expected:
        done = cluster.kubectl("get", "validatingadmissionpolicy", name, "-o", "json", check=False)
        if done.returncode != 0:
            problems.append(f"policy {name} is not on the cluster: {done.stderr.strip()}")
            continue
        warnings = (json.loads(done.stdout).get("status") or {}).get("typeChecking") or {}
        if warnings.get("expressionWarnings"):
            problems.append(f"policy {name} has type-checking warnings: {warnings}")
    classes = sorted(
        {(pc.get("metadata") or {}).get("name", "") for pc in _objects(report, "PriorityClass")}
    )
    pools = sorted({pool for team in teams(report) for pool in team.node_pools})
    found_teams = teams(report)
    if not found_teams:
        problems.append("no team namespace with an admin group in the report: nothing proved")
    monitors = serves_monitors(cluster)
    if not monitors:
        facts.append(
            "the cluster serves no monitoring.coreos.com kinds: monitor guardrails not met"
        )
    for team in found_teams:
        refused = allowed = 0
        for case in cases(team, classes, pools) + (monitor_cases(team) if monitors else []):
            accepted, said = submit_as(cluster, team, case.manifest)
            problem = _judge(case, accepted, said)
            if problem is not None:
                problems.append(f"{team.namespace}/{case.name}: {problem}")
            elif case.message is None:
                allowed += 1
            else:
                refused += 1
        facts.append(
            f"{team.namespace} (as group {team.group}): {refused} forbidden requests refused "
            f"with their messages, {allowed} allowed requests accepted"
        )
    return problems, facts
