"""Cross-field rules of GPU pools: names, backends, sharing and Karpenter settings.

Each reads only what ``GpuPlatform`` declares; what a pool holds is in ``capacity.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from components.constants import EC2_NODE_CLASS_KIND, KARPENTER_AWS_GROUP
from components.gpu_products import mig_family

from ..config.errors import ConfigIssue, entry_ref
from ..config.partial import parsed, repeats
from ..config.quantity import parse_quantity, show_amount
from ..config.views import HasNodePools
from .config import MEMORY_SIGNAL, GpuNodePoolConfig


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
        if pool.capacity_type == "reserved" and not (
            node_class.capacity_reservation_ids or node_class.capacity_reservation_tags
        ):
            yield ConfigIssue(
                (*path, "ec2NodeClass"),
                "capacityType 'reserved' needs capacityReservationIds or capacityReservationTags "
                "to select the reservations",
            )


def _memory(threshold: str, node_memory: Decimal | None) -> Decimal | None:
    """A memory threshold in bytes: a quantity as written, a percentage of ``node_memory``;
    ``None`` when a percentage meets an unknown node size."""
    if threshold.endswith("%"):
        if node_memory is None:
            return None
        return node_memory * Decimal(threshold[:-1]) / 100
    return parse_quantity(threshold)


def _show_memory(amount: Decimal) -> str:
    """Bytes for messages: exact binary units where they fit, else GiB to one decimal."""
    if amount == amount.to_integral_value():
        return show_amount("memory", amount)
    return f"{amount / 2**30:.1f}Gi"


def _soft_above_hard(soft: str, hard: str) -> bool | None:
    """Whether a soft threshold leaves more available than the hard one; ``None`` when one is
    a percentage and the other a quantity (the resource's size decides)."""
    if soft.endswith("%") != hard.endswith("%"):
        return None
    if soft.endswith("%"):
        return Decimal(soft[:-1]) > Decimal(hard[:-1])
    return parse_quantity(soft) > parse_quantity(hard)


def kubelet_settings_are_consistent(config: GpuPlatform) -> Iterator[ConfigIssue]:
    """Soft thresholds above hard ones, a grace period per soft signal, and reservations plus
    thresholds that leave memory for pods."""
    for index, pool in parsed(config.node_pools):
        kubelet = pool.kubelet
        path = ("nodePools", index, "kubelet")
        missing = sorted(set(kubelet.eviction_soft) - set(kubelet.eviction_soft_grace_period))
        extra = sorted(set(kubelet.eviction_soft_grace_period) - set(kubelet.eviction_soft))
        if missing:
            yield ConfigIssue(
                (*path, "evictionSoftGracePeriod"),
                f"needs a grace period for every evictionSoft signal; missing: "
                f"{', '.join(missing)}",
            )
        if extra:
            yield ConfigIssue(
                (*path, "evictionSoftGracePeriod"),
                f"has signals without an evictionSoft threshold: {', '.join(extra)}",
            )
        node_memory = parse_quantity(pool.node_memory) if pool.node_memory else None
        for signal, soft in kubelet.eviction_soft.items():
            hard = kubelet.eviction_hard.get(signal)
            if hard is None:
                continue
            above = _soft_above_hard(soft, hard)
            if above is None and signal == MEMORY_SIGNAL and node_memory is not None:
                soft_bytes, hard_bytes = _memory(soft, node_memory), _memory(hard, node_memory)
                above = (
                    soft_bytes is not None and hard_bytes is not None and soft_bytes > hard_bytes
                )
            if above is None:
                if signal == MEMORY_SIGNAL:
                    yield ConfigIssue(
                        ("nodePools", index, "nodeMemory"),
                        f"required to compare evictionSoft {signal} {soft!r} with evictionHard "
                        f"{hard!r} (a percentage and a quantity)",
                    )
                continue
            if not above:
                # At the threshold the user wrote: the soft one unless only the hard one is set.
                key = (
                    "evictionSoft"
                    if "eviction_soft" in kubelet.model_fields_set
                    else "evictionHard"
                )
                yield ConfigIssue(
                    (*path, key, signal),
                    f"evictionSoft {signal} {soft!r} must leave more available than evictionHard "
                    f"{hard!r}: soft eviction must start before the hard floor, or it never runs",
                )
        reserved = {
            key: parse_quantity(amount)
            for key, amount in (
                ("kubeReserved", kubelet.kube_reserved.get("memory")),
                ("systemReserved", kubelet.system_reserved.get("memory")),
            )
            if amount is not None
        }
        if node_memory is None:
            if reserved:
                yield ConfigIssue(
                    ("nodePools", index, "nodeMemory"),
                    f"required with {' and '.join(f'{key}.memory' for key in reserved)}: the "
                    "reservations and eviction thresholds must leave memory for pods",
                )
            continue
        held = sum(reserved.values(), Decimal(0))
        floors = [
            (key, threshold)
            for key, threshold in (
                ("evictionSoft", kubelet.eviction_soft.get(MEMORY_SIGNAL)),
                ("evictionHard", kubelet.eviction_hard.get(MEMORY_SIGNAL)),
            )
            if threshold is not None
        ]
        for key, threshold in floors:
            floor = _memory(threshold, node_memory) or Decimal(0)
            if held + floor >= node_memory:
                parts = [
                    f"{name}.memory {show_amount('memory', amount)}"
                    for name, amount in reserved.items()
                ]
                yield ConfigIssue(
                    ("nodePools", index, "nodeMemory"),
                    f"{pool.node_memory} leaves no memory for pods after "
                    f"{', '.join(parts) or 'no reservation'} and the {key} {MEMORY_SIGNAL} "
                    f"threshold {threshold!r} ({_show_memory(floor)}): the node would always "
                    "be under memory pressure",
                )
                break


def _kubelet_manifest(pool: GpuNodePoolConfig) -> dict[str, object]:
    return pool.kubelet.model_dump(mode="json")


def node_classes_share_kubelet_settings(config: GpuPlatform) -> Iterator[ConfigIssue]:
    """Kubelet settings live in a Karpenter pool's EC2NodeClass: a pool that references a node
    class another pool creates runs with that pool's settings, and one that references a node
    class made elsewhere cannot have its own."""
    creators: dict[str, GpuNodePoolConfig] = {}
    for _, pool in parsed(config.node_pools):
        karpenter = pool.karpenter
        if pool.backend == "karpenter" and karpenter and karpenter.ec2_node_class is not None:
            creators.setdefault(karpenter.node_class_ref.name, pool)
    for index, pool in parsed(config.node_pools):
        karpenter = pool.karpenter
        if pool.backend != "karpenter" or karpenter is None or karpenter.ec2_node_class:
            continue
        name = karpenter.node_class_ref.name
        creator = creators.get(name)
        if creator is None:
            if "kubelet" in pool.model_fields_set:
                yield ConfigIssue(
                    ("nodePools", index, "kubelet"),
                    f"node class {name!r} is not created by any pool, so its own kubelet "
                    "settings apply: set them there, or give this pool its ec2NodeClass",
                )
        elif _kubelet_manifest(creator) != _kubelet_manifest(pool):
            yield ConfigIssue(
                ("nodePools", index, "kubelet"),
                f"must equal the kubelet settings of "
                f"{entry_ref('nodePools', creator.name)}, which creates node class {name!r} "
                "this pool launches with (or give this pool its own ec2NodeClass)",
            )


RULES = (
    unique_pool_names,
    pool_backends_are_complete,
    gpu_sharing_is_valid,
    karpenter_settings_are_consistent,
    kubelet_settings_are_consistent,
    node_classes_share_kubelet_settings,
)
"""The pool rules, in the order they report."""
