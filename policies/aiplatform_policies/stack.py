"""Tenancy policies: every team namespace is isolated (default-deny network policy), bounded
(a GPU quota) and attributable (team and app labels that agree with the namespace)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from .kube import (
    as_map,
    as_seq,
    as_str,
    dig,
    effective_namespace,
    is_kind,
    iter_strings,
    labels_of,
    metadata,
    name_of,
    parse_type,
)
from .podspec import WORKLOAD_KINDS, pod_view
from .registry import (
    NO_KNOBS,
    Category,
    Knobs,
    resource_policy,
    stack_policy,
    str_list,
    string_list_schema,
)
from .scope import in_namespaces, namespaces, system_namespaces_knob
from .shared import APP_NAME_LABEL, GPU_QUOTA_KEY, PLATFORM_ALERT_LABEL, TEAM_LABEL
from .shared import ESCAPE_HATCH_EXCEPTION_ANNOTATION as EXCEPTION_ANNOTATION

NAMESPACE: Final = "core/Namespace"
NETWORK_POLICY: Final = "networking.k8s.io/NetworkPolicy"
RESOURCE_QUOTA: Final = "core/ResourceQuota"


def team_namespaces(resources: list[PolicyResource]) -> Iterator[tuple[str, str, PolicyResource]]:
    """``(namespace name, team, resource)`` for every Namespace carrying the team label."""
    for resource in resources:
        if not is_kind(resource.resource_type, NAMESPACE):
            continue
        team = labels_of(metadata(resource.props)).get(TEAM_LABEL)
        if isinstance(team, str) and team:
            yield name_of(resource.props), team, resource


def _in_namespace(
    resources: list[PolicyResource], group_kind: str
) -> dict[str, list[PolicyResource]]:
    found: dict[str, list[PolicyResource]] = {}
    for resource in resources:
        if is_kind(resource.resource_type, group_kind):
            found.setdefault(effective_namespace(resource.props), []).append(resource)
    return found


# --- team-namespace-default-deny ------------------------------------------------------------------
def is_default_deny(props: Mapping[str, Any]) -> bool:
    """Selects every pod, isolates both directions, allows nothing."""
    spec = as_map(props.get("spec"))
    selector = spec.get("podSelector")
    if not isinstance(selector, Mapping):
        return False
    if as_map(selector.get("matchLabels")) or as_seq(selector.get("matchExpressions")):
        return False
    types = {t for t in as_seq(spec.get("policyTypes")) if isinstance(t, str)}
    if not {"Ingress", "Egress"} <= types:
        return False
    return not as_seq(spec.get("ingress")) and not as_seq(spec.get("egress"))


def _check_default_deny(args: StackValidationArgs, report: ReportViolation, _: None) -> None:
    policies = _in_namespace(args.resources, NETWORK_POLICY)
    for namespace, _team, resource in team_namespaces(args.resources):
        if not any(is_default_deny(p.props) for p in policies.get(namespace, ())):
            report(
                f'team namespace "{namespace}" has no default-deny NetworkPolicy (empty '
                "podSelector, policyTypes [Ingress, Egress], no ingress or egress rules)",
                resource.urn,
            )


team_namespace_default_deny = stack_policy(
    name="team-namespace-default-deny",
    description="Every team namespace has a default-deny NetworkPolicy for ingress and egress.",
    category=Category.TENANCY,
    severity=Severity.HIGH,
    remediation=(
        "Create, in each team namespace, a NetworkPolicy with podSelector: {}, policyTypes: "
        "[Ingress, Egress] and no rules; open the paths the team needs (DNS, its own pods, the "
        "platform's services) with additional policies. Without it every pod of the cluster can "
        "reach the team's model servers and data loaders."
    ),
    check=_check_default_deny,
    knobs=NO_KNOBS,
)


# --- team-namespace-gpu-quota ---------------------------------------------------------------------
def _check_quota(args: StackValidationArgs, report: ReportViolation, _: None) -> None:
    quotas = _in_namespace(args.resources, RESOURCE_QUOTA)
    for namespace, _team, resource in team_namespaces(args.resources):
        if not any(
            GPU_QUOTA_KEY in as_map(dig(q.props, "spec", "hard")) for q in quotas.get(namespace, ())
        ):
            report(
                f'team namespace "{namespace}" has no ResourceQuota with {GPU_QUOTA_KEY} in '
                "spec.hard; its GPU use would be unbounded",
                resource.urn,
            )


team_namespace_gpu_quota = stack_policy(
    name="team-namespace-gpu-quota",
    description=f"Every team namespace has a ResourceQuota that bounds {GPU_QUOTA_KEY}.",
    category=Category.TENANCY,
    severity=Severity.HIGH,
    remediation=(
        f"Create a ResourceQuota in each team namespace whose spec.hard sets {GPU_QUOTA_KEY} "
        "(0 for teams without GPUs). Kueue shares GPUs fairly only for queued work; the quota "
        "is the hard cap for everything else."
    ),
    check=_check_quota,
    knobs=NO_KNOBS,
)


# --- required-labels ------------------------------------------------------------------------------
class LabelRules(NamedTuple):
    labels: tuple[str, ...]
    system: frozenset[str]


def _missing(labels: Mapping[str, Any], required: tuple[str, ...]) -> list[str]:
    return [key for key in required if not as_str(labels.get(key))]


def _check_labels(args: ResourceValidationArgs, report: ReportViolation, cfg: LabelRules) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None or in_namespaces(args.props, cfg.system):
        return
    missing = _missing(view.object_labels, cfg.labels)
    if missing:
        report(
            f'{view.kind} "{view.name}" is missing labels {", ".join(missing)} in metadata.labels',
            None,
        )
    if view.kind != "Pod":
        missing = _missing(view.pod_labels, cfg.labels)
        if missing:
            report(
                f'{view.kind} "{view.name}" is missing labels {", ".join(missing)} in its pod '
                "template",
                None,
            )


required_labels = resource_policy(
    name="required-labels",
    description="Team workloads and their pods carry the team and app name labels.",
    category=Category.TENANCY,
    severity=Severity.LOW,
    remediation=(
        f"Set {TEAM_LABEL} (the owning team) and {APP_NAME_LABEL} on the workload's "
        "metadata.labels and on its pod template. Quotas, showback, dashboards and network "
        "policies select on them; unlabeled pods are invisible to cost reports."
    ),
    check=_check_labels,
    knobs=Knobs(
        {
            "labels": string_list_schema(
                "Labels every team workload and pod must carry.", (TEAM_LABEL, APP_NAME_LABEL)
            ),
            "systemNamespaces": system_namespaces_knob(),
        },
        lambda raw: LabelRules(str_list(raw.get("labels")), namespaces(raw, "systemNamespaces")),
    ),
    kinds=WORKLOAD_KINDS,
)


# --- team-label-matches-namespace -----------------------------------------------------------------
def _check_team_match(args: StackValidationArgs, report: ReportViolation, _: None) -> None:
    owners = {namespace: team for namespace, team, _r in team_namespaces(args.resources)}
    if not owners:
        return
    for resource in args.resources:
        token = parse_type(resource.resource_type)
        if token is None or token.group_kind == NAMESPACE:
            continue
        namespace = as_str(metadata(resource.props).get("namespace"))
        owner = owners.get(namespace) if namespace else None
        if owner is None:
            continue
        who = f'{token.kind} "{name_of(resource.props)}"'
        team = labels_of(metadata(resource.props)).get(TEAM_LABEL)
        if team is not None and team != owner:
            report(
                f'{who} in namespace "{namespace}" has {TEAM_LABEL}="{team}" but the namespace '
                f'belongs to team "{owner}"',
                resource.urn,
            )
        view = pod_view(resource.resource_type, resource.props)
        if view is not None and view.kind != "Pod":
            pod_team = view.pod_labels.get(TEAM_LABEL)
            if pod_team is not None and pod_team != owner:
                report(
                    f'pod template of {who} in namespace "{namespace}" has '
                    f'{TEAM_LABEL}="{pod_team}" but the namespace belongs to team "{owner}"',
                    resource.urn,
                )


team_label_matches_namespace = stack_policy(
    name="team-label-matches-namespace",
    description="Objects in a team namespace carry that team's label, not another team's.",
    category=Category.TENANCY,
    severity=Severity.MEDIUM,
    remediation=(
        f"Set {TEAM_LABEL} to the team that owns the namespace (the namespace's own "
        f"{TEAM_LABEL}). A wrong value bills GPU hours to another team and lets that team's "
        "network policies select the pods."
    ),
    check=_check_team_match,
    knobs=NO_KNOBS,
)


# --- escape-hatch-exceptions ----------------------------------------------------------------------
def object_ref(token: Any, props: Mapping[str, Any]) -> str:
    """``Kind namespace/name`` (``group/Kind`` outside the core group; ``Kind name`` when
    cluster-scoped): how the stack config and this policy's knob name one object."""
    kind = token.kind if token.group == "core" else f"{token.group}/{token.kind}"
    namespace = as_str(metadata(props).get("namespace"))
    return f"{kind} {namespace}/{name_of(props)}" if namespace else f"{kind} {name_of(props)}"


def _check_exceptions(
    args: ResourceValidationArgs, report: ReportViolation, approved: Mapping[str, frozenset[str]]
) -> None:
    token = parse_type(args.resource_type)
    if token is None:
        return
    exception = as_str(as_map(metadata(args.props).get("annotations")).get(EXCEPTION_ANNOTATION))
    if exception is None:
        return
    ref = object_ref(token, args.props)
    if ref not in approved.get(exception, frozenset()):
        report(
            f'{ref} is applied under escape-hatch exception "{exception}", which this stack\'s '
            f'policy config does not approve for it (approvedExceptions["{exception}"])',
            None,
        )


def _parse_approved(raw: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    value = raw.get("approvedExceptions")
    if not isinstance(value, Mapping):
        return {}
    return {str(name): frozenset(str_list(refs)) for name, refs in value.items()}


escape_hatch_exceptions = resource_policy(
    name="escape-hatch-exceptions",
    description=(
        "Objects applied under an escape-hatch exception (outside the allow-list of "
        "ai-platform:escapeHatch) are approved, one by one, by the stack's policy config."
    ),
    category=Category.TENANCY,
    severity=Severity.HIGH,
    remediation=(
        "An extraManifests object that is cluster-scoped (RBAC, webhooks, CRDs) or lives in a "
        "system or platform namespace needs a named exception in the stack file "
        "(ai-platform:escapeHatch.exceptions, which annotates it with "
        f"{EXCEPTION_ANNOTATION}) and, in a stack where this policy is mandatory, the same "
        "object under that exception in approvedExceptions of policies/config/<stack>.json: "
        "two reviewed changes. Prefer a namespaced object in a team namespace, which needs "
        "neither."
    ),
    check=_check_exceptions,
    knobs=Knobs(
        {
            "approvedExceptions": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "uniqueItems": True,
                },
                "default": {},
                "description": "Exception name → the objects it may admit, each as "
                "'<Kind> <namespace>/<name>' ('<group>/<Kind>' outside the core group; "
                "'<Kind> <name>' when cluster-scoped).",
            }
        },
        _parse_approved,
    ),
    kinds=None,
)


# --- tenant-monitors-confined ---------------------------------------------------------------------
_FILE_FIELDS: Final = ("caFile", "certFile", "keyFile")


def _monitor_problems(kind: str, props: Mapping[str, Any], namespace: str) -> Iterator[str]:
    spec = as_map(props.get("spec"))
    who = f'{kind} "{name_of(props)}"'
    if kind == "PrometheusRule":
        for group in as_seq(spec.get("groups")):
            group = as_map(group)
            labelled = [as_map(group.get("labels"))] + [
                as_map(as_map(rule).get("labels")) for rule in as_seq(group.get("rules"))
            ]
            if any(PLATFORM_ALERT_LABEL in labels for labels in labelled):
                yield (
                    f'{who} group "{as_str(group.get("name")) or "?"}" sets the label '
                    f"{PLATFORM_ALERT_LABEL}, which marks the platform's alerts (they page its "
                    "on-call and may silence others)"
                )
        return
    selector = as_map(spec.get("namespaceSelector"))
    names = set(iter_strings(selector.get("matchNames")))
    if selector.get("any") is True or names - {namespace}:
        yield f"{who} selects namespaces beyond its own (spec.namespaceSelector)"
    key = "endpoints" if kind == "ServiceMonitor" else "podMetricsEndpoints"
    for index, endpoint in enumerate(as_seq(spec.get(key)), start=1):
        endpoint = as_map(endpoint)
        files = [f for f in ("bearerTokenFile",) if endpoint.get(f)]
        files += [
            f"tlsConfig.{f}" for f in _FILE_FIELDS if as_map(endpoint.get("tlsConfig")).get(f)
        ]
        if files:
            yield (
                f"{who} endpoint {index} points Prometheus at its own files ({', '.join(files)}): "
                "they hold its token and keys, and would be sent to the target"
            )
        if endpoint.get("honorLabels") is True:
            yield (
                f"{who} endpoint {index} sets honorLabels: the target could overwrite the "
                "labels Prometheus sets (namespace, pod, job)"
            )


def _check_monitors(
    args: ResourceValidationArgs, report: ReportViolation, system: frozenset[str]
) -> None:
    token = parse_type(args.resource_type)
    namespace = effective_namespace(args.props)
    if token is None or namespace in system:
        return
    for message in _monitor_problems(token.kind, args.props, namespace):
        report(message, None)


tenant_monitors_confined = resource_policy(
    name="tenant-monitors-confined",
    description=(
        "Teams' ServiceMonitors, PodMonitors and PrometheusRules stay in their namespace: no "
        "other namespaces, no Prometheus files (its token), no honorLabels, no platform alert "
        "label."
    ),
    category=Category.TENANCY,
    severity=Severity.HIGH,
    remediation=(
        "Drop spec.namespaceSelector (a team's monitor scrapes its own namespace), take "
        "credentials from the namespace's Secrets (authorization.credentials, bearerTokenSecret, "
        "tlsConfig.ca/cert/keySecret) instead of bearerTokenFile or tlsConfig files, drop "
        f"honorLabels, and never set {PLATFORM_ALERT_LABEL} on a rule: the team's alerts route "
        "to the team's receivers. The cluster refuses the same (the tenant guardrails)."
    ),
    check=_check_monitors,
    knobs=Knobs(
        {"systemNamespaces": system_namespaces_knob()},
        lambda raw: namespaces(raw, "systemNamespaces"),
    ),
    kinds=(
        "monitoring.coreos.com/ServiceMonitor",
        "monitoring.coreos.com/PodMonitor",
        "monitoring.coreos.com/PrometheusRule",
    ),
)
