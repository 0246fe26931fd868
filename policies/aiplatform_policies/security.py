"""Security policies: the Kubernetes Pod Security Standards (checked at deploy time, before Pod
Security Admission rejects pods at run time), namespace hygiene, exposure, tokens and RBAC.

The PSS controls follow the "Pod Security Standards" page of kubernetes.io (v1.33). pss-baseline
checks the baseline profile; pss-restricted checks the controls restricted adds on top of it, so
a workload meets "restricted" when both pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from .kube import (
    DEFAULT_NAMESPACE,
    as_int,
    as_map,
    as_seq,
    as_str,
    dig,
    iter_strings,
    labels_of,
    metadata,
    name_of,
    parse_type,
)
from .podspec import POD_TEMPLATE_PATHS, WORKLOAD_KINDS, ContainerRef, PodView, pod_view
from .registry import (
    NO_KNOBS,
    Category,
    Knobs,
    bool_value,
    resource_policy,
    stack_policy,
    str_list,
    str_map,
    string_list_schema,
)
from .scope import (
    Component,
    components,
    exempt_component,
    exempt_components_knob,
    in_namespaces,
    namespaces,
    system_namespaces_knob,
)
from .shared import TEAM_ADMIN_ROLE, TEAM_VIEWER_ROLE

BASELINE_CAPABILITIES: Final = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS: Final = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
SELINUX_TYPES: Final = frozenset(
    {
        "",
        "container_t",
        "container_init_t",
        "container_kvm_t",
        "container_engine_t",
    }
)
RESTRICTED_VOLUME_TYPES: Final = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
APPARMOR_ANNOTATION_PREFIX: Final = "container.apparmor.security.beta.kubernetes.io/"


def _contexts(view: PodView) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(who, securityContext)`` for the pod and then every container."""
    yield "pod", view.pod_security_context
    for container in view.containers:
        yield container.label, container.security_context


def _baseline(view: PodView) -> Iterator[str]:
    spec = view.spec
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            yield f"pod sets {field}: true"
    for who, context in _contexts(view):
        if dig(context, "windowsOptions", "hostProcess") is True:
            yield f"{who} sets securityContext.windowsOptions.hostProcess: true"
        seccomp = dig(context, "seccompProfile", "type")
        if seccomp == "Unconfined":
            yield f"{who} sets securityContext.seccompProfile.type: Unconfined"
        apparmor = dig(context, "appArmorProfile", "type")
        if apparmor is not None and apparmor not in ("RuntimeDefault", "Localhost"):
            yield f"{who} sets securityContext.appArmorProfile.type: {apparmor}"
        selinux = as_map(context.get("seLinuxOptions"))
        selinux_type = selinux.get("type")
        if selinux_type is not None and selinux_type not in SELINUX_TYPES:
            yield f"{who} sets securityContext.seLinuxOptions.type: {selinux_type}"
        for field in ("user", "role"):
            if selinux.get(field) not in (None, ""):
                yield f"{who} sets securityContext.seLinuxOptions.{field}"
    for container in view.containers:
        context = container.security_context
        if context.get("privileged") is True:
            yield f"{container.label} sets securityContext.privileged: true"
        added = sorted(
            set(iter_strings(dig(context, "capabilities", "add"))) - BASELINE_CAPABILITIES
        )
        if added:
            yield f"{container.label} adds capabilities beyond the baseline set: {', '.join(added)}"
        proc_mount = context.get("procMount")
        if proc_mount not in (None, "Default"):
            yield f"{container.label} sets securityContext.procMount: {proc_mount}"
        for port in as_seq(container.spec.get("ports")):
            host_port = as_int(as_map(port).get("hostPort"))
            if host_port:
                yield f"{container.label} uses hostPort {host_port}"
    for key, value in view.pod_annotations.items():
        if (
            key.startswith(APPARMOR_ANNOTATION_PREFIX)
            and isinstance(value, str)
            and not (value == "runtime/default" or value.startswith("localhost/"))
        ):
            yield f"pod annotation {key} sets AppArmor profile {value}"
    for name, volume in view.volumes.items():
        if "hostPath" in volume:
            path = as_str(as_map(volume.get("hostPath")).get("path")) or ""
            yield f'volume "{name}" is a hostPath volume ("{path}")'
    for sysctl in as_seq(view.pod_security_context.get("sysctls")):
        sysctl_name = as_str(as_map(sysctl).get("name"))
        if sysctl_name is not None and sysctl_name not in SAFE_SYSCTLS:
            yield f"pod sets the unsafe sysctl {sysctl_name}"


def _restricted(view: PodView) -> Iterator[str]:
    for name, volume in view.volumes.items():
        source = next((str(k) for k in volume if k != "name"), "unknown")
        if source not in RESTRICTED_VOLUME_TYPES:
            yield f'volume "{name}" uses volume type {source}, which restricted pods may not use'
    pod_context = view.pod_security_context
    pod_non_root = pod_context.get("runAsNonRoot")
    if pod_non_root is False:
        yield "pod sets securityContext.runAsNonRoot: false"
    if as_int(pod_context.get("runAsUser")) == 0:
        yield "pod sets securityContext.runAsUser: 0"
    windows = dig(view.spec, "os", "name") == "windows"
    pod_seccomp = dig(pod_context, "seccompProfile", "type")
    for container in view.containers:
        yield from _restricted_container(container, pod_non_root is True, pod_seccomp, windows)


def _restricted_container(
    container: ContainerRef, pod_non_root: bool, pod_seccomp: Any, windows: bool
) -> Iterator[str]:
    context = container.security_context
    who = container.label
    non_root = context.get("runAsNonRoot")
    if non_root is False:
        yield f"{who} sets securityContext.runAsNonRoot: false"
    elif non_root is not True and not pod_non_root:
        yield f"{who} must set securityContext.runAsNonRoot: true (or the pod must)"
    if as_int(context.get("runAsUser")) == 0:
        yield f"{who} sets securityContext.runAsUser: 0"
    if windows:
        return  # the next controls do not apply to Windows pods
    if context.get("allowPrivilegeEscalation") is not False:
        yield f"{who} must set securityContext.allowPrivilegeEscalation: false"
    seccomp = dig(context, "seccompProfile", "type")
    if seccomp is None and pod_seccomp not in ("RuntimeDefault", "Localhost"):
        yield f"{who} must set seccompProfile.type RuntimeDefault or Localhost (or the pod must)"
    elif seccomp is not None and seccomp not in ("RuntimeDefault", "Localhost"):
        yield f"{who} sets securityContext.seccompProfile.type: {seccomp}"
    capabilities = as_map(context.get("capabilities"))
    if "ALL" not in set(iter_strings(capabilities.get("drop"))):
        yield f"{who} must drop ALL capabilities (securityContext.capabilities.drop: [ALL])"
    added = sorted(set(iter_strings(capabilities.get("add"))) - {"NET_BIND_SERVICE"})
    if added:
        yield f"{who} adds capabilities {', '.join(added)}; restricted allows only NET_BIND_SERVICE"


def _pss(profile: str) -> Any:
    rules = _baseline if profile == "baseline" else _restricted

    def check(
        args: ResourceValidationArgs, report: ReportViolation, exempt: tuple[Component, ...]
    ) -> None:
        view = pod_view(args.resource_type, args.props)
        if view is None or exempt_component(view, exempt) is not None:
            return
        for message in rules(view):
            report(message, None)

    return check


_EXEMPT_KNOBS: Final = Knobs(
    {"exemptComponents": exempt_components_knob()},
    lambda raw: components(raw, "exemptComponents"),
)

pss_baseline = resource_policy(
    name="pss-baseline",
    description="Workloads meet the Pod Security Standards baseline profile.",
    category=Category.SECURITY,
    severity=Severity.CRITICAL,
    remediation=(
        "Remove host namespaces (hostNetwork/hostPID/hostIPC), privileged mode, hostPath "
        "volumes, hostPorts, added capabilities outside the baseline set, custom SELinux "
        "users/roles/types, unmasked /proc, Unconfined seccomp/AppArmor and unsafe sysctls. "
        "Agents that truly need the host are known components (exemptComponents: their "
        "namespace and their service account or pod labels); no namespace is exempt as such."
    ),
    check=_pss("baseline"),
    knobs=_EXEMPT_KNOBS,
    kinds=WORKLOAD_KINDS,
    level=EnforcementLevel.MANDATORY,
)

pss_restricted = resource_policy(
    name="pss-restricted",
    description=(
        "Workloads meet the controls the Pod Security Standards restricted profile adds to "
        "baseline."
    ),
    category=Category.SECURITY,
    severity=Severity.HIGH,
    remediation=(
        "Set on the pod securityContext runAsNonRoot: true and seccompProfile: {type: "
        "RuntimeDefault}; on every container allowPrivilegeEscalation: false and capabilities: "
        "{drop: [ALL]} (add back only NET_BIND_SERVICE); use only configMap, csi, downwardAPI, "
        "emptyDir, ephemeral, persistentVolumeClaim, projected and secret volumes. Team "
        "namespaces enforce restricted Pod Security Admission, so violating pods never start."
    ),
    check=_pss("restricted"),
    knobs=_EXEMPT_KNOBS,
    kinds=WORKLOAD_KINDS,
)


# --- no-default-namespace -----------------------------------------------------------------------
NAMESPACED_KINDS: Final = frozenset(
    {
        *POD_TEMPLATE_PATHS,
        "core/Service",
        "core/ConfigMap",
        "core/Secret",
        "core/PersistentVolumeClaim",
        "core/ServiceAccount",
        "core/Endpoints",
        "core/LimitRange",
        "core/ResourceQuota",
        "rbac.authorization.k8s.io/Role",
        "rbac.authorization.k8s.io/RoleBinding",
        "networking.k8s.io/NetworkPolicy",
        "networking.k8s.io/Ingress",
        "policy/PodDisruptionBudget",
        "autoscaling/HorizontalPodAutoscaler",
        "discovery.k8s.io/EndpointSlice",
        "coordination.k8s.io/Lease",
        "kueue.x-k8s.io/LocalQueue",
    }
)
"""Kinds known to be namespaced: for these a missing namespace means the default namespace.
Other kinds are flagged only when they name ``default`` explicitly (CRDs may be cluster-scoped)."""
CLUSTER_SCOPED_CUSTOM_KINDS: Final = frozenset(
    {
        "kueue.x-k8s.io/ResourceFlavor",
        "kueue.x-k8s.io/ClusterQueue",
        "kueue.x-k8s.io/Cohort",
        "kueue.x-k8s.io/WorkloadPriorityClass",
        "kueue.x-k8s.io/Topology",
        "kueue.x-k8s.io/AdmissionCheck",
        "kueue.x-k8s.io/ProvisioningRequestConfig",
        "karpenter.sh/NodePool",
        "karpenter.sh/NodeClaim",
        "karpenter.k8s.aws/EC2NodeClass",
        "nvidia.com/ClusterPolicy",
        "nfd.k8s-sigs.io/NodeFeatureRule",
    }
)
"""Custom kinds whose CRDs are cluster-scoped. Until a cluster has the CRD (a chart of the same
update installs it), the Kubernetes provider cannot tell, assumes namespaced, and shows its
default namespace in the preview; it drops it again when it creates the object. So for these
``default`` is the provider's guess, not a placement."""


def _check_default_ns(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    token = parse_type(args.resource_type)
    if token is None or token.group_kind == "core/Namespace":
        return
    namespace = as_str(as_map(args.props.get("metadata")).get("namespace"))
    who = f'{token.kind} "{name_of(args.props)}"'
    if namespace == "default" and token.group_kind not in CLUSTER_SCOPED_CUSTOM_KINDS:
        report(f"{who} is in the default namespace; put it in a team or system namespace", None)
    elif not namespace and token.group_kind in NAMESPACED_KINDS:
        provider_ns = as_str(args.provider.props.get("namespace")) if args.provider else None
        if not provider_ns or provider_ns == "default":
            report(
                f"{who} sets no metadata.namespace, so it lands in the default namespace; "
                "set the namespace explicitly",
                None,
            )


no_default_namespace = resource_policy(
    name="no-default-namespace",
    description="Nothing is deployed to the default namespace.",
    category=Category.SECURITY,
    severity=Severity.MEDIUM,
    remediation=(
        "Set metadata.namespace to the owning team's namespace (or a platform namespace). The "
        "default namespace has no quota, no default-deny network policy and no Pod Security "
        "enforcement, and it is where kubectl users land by accident."
    ),
    check=_check_default_ns,
    knobs=NO_KNOBS,
    kinds=None,
)


# --- service-exposure -----------------------------------------------------------------------------
DEFAULT_INTERNAL_ANNOTATIONS: Final = {
    "service.beta.kubernetes.io/aws-load-balancer-internal": "true",
    "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
    "service.beta.kubernetes.io/azure-load-balancer-internal": "true",
    "networking.gke.io/load-balancer-type": "Internal",
    "cloud.google.com/load-balancer-type": "Internal",
    "service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
}


class ExposureRules(NamedTuple):
    allow_internal_lb: bool
    allow_node_ports: bool
    internal: dict[str, str]
    exempt: frozenset[str]


def _parse_exposure(raw: Mapping[str, Any]) -> ExposureRules:
    return ExposureRules(
        bool_value(raw.get("allowInternalLoadBalancers"), True),
        bool_value(raw.get("allowNodePorts"), False),
        str_map(raw.get("internalAnnotations")),
        frozenset(str_list(raw.get("exemptServices"))),
    )


def _check_exposure(
    args: ResourceValidationArgs, report: ReportViolation, cfg: ExposureRules
) -> None:
    meta = as_map(args.props.get("metadata"))
    name = name_of(args.props)
    namespace = as_str(meta.get("namespace")) or "default"
    if f"{namespace}/{name}" in cfg.exempt:
        return
    spec = as_map(args.props.get("spec"))
    who = f'Service "{name}"'
    kind = spec.get("type")
    if kind == "LoadBalancer":
        annotations = as_map(meta.get("annotations"))
        internal = any(
            isinstance(annotations.get(key), str) and annotations[key].lower() == value.lower()
            for key, value in cfg.internal.items()
        )
        if not cfg.allow_internal_lb:
            report(
                f"{who} is type LoadBalancer; load balancers are not allowed in this stack", None
            )
        elif not internal:
            options = ", ".join(f"{k}={v}" for k, v in sorted(cfg.internal.items()))
            report(
                f"{who} is type LoadBalancer without an internal load balancer annotation "
                f"(one of: {options})",
                None,
            )
    elif kind == "NodePort" and not cfg.allow_node_ports:
        report(f"{who} is type NodePort; node ports open the service on every node's address", None)
    external_ips = list(iter_strings(spec.get("externalIPs")))
    if external_ips:
        report(
            f"{who} sets externalIPs ({', '.join(external_ips)}); these bypass load balancer "
            "controls and can intercept cluster traffic",
            None,
        )


service_exposure = resource_policy(
    name="service-exposure",
    description=(
        "Services are not exposed outside the cluster: no NodePort, no public LoadBalancer, "
        "no externalIPs."
    ),
    category=Category.SECURITY,
    severity=Severity.HIGH,
    remediation=(
        "Use ClusterIP Services behind the platform's ingress. A LoadBalancer must carry one of "
        "the cloud's internal load balancer annotations (internalAnnotations); a public entry "
        "point that is reviewed and intended goes in exemptServices as <namespace>/<name>."
    ),
    check=_check_exposure,
    knobs=Knobs(
        {
            "allowInternalLoadBalancers": {
                "type": "boolean",
                "default": True,
                "description": "Allow LoadBalancer Services that carry an internal annotation.",
            },
            "allowNodePorts": {
                "type": "boolean",
                "default": False,
                "description": "Allow NodePort Services.",
            },
            "internalAnnotations": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "default": DEFAULT_INTERNAL_ANNOTATIONS,
                "description": "Annotation key → value (case-insensitive) that marks a load "
                "balancer as internal; any one suffices.",
            },
            "exemptServices": string_list_schema(
                "Reviewed public Services, as <namespace>/<name>.", ()
            ),
        },
        _parse_exposure,
    ),
    kinds=("core/Service",),
)


# --- sa-token-automount-disabled ------------------------------------------------------------------
class TokenRules(NamedTuple):
    system: frozenset[str]
    allowed_accounts: frozenset[str]


def _check_token(args: ResourceValidationArgs, report: ReportViolation, cfg: TokenRules) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None or in_namespaces(args.props, cfg.system):
        return
    account = as_str(view.spec.get("serviceAccountName")) or "default"
    if account in cfg.allowed_accounts:
        return
    if view.spec.get("automountServiceAccountToken") is not False:
        report(
            f"pod template does not set automountServiceAccountToken: false (service account "
            f'"{account}"); the token lets anything in the pod call the Kubernetes API',
            None,
        )


sa_token_automount_disabled = resource_policy(
    name="sa-token-automount-disabled",
    description=(
        "Team pods do not mount a Kubernetes API token unless their service account needs one."
    ),
    category=Category.SECURITY,
    severity=Severity.LOW,
    remediation=(
        "Set spec.automountServiceAccountToken: false on the pod template. Workloads that talk "
        "to the API (operators, launchers of distributed jobs) use a dedicated service account "
        "listed in allowedServiceAccounts."
    ),
    check=_check_token,
    knobs=Knobs(
        {
            "systemNamespaces": system_namespaces_knob(),
            "allowedServiceAccounts": string_list_schema(
                "Service account names whose pods may mount a token.", ()
            ),
        },
        lambda raw: TokenRules(
            namespaces(raw, "systemNamespaces"),
            frozenset(str_list(raw.get("allowedServiceAccounts"))),
        ),
    ),
    kinds=WORKLOAD_KINDS,
)


# --- rbac-no-cluster-admin ------------------------------------------------------------------------
RBAC_GROUP: Final = "rbac.authorization.k8s.io"
READ_VERBS: Final = frozenset({"get", "list", "watch", "*"})
POWER_VERBS: Final = frozenset({"bind", "escalate", "impersonate"})
POWER_RESOURCES: Final = frozenset(
    {"roles", "clusterroles", "users", "groups", "serviceaccounts", "uids", "userextras", "*"}
)
"""What bind, escalate and impersonate act on: a ``*`` verb on these grants them."""
AGGREGATE_LABEL_PREFIX: Final = f"{RBAC_GROUP}/aggregate-to-"
_POWER: Final = "verb:"
EVERYTHING: Final = "every verb on every resource (cluster-admin)"
SECRETS: Final = "reading Secrets"
WILDCARD: Final = "every resource of an API group (resources: ['*'])"
BUILTIN_ADMIN: Final = (
    "the built-in admin/edit role (Secrets, pods/exec, impersonating service accounts)"
)
BUILTIN_EFFECTS: Final[dict[str, frozenset[str]]] = {
    "cluster-admin": frozenset({EVERYTHING}),
    "admin": frozenset({BUILTIN_ADMIN}),
    "edit": frozenset({BUILTIN_ADMIN}),
}
"""What the built-in ClusterRoles grant (rbac defaults; ``admin`` and ``edit`` aggregate what is
labelled into them), for bindings to roles the stack does not define."""


def rule_effects(rule: Mapping[str, Any]) -> set[str]:
    """What one PolicyRule lets its holder do, of what the platform never grants a tenant."""
    groups = set(iter_strings(rule.get("apiGroups")))
    resources = {r.split("/")[0] if r != "*" else r for r in iter_strings(rule.get("resources"))}
    verbs = set(iter_strings(rule.get("verbs")))
    found: set[str] = set()
    if "*" in verbs and "*" in resources and "*" in groups:
        return {EVERYTHING}
    if "*" in resources:
        found.add(WILDCARD)
    powers = set(verbs & POWER_VERBS)
    if "*" in verbs and resources & POWER_RESOURCES:
        powers = set(POWER_VERBS)
    found.update(f"{_POWER}{verb}" for verb in powers)
    if verbs & READ_VERBS and resources & {"secrets", "*"} and groups & {"", "*"}:
        found.add(SECRETS)
    return found


def role_effects(props: Mapping[str, Any]) -> set[str]:
    """The effects of all of a role's rules; the power verbs said once, together."""
    found = {effect for rule in as_seq(props.get("rules")) for effect in rule_effects(as_map(rule))}
    powers = sorted(e.removeprefix(_POWER) for e in found if e.startswith(_POWER))
    found = {e for e in found if not e.startswith(_POWER)}
    if powers:
        found.add(f"the {'/'.join(powers)} verb{'s' if len(powers) > 1 else ''}")
    return found


class RbacRules(NamedTuple):
    allowed: frozenset[str]


def _subjects(props: Mapping[str, Any]) -> str:
    items = []
    for subject in as_seq(props.get("subjects")):
        subject = as_map(subject)
        kind = as_str(subject.get("kind")) or "?"
        name = as_str(subject.get("name")) or "?"
        namespace = as_str(subject.get("namespace"))
        items.append(f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}")
    return ", ".join(items) or "no subjects"


def _team_subjects(resources: list[PolicyResource]) -> dict[tuple[str, str], str]:
    """``(kind, name)`` of each team's groups and service accounts → the team's namespace, read
    from the platform's own bindings of the team-admin and team-viewer Roles."""
    owners: dict[tuple[str, str], str] = {}
    for resource in resources:
        token = parse_type(resource.resource_type)
        if token is None or token.group_kind != f"{RBAC_GROUP}/RoleBinding":
            continue
        role = as_map(resource.props.get("roleRef"))
        namespace = as_str(metadata(resource.props).get("namespace")) or ""
        if role.get("kind") != "Role" or role.get("name") not in (
            TEAM_ADMIN_ROLE,
            TEAM_VIEWER_ROLE,
        ):
            continue
        if name_of(resource.props) != role.get("name"):
            continue  # the platform names its bindings after the role; others prove nothing
        for subject in as_seq(resource.props.get("subjects")):
            subject = as_map(subject)
            if subject.get("kind") == "Group" and as_str(subject.get("name")):
                owners.setdefault(("Group", str(subject["name"])), namespace)
        owners.setdefault(("Namespace", namespace), namespace)
    return owners


def _foreign(
    props: Mapping[str, Any], namespace: str, owners: Mapping[tuple[str, str], str]
) -> list[str]:
    """Subjects of a binding in ``namespace`` that belong to another team."""
    found = []
    for subject in as_seq(props.get("subjects")):
        subject = as_map(subject)
        kind, name = as_str(subject.get("kind")), as_str(subject.get("name")) or ""
        home = owners.get(("Group", name)) if kind == "Group" else None
        if kind == "ServiceAccount":
            sa_namespace = as_str(subject.get("namespace")) or namespace
            home = sa_namespace if ("Namespace", sa_namespace) in owners else None
        if home is not None and home != namespace:
            found.append(f'{kind} {name} of team namespace "{home}"')
    return found


def _check_rbac(args: StackValidationArgs, report: ReportViolation, cfg: RbacRules) -> None:
    roles: dict[tuple[str, str], set[str]] = {}
    objects: list[tuple[PolicyResource, Any]] = []
    for resource in args.resources:
        token = parse_type(resource.resource_type)
        if token is None or token.group != RBAC_GROUP:
            continue
        objects.append((resource, token))
        if token.kind in ("Role", "ClusterRole"):
            home = as_str(metadata(resource.props).get("namespace")) or ""
            roles[(token.kind, f"{home}/{name_of(resource.props)}")] = role_effects(resource.props)
    owners = _team_subjects(args.resources)
    for resource, token in objects:
        props = resource.props
        name = name_of(props)
        namespace = as_str(metadata(props).get("namespace"))
        if (f"{namespace}/{name}" if namespace else name) in cfg.allowed:
            continue
        if token.kind in ("Role", "ClusterRole"):
            effects = roles[(token.kind, f"{namespace or ''}/{name}")] - {SECRETS}
            labels = labels_of(metadata(props))
            aggregated = sorted(
                key.removeprefix(AGGREGATE_LABEL_PREFIX)
                for key, value in labels.items()
                if key.startswith(AGGREGATE_LABEL_PREFIX) and value == "true"
            )
            if aggregated and SECRETS in roles[(token.kind, f"/{name}")]:
                effects.add(SECRETS)
            if effects:
                into = (
                    f" (aggregated into the built-in {', '.join(aggregated)})" if aggregated else ""
                )
                report(
                    f'{token.kind} "{name}"{into} grants {", ".join(sorted(effects))}',
                    resource.urn,
                )
            continue
        if token.kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ref = as_map(props.get("roleRef"))
        ref_kind, ref_name = as_str(ref.get("kind")) or "", as_str(ref.get("name")) or ""
        key = (ref_kind, f"{(namespace or '') if ref_kind == 'Role' else ''}/{ref_name}")
        if key in roles:
            # What else the role grants is reported where it is defined.
            effects = roles[key] & {SECRETS}
        elif ref_kind == "ClusterRole":
            effects = set(BUILTIN_EFFECTS.get(ref_name, frozenset()))
        else:
            effects = set()
        if not effects:
            continue
        who = f'{token.kind} "{name}" grants {ref_name}'
        if token.kind == "ClusterRoleBinding":
            report(
                f"{who} cluster-wide to {_subjects(props)}: {', '.join(sorted(effects))}",
                resource.urn,
            )
            continue
        where = f' in namespace "{namespace}"'
        severe = effects - {SECRETS, BUILTIN_ADMIN}
        if severe:
            report(f"{who}{where} to {_subjects(props)}: {', '.join(sorted(severe))}", resource.urn)
            continue
        foreign = _foreign(props, namespace or DEFAULT_NAMESPACE, owners)
        if foreign:
            report(
                f"{who}{where} to {', '.join(foreign)}: {', '.join(sorted(effects))} in another "
                "team's namespace",
                resource.urn,
            )


rbac_no_cluster_admin = stack_policy(
    name="rbac-no-cluster-admin",
    description=(
        "No RBAC object grants cluster-admin's powers, judged by effect: every verb on "
        "everything, bind/escalate/impersonate, wildcard resources, Secrets cluster-wide, the "
        "built-in admin/edit roles cluster-wide or in another team's namespace."
    ),
    category=Category.SECURITY,
    severity=Severity.CRITICAL,
    remediation=(
        "Bind teams to the namespaced admin/viewer Roles the platform creates. A Role or "
        "ClusterRole may not grant the bind, escalate or impersonate verbs, every resource of a "
        "group (resources: ['*']) or everything; a ClusterRole labelled to aggregate into the "
        "built-in roles may not read Secrets either (every holder of view/edit/admin would). A "
        "ClusterRoleBinding may not grant a role that reads Secrets, aggregates the built-in "
        "admin/edit, or worse; a RoleBinding may grant admin/edit only to the namespace's own "
        "team. A break-glass binding that is reviewed and intended goes in allowedBindings "
        "(name, or <namespace>/<name> for namespaced objects)."
    ),
    check=_check_rbac,
    knobs=Knobs(
        {
            "allowedBindings": string_list_schema(
                "Reviewed exceptions: names of bindings or roles (<namespace>/<name> for "
                "namespaced ones).",
                (),
            ),
        },
        lambda raw: RbacRules(frozenset(str_list(raw.get("allowedBindings")))),
    ),
    level=EnforcementLevel.MANDATORY,
)
