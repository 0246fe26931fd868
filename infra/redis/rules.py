"""Cross-field rules of the team Redis: its storage class, memory, priority class and the
team's quotas and default queue it runs in, and the workloads that need one.

Each reads only what ``RedisPlatform`` declares.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from components.predicates import global_default
from components.team_redis import REDIS_URL_ENV, STATUS_CHANNEL_ENV
from components.team_redis_server import EXPORTER_RESOURCES

from ..config.errors import ConfigIssue, entry_ref
from ..config.partial import by_name, parsed
from ..config.quantity import parse_quantity, show_amount
from ..config.views import (
    HasPriorityClasses,
    HasQueueing,
    HasStorage,
    HasTeams,
    HasWorkloads,
)
from ..queueing.config import default_queue_capacity
from ..tenancy.config import TeamConfig
from .config import MAX_MAXMEMORY_SHARE, TeamRedisConfig


class RedisPlatform(HasTeams, HasStorage, HasPriorityClasses, HasQueueing, HasWorkloads, Protocol):
    """What the team Redis rules read."""


def _redis_teams(config: RedisPlatform) -> Iterator[tuple[int, TeamConfig, TeamRedisConfig]]:
    for index, team in parsed(config.teams):
        if team.redis.enabled:
            yield index, team, team.redis


def redis_pod_demand(redis: TeamRedisConfig) -> dict[str, Decimal]:
    """CPU and memory (requests equal limits) of the server pod: server plus exporter."""
    return {
        "cpu": parse_quantity(redis.cpu) + parse_quantity(EXPORTER_RESOURCES.cpu),
        "memory": parse_quantity(redis.memory) + parse_quantity(EXPORTER_RESOURCES.memory),
    }


def _queue_takes(team: TeamConfig, resource: str) -> Decimal:
    """The most the team's GPU queue may admit of ``resource`` (nominal plus borrowing)."""
    total = Decimal(0)
    for entry in team.queue.pools if team.queue else []:
        borrowed = getattr(entry.borrowing_limit, resource)
        total += parse_quantity(getattr(entry, resource)) + parse_quantity(borrowed or "0")
    return total


def redis_storage_class_exists(config: RedisPlatform) -> Iterator[ConfigIssue]:
    classes = {sc.name for sc in config.storage.classes}
    for index, _, redis in _redis_teams(config):
        if redis.storage_class is not None and redis.storage_class not in classes:
            yield ConfigIssue(
                ("teams", index, "redis", "storageClass"),
                f"unknown storage class {redis.storage_class!r}; defined: "
                f"{', '.join(sorted(classes))}",
            )


def redis_maxmemory_fits_its_limit(config: RedisPlatform) -> Iterator[ConfigIssue]:
    """``maxmemory`` 0 means no limit to Redis: the kernel's OOM kill would be the limit."""
    for index, _, redis in _redis_teams(config):
        if redis.maxmemory is None:
            continue
        path = ("teams", index, "redis", "maxmemory")
        limit = parse_quantity(redis.memory)
        wanted = parse_quantity(redis.maxmemory)
        if wanted < 1024 * 1024:
            yield ConfigIssue(
                path,
                f"must be at least 1Mi (0 would let Redis grow into its OOM kill), got "
                f"{redis.maxmemory}",
            )
        elif wanted > limit * MAX_MAXMEMORY_SHARE:
            mebibyte = Decimal(1024 * 1024)
            most = show_amount("memory", limit * MAX_MAXMEMORY_SHARE // mebibyte * mebibyte)
            yield ConfigIssue(
                path,
                f"{redis.maxmemory} leaves Redis too little of its memory limit of "
                f"{redis.memory}: at most {most} (90%); client and pub/sub buffers and the "
                "append-only file's rewrite live outside maxmemory, and at the limit the "
                "kernel kills the server",
            )


def redis_priority_class_allowed(config: RedisPlatform) -> Iterator[ConfigIssue]:
    known = by_name(config.priority_classes)
    for index, team, redis in _redis_teams(config):
        name = redis.priority_class or global_default(config.priority_classes)
        if name is None:
            continue  # no global default: reported by one_default_priority_class
        path = ("teams", index, "redis", "priorityClass")
        if name not in known:
            yield ConfigIssue(
                path, f"unknown priority class {name!r}; defined: {', '.join(known.names())}"
            )
            continue
        allowed = team.priority_classes
        if allowed is None or name in allowed or not all(pc in known for pc in allowed):
            continue  # a team list naming unknown classes is reported on the team
        what = "the default priority class" if redis.priority_class is None else "priority class"
        yield ConfigIssue(
            path,
            f"{what} {name!r} is not allowed for team {team.name!r} (the cluster would refuse "
            f"the server's pod); set one of: {', '.join(allowed)}",
        )


def redis_fits_team_quota(config: RedisPlatform) -> Iterator[ConfigIssue]:
    """The server's volume on top of the team's volumes, and its pod within the namespace
    quota and, with Kueue, within what the team's default queue admits (the server names no
    queue: Kueue holds it forever otherwise)."""
    for index, team, redis in _redis_teams(config):
        path = ("teams", index, "redis")
        quota = team.quota
        volumes = sum((parse_quantity(volume.size) for volume in team.volumes), Decimal(0))
        storage = volumes + parse_quantity(redis.size)
        if volumes <= parse_quantity(quota.storage) < storage:
            yield ConfigIssue(
                (*path, "size"),
                f"the team's volumes ({show_amount('memory', volumes)}) and its Redis volume "
                f"({redis.size}) add up to {show_amount('memory', storage)}, above its storage "
                f"quota of {quota.storage}",
            )
        if len(team.volumes) <= quota.persistent_volume_claims < len(team.volumes) + 1:
            yield ConfigIssue(
                path,
                f"the team's {len(team.volumes)} volumes and its Redis volume exceed its quota "
                f"of {quota.persistent_volume_claims} PVCs",
            )
        demand = redis_pod_demand(redis)
        capacity = (
            default_queue_capacity(quota.cpu, quota.memory, team.queue)
            if config.queueing.enabled
            else None
        )
        for resource, hard in (("cpu", quota.cpu), ("memory", quota.memory)):
            need = demand[resource]
            shown = show_amount(resource, need)
            if need > parse_quantity(hard):
                yield ConfigIssue(
                    (*path, resource),
                    f"the server pod needs {shown} {resource} (with its exporter), above the "
                    f"quota of team {team.name!r} ({hard})",
                )
            elif capacity is not None and need > capacity[resource]:
                taken = parse_quantity(hard) - capacity[resource]
                if _queue_takes(team, resource) > parse_quantity(hard):
                    continue  # the queue alone exceeds the quota: reported on the queue
                yield ConfigIssue(
                    (*path, resource),
                    f"the server pod needs {shown} {resource} (with its exporter) through the "
                    f"default queue of team {team.name!r}, which admits "
                    f"{show_amount(resource, capacity[resource])}: the namespace quota of {hard} "
                    f"less the {show_amount(resource, taken)} its GPU queue may take. Raise "
                    f"{entry_ref('teams', team.name)}.quota.{resource} to "
                    f"{show_amount(resource, taken + need)} or lower the queue's {resource}; "
                    "Kueue admits the server (it names no queue) through the default queue",
                )


def workloads_have_team_redis(config: RedisPlatform) -> Iterator[ConfigIssue]:
    """A workload setting that talks to the team Redis needs the team to have one."""
    teams = by_name(config.teams)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None or found[1].redis.enabled:
            continue
        for key, what in workload.team_redis_uses():
            yield ConfigIssue(
                ("workloads", index, *key),
                f"{what} needs the team Redis, and team {workload.team!r} has none; set "
                f"{entry_ref('teams', workload.team)}.redis.enabled: true",
            )


def status_publishing_wraps_a_command(config: RedisPlatform) -> Iterator[ConfigIssue]:
    """The publisher runs the trainer's ``command`` as its child: it has nothing to run when
    the image's entrypoint is meant (Kubernetes cannot read an image's entrypoint)."""
    for index, workload in parsed(config.workloads):
        if workload.kind != "training" or not workload.training_settings.publish_status:
            continue
        if not workload.command:
            yield ConfigIssue(
                ("workloads", index, "training", "publishStatus"),
                "the status publisher runs the trainer's command and reports on it; set the "
                "workload's command (the image's entrypoint cannot be wrapped)",
            )


def workload_env_leaves_redis_to_platform(config: RedisPlatform) -> Iterator[ConfigIssue]:
    """Workloads of a team with a Redis get ``REDIS_URL`` (from the Secret) and
    ``STATUS_CHANNEL`` from the platform; a value of the workload's own would shadow them."""
    teams = by_name(config.teams)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None or not found[1].redis.enabled:
            continue
        for key in (REDIS_URL_ENV, STATUS_CHANNEL_ENV):
            if key in workload.env:
                hint = "statusChannel" if key == STATUS_CHANNEL_ENV else "the team Redis Secret"
                yield ConfigIssue(
                    ("workloads", index, "env", key),
                    f"is set by the platform for the workloads of a team with a Redis ({hint}); "
                    "remove it",
                )


RULES = (
    redis_storage_class_exists,
    redis_maxmemory_fits_its_limit,
    redis_priority_class_allowed,
    redis_fits_team_quota,
    workloads_have_team_redis,
    status_publishing_wraps_a_command,
    workload_env_leaves_redis_to_platform,
)
"""The team Redis rules, in the order they report."""
