"""Cross-field rules of Kueue queues: pools named, quotas within pool and namespace capacity,
and classes that must never preempt.

Each reads only what ``QueuedPlatform`` declares.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from components.constants import GPU_RESOURCE, MIG_RESOURCE_PREFIX

from ..config.errors import ConfigIssue, entry_ref
from ..config.partial import by_name, parsed, repeats
from ..config.quantity import parse_quantity, show_amount
from ..config.views import HasNodePools, HasPriorityClasses, HasQueueing, HasTeams
from ..gpu.capacity import capacity_text, pool_capacity, pool_gpu_resource, pool_is_sound
from ..gpu.config import GpuNodePoolConfig
from ..tenancy.config import TeamConfig
from .config import TeamPoolQuota, kueue_may_preempt


class QueuedPlatform(HasTeams, HasNodePools, HasQueueing, HasPriorityClasses, Protocol):
    """What the queue rules read."""


def _sound_pools(config: QueuedPlatform) -> dict[str, tuple[int, GpuNodePoolConfig]]:
    """First pool of each name, with its index, if sound."""
    pools = by_name(config.node_pools).items()
    return {name: found for name, found in pools if pool_is_sound(found[1])}


def queued_with_positions(team: TeamConfig) -> list[tuple[int, TeamPoolQuota]]:
    """The team's queue entries with their positions, first entry per pool only."""
    if team.queue is None:
        return []
    seen: set[str] = set()
    entries = []
    for position, quota in enumerate(team.queue.pools):
        if quota.pool not in seen:
            entries.append((position, quota))
        seen.add(quota.pool)
    return entries


def queued(team: TeamConfig) -> list[TeamPoolQuota]:
    """The team's queue entries, first entry per pool only."""
    return [quota for _, quota in queued_with_positions(team)]


def team_queues_reference_pools(config: QueuedPlatform) -> Iterator[ConfigIssue]:
    pools = by_name(config.node_pools)
    for index, team in parsed(config.teams):
        if team.queue is None:
            continue
        names = [entry.pool for entry in team.queue.pools]
        for position, first in repeats(names):
            yield ConfigIssue(
                ("teams", index, "queue", "pools", position, "pool"),
                f"pool {names[position]!r} is listed twice (first at pools[{first}])",
            )
        for position, entry in enumerate(team.queue.pools):
            path = ("teams", index, "queue", "pools", position)
            if entry.pool not in pools:
                defined = ", ".join(pools.names()) or "none"
                yield ConfigIssue(
                    (*path, "pool"), f"unknown node pool {entry.pool!r}; defined: {defined}"
                )
            lending = entry.lending_limit
            for resource, nominal, limit in (
                ("gpus", Decimal(entry.gpus), lending.gpus),
                ("cpu", parse_quantity(entry.cpu), lending.cpu),
                ("memory", parse_quantity(entry.memory), lending.memory),
            ):
                if limit is not None and parse_quantity(limit) > nominal:
                    shown = entry.gpus if resource == "gpus" else getattr(entry, resource)
                    yield ConfigIssue(
                        (*path, "lendingLimit", resource),
                        f"lending limit {limit} exceeds the nominal quota {shown}",
                    )


def pool_quotas_fit_capacity(config: QueuedPlatform) -> Iterator[ConfigIssue]:
    """The teams' nominal GPU quotas on a pool fit what it can hold; reported at the queue entry
    that takes the sum past it, with every team's share."""
    overcommit = Decimal(str(config.queueing.overcommit))
    for _, pool in _sound_pools(config).values():
        limit = pool_capacity(pool) * overcommit
        shares: list[tuple[str, int]] = []
        crossing: tuple[int, int] | None = None
        for index, team in enumerate(config.teams):
            for position, quota in queued_with_positions(team):
                if quota.pool != pool.name:
                    continue
                before = sum(gpus for _, gpus in shares)
                shares.append((team.name, quota.gpus))
                if crossing is None and before <= limit < before + quota.gpus:
                    crossing = (index, position)
        if crossing is None:
            continue
        index, position = crossing
        resource = pool_gpu_resource(pool)
        parts = " + ".join(f"{name} {gpus}" for name, gpus in shares)
        yield ConfigIssue(
            ("teams", index, "queue", "pools", position, "gpus"),
            f"the teams' nominal quotas on pool {pool.name!r} add up to "
            f"{sum(gpus for _, gpus in shares)} {resource} ({parts}), above its "
            f"{pool_capacity(pool)} ({capacity_text(pool)}) x overcommit "
            f"{config.queueing.overcommit}",
        )


def namespace_quotas_cover_queues(config: QueuedPlatform) -> Iterator[ConfigIssue]:
    """What a team's queue may admit, nominal plus borrowing over all its pools, fits its
    namespace quota; the message lists each pool's share."""
    pools = by_name(config.node_pools)
    for index, team in parsed(config.teams):
        admitted: dict[str, list[tuple[str, Decimal, Decimal]]] = {}
        for quota in queued(team):
            found = pools.get(quota.pool)
            if found is None or not pool_is_sound(found[1]):
                continue  # unknown or unsound pool: the queue and pool rules say why
            pool = found[1]
            limit = quota.borrowing_limit
            for resource, nominal, borrow in (
                (pool_gpu_resource(pool), Decimal(quota.gpus), Decimal(limit.gpus or 0)),
                ("cpu", parse_quantity(quota.cpu), parse_quantity(limit.cpu or "0")),
                ("memory", parse_quantity(quota.memory), parse_quantity(limit.memory or "0")),
            ):
                admitted.setdefault(resource, []).append((pool.name, nominal, borrow))
        hard_quota = team.quota
        for resource, shares in admitted.items():
            if resource == "cpu":
                key, hard, shown_hard = "cpu", parse_quantity(hard_quota.cpu), hard_quota.cpu
            elif resource == "memory":
                key, hard = "memory", parse_quantity(hard_quota.memory)
                shown_hard = hard_quota.memory
            elif resource == GPU_RESOURCE:
                key, hard, shown_hard = "gpus", Decimal(hard_quota.gpus), str(hard_quota.gpus)
            else:
                profile = resource.removeprefix(MIG_RESOURCE_PREFIX)
                slices = hard_quota.mig_slices.get(profile, 0)
                key, hard, shown_hard = "migSlices", Decimal(slices), f"{slices} {profile} slices"
            total = sum((nominal + borrow for _, nominal, borrow in shares), Decimal(0))
            if total > hard:
                show = functools.partial(show_amount, resource)
                parts = ", ".join(
                    f"{name} {show(nominal)}" + (f" + {show(borrow)} borrowing" if borrow else "")
                    for name, nominal, borrow in shares
                )
                yield ConfigIssue(
                    ("teams", index, "quota", key),
                    f"the team's queue may admit {show(total)} {resource} ({parts}), above the "
                    f"namespace quota of {shown_hard}",
                )


def _borrows(entry: TeamPoolQuota) -> bool:
    limit = entry.borrowing_limit
    return bool(limit.gpus) or any(
        value is not None and parse_quantity(value) > 0 for value in (limit.cpu, limit.memory)
    )


def never_preempting_classes_never_preempt(config: QueuedPlatform) -> Iterator[ConfigIssue]:
    """A class with ``preemptionPolicy: Never`` evicts nobody. Kueue, which decides who runs on
    queued GPUs, does not read that field: it preempts by the ClusterQueue's policies and the
    priority value alone. So a team that may use such a class must have nobody its queue's
    policies let that class evict: no class of its own it outranks (``withinClusterQueue``),
    and no other team borrowing on one of its pools (``reclaimWithinCohort``: Kueue reclaims
    from any workload of a borrowing queue the policy allows, whoever lent the quota)."""
    if not config.queueing.enabled:
        return
    classes = {pc.name: pc for pc in config.priority_classes}
    every = list(classes)
    queueing = config.queueing
    teams = list(parsed(config.teams))
    for index, team in teams:
        if team.queue is None:
            continue
        allowed = [n for n in (team.priority_classes or every) if n in classes]
        path: tuple[str | int, ...] = ("teams", index)
        if team.priority_classes is not None:
            path = (*path, "priorityClasses")
        pools = [entry.pool for entry in team.queue.pools]
        for name in allowed:
            never = classes[name]
            if never.preemption_policy != "Never":
                continue
            own = [
                other
                for other in allowed
                if (other != name or queueing.within_cluster_queue == "LowerOrNewerEqualPriority")
                and kueue_may_preempt(
                    queueing.within_cluster_queue, never.value, classes[other].value
                )
            ]
            if own:
                remedy = (
                    "set queueing.withinClusterQueue to LowerPriority"
                    if name in own
                    else f"leave {', '.join(repr(o) for o in own)} out of "
                    f"{entry_ref('teams', team.name)}.priorityClasses"
                )
                yield ConfigIssue(
                    path,
                    f"team {team.name!r} may use {name!r} (preemptionPolicy Never), but Kueue "
                    f"ignores preemptionPolicy: withinClusterQueue "
                    f"{queueing.within_cluster_queue} lets a {name} job evict the team's own "
                    f"{', '.join(own)} work. To keep {name!r}, {remedy}",
                )
            for _, other in teams:
                if other is team or other.queue is None:
                    continue
                others = [n for n in (other.priority_classes or every) if n in classes]
                victims = [
                    n
                    for n in others
                    if kueue_may_preempt(
                        queueing.reclaim_within_cohort, never.value, classes[n].value
                    )
                ]
                for entry in other.queue.pools:
                    if entry.pool not in pools or not _borrows(entry) or not victims:
                        continue
                    yield ConfigIssue(
                        path,
                        f"team {team.name!r} may use {name!r} (preemptionPolicy Never), but "
                        f"Kueue ignores preemptionPolicy: with reclaimWithinCohort "
                        f"{queueing.reclaim_within_cohort}, a {name} job on pool "
                        f"{entry.pool!r} would evict what team {other.name!r} borrows there "
                        f"(its {', '.join(victims)} work). Leave {name!r} out of "
                        f"{entry_ref('teams', team.name)}.priorityClasses, set the "
                        f"borrowingLimit of {entry_ref('teams', other.name)}.queue.pools"
                        f"[{entry.pool}] to 0, or set queueing.reclaimWithinCohort to "
                        "LowerPriority",
                    )


RULES = (
    team_queues_reference_pools,
    pool_quotas_fit_capacity,
    namespace_quotas_cover_queues,
    never_preempting_classes_never_preempt,
)
"""The queue rules, in the order they report."""
