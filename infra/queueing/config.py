"""``ai-platform:queueing`` and ``teams[].queue``: Kueue queues with fair sharing of idle GPUs.

Model: every queued team gets a ClusterQueue in one shared cohort. ``teams[].queue.pools`` lists
the node pools the team queues on, each with a nominal quota (guaranteed), a borrowing limit
(what it may take from idle quota of other teams) and a lending limit (what it lets others take).
The namespace ResourceQuota stays the hard cap: nominal plus borrowing must fit under it, and
the team's ``default`` queue (for work that names no queue) admits only what the GPU queue cannot
take (:func:`default_queue_capacity`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import Field

from ..config.base import ConfigModel, DnsLabel, DnsSubdomain
from ..config.quantity import Count, Quantity, parse_quantity

QueueingStrategy = Literal["BestEffortFIFO", "StrictFIFO"]
ReclaimPolicy = Literal["Never", "LowerPriority", "Any"]
WithinQueuePolicy = Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"]


class QuotaAmounts(ConfigModel):
    """Amounts of the three queued resources; each one optional."""

    gpus: Count | None = None
    """In the pool's GPU resource: whole GPUs, time-slice replicas or MIG slices."""
    cpu: Quantity | None = None
    memory: Quantity | None = None


class TeamPoolQuota(ConfigModel):
    """A team's share of one node pool (one Kueue flavour)."""

    pool: DnsLabel
    """A pool from ``ai-platform:nodePools``."""
    gpus: Count
    """Nominal (guaranteed) quota in the pool's GPU resource units."""
    cpu: Quantity = "0"
    """Nominal CPU for pods on this pool."""
    memory: Quantity = "0"
    """Nominal memory for pods on this pool."""
    borrowing_limit: QuotaAmounts = QuotaAmounts()
    """Most the team may borrow above nominal from idle quota in the cohort. Unset resources
    borrow nothing: borrowing is explicit, and must fit under the namespace quota."""
    lending_limit: QuotaAmounts = QuotaAmounts()
    """Most of the nominal quota other teams may borrow while it is idle (reclaimed by
    preemption). Unset resources lend all of it."""


class TeamQueueConfig(ConfigModel):
    """The team's ClusterQueue and LocalQueue."""

    pools: list[TeamPoolQuota] = Field(min_length=1)
    """Pools in preference order: Kueue tries the first pool with room first."""
    fair_sharing_weight: Quantity = "1"
    """Share of idle cohort capacity relative to other teams (fair sharing)."""


class QueueingConfig(ConfigModel):
    """Kueue for the whole cluster."""

    enabled: bool = True
    """Install Kueue and create flavours and team queues."""
    cohort: DnsSubdomain = "ai-platform"
    """Cohort of every team's ClusterQueue: teams borrow each other's idle GPUs."""
    overcommit: float = Field(default=1.0, ge=1.0, le=4.0)
    """Teams' nominal GPU quotas on a pool may add up to its maximum GPUs x this factor."""
    queueing_strategy: QueueingStrategy = "BestEffortFIFO"
    """``BestEffortFIFO`` lets small jobs pass a large one that does not fit yet."""
    reclaim_within_cohort: ReclaimPolicy = "Any"
    """A team reclaiming its nominal quota preempts borrowers of any priority."""
    within_cluster_queue: WithinQueuePolicy = "LowerPriority"
    """Higher-priority work of a team preempts the team's own lower-priority work."""
    fair_sharing: bool = True
    """Preemption-based fair sharing of borrowed capacity, by ``fairSharingWeight``."""
    service_monitor: bool = False
    """Create Kueue's ServiceMonitor; needs the Prometheus operator (monitoring)."""


def default_queue_capacity(
    cpu: str, memory: str, queue: TeamQueueConfig | None
) -> dict[str, Decimal]:
    """CPU and memory the team's default queue may admit: the namespace quota less the most its
    GPU queue may admit (nominal plus borrowing limit, over every pool), never below 0.

    Why: both ClusterQueues admit into the one ResourceQuota, and Kueue knows nothing of it.
    Sized to the whole quota, the default queue would admit CPU-only work that the quota then
    lacks for a GPU job Kueue admits next (its pods refused, ``exceeded quota``); with the quota
    split, whatever Kueue admits fits.
    """
    left = {"cpu": parse_quantity(cpu), "memory": parse_quantity(memory)}
    for entry in queue.pools if queue else []:
        borrow = entry.borrowing_limit
        left["cpu"] -= parse_quantity(entry.cpu) + parse_quantity(borrow.cpu or "0")
        left["memory"] -= parse_quantity(entry.memory) + parse_quantity(borrow.memory or "0")
    return {resource: max(amount, Decimal(0)) for resource, amount in left.items()}


def kueue_may_preempt(policy: str, preemptor: int, candidate: int) -> bool:
    """Whether a ClusterQueue preemption policy lets a workload of priority ``preemptor`` evict
    one of priority ``candidate``, as Kueue decides it (``SatisfiesPreemptionPolicy``; equal
    priorities count for ``LowerOrNewerEqualPriority``, which evicts newer equals). Kueue reads
    the priority value only: a PriorityClass's ``preemptionPolicy`` plays no part."""
    if policy == "Any":
        return True
    if policy == "LowerPriority":
        return preemptor > candidate
    if policy == "LowerOrNewerEqualPriority":
        return preemptor >= candidate
    return False
