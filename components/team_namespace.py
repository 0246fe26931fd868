"""TeamNamespace: everything that makes a namespace a tenant of the platform."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

import pulumi

from . import kube
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
from .frozen import frozen
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


@frozen
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


@frozen
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


def namespace_metadata(args: TeamNamespaceArgs) -> dict[str, Any]:
    """The team's namespace: its labels (restricted Pod Security, enforced, audited and warned)
    and, with guardrails, the annotations the admission policies read."""
    return {
        "name": args.namespace,
        "labels": {
            **team_labels(args.team),
            **dict(args.labels),
            TEAM_PURPOSE_LABEL: args.purpose,
            PSA_ENFORCE_LABEL: PSA_RESTRICTED,
            PSA_ENFORCE_VERSION_LABEL: "latest",
            PSA_AUDIT_LABEL: PSA_RESTRICTED,
            PSA_WARN_LABEL: PSA_RESTRICTED,
        },
        **({"annotations": args.limits.annotations()} if args.limits else {}),
    }


def quota_spec(args: TeamNamespaceArgs) -> dict[str, Any]:
    """The team's ResourceQuota: requests, memory limits, GPUs and MIG slices, storage, counts."""
    quota = args.quota
    return {
        "hard": {
            "requests.cpu": quota.cpu,
            "requests.memory": quota.memory,
            "limits.memory": quota.memory,
            GPU_QUOTA_KEY: str(quota.gpus),
            "requests.storage": quota.storage,
            "persistentvolumeclaims": str(quota.persistent_volume_claims),
            "pods": str(quota.pods),
            **{
                f"requests.{MIG_RESOURCE_PREFIX}{profile}": str(count)
                for profile, count in quota.mig_slices.items()
            },
        }
    }


def limit_range_spec(args: TeamNamespaceArgs) -> dict[str, Any]:
    """Container requests and limits for pods that set none."""
    return {
        "limits": [
            {
                "type": "Container",
                "defaultRequest": dict(args.default_requests),
                "default": dict(args.default_limits),
            }
        ]
    }


def role_rules(read_only: bool) -> list[dict[str, Any]]:
    """A team role's rules: everything a team admin may manage, or the viewer's reading of it
    (quota usage and policies too, never secrets)."""
    verbs = _READ_ONLY if read_only else _ALL_VERBS
    rules = [
        {
            "apiGroups": list(api_groups),
            "resources": [r for r in resources if not read_only or r != "secrets"],
            "verbs": list(verbs),
        }
        for api_groups, resources in _ADMIN_RULES
    ]
    if read_only:
        rules.append(
            {
                "apiGroups": ["", "networking.k8s.io"],
                "resources": ["resourcequotas", "limitranges", "networkpolicies"],
                "verbs": list(_READ_ONLY),
            }
        )
    return rules


def role_binding_spec(role_name: str, groups: Sequence[str]) -> dict[str, Any]:
    """The RoleBinding of ``role_name`` to the identity provider's ``groups``."""
    return {
        "role_ref": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
        "subjects": [
            {"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}
            for group in groups
        ],
    }


def env_data(args: TeamNamespaceArgs) -> dict[str, str]:
    """The team's env ConfigMap: its variables and which environment it runs in."""
    return {**dict(args.env), TRAINING_ENV_VAR: args.environment}


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
        ns = args.namespace
        namespace = kube.Namespace(
            f"{name}-namespace",
            metadata=namespace_metadata(args),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete),
        )
        # Everything else lives in the namespace: wait for it.
        inner = pulumi.ResourceOptions(parent=self, depends_on=[namespace])

        def meta(object_name: str) -> dict[str, object]:
            return {"name": object_name, "namespace": ns, "labels": team_labels(args.team)}

        kube.ResourceQuota(
            f"{name}-quota", metadata=meta(TEAM_QUOTA_NAME), spec=quota_spec(args), opts=inner
        )
        if args.limits is not None:
            kube.ResourceQuota(
                f"{name}-priority-quota",
                metadata=meta(PRIORITY_QUOTA_NAME),
                spec=priority_quota_spec(args.limits),
                opts=inner,
            )
        kube.LimitRange(
            f"{name}-limits",
            metadata=meta(TEAM_LIMIT_RANGE_NAME),
            spec=limit_range_spec(args),
            opts=inner,
        )
        for role_name, read_only, groups in (
            (TEAM_ADMIN_ROLE, False, args.admin_groups),
            (TEAM_VIEWER_ROLE, True, args.viewer_groups),
        ):
            part = role_name.removeprefix("team-")
            role = kube.Role(
                f"{name}-{part}-role",
                metadata=meta(role_name),
                rules=role_rules(read_only),
                opts=inner,
            )
            if groups:
                kube.RoleBinding(
                    f"{name}-{part}-binding",
                    metadata=meta(role_name),
                    **role_binding_spec(role_name, groups),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace, role]),
                )
        kube.ServiceAccount(
            f"{name}-workload-sa",
            metadata=meta(TEAM_WORKLOAD_SERVICE_ACCOUNT),
            automount_service_account_token=False,
            opts=inner,
        )
        kube.ConfigMap(
            f"{name}-env", metadata=meta(TEAM_ENV_CONFIGMAP), data=env_data(args), opts=inner
        )
        for part, policy_name, spec in (
            ("default-deny", DEFAULT_DENY_POLICY_NAME, default_deny()),
            ("allow-dns", ALLOW_DNS_POLICY_NAME, allow_dns()),
        ):
            kube.NetworkPolicy(f"{name}-{part}", metadata=meta(policy_name), spec=spec, opts=inner)

        self.namespace = namespace.metadata.apply(lambda meta: meta.get("name") or ns)
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
