"""TeamNamespace: everything that makes a namespace a tenant of the platform."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi
import pulumi_kubernetes as k8s

from .constants import (
    ALLOW_DNS_POLICY_NAME,
    DEFAULT_CONTAINER_LIMITS,
    DEFAULT_CONTAINER_REQUESTS,
    DEFAULT_DENY_POLICY_NAME,
    GPU_QUOTA_KEY,
    MIG_RESOURCE_PREFIX,
    PSA_AUDIT_LABEL,
    PSA_ENFORCE_LABEL,
    PSA_ENFORCE_VERSION_LABEL,
    PSA_RESTRICTED,
    PSA_WARN_LABEL,
    TEAM_ADMIN_ROLE,
    TEAM_ENV_CONFIGMAP,
    TEAM_LIMIT_RANGE_NAME,
    TEAM_PURPOSE_LABEL,
    TEAM_QUOTA_NAME,
    TEAM_VIEWER_ROLE,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
    TRAINING_ENV_VAR,
)
from .guardrails import PRIORITY_QUOTA_NAME, TenantLimits, priority_quota_spec
from .labels import team_labels
from .network_rules import allow_dns, default_deny

# What a team admin may manage. Quotas, limit ranges, network policies and RBAC are absent on
# purpose: a tenant must not be able to lift its own limits or isolation.
_ADMIN_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("",),
        (
            "pods",
            "pods/log",
            "pods/exec",
            "pods/portforward",
            "services",
            "configmaps",
            "secrets",
            "persistentvolumeclaims",
            "serviceaccounts",
            "events",
        ),
    ),
    (("apps",), ("deployments", "statefulsets", "replicasets", "daemonsets")),
    (("batch",), ("jobs", "cronjobs")),
    (("autoscaling",), ("horizontalpodautoscalers",)),
    (("policy",), ("poddisruptionbudgets",)),
    (("kueue.x-k8s.io",), ("workloads", "localqueues")),
    (("monitoring.coreos.com",), ("servicemonitors", "podmonitors", "prometheusrules")),
)
_READ_ONLY = ("get", "list", "watch")
_ALL_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class TeamQuotaSpec:
    """Hard limits for the team's ResourceQuota (Kubernetes quantities)."""

    cpu: str
    """Sum of CPU requests."""
    memory: str
    """Sum of memory requests and of memory limits."""
    gpus: int
    """Sum of ``nvidia.com/gpu`` requests."""
    storage: str = "1Ti"
    """Sum of PVC sizes."""
    persistent_volume_claims: int = 20
    pods: int = 200
    mig_slices: Mapping[str, int] = field(default_factory=dict)
    """MIG profile → slices: ``requests.nvidia.com/mig-<profile>`` for mixed-strategy MIG pools."""


@dataclass(frozen=True)
class TeamNamespaceArgs:
    """Inputs of a TeamNamespace. Defaults are the platform's seed values."""

    team: str
    """Team name; the value of the team label."""
    namespace: str
    """Namespace name."""
    environment: str
    """``dev``/``staging``/``prod``; exported to workloads as ``TRAINING_ENV``."""
    quota: TeamQuotaSpec
    purpose: str = "training"
    """``training``, ``serving`` or ``platform``."""
    default_requests: Mapping[str, str] = field(
        default_factory=lambda: dict(DEFAULT_CONTAINER_REQUESTS)
    )
    """LimitRange default requests: 2 CPU / 8Gi."""
    default_limits: Mapping[str, str] = field(
        default_factory=lambda: dict(DEFAULT_CONTAINER_LIMITS)
    )
    """LimitRange default limits: 4 CPU / 16Gi."""
    admin_groups: Sequence[str] = ()
    viewer_groups: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the team's workloads."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Extra namespace labels."""
    retain_on_delete: bool = False
    """Keep the namespace (and all it holds) in the cluster when the stack drops it (prod)."""
    limits: TenantLimits | None = None
    """What the in-cluster guardrails let the namespace use (annotations on the Namespace, and
    a ResourceQuota for the priority classes); None: no guardrails (the library default)."""


class TeamNamespace(pulumi.ComponentResource):
    """A namespace with quota, defaults, RBAC, a workload identity and default-deny networking."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace: pulumi.Output[str]
        service_account_name: str
        env_config_map_name: str

    def __init__(
        self, name: str, args: TeamNamespaceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:tenancy:TeamNamespace", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = team_labels(args.team)
        ns = args.namespace

        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata={
                "name": ns,
                "labels": {
                    **labels,
                    **dict(args.labels),
                    TEAM_PURPOSE_LABEL: args.purpose,
                    PSA_ENFORCE_LABEL: PSA_RESTRICTED,
                    PSA_ENFORCE_VERSION_LABEL: "latest",
                    PSA_AUDIT_LABEL: PSA_RESTRICTED,
                    PSA_WARN_LABEL: PSA_RESTRICTED,
                },
                **({"annotations": args.limits.annotations()} if args.limits else {}),
            },
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete),
        )
        # Everything else lives in the namespace: wait for it.
        inner = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))

        def meta(object_name: str) -> dict[str, object]:
            return {"name": object_name, "namespace": ns, "labels": labels}

        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=meta(TEAM_QUOTA_NAME),
            spec={
                "hard": {
                    "requests.cpu": args.quota.cpu,
                    "requests.memory": args.quota.memory,
                    "limits.memory": args.quota.memory,
                    GPU_QUOTA_KEY: str(args.quota.gpus),
                    "requests.storage": args.quota.storage,
                    "persistentvolumeclaims": str(args.quota.persistent_volume_claims),
                    "pods": str(args.quota.pods),
                    **{
                        f"requests.{MIG_RESOURCE_PREFIX}{profile}": str(count)
                        for profile, count in args.quota.mig_slices.items()
                    },
                }
            },
            opts=inner,
        )
        if args.limits is not None:
            k8s.core.v1.ResourceQuota(
                f"{name}-priority-quota",
                metadata=meta(PRIORITY_QUOTA_NAME),
                spec=priority_quota_spec(args.limits),
                opts=inner,
            )
        k8s.core.v1.LimitRange(
            f"{name}-limits",
            metadata=meta(TEAM_LIMIT_RANGE_NAME),
            spec={
                "limits": [
                    {
                        "type": "Container",
                        "defaultRequest": dict(args.default_requests),
                        "default": dict(args.default_limits),
                    }
                ]
            },
            opts=inner,
        )
        for role_name, verbs, groups in (
            (TEAM_ADMIN_ROLE, _ALL_VERBS, args.admin_groups),
            (TEAM_VIEWER_ROLE, _READ_ONLY, args.viewer_groups),
        ):
            part = role_name.removeprefix("team-")
            rules = [
                {
                    "apiGroups": list(api_groups),
                    "resources": [r for r in resources if verbs is _ALL_VERBS or r != "secrets"],
                    "verbs": list(verbs),
                }
                for api_groups, resources in _ADMIN_RULES
            ]
            if verbs is _READ_ONLY:
                # Viewers see quota usage and policies but change nothing, and read no secrets.
                rules.append(
                    {
                        "apiGroups": ["", "networking.k8s.io"],
                        "resources": ["resourcequotas", "limitranges", "networkpolicies"],
                        "verbs": list(_READ_ONLY),
                    }
                )
            role = k8s.rbac.v1.Role(
                f"{name}-{part}-role", metadata=meta(role_name), rules=rules, opts=inner
            )
            if groups:
                k8s.rbac.v1.RoleBinding(
                    f"{name}-{part}-binding",
                    metadata=meta(role_name),
                    role_ref={
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Role",
                        "name": role_name,
                    },
                    subjects=[
                        {"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}
                        for group in groups
                    ],
                    opts=pulumi.ResourceOptions.merge(
                        inner, pulumi.ResourceOptions(depends_on=[role])
                    ),
                )

        k8s.core.v1.ServiceAccount(
            f"{name}-workload-sa",
            metadata=meta(TEAM_WORKLOAD_SERVICE_ACCOUNT),
            automount_service_account_token=False,
            opts=inner,
        )
        k8s.core.v1.ConfigMap(
            f"{name}-env",
            metadata=meta(TEAM_ENV_CONFIGMAP),
            data={**dict(args.env), TRAINING_ENV_VAR: args.environment},
            opts=inner,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-default-deny",
            metadata=meta(DEFAULT_DENY_POLICY_NAME),
            spec=default_deny(),
            opts=inner,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-allow-dns",
            metadata=meta(ALLOW_DNS_POLICY_NAME),
            spec=allow_dns(),
            opts=inner,
        )

        self.namespace = namespace.metadata.apply(lambda meta: meta.name or ns)
        self.namespace_name = ns
        self.service_account_name = TEAM_WORKLOAD_SERVICE_ACCOUNT
        self.env_config_map_name = TEAM_ENV_CONFIGMAP
        self.register_outputs(
            {
                "namespace": self.namespace,
                "serviceAccountName": self.service_account_name,
                "envConfigMapName": self.env_config_map_name,
            }
        )
