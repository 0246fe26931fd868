"""The team Redis: config -> ``TeamRedisArgs`` -> ``TeamRedis``, and its outputs."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.constants import KEDA_NAMESPACE
from components.images import REDIS_EXPORTER_IMAGE, REDIS_IMAGE, mirrored
from components.predicates import global_default
from components.team_redis_server import TeamRedis, TeamRedisArgs
from components.workloads import ComputeResources

from ..config.root import PlatformConfig
from ..outputs import TeamRedisOutputs
from ..sources import redis_name
from ..tenancy.config import TeamConfig


def team_redis_args(
    team: TeamConfig,
    config: PlatformConfig,
    after: Sequence[pulumi.Resource] = (),
    claim_namespace: pulumi.Input[str] | None = None,
) -> TeamRedisArgs:
    redis = team.redis
    default_class = next(sc.name for sc in config.storage.classes if sc.default)
    mirror = config.images.registry_mirror
    return TeamRedisArgs(
        team=team.name,
        namespace=team.namespace_name,
        storage_class=redis.storage_class or default_class,
        size=redis.size,
        resources=ComputeResources(cpu=redis.cpu, memory=redis.memory),
        maxmemory_bytes=redis.maxmemory_bytes(),
        eviction_policy=redis.eviction_policy,
        image=mirrored(REDIS_IMAGE, mirror),
        exporter_image=mirrored(REDIS_EXPORTER_IMAGE, mirror),
        priority_class=redis.priority_class or global_default(config.priority_classes),
        password_revision=redis.password_revision,
        protect=config.cluster.protects_data,
        service_monitor=config.monitoring.enabled,
        monitoring_namespace=config.monitoring.namespace,
        keda_namespace=KEDA_NAMESPACE if config.autoscaling.keda.enabled else None,
        depends_on=tuple(after),
        claim_namespace=claim_namespace,
    )


def team_redis(
    team: TeamConfig,
    config: PlatformConfig,
    after: Sequence[pulumi.Resource],
    claim_namespace: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> TeamRedis | None:
    """The team's Redis, after ``after`` (its namespace, the default LocalQueue Kueue admits it
    through); its claim waits for ``claim_namespace`` (the namespace's Output) only. None when
    the team has none."""
    if not team.redis.enabled:
        return None
    args = team_redis_args(team, config, after, claim_namespace)
    return TeamRedis(redis_name(team), args, opts)


def team_redis_outputs(component: TeamRedis | None) -> TeamRedisOutputs | None:
    if component is None:
        return None
    return TeamRedisOutputs(
        service=component.service_name, host=component.host, secret=component.secret_name
    )
