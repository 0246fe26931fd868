"""Kueue: config -> ``Kueue``, ``TeamQueue`` and ``DefaultQueue`` args -> components."""

from __future__ import annotations

import pulumi

from components.gpu_node_pool import GpuNodePool
from components.kueue import (
    DefaultQueue,
    DefaultQueueArgs,
    FlavorQuota,
    FlavorSpec,
    Kueue,
    KueueArgs,
    QuotaLimits,
    TeamQueue,
    TeamQueueArgs,
    WorkloadPrioritySpec,
)
from components.network_policies import SystemNetwork

from ..chart_fields import chart_fields
from ..config.quantity import format_bytes
from ..config.root import PlatformConfig
from ..gpu.capacity import pool_capacity
from ..sources import KUEUE, default_queue_name, team_queue_name
from ..tenancy.config import TeamConfig
from .config import QuotaAmounts, TeamQueueConfig, default_queue_capacity


def _limits(nominal: str, borrow: str | int | None, lend: str | int | None) -> QuotaLimits:
    return QuotaLimits(
        nominal=nominal,
        borrowing_limit=str(borrow or 0),
        lending_limit=None if lend is None else str(lend),
    )


def team_queue_args(
    team: TeamConfig, queue: TeamQueueConfig, config: PlatformConfig, pools: dict[str, GpuNodePool]
) -> TeamQueueArgs:
    flavors = []
    for entry in queue.pools:
        borrow: QuotaAmounts = entry.borrowing_limit
        lend: QuotaAmounts = entry.lending_limit
        flavors.append(
            FlavorQuota(
                flavor=entry.pool,
                resources={
                    "cpu": _limits(entry.cpu, borrow.cpu, lend.cpu),
                    "memory": _limits(entry.memory, borrow.memory, lend.memory),
                    pools[entry.pool].contract.gpu_resource: _limits(
                        str(entry.gpus), borrow.gpus, lend.gpus
                    ),
                },
            )
        )
    queueing = config.queueing
    return TeamQueueArgs(
        team=team.name,
        namespace=team.namespace_name,
        cohort=queueing.cohort,
        flavors=flavors,
        fair_sharing_weight=queue.fair_sharing_weight,
        queueing_strategy=queueing.queueing_strategy,
        reclaim_within_cohort=queueing.reclaim_within_cohort,
        within_cluster_queue=queueing.within_cluster_queue,
    )


def default_queue_args(team: TeamConfig) -> DefaultQueueArgs:
    """The team's default queue: its namespace quota less what its GPU queue may admit
    (``default_queue_capacity`` says why), so Kueue never admits what the quota refuses."""
    left = default_queue_capacity(team.quota.cpu, team.quota.memory, team.queue)
    cpu = left["cpu"]
    return DefaultQueueArgs(
        team.name,
        team.namespace_name,
        str(int(cpu)) if cpu == cpu.to_integral_value() else f"{int(cpu * 1000)}m",
        format_bytes(left["memory"]),
    )


def kueue(
    config: PlatformConfig,
    pools: dict[str, GpuNodePool],
    network: SystemNetwork,
    opts: pulumi.ResourceOptions,
) -> Kueue | None:
    """Kueue with a flavour per pool and a WorkloadPriorityClass per priority class, if enabled."""
    if not config.queueing.enabled:
        return None
    pool_configs = {pool.name: pool for pool in config.node_pools}
    args = KueueArgs(
        **chart_fields(config, network),
        flavors=[
            FlavorSpec(
                contract=pool.contract,
                capacity=pool_capacity(pool_configs[name]),
                overcommit=str(config.queueing.overcommit),
            )
            for name, pool in pools.items()
        ],
        priority_classes=[
            WorkloadPrioritySpec(pc.name, pc.value, pc.description)
            for pc in config.priority_classes
        ],
        fair_sharing=config.queueing.fair_sharing,
        # Autoscaled Ray clusters are elastic jobs to Kueue (components.workloads.ray).
        elastic_jobs=config.ray.enabled,
        service_monitor=config.queueing.service_monitor,
    )
    return Kueue(KUEUE, args, opts)


def team_queues(
    team: TeamConfig,
    config: PlatformConfig,
    pools: dict[str, GpuNodePool],
    after: list[pulumi.Resource],
    provider: pulumi.ProviderResource,
) -> tuple[TeamQueue | None, DefaultQueue]:
    """The team's GPU queue (if it queues on pools) and its default queue, after ``after``
    (Kueue and the team's namespace)."""
    opts = pulumi.ResourceOptions(provider=provider, depends_on=after)
    queue: TeamQueue | None = None
    if team.queue is not None:
        # Load-bearing for workloads too: their one edge to this queue's LocalQueue orders them
        # after the whole team namespace (workloads.build.deploy_workload).
        queue = TeamQueue(
            team_queue_name(team), team_queue_args(team, team.queue, config, pools), opts
        )
    default = DefaultQueue(default_queue_name(team), default_queue_args(team), opts)
    return queue, default
