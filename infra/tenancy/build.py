"""Teams: config -> ``TeamNamespaceArgs`` (and the guardrails' args) -> components."""

from __future__ import annotations

import pulumi

from components.constants import TEAM_LOCAL_QUEUE_NAME
from components.guardrails import TenantGuardrails, TenantGuardrailsArgs, TenantLimits
from components.team_namespace import TeamNamespace, TeamNamespaceArgs, TeamQuotaSpec

from ..config.root import PlatformConfig
from .config import TeamConfig


def tenant_limits(team: TeamConfig, config: PlatformConfig) -> TenantLimits:
    """What a team namespace allows: its priority classes, with Kueue the pools of its queue and
    that queue (without Kueue, any pool and no queue to name), and the teams that may reach it."""
    classes = team.priority_classes
    if classes is None:
        classes = [pc.name for pc in config.priority_classes]
    namespaces = {other.name: other.namespace_name for other in config.teams}
    callers = [namespaces[name] for name in team.reachable_from]
    if not config.queueing.enabled:
        return TenantLimits(classes, [pool.name for pool in config.node_pools], None, callers)
    if team.queue is None:
        return TenantLimits(classes, (), None, callers)
    pools = list(dict.fromkeys(entry.pool for entry in team.queue.pools))
    return TenantLimits(classes, pools, TEAM_LOCAL_QUEUE_NAME, callers)


def team_args(team: TeamConfig, config: PlatformConfig) -> TeamNamespaceArgs:
    return TeamNamespaceArgs(
        team=team.name,
        namespace=team.namespace_name,
        environment=config.cluster.environment,
        purpose=team.purpose,
        quota=TeamQuotaSpec(
            cpu=team.quota.cpu,
            memory=team.quota.memory,
            gpus=team.quota.gpus,
            storage=team.quota.storage,
            persistent_volume_claims=team.quota.persistent_volume_claims,
            pods=team.quota.pods,
            mig_slices=dict(team.quota.mig_slices),
        ),
        default_requests=team.container_defaults.requests.model_dump(),
        default_limits=team.container_defaults.limits.model_dump(),
        admin_groups=tuple(team.admin_groups),
        viewer_groups=tuple(team.viewer_groups),
        env=dict(team.env),
        labels=dict(team.labels),
        retain_on_delete=config.cluster.protects_data,
        limits=tenant_limits(team, config),
    )


def guardrails(config: PlatformConfig, opts: pulumi.ResourceOptions) -> TenantGuardrails:
    """The admission policies every team namespace is held to."""
    return TenantGuardrails(
        "guardrails", TenantGuardrailsArgs(queueing=config.queueing.enabled), opts
    )


def team_namespace(
    team: TeamConfig, config: PlatformConfig, opts: pulumi.ResourceOptions
) -> TeamNamespace:
    """The team's namespace and everything in it (quota, limits, policies, identity)."""
    return TeamNamespace(team.name, team_args(team, config), opts)
