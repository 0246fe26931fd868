"""Cross-field rules of GPU pools: names, backends, sharing and Karpenter settings.

Each reads only what ``GpuPlatform`` declares; what a pool holds is in ``capacity.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from components.constants import EC2_NODE_CLASS_KIND, KARPENTER_AWS_GROUP
from components.gpu_products import mig_family

from ..config.errors import ConfigIssue, entry_ref
from ..config.partial import parsed, repeats
from ..config.views import HasNodePools


class GpuPlatform(HasNodePools, Protocol):
    """What the pool rules read."""


def unique_pool_names(config: GpuPlatform) -> Iterator[ConfigIssue]:
    names = [(index, pool.name) for index, pool in parsed(config.node_pools)]
    for index, first in repeats(names):
        yield ConfigIssue(
            ("nodePools", index, "name"),
            f"duplicate node pool name {config.node_pools[index].name!r} (first used by "
            f"nodePools[{first}])",
        )


def pool_backends_are_complete(config: GpuPlatform) -> Iterator[ConfigIssue]:
    owner: dict[str, str] = {}
    for index, pool in parsed(config.node_pools):
        path = ("nodePools", index)
        if pool.backend == "karpenter":
            if pool.karpenter is None:
                yield ConfigIssue(
                    (*path, "karpenter"),
                    "required for backend 'karpenter': name the node class in "
                    "karpenter.nodeClassRef.name",
                )
            elif not pool.karpenter.instance_types and not pool.karpenter.instance_families:
                yield ConfigIssue(
                    (*path, "karpenter"),
                    "set instanceTypes or instanceFamilies: a GPU pool must not launch any "
                    "instance type",
                )
            if pool.nodes:
                yield ConfigIssue(
                    (*path, "nodes"), "only for backend 'static'; Karpenter launches the nodes"
                )
            if pool.max_nodes is None:
                yield ConfigIssue(
                    (*path, "maxNodes"),
                    "required for backend 'karpenter': it bounds the pool's GPU limit",
                )
            elif pool.min_nodes is not None and pool.min_nodes > pool.max_nodes:
                yield ConfigIssue(
                    (*path, "minNodes"),
                    f"minNodes {pool.min_nodes} exceeds maxNodes {pool.max_nodes}",
                )
            elif pool.min_nodes and pool.min_nodes != pool.max_nodes:
                yield ConfigIssue(
                    (*path, "minNodes"),
                    f"must be 0 or equal to maxNodes ({pool.max_nodes}): a Karpenter NodePool "
                    "scales from zero or keeps a fixed number of nodes",
                )
            continue
        if pool.karpenter is not None:
            yield ConfigIssue((*path, "karpenter"), "only for backend 'karpenter'")
        for key, value in (("minNodes", pool.min_nodes), ("maxNodes", pool.max_nodes)):
            if value is not None:
                yield ConfigIssue(
                    (*path, key),
                    "only for backend 'karpenter'; a static pool is sized by its node list",
                )
        if not pool.nodes:
            yield ConfigIssue((*path, "nodes"), "a static pool must name at least one node")
        for position, node in enumerate(pool.nodes):
            if node in owner:
                yield ConfigIssue(
                    (*path, "nodes", position),
                    f"node {node!r} already belongs to pool {owner[node]!r}",
                )
            else:
                owner[node] = pool.name


def gpu_sharing_is_valid(config: GpuPlatform) -> Iterator[ConfigIssue]:
    strategies: dict[str, int] = {}
    for index, pool in parsed(config.node_pools):
        sharing = pool.sharing
        path = ("nodePools", index, "sharing")
        if sharing.mode == "time-slicing":
            if sharing.replicas is None:
                yield ConfigIssue(
                    (*path, "replicas"), "required for mode 'time-slicing' (at least 2)"
                )
            elif sharing.replicas < 2:
                yield ConfigIssue(
                    (*path, "replicas"),
                    f"time-slicing needs at least 2 replicas per GPU, got {sharing.replicas}",
                )
        elif sharing.replicas is not None:
            yield ConfigIssue((*path, "replicas"), "only for mode 'time-slicing'")
        if sharing.mode != "mig":
            if sharing.mig_profile is not None:
                yield ConfigIssue((*path, "migProfile"), "only for mode 'mig'")
            continue
        strategies.setdefault(sharing.mig_strategy, index)
        family = mig_family(pool.gpu_product)
        if sharing.mig_profile is None:
            yield ConfigIssue((*path, "migProfile"), "required for mode 'mig', e.g. '1g.10gb'")
        elif family is None:
            yield ConfigIssue((*path, "migProfile"), f"{pool.gpu_product} does not support MIG")
        elif sharing.mig_profile not in family.slices:
            yield ConfigIssue(
                (*path, "migProfile"),
                f"MIG profile {sharing.mig_profile!r} is not valid for {pool.gpu_product} "
                f"({family.name}); valid: {', '.join(family.slices)}",
            )
    if len(strategies) > 1:
        index = max(strategies.values())
        first = min(strategies.values())
        yield ConfigIssue(
            ("nodePools", index, "sharing", "migStrategy"),
            "all MIG pools must use one strategy (the GPU operator's is cluster-wide): "
            f"{entry_ref('nodePools', config.node_pools[first].name)} uses "
            f"{config.node_pools[first].sharing.mig_strategy!r}",
        )


def karpenter_settings_are_consistent(config: GpuPlatform) -> Iterator[ConfigIssue]:
    created: dict[str, str] = {}
    for index, pool in parsed(config.node_pools):
        karpenter = pool.karpenter
        if pool.backend != "karpenter" or karpenter is None:
            continue
        path = ("nodePools", index, "karpenter")
        disruption = karpenter.disruption
        if pool.purpose == "training" and disruption.consolidation_policy not in (
            None,
            "WhenEmpty",
        ):
            yield ConfigIssue(
                (*path, "disruption", "consolidationPolicy"),
                "training pools must use WhenEmpty: consolidating underutilised nodes evicts "
                "running training",
            )
        for position, budget in enumerate(disruption.budgets):
            if (budget.schedule is None) != (budget.duration is None):
                yield ConfigIssue(
                    (*path, "disruption", "budgets", position),
                    "schedule and duration must be set together",
                )
        node_class = karpenter.ec2_node_class
        if node_class is None:
            continue
        ref = karpenter.node_class_ref
        if (ref.group, ref.kind) != (KARPENTER_AWS_GROUP, EC2_NODE_CLASS_KIND):
            yield ConfigIssue(
                (*path, "nodeClassRef"),
                f"must reference {EC2_NODE_CLASS_KIND} ({KARPENTER_AWS_GROUP}) when the pool "
                "creates its ec2NodeClass",
            )
        if ref.name in created:
            yield ConfigIssue(
                (*path, "nodeClassRef", "name"),
                f"node class {ref.name!r} is already created by pool {created[ref.name]!r}",
            )
        else:
            created[ref.name] = pool.name
        kubelet = node_class.kubelet
        missing = sorted(set(kubelet.eviction_soft) - set(kubelet.eviction_soft_grace_period))
        extra = sorted(set(kubelet.eviction_soft_grace_period) - set(kubelet.eviction_soft))
        kubelet_path = (*path, "ec2NodeClass", "kubelet", "evictionSoftGracePeriod")
        if missing:
            yield ConfigIssue(
                kubelet_path,
                f"needs a grace period for every evictionSoft signal; missing: "
                f"{', '.join(missing)}",
            )
        if extra:
            yield ConfigIssue(
                kubelet_path, f"has signals without an evictionSoft threshold: {', '.join(extra)}"
            )
        if pool.capacity_type == "reserved" and not (
            node_class.capacity_reservation_ids or node_class.capacity_reservation_tags
        ):
            yield ConfigIssue(
                (*path, "ec2NodeClass"),
                "capacityType 'reserved' needs capacityReservationIds or capacityReservationTags "
                "to select the reservations",
            )


RULES = (
    unique_pool_names,
    pool_backends_are_complete,
    gpu_sharing_is_valid,
    karpenter_settings_are_consistent,
)
"""The pool rules, in the order they report."""
