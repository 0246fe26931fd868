"""TenantGuardrails: the per-team rules of the policy pack, enforced by the API server itself.

The pack judges what a stack renders, in CI; a team admin with kubectl never meets it. These
``ValidatingAdmissionPolicy`` objects (CEL, ``admissionregistration.k8s.io/v1``, GA in 1.30) make
the API server refuse, in every team namespace, what the pack refuses per team:

* a workload that requests GPUs (``nvidia.com/gpu`` or a MIG slice) without naming the team's GPU
  LocalQueue, so Kueue never sees it (DaemonSets cannot be queued: no GPUs for them);
* a PriorityClass, or a Kueue WorkloadPriorityClass label, the team may not use;
* a node pool the team may not use (``nodeSelector`` or node affinity on the pool label),
  ``spec.nodeName`` (it bypasses the scheduler), and tolerating the GPU taint without requesting
  GPUs or pinning a pool of the team's (it lands on any team's GPU nodes);
* a ServiceMonitor or PodMonitor that looks beyond its namespace, sends Prometheus's own files
  (its token) to the target, or honours the target's labels, and a PrometheusRule that claims the
  platform's alert label (it would page the platform's on-call).

GPU limits equal to requests need no policy: the API server's own validation refuses an extended
resource whose request differs from its limit, before admission policies run.

What a namespace allows is written on the Namespace object (``TenantLimits.annotations``), which a
team cannot change; the policies read it from ``namespaceObject``. One binding per policy selects
every namespace carrying the team label, so a team added to the stack is guarded the moment its
namespace exists. Each message is one template rendered twice: as CEL for the API server and in
Python (``Message.text``) for the tests and the end-to-end check, so they cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Final

import pulumi

from . import kube
from .constants import (
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    KUEUE_PRIORITY_LABEL,
    KUEUE_QUEUE_LABEL,
    MIG_RESOURCE_PREFIX,
    NODE_POOL_LABEL,
    POD_TEMPLATE_PATHS,
    TEAM_LABEL,
    TENANT_GPU_QUEUE_ANNOTATION,
    TENANT_NODE_POOLS_ANNOTATION,
    TENANT_PRIORITY_CLASSES_ANNOTATION,
    TENANT_REACHABLE_FROM_ANNOTATION,
)
from .frozen import frozen
from .labels import platform_labels
from .monitoring.constants import PLATFORM_ALERT_LABEL

POLICY_PREFIX: Final = "aiplatform-tenant-"
PRIORITY_QUOTA_NAME: Final = "priority-classes"
"""The ResourceQuota that admits no pod of a PriorityClass the team may not use."""


# --- What a namespace allows --------------------------------------------------------------------
@frozen
class TenantLimits:
    """What one team namespace may use, as the guardrails read it from the Namespace."""

    priority_classes: Sequence[str]
    """PriorityClasses its pods may use (and Kueue priority classes its workloads may name)."""
    node_pools: Sequence[str] = ()
    """Node pools its pods may select: the pools of the team's queue."""
    gpu_queue: str | None = None
    """The LocalQueue GPU workloads must name; None: the team has no GPU queue."""
    reachable_from: Sequence[str] = ()
    """Namespaces of the teams whose pods may connect to this one's (the policy pack's
    networkpolicy-team-isolation reads it; no admission policy does)."""

    def annotations(self) -> dict[str, str]:
        found = {
            TENANT_PRIORITY_CLASSES_ANNOTATION: ",".join(self.priority_classes),
            TENANT_NODE_POOLS_ANNOTATION: ",".join(self.node_pools),
        }
        if self.gpu_queue is not None:
            found[TENANT_GPU_QUEUE_ANNOTATION] = self.gpu_queue
        if self.reachable_from:
            found[TENANT_REACHABLE_FROM_ANNOTATION] = ",".join(self.reachable_from)
        return found


def priority_quota_spec(limits: TenantLimits) -> dict[str, Any]:
    """A ResourceQuota that admits no pod of another class: the API server's own check behind
    the admission policy (the policy speaks first, with a message a tenant understands)."""
    allowed = sorted(set(limits.priority_classes))
    expression: dict[str, Any] = (
        {"scopeName": "PriorityClass", "operator": "NotIn", "values": allowed}
        if allowed
        else {"scopeName": "PriorityClass", "operator": "Exists"}
    )
    return {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [expression]}}


# --- Messages -----------------------------------------------------------------------------------
def _cel_string(text: str) -> str:
    """A CEL string literal (JSON escaping is valid CEL for the characters we use)."""
    return json.dumps(text)


@frozen
class Message:
    """A message with ``{placeholders}``; ``fields`` maps each one to a CEL string expression."""

    template: str
    fields: Mapping[str, str] = field(default_factory=dict)

    def cel(self) -> str:
        parts: list[str] = []
        rest = self.template
        while "{" in rest:
            before, _, after = rest.partition("{")
            name, _, rest = after.partition("}")
            if before:
                parts.append(_cel_string(before))
            parts.append(f"({self.fields[name]})")
        if rest:
            parts.append(_cel_string(rest))
        return " + ".join(parts)

    def text(self, **values: str) -> str:
        return self.template.format(**values)


_NAMESPACE = "namespaceObject.metadata.name"
_KIND = "object.kind"


# --- The shapes of pod-carrying objects --------------------------------------------------------
@frozen
class Shape:
    """Where a kind keeps its pod spec and the labels Kueue reads its queue from."""

    name: str
    resources: tuple[tuple[str, tuple[str, ...]], ...]
    """``(api group, resources)`` the policy matches."""
    pod_spec: str
    queue_labels: str
    """CEL for the labels Kueue reads the queue name from (a map, possibly empty)."""
    queue_labels_at: str
    """CEL: where a tenant writes that label, for the message."""
    queue_exempt: str = "false"
    """CEL: true when the object's controller was checked instead (pods of a Job, ...)."""
    spec_root: str = "object.spec"
    """What an UPDATE must change to be checked again (finalizers and status need no check)."""


def _pod_spec(group_kind: str) -> str:
    """CEL for the pod spec of ``group_kind``'s objects (every kind of a shape keeps it there)."""
    return ".".join(("object", *POD_TEMPLATE_PATHS[group_kind], "spec"))


def _labels(meta: str) -> str:
    return f"has({meta}.labels) ? {meta}.labels : {{}}"


SHAPES: Final[tuple[Shape, ...]] = (
    Shape(
        name="pods",
        resources=(("", ("pods",)),),
        pod_spec=_pod_spec("core/Pod"),
        queue_labels=_labels("object.metadata"),
        queue_labels_at="'metadata.labels'",
        # A pod its controller created was judged as the controller's template.
        queue_exempt=(
            "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, "
            "has(o.controller) && o.controller)"
        ),
    ),
    Shape(
        name="workloads",
        resources=(
            ("apps", ("deployments", "statefulsets", "daemonsets", "replicasets")),
            ("batch", ("jobs",)),
            ("", ("replicationcontrollers",)),
        ),
        pod_spec=_pod_spec("apps/Deployment"),
        # Kueue reads the queue from a Job, Deployment or StatefulSet, and from the pods of a
        # ReplicaSet or ReplicationController (their template).
        queue_labels=(
            "object.kind in ['ReplicaSet', 'ReplicationController'] ? "
            f"({_labels('object.spec.template.metadata')}) : ({_labels('object.metadata')})"
        ),
        queue_labels_at=(
            "object.kind in ['ReplicaSet', 'ReplicationController'] ? "
            "'spec.template.metadata.labels' : 'metadata.labels'"
        ),
    ),
    Shape(
        name="cronjobs",
        resources=(("batch", ("cronjobs",)),),
        pod_spec=_pod_spec("batch/CronJob"),
        queue_labels=_labels("object.spec.jobTemplate.metadata"),
        queue_labels_at="'spec.jobTemplate.metadata.labels'",
    ),
)


def _annotation_list(key: str) -> str:
    value = f"variables.annotations[{_cel_string(key)}]"
    return f"{_cel_string(key)} in variables.annotations && {value} != '' ? {value}.split(',') : []"


def _variables(shape: Shape) -> list[dict[str, str]]:
    pool = _cel_string(NODE_POOL_LABEL)
    gpu = _cel_string(GPU_RESOURCE)
    mig = _cel_string(MIG_RESOURCE_PREFIX)
    affinity = "variables.spec.affinity.nodeAffinity"
    required = f"{affinity}.requiredDuringSchedulingIgnoredDuringExecution"
    preferred = f"{affinity}.preferredDuringSchedulingIgnoredDuringExecution"
    has_affinity = "has(variables.spec.affinity) && has(variables.spec.affinity.nodeAffinity)"

    def gpu_keys(section: str) -> str:
        return (
            f"(has(c.resources.{section}) && c.resources.{section}.exists(r, "
            f"(r == {gpu} || r.startsWith({mig})) && string(c.resources.{section}[r]) != '0'))"
        )

    def pools_in(expressions: str) -> str:
        return (
            f"{expressions}.all(e, e.key != {pool} || "
            "(e.operator == 'In' && e.values.all(v, v in variables.nodePools)))"
        )

    return [
        {"name": "spec", "expression": shape.pod_spec},
        {
            "name": "containers",
            "expression": "variables.spec.containers + (has(variables.spec.initContainers) ? "
            "variables.spec.initContainers : [])",
        },
        {
            "name": "requestsGpus",
            "expression": "variables.containers.exists(c, has(c.resources) && "
            f"({gpu_keys('limits')} || {gpu_keys('requests')}))",
        },
        {
            "name": "annotations",
            "expression": "has(namespaceObject.metadata.annotations) ? "
            "namespaceObject.metadata.annotations : {}",
        },
        {
            "name": "gpuQueue",
            "expression": f"{_cel_string(TENANT_GPU_QUEUE_ANNOTATION)} in variables.annotations ? "
            f"variables.annotations[{_cel_string(TENANT_GPU_QUEUE_ANNOTATION)}] : ''",
        },
        {
            "name": "priorityClasses",
            "expression": _annotation_list(TENANT_PRIORITY_CLASSES_ANNOTATION),
        },
        {"name": "nodePools", "expression": _annotation_list(TENANT_NODE_POOLS_ANNOTATION)},
        {"name": "queueLabels", "expression": shape.queue_labels},
        {
            "name": "queueName",
            "expression": f"{_cel_string(KUEUE_QUEUE_LABEL)} in variables.queueLabels ? "
            f"variables.queueLabels[{_cel_string(KUEUE_QUEUE_LABEL)}] : ''",
        },
        {
            "name": "workloadPriority",
            "expression": f"{_cel_string(KUEUE_PRIORITY_LABEL)} in variables.queueLabels ? "
            f"variables.queueLabels[{_cel_string(KUEUE_PRIORITY_LABEL)}] : ''",
        },
        {"name": "queueExempt", "expression": shape.queue_exempt},
        {
            "name": "poolsAllowed",
            "expression": (
                f"(!has(variables.spec.nodeSelector) || !({pool} in variables.spec.nodeSelector) "
                f"|| variables.spec.nodeSelector[{pool}] in variables.nodePools) && "
                f"(!({has_affinity}) || ("
                f"(!has({required}) || {required}.nodeSelectorTerms.all(t, "
                f"!has(t.matchExpressions) || {pools_in('t.matchExpressions')})) && "
                f"(!has({preferred}) || {preferred}.all(p, "
                f"!has(p.preference.matchExpressions) || "
                f"{pools_in('p.preference.matchExpressions')}))))"
            ),
        },
        {
            "name": "pinnedToPool",
            "expression": (
                f"(has(variables.spec.nodeSelector) && {pool} in variables.spec.nodeSelector) || "
                f"({has_affinity} && has({required}) && {required}.nodeSelectorTerms.all(t, "
                f"has(t.matchExpressions) && t.matchExpressions.exists(e, e.key == {pool} && "
                "e.operator == 'In')))"
            ),
        },
        {
            "name": "toleratesGpuTaint",
            "expression": (
                "has(variables.spec.tolerations) && variables.spec.tolerations.exists(t, "
                f"(!has(t.effect) || t.effect in ['', {_cel_string(GPU_TAINT_EFFECT)}]) && "
                "((has(t.operator) && t.operator == 'Exists' && "
                f"(!has(t.key) || t.key in ['', {_cel_string(GPU_TAINT_KEY)}])) || "
                f"(has(t.key) && t.key == {_cel_string(GPU_TAINT_KEY)} && "
                f"has(t.value) && t.value == {_cel_string(GPU_TAINT_VALUE)})))"
            ),
        },
    ]


# --- The rules ---------------------------------------------------------------------------------
@frozen
class Rule:
    """One validation: what must hold, and what a tenant is told when it does not."""

    name: str
    expression: str
    message: Message
    queueing: bool = False
    """Only when Kueue is on: without it there is no queue to name."""

    def validation(self) -> dict[str, str]:
        return {
            "expression": self.expression,
            "messageExpression": self.message.cel(),
            # Shown if the message itself cannot be rendered.
            "message": f"refused by the platform's {self.name} rule",
            "reason": "Forbidden",
        }


_POOLS = "variables.nodePools.join(', ')"
_CLASSES = "variables.priorityClasses.join(', ')"

RULES: Final[tuple[Rule, ...]] = (
    Rule(
        name="gpu-needs-a-queue",
        expression="!variables.requestsGpus || variables.queueExempt || variables.gpuQueue != ''",
        message=Message(
            "namespace {namespace} has no GPU queue, so its workloads may not request GPUs; "
            "the platform team gives a team a queue (ai-platform:teams[].queue)",
            {"namespace": _NAMESPACE},
        ),
        queueing=True,
    ),
    Rule(
        name="gpu-queued",
        expression=(
            "!variables.requestsGpus || variables.queueExempt || variables.gpuQueue == '' || "
            "object.kind == 'DaemonSet' || variables.queueName == variables.gpuQueue"
        ),
        message=Message(
            "GPU workloads in namespace {namespace} go through the team's GPU queue: label the "
            "{kind} {label}={queue} (in {where}); Kueue admits it within the team's GPU quota",
            {
                "namespace": _NAMESPACE,
                "kind": _KIND,
                "label": _cel_string(KUEUE_QUEUE_LABEL),
                "queue": "variables.gpuQueue",
                "where": "variables.queueLabelsAt",
            },
        ),
        queueing=True,
    ),
    Rule(
        name="gpu-daemonset",
        expression="object.kind != 'DaemonSet' || !variables.requestsGpus",
        message=Message(
            "a DaemonSet cannot be queued by Kueue, so it may not request GPUs in team "
            "namespace {namespace}; run GPU work as a queued Job or Deployment",
            {"namespace": _NAMESPACE},
        ),
        queueing=True,
    ),
    Rule(
        name="priority-class",
        expression=(
            "!has(variables.spec.priorityClassName) || variables.spec.priorityClassName == '' "
            "|| variables.spec.priorityClassName in variables.priorityClasses"
        ),
        message=Message(
            "priority class {class} is not one of the classes of namespace {namespace}: {allowed}",
            {
                "class": "variables.spec.priorityClassName",
                "namespace": _NAMESPACE,
                "allowed": _CLASSES,
            },
        ),
    ),
    Rule(
        name="workload-priority-class",
        expression=(
            "variables.workloadPriority == '' || variables.workloadPriority in "
            "variables.priorityClasses"
        ),
        message=Message(
            "Kueue priority class {class} ({label}) is not one of the classes of namespace "
            "{namespace}: {allowed}",
            {
                "class": "variables.workloadPriority",
                "label": _cel_string(KUEUE_PRIORITY_LABEL),
                "namespace": _NAMESPACE,
                "allowed": _CLASSES,
            },
        ),
    ),
    Rule(
        name="node-pool",
        expression="variables.poolsAllowed",
        message=Message(
            "pods of namespace {namespace} may select only its node pools ({pools}): "
            "{label} in nodeSelector, or node affinity on {label} with operator In and those "
            "values",
            {"namespace": _NAMESPACE, "pools": _POOLS, "label": _cel_string(NODE_POOL_LABEL)},
        ),
    ),
    Rule(
        name="node-name",
        expression=(
            "request.operation != 'CREATE' || !has(variables.spec.nodeName) || "
            "variables.spec.nodeName == ''"
        ),
        message=Message(
            "spec.nodeName skips the scheduler, the node pools and their taints; select one of "
            "the pools of namespace {namespace} ({pools}) instead",
            {"namespace": _NAMESPACE, "pools": _POOLS},
        ),
    ),
    Rule(
        name="gpu-toleration",
        expression=(
            "!variables.toleratesGpuTaint || variables.requestsGpus || variables.pinnedToPool"
        ),
        message=Message(
            "a pod that tolerates the {taint} taint but requests no GPU could land on any "
            "team's GPU nodes: request GPUs, or select one of the pools of namespace "
            "{namespace} ({pools})",
            {
                "taint": _cel_string(f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:{GPU_TAINT_EFFECT}"),
                "namespace": _NAMESPACE,
                "pools": _POOLS,
            },
        ),
    ),
)


def rule(name: str) -> Rule:
    return next(r for r in RULES if r.name == name)


def policy_name(shape: Shape) -> str:
    return f"{POLICY_PREFIX}{shape.name}"


def policy_spec(shape: Shape, queueing: bool) -> dict[str, Any]:
    """The ValidatingAdmissionPolicy of one shape: every rule, on create and on updates that
    change what the object runs (finalizer removal and status updates are never refused)."""
    labels_changed = (
        "(has(object.metadata.labels) ? object.metadata.labels : {}) != "
        "(has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})"
    )
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [group],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": list(resources),
                }
                for group, resources in shape.resources
            ]
        },
        "matchConditions": [
            {
                "name": "changes-what-it-runs",
                "expression": (
                    f"request.operation == 'CREATE' || {shape.spec_root} != "
                    f"old{shape.spec_root[0].upper()}{shape.spec_root[1:]} || {labels_changed}"
                ),
            }
        ],
        "variables": [
            *_variables(shape),
            {"name": "queueLabelsAt", "expression": shape.queue_labels_at},
        ],
        "validations": [r.validation() for r in RULES if queueing or not r.queueing],
    }


def binding_spec(name: str) -> dict[str, Any]:
    """Every namespace with the team label: a new team is guarded as soon as it exists."""
    return {
        "policyName": name,
        "validationActions": ["Deny"],
        "matchResources": {
            "namespaceSelector": {"matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]}
        },
    }


# --- Teams' monitors and rules (the Prometheus operator's kinds) ------------------------------
@frozen
class MonitorPolicy:
    """One kind a team may create that Prometheus acts on, and what it may not ask of it."""

    name: str
    resource: str
    rules: tuple[Rule, ...]
    variables: tuple[tuple[str, str], ...] = ()


def _own_namespace_only() -> Rule:
    selector = "object.spec.namespaceSelector"
    return Rule(
        name="monitor-namespace",
        expression=(
            f"!has({selector}) || ((!has({selector}.any) || !{selector}.any) && "
            f"(!has({selector}.matchNames) || {selector}.matchNames.all(n, n == {_NAMESPACE})))"
        ),
        message=Message(
            "a team's monitor scrapes its own namespace only: drop spec.namespaceSelector (or "
            "list only {namespace})",
            {"namespace": _NAMESPACE},
        ),
    )


_HONOR_LABELS = Rule(
    name="monitor-honor-labels",
    expression="variables.endpoints.all(e, !has(e.honorLabels) || !e.honorLabels)",
    message=Message(
        "honorLabels lets the scraped target overwrite the labels Prometheus sets (namespace, "
        "pod, job); drop it"
    ),
)
_FILES = Rule(
    name="monitor-files",
    expression=(
        "variables.endpoints.all(e, !has(e.bearerTokenFile) && (!has(e.tlsConfig) || "
        "(!has(e.tlsConfig.caFile) && !has(e.tlsConfig.certFile) && !has(e.tlsConfig.keyFile))))"
    ),
    message=Message(
        "a team's monitor may not point Prometheus at files of its own container "
        "(bearerTokenFile, tlsConfig caFile/certFile/keyFile): they hold Prometheus's token and "
        "keys, and would be sent to the target; use Secrets of {namespace} "
        "(authorization.credentials, tlsConfig.ca/cert/keySecret)",
        {"namespace": _NAMESPACE},
    ),
)
_PLATFORM_LABEL = Rule(
    name="rule-platform-label",
    expression=(
        f"!has(object.spec.groups) || object.spec.groups.all(g, "
        f"(!has(g.labels) || !({_cel_string(PLATFORM_ALERT_LABEL)} in g.labels)) && "
        f"(!has(g.rules) || g.rules.all(r, !has(r.labels) || "
        f"!({_cel_string(PLATFORM_ALERT_LABEL)} in r.labels))))"
    ),
    message=Message(
        "the label {label} marks the platform's alerts (they page its on-call and may "
        "silence others); a team's rules may not set it",
        {"label": _cel_string(PLATFORM_ALERT_LABEL)},
    ),
)
MONITOR_POLICIES: Final[tuple[MonitorPolicy, ...]] = (
    MonitorPolicy(
        "servicemonitors",
        "servicemonitors",
        (_own_namespace_only(), _FILES, _HONOR_LABELS),
        (("endpoints", "has(object.spec.endpoints) ? object.spec.endpoints : []"),),
    ),
    MonitorPolicy(
        "podmonitors",
        "podmonitors",
        (_own_namespace_only(), _HONOR_LABELS),
        (
            (
                "endpoints",
                "has(object.spec.podMetricsEndpoints) ? object.spec.podMetricsEndpoints : []",
            ),
        ),
    ),
    MonitorPolicy("prometheusrules", "prometheusrules", (_PLATFORM_LABEL,)),
)
"""Team admins may create these (their Role grants them); Prometheus acts on what they say."""


def monitor_policy_spec(policy: MonitorPolicy) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["monitoring.coreos.com"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": [policy.resource],
                }
            ]
        },
        "validations": [r.validation() for r in policy.rules],
    }
    if policy.variables:  # an empty list is dropped by the provider: render what it sends
        spec["variables"] = [{"name": n, "expression": e} for n, e in policy.variables]
    return spec


def monitor_rule(name: str) -> Rule:
    return next(r for p in MONITOR_POLICIES for r in p.rules if r.name == name)


@frozen
class TenantGuardrailsArgs:
    """Inputs of the tenant guardrails."""

    queueing: bool = True
    """Kueue is installed: GPU workloads must name the team's GPU queue."""


class TenantGuardrails(pulumi.ComponentResource):
    """One ValidatingAdmissionPolicy and its binding per shape of pod-carrying object."""

    def __init__(
        self, name: str, args: TenantGuardrailsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:tenancy:TenantGuardrails", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        for shape in SHAPES:
            policy = kube.ValidatingAdmissionPolicy(
                f"{name}-{shape.name}",
                metadata={"name": policy_name(shape), "labels": platform_labels()},
                spec=policy_spec(shape, args.queueing),
                opts=child,
            )
            kube.ValidatingAdmissionPolicyBinding(
                f"{name}-{shape.name}-binding",
                metadata={"name": policy_name(shape), "labels": platform_labels()},
                spec=binding_spec(policy_name(shape)),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[policy])
                ),
            )
        for monitors in MONITOR_POLICIES:
            name_ = f"{POLICY_PREFIX}{monitors.name}"
            policy = kube.ValidatingAdmissionPolicy(
                f"{name}-{monitors.name}",
                metadata={"name": name_, "labels": platform_labels()},
                spec=monitor_policy_spec(monitors),
                opts=child,
            )
            kube.ValidatingAdmissionPolicyBinding(
                f"{name}-{monitors.name}-binding",
                metadata={"name": name_, "labels": platform_labels()},
                spec=binding_spec(name_),
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=[policy])
                ),
            )
        self.policy_names = [policy_name(shape) for shape in SHAPES] + [
            f"{POLICY_PREFIX}{m.name}" for m in MONITOR_POLICIES
        ]
        self.register_outputs({"policies": self.policy_names})
