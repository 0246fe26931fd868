"""Cross-field rules: what no single field can check. One function per rule.

Each rule reads a structurally valid ``PlatformConfig`` and yields ``ConfigIssue``s with the exact
key path of the offending value, so users see every problem at once.
"""

from __future__ import annotations

import functools
import ipaddress
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal

from components.constants import (
    EC2_NODE_CLASS_KIND,
    GPU_OPERATOR_NAMESPACE,
    GPU_RESOURCE,
    KARPENTER_AWS_GROUP,
    KUEUE_NAMESPACE,
    LOGGING_NAMESPACE,
    MIG_RESOURCE_PREFIX,
    MONITORING_NAMESPACE,
)
from components.gpu_products import mig_family, mig_slices_per_gpu
from components.scheduling_contract import gpu_resource_name
from components.workloads.common import env_var_prefix
from components.workloads.inference_service import RESERVED_ENV as INFERENCE_RESERVED_ENV
from components.workloads.training_job import RESERVED_ENV as TRAINING_RESERVED_ENV

from .charts import CHART_RULES
from .errors import ConfigIssue, entry_ref
from .gpu import GpuNodePoolConfig
from .guardrails import GUARDRAIL_RULES
from .manifests import extra_manifest_issues, extra_manifests_stay_in_the_fence
from .monitoring import MONITORING_RULES
from .partial import ByName, SkippedCheck, parsed, run_rules
from .priority import PriorityClassConfig
from .quantity import format_bytes, parse_quantity
from .queueing import TeamPoolQuota, default_queue_capacity, kueue_may_preempt
from .root import PlatformConfig
from .storage import StorageClassConfig
from .teams import TeamConfig
from .workloads import CheckpointConfig, WorkloadConfig

Rule = Callable[[PlatformConfig], Iterator[ConfigIssue]]

RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        GPU_OPERATOR_NAMESPACE,
        KUEUE_NAMESPACE,
        MONITORING_NAMESPACE,
        LOGGING_NAMESPACE,
    }
)
"""Namespaces Kubernetes or the platform itself owns; no team may take them."""

PLATFORM_ENV_KEYS = frozenset({"TRAINING_ENV"})
"""Environment variables the platform sets in every team ConfigMap."""


def _first_teams(config: PlatformConfig) -> ByName[TeamConfig]:
    return ByName(config.teams, lambda team: team.name)


def _first_pools(config: PlatformConfig) -> ByName[GpuNodePoolConfig]:
    return ByName(config.node_pools, lambda pool: pool.name)


def _priority_classes(config: PlatformConfig) -> ByName[PriorityClassConfig]:
    return ByName(config.priority_classes, lambda pc: pc.name)


def _duplicates(names: list[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def _repeats(names: Iterable[tuple[int, str]] | list[str]) -> Iterator[tuple[int, int]]:
    """``(index, first_index)`` for every name seen before: the first use is not an error.
    Takes names, or ``(index, name)`` pairs of the items that parsed."""
    first: dict[str, int] = {}
    for position, item in enumerate(names):
        index, name = item if isinstance(item, tuple) else (position, item)
        if name in first:
            yield index, first[name]
        else:
            first[name] = index


def unique_team_names(config: PlatformConfig) -> Iterator[ConfigIssue]:
    teams = list(parsed(config.teams))
    for index, first in _repeats([(index, team.name) for index, team in teams]):
        yield ConfigIssue(
            ("teams", index, "name"),
            f"duplicate team name {config.teams[index].name!r} (first used by teams[{first}])",
        )


def unique_team_namespaces(config: PlatformConfig) -> Iterator[ConfigIssue]:
    teams = list(parsed(config.teams))
    for index, first in _repeats([(index, team.namespace_name) for index, team in teams]):
        team, other = config.teams[index], config.teams[first]
        if team.name != other.name:  # a duplicate team name is reported once, above
            yield ConfigIssue(
                ("teams", index, "namespace" if team.namespace else "name"),
                f"namespace {team.namespace_name!r} is already used by team {other.name!r}",
            )
    for index, team in teams:
        key = "namespace" if team.namespace else "name"
        if team.namespace_name in RESERVED_NAMESPACES:
            yield ConfigIssue(
                ("teams", index, key),
                f"namespace {team.namespace_name!r} is reserved for the system or the platform",
            )


def team_priority_classes_exist(config: PlatformConfig) -> Iterator[ConfigIssue]:
    known = _priority_classes(config)
    for index, team in parsed(config.teams):
        for position, name in enumerate(team.priority_classes or []):
            if name not in known:
                yield ConfigIssue(
                    ("teams", index, "priorityClasses", position),
                    f"unknown priority class {name!r}; defined: {', '.join(known.names())}",
                )


def container_limits_cover_requests(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        defaults = team.container_defaults
        for resource in ("cpu", "memory"):
            request = getattr(defaults.requests, resource)
            limit = getattr(defaults.limits, resource)
            if parse_quantity(limit) < parse_quantity(request):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "limits", resource),
                    f"default limit {limit} is below the default request {request}",
                )


def container_defaults_fit_quota(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        for resource in ("cpu", "memory"):
            request = getattr(team.container_defaults.requests, resource)
            limit = getattr(team.container_defaults.limits, resource)
            quota = getattr(team.quota, resource)
            if parse_quantity(request) > parse_quantity(quota):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "requests", resource),
                    f"default request {request} exceeds the team's quota of {quota}",
                )
            elif resource == "memory" and parse_quantity(limit) > parse_quantity(quota):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "limits", resource),
                    f"default limit {limit} exceeds the team's memory quota of {quota}",
                )


def team_env_not_reserved(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        for key in team.env:
            if key in PLATFORM_ENV_KEYS:
                yield ConfigIssue(("teams", index, "env", key), "is set by the platform; remove it")


def unique_groups(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        for field, alias in (("admin_groups", "adminGroups"), ("viewer_groups", "viewerGroups")):
            groups: list[str] = getattr(team, field)
            for position, group in enumerate(groups):
                if not group.strip():
                    yield ConfigIssue(("teams", index, alias, position), "group name is empty")
                elif group.startswith("system:"):
                    yield ConfigIssue(
                        ("teams", index, alias, position),
                        f"{group!r} is a Kubernetes system group (it may contain every user); "
                        "name a group of your identity provider",
                    )
            for group in sorted(_duplicates(groups)):
                yield ConfigIssue(("teams", index, alias), f"group {group!r} is listed twice")


def volumes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = {sc.name for sc in config.storage.classes}
    for index, team in parsed(config.teams):
        for position, _ in _repeats([volume.name for volume in team.volumes]):
            yield ConfigIssue(
                ("teams", index, "volumes", position, "name"),
                f"duplicate volume name {team.volumes[position].name!r}",
            )
        for position, volume in enumerate(team.volumes):
            path = ("teams", index, "volumes", position)
            if volume.storage_class not in classes:
                yield ConfigIssue(
                    (*path, "storageClass"),
                    f"unknown storage class {volume.storage_class!r}; defined: "
                    f"{', '.join(sorted(classes))}",
                )
        total = sum((parse_quantity(volume.size) for volume in team.volumes), Decimal(0))
        if total > parse_quantity(team.quota.storage):
            parts = " + ".join(f"{volume.name} {volume.size}" for volume in team.volumes)
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"the team's volumes add up to {_show_amount('memory', total)} ({parts}), above "
                f"its storage quota of {team.quota.storage}",
            )
        if len(team.volumes) > team.quota.persistent_volume_claims:
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"{len(team.volumes)} volumes exceed the team's quota of "
                f"{team.quota.persistent_volume_claims} PVCs",
            )


def priority_classes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = list(parsed(config.priority_classes))
    for index, _ in _repeats([(index, pc.name) for index, pc in classes]):
        yield ConfigIssue(
            ("priorityClasses", index, "name"),
            f"duplicate priority class {config.priority_classes[index].name!r}",
        )
    for index, pc in classes:
        if pc.name.startswith("system-"):
            yield ConfigIssue(
                ("priorityClasses", index, "name"),
                f"names starting with 'system-' are reserved by Kubernetes, got {pc.name!r}",
            )


def one_default_priority_class(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = config.priority_classes
    defaults = [index for index, pc in enumerate(classes) if pc.global_default]
    if len(defaults) != 1:
        found = ", ".join(repr(classes[i].name) for i in defaults) or "none"
        yield ConfigIssue(
            ("priorityClasses",),
            f"exactly one priority class must set globalDefault: true, found {found}",
        )


def storage_classes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = config.storage.classes
    for index, _ in _repeats([sc.name for sc in classes]):
        yield ConfigIssue(
            ("storage", "classes", index, "name"),
            f"duplicate storage class {classes[index].name!r}",
        )
    for index, sc in enumerate(classes):
        if config.cluster.protects_data and sc.reclaim_policy == "Delete":
            yield ConfigIssue(
                ("storage", "classes", index, "reclaimPolicy"),
                "must be Retain when the stack protects data (prod): Delete destroys the volume "
                "with its claim",
            )
    defaults = [index for index, sc in enumerate(classes) if sc.default]
    if len(defaults) != 1:
        found = ", ".join(repr(classes[i].name) for i in defaults) or "none"
        yield ConfigIssue(
            ("storage", "classes"),
            f"exactly one storage class must set default: true, found {found}",
        )


RULES: tuple[Rule, ...] = (
    unique_team_names,
    unique_team_namespaces,
    team_priority_classes_exist,
    container_limits_cover_requests,
    container_defaults_fit_quota,
    team_env_not_reserved,
    unique_groups,
    volumes_are_consistent,
    priority_classes_are_consistent,
    one_default_priority_class,
    storage_classes_are_consistent,
)
"""Every cross-field rule, run in this order after the models validate."""


# --- GPU node pools, the GPU stack and queueing (issue 4) -----------------------------------------
def pool_gpu_resource(pool: GpuNodePoolConfig) -> str:
    """The extended resource the pool's nodes advertise."""
    sharing = pool.sharing
    return gpu_resource_name(sharing.mode, sharing.mig_profile, sharing.mig_strategy)


def pool_units_per_gpu(pool: GpuNodePoolConfig) -> int:
    """Units of the pool's GPU resource one physical GPU yields (1 when unknown)."""
    sharing = pool.sharing
    if sharing.mode == "time-slicing":
        return sharing.replicas or 1
    if sharing.mode == "mig" and sharing.mig_profile:
        return mig_slices_per_gpu(pool.gpu_product, sharing.mig_profile) or 1
    return 1


def pool_units_per_node(pool: GpuNodePoolConfig) -> int:
    """Units of the pool's GPU resource one node offers: GPUs per node x units per GPU."""
    return pool.gpus_per_node * pool_units_per_gpu(pool)


def pool_capacity(pool: GpuNodePoolConfig) -> int:
    """Most units of the pool's GPU resource: nodes x GPUs per node x units per GPU."""
    return pool.node_count * pool_units_per_node(pool)


def gang_capacity(pool: GpuNodePoolConfig, units_per_pod: int) -> int:
    """Most pods asking for ``units_per_pod`` each that the pool can run at once: a pod's GPUs
    come from one node, so each node holds ``units per node // units_per_pod`` of them. Any gang
    (pods that start together or not at all) must fit it: a training job's workers, and a Ray
    cluster's minimum workers when the platform runs Ray."""
    return pool.node_count * (pool_units_per_node(pool) // units_per_pod)


def _node_bound(pool: GpuNodePoolConfig) -> str:
    """What sets the pool's node count, for messages."""
    return "maxNodes" if pool.backend == "karpenter" else "its node list"


def _capacity_text(pool: GpuNodePoolConfig) -> str:
    return f"{_one_or_many(pool.node_count, 'node')} x {_node_offer(pool)}"


def pool_is_sound(pool: GpuNodePoolConfig) -> bool:
    """Sized and shareable as configured; quota arithmetic skips pools that are not (the rules
    above report why), so one mistake yields one error, not a cascade."""
    if pool.backend == "karpenter" and pool.max_nodes is None:
        return False
    if pool.backend == "static" and not pool.nodes:
        return False
    sharing = pool.sharing
    if sharing.mode == "time-slicing":
        return sharing.replicas is not None and sharing.replicas >= 2
    if sharing.mode == "mig":
        return bool(sharing.mig_profile) and bool(
            mig_slices_per_gpu(pool.gpu_product, sharing.mig_profile or "")
        )
    return True


def _sound_pools(config: PlatformConfig) -> dict[str, tuple[int, GpuNodePoolConfig]]:
    """First pool of each name, with its index, if sound."""
    return {name: found for name, found in _first_pools(config).items() if pool_is_sound(found[1])}


def _queued_with_positions(team: TeamConfig) -> list[tuple[int, TeamPoolQuota]]:
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


def _queued(team: TeamConfig) -> list[TeamPoolQuota]:
    """The team's queue entries, first entry per pool only."""
    return [quota for _, quota in _queued_with_positions(team)]


def unique_pool_names(config: PlatformConfig) -> Iterator[ConfigIssue]:
    names = [(index, pool.name) for index, pool in parsed(config.node_pools)]
    for index, first in _repeats(names):
        yield ConfigIssue(
            ("nodePools", index, "name"),
            f"duplicate node pool name {config.node_pools[index].name!r} (first used by "
            f"nodePools[{first}])",
        )


def pool_backends_are_complete(config: PlatformConfig) -> Iterator[ConfigIssue]:
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


def gpu_sharing_is_valid(config: PlatformConfig) -> Iterator[ConfigIssue]:
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


def karpenter_settings_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
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


def team_queues_reference_pools(config: PlatformConfig) -> Iterator[ConfigIssue]:
    pools = _first_pools(config)
    for index, team in parsed(config.teams):
        if team.queue is None:
            continue
        names = [entry.pool for entry in team.queue.pools]
        for position, first in _repeats(names):
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


def pool_quotas_fit_capacity(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """The teams' nominal GPU quotas on a pool fit what it can hold; reported at the queue entry
    that takes the sum past it, with every team's share."""
    overcommit = Decimal(str(config.queueing.overcommit))
    for _, pool in _sound_pools(config).values():
        limit = pool_capacity(pool) * overcommit
        shares: list[tuple[str, int]] = []
        crossing: tuple[int, int] | None = None
        for index, team in enumerate(config.teams):
            for position, quota in _queued_with_positions(team):
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
            f"{pool_capacity(pool)} ({_capacity_text(pool)}) x overcommit "
            f"{config.queueing.overcommit}",
        )


def namespace_quotas_cover_queues(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """What a team's queue may admit, nominal plus borrowing over all its pools, fits its
    namespace quota; the message lists each pool's share."""
    pools = _first_pools(config)
    for index, team in parsed(config.teams):
        queued: dict[str, list[tuple[str, Decimal, Decimal]]] = {}
        for quota in _queued(team):
            found = pools.get(quota.pool)
            if found is None or not pool_is_sound(found[1]):
                continue  # unknown or unsound pool: reported by the rules above
            pool = found[1]
            limit = quota.borrowing_limit
            for resource, nominal, borrow in (
                (pool_gpu_resource(pool), Decimal(quota.gpus), Decimal(limit.gpus or 0)),
                ("cpu", parse_quantity(quota.cpu), parse_quantity(limit.cpu or "0")),
                ("memory", parse_quantity(quota.memory), parse_quantity(limit.memory or "0")),
            ):
                queued.setdefault(resource, []).append((pool.name, nominal, borrow))
        hard_quota = team.quota
        for resource, shares in queued.items():
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
                show = functools.partial(_show_amount, resource)
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


def never_preempting_classes_never_preempt(config: PlatformConfig) -> Iterator[ConfigIssue]:
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


def _show_amount(resource: str, amount: Decimal) -> str:
    """``16Gi`` for memory, ``48`` or ``0.5`` otherwise; absurd magnitudes (a typo'd exponent)
    exceed the decimal context's precision and are shown as written instead of crashing."""
    try:
        if resource == "memory":
            return format_bytes(amount)
        return str(int(amount)) if amount == amount.to_integral_value() else str(amount.normalize())
    except ArithmeticError:
        return str(amount)


GPU_RULES: tuple[Rule, ...] = (
    unique_pool_names,
    pool_backends_are_complete,
    gpu_sharing_is_valid,
    karpenter_settings_are_consistent,
    team_queues_reference_pools,
    pool_quotas_fit_capacity,
    namespace_quotas_cover_queues,
    never_preempting_classes_never_preempt,
)
"""Rules of issue 4: pools, sharing, node classes, queue references and quota arithmetic."""


# --- Training jobs and inference services (issue 5) ----------------------------------------------
BLOCK_PROVISIONERS = frozenset(
    {
        "ebs.csi.aws.com",
        "kubernetes.io/aws-ebs",
        "pd.csi.storage.gke.io",
        "disk.csi.azure.com",
        "rancher.io/local-path",
    }
)
"""CSI drivers whose volumes only one node mounts at a time: no ReadWriteMany across nodes."""
SHARED_ACCESS_MODES = frozenset({"ReadWriteMany", "ReadOnlyMany"})
"""Access modes that let pods on different nodes mount one volume."""


def _default_priority_class(config: PlatformConfig) -> str | None:
    """The global default, if exactly one class claims it (else that rule reports it)."""
    defaults = [pc.name for pc in config.priority_classes if pc.global_default]
    return defaults[0] if len(defaults) == 1 else None


def _one_or_many(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _node_offer(pool: GpuNodePoolConfig) -> str:
    text = _one_or_many(pool.gpus_per_node, "GPU")
    if pool.sharing.mode == "time-slicing":
        text += f" x {pool_units_per_gpu(pool)} replicas"
    elif pool.sharing.mode == "mig":
        text += f" x {pool_units_per_gpu(pool)} {pool.sharing.mig_profile} slices"
    return text


@dataclass(frozen=True)
class WorkloadDemand:
    """What a workload holds at once: its main pods and its stateful dependencies."""

    pods: int
    """Main pods: a job's workers, or an inference service's replicas (plus the surge)."""
    cpu: Decimal
    """Per main pod (the preflight init container has the same, so it adds nothing)."""
    memory: Decimal
    memory_limit: Decimal
    gpus: int
    dependency_pods: int = 0
    dependency_cpu: Decimal = Decimal(0)
    """Sum over dependency pods."""
    dependency_memory: Decimal = Decimal(0)
    dependency_memory_limit: Decimal = Decimal(0)

    def total(self, resource: str) -> Decimal:
        per_pod = {
            "cpu": (self.cpu, self.dependency_cpu),
            "memory": (self.memory, self.dependency_memory),
            "memory_limit": (self.memory_limit, self.dependency_memory_limit),
            "gpus": (Decimal(self.gpus), Decimal(0)),
            "pods": (Decimal(1), Decimal(self.dependency_pods)),
        }[resource]
        return per_pod[0] * self.pods + per_pod[1]

    def detail(self, resource: str, per_pod: str) -> str:
        text = f"{_one_or_many(self.pods, 'pod')} x {per_pod}"
        if self.dependency_pods and resource in ("cpu", "memory", "memory_limit"):
            text += f" + {_one_or_many(self.dependency_pods, 'dependency pod')}"
        return text


def _limit(request: str, limit: str | None) -> Decimal:
    return parse_quantity(limit or request)


def workload_demand(workload: WorkloadConfig, floor: bool = False) -> WorkloadDemand:
    """Peak demand (``floor``: an inference service at its minimum replicas, no surge)."""
    resources = workload.resources
    if workload.kind == "training":
        pods = workload.training_settings.nodes
        dependencies = []
    else:
        settings = workload.inference_settings
        pods = settings.min_replicas if floor else settings.max_replicas + settings.max_surge
        dependencies = settings.stateful_dependencies
    return WorkloadDemand(
        pods=pods,
        cpu=parse_quantity(resources.cpu),
        memory=parse_quantity(resources.memory),
        memory_limit=_limit(resources.memory, resources.memory_limit),
        gpus=workload.gpus.count if workload.gpus else 0,
        dependency_pods=sum(d.replicas for d in dependencies),
        dependency_cpu=sum(
            (parse_quantity(d.resources.cpu) * d.replicas for d in dependencies), Decimal(0)
        ),
        dependency_memory=sum(
            (parse_quantity(d.resources.memory) * d.replicas for d in dependencies), Decimal(0)
        ),
        dependency_memory_limit=sum(
            (
                _limit(d.resources.memory, d.resources.memory_limit) * d.replicas
                for d in dependencies
            ),
            Decimal(0),
        ),
    )


def _fits_a_node(workload: WorkloadConfig, pool: GpuNodePoolConfig) -> bool:
    """Whether one pod's GPUs fit one node; quota arithmetic skips pods that never schedule."""
    count = workload.gpus.count if workload.gpus else 0
    return count <= pool_units_per_node(pool)


def _reserved_env(workload: WorkloadConfig) -> frozenset[str]:
    """What the workload's component sets itself, dependency addresses included."""
    if workload.kind == "training":
        return frozenset(TRAINING_RESERVED_ENV)
    dependencies = workload.inference_settings.stateful_dependencies
    return INFERENCE_RESERVED_ENV | {
        f"{env_var_prefix(d.name)}_{suffix}" for d in dependencies for suffix in ("HOST", "PORT")
    }


def workload_teams_exist(config: PlatformConfig) -> Iterator[ConfigIssue]:
    teams = _first_teams(config)
    for index, workload in parsed(config.workloads):
        if workload.team not in teams:
            yield ConfigIssue(
                ("workloads", index, "team"),
                f"unknown team {workload.team!r}; defined: {', '.join(teams.names())}",
            )


def unique_workload_names(config: PlatformConfig) -> Iterator[ConfigIssue]:
    keys = [(index, f"{w.team}/{w.name}") for index, w in parsed(config.workloads)]
    for index, first in _repeats(keys):
        workload = config.workloads[index]
        yield ConfigIssue(
            ("workloads", index, "name"),
            f"duplicate workload name {workload.name!r} in team {workload.team!r} (first used "
            f"by workloads[{first}])",
        )


def workload_kind_settings(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, workload in parsed(config.workloads):
        path = ("workloads", index)
        if workload.kind == "training" and workload.inference is not None:
            yield ConfigIssue((*path, "inference"), "only for kind 'inference'")
        if workload.kind == "inference" and workload.training is not None:
            yield ConfigIssue((*path, "training"), "only for kind 'training'")
        resources = workload.resources
        for resource, limit_key in (("cpu", "cpuLimit"), ("memory", "memoryLimit")):
            request = getattr(resources, resource)
            limit = getattr(resources, f"{resource}_limit")
            if limit is not None and parse_quantity(limit) < parse_quantity(request):
                yield ConfigIssue(
                    (*path, "resources", limit_key),
                    f"limit {limit} is below the request {request}",
                )
        reserved = _reserved_env(workload)
        for key in workload.env:
            if key in reserved:
                yield ConfigIssue((*path, "env", key), "is set by the platform; remove it")
        for position, cidr in enumerate(workload.egress.cidrs):
            if ipaddress.ip_network(cidr).prefixlen == 0:
                yield ConfigIssue(
                    (*path, "egress", "cidrs", position),
                    f"{cidr} opens egress to the whole internet; name the ranges the workload "
                    "needs (object storage)",
                )
        memory_limit = _limit(resources.memory, resources.memory_limit)
        shown_limit = resources.memory_limit or resources.memory
        if workload.kind == "training":
            shm = workload.training_settings.shm_size
            shm_path: tuple[str, ...] = ("training", "shmSize")
        else:
            shm = workload.inference_settings.shm_size or "0"
            shm_path = ("inference", "shmSize")
        if parse_quantity(shm) >= memory_limit:
            yield ConfigIssue(
                (*path, *shm_path),
                f"shared memory {shm} would take all of the {shown_limit} memory limit (a "
                "memory-backed /dev/shm counts against it)",
            )
        if workload.kind == "inference":
            yield from _inference_settings(workload, path)


def _inference_settings(
    workload: WorkloadConfig, path: tuple[str | int, ...]
) -> Iterator[ConfigIssue]:
    settings = workload.inference_settings
    where = (*path, "inference")
    if settings.min_replicas > settings.max_replicas:
        yield ConfigIssue(
            (*where, "minReplicas"),
            f"minReplicas {settings.min_replicas} exceeds maxReplicas {settings.max_replicas}",
        )
    if settings.min_available is not None and settings.max_unavailable is not None:
        yield ConfigIssue((*where, "minAvailable"), "set maxUnavailable or minAvailable, not both")
    elif settings.min_available is not None and settings.min_available >= settings.min_replicas:
        yield ConfigIssue(
            (*where, "minAvailable"),
            f"must be below minReplicas ({settings.min_replicas}): a budget that keeps every "
            "replica blocks node drains",
        )
    if settings.metrics_port == settings.port:
        yield ConfigIssue(
            (*where, "metricsPort"),
            f"must differ from port {settings.port}: the monitoring namespace may reach the "
            "metrics port only",
        )
    if settings.target_cpu_utilization is None and settings.custom_metric is None:
        yield ConfigIssue(
            (*where, "targetCpuUtilization"),
            "set targetCpuUtilization or customMetric: the autoscaler needs a metric",
        )
    if settings.queued and workload.gpus is None:
        yield ConfigIssue(
            (*where, "queued"),
            "only GPU workloads are queued: the team's LocalQueue admits onto GPU pools",
        )
    names = [d.name for d in settings.stateful_dependencies]
    for position, first in _repeats(names):
        yield ConfigIssue(
            (*where, "statefulDependencies", position, "name"),
            f"duplicate dependency name {names[position]!r} (first used by "
            f"statefulDependencies[{first}])",
        )


def workload_gpus_fit_pools(config: PlatformConfig) -> Iterator[ConfigIssue]:
    pools = _first_pools(config)
    for index, workload in parsed(config.workloads):
        if workload.gpus is None:
            continue
        path = ("workloads", index, "gpus")
        if workload.gpus.pool not in pools:
            defined = ", ".join(pools.names()) or "none"
            yield ConfigIssue(
                (*path, "pool"), f"unknown node pool {workload.gpus.pool!r}; defined: {defined}"
            )
            continue
        found = pools.get(workload.gpus.pool)
        if found is None:
            continue  # the pool did not parse
        _, pool = found
        if not pool_is_sound(pool):
            continue  # the pool's own rules say why; its capacity is unknown
        count = workload.gpus.count
        resource = pool_gpu_resource(pool)
        per_node = pool_units_per_node(pool)
        if count > per_node:
            yield ConfigIssue(
                (*path, "count"),
                f"{count} {resource} per pod, but a node of pool {pool.name!r} offers "
                f"{per_node} ({_node_offer(pool)})",
            )
        elif pool.sharing.mode == "time-slicing" and count > 1:
            yield ConfigIssue(
                (*path, "count"),
                f"pool {pool.name!r} time-slices its GPUs: a pod asking for {count} {resource} "
                "may get slices of one GPU; request 1",
            )
        elif _distributed_on_shared_gpus(workload, pool):
            yield ConfigIssue(
                (*path, "pool"),
                f"distributed training needs whole GPUs, but pool {pool.name!r} shares them "
                f"({pool.sharing.mode}); use an exclusive pool or one {resource} on one node",
            )


def _distributed_on_shared_gpus(workload: WorkloadConfig, pool: GpuNodePoolConfig) -> bool:
    count = workload.gpus.count if workload.gpus else 0
    return (
        workload.kind == "training"
        and pool.sharing.mode != "exclusive"
        and (count > 1 or workload.training_settings.nodes > 1)
    )


def gangs_fit_their_pool(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """A multi-node job runs all its workers at once or not at all (torchrun waits for every
    rank): the pool must hold all of them together, whether Kueue admits the job or not."""
    pools = _first_pools(config)
    for index, workload in parsed(config.workloads):
        found = pools.get(workload.gpus.pool) if workload.gpus else None
        if workload.kind != "training" or workload.gpus is None or found is None:
            continue
        pool, count = found[1], workload.gpus.count
        if (
            not pool_is_sound(pool)
            or not _fits_a_node(workload, pool)
            or _distributed_on_shared_gpus(workload, pool)
        ):
            continue  # reported by workload_gpus_fit_pools or the pool's own rules
        workers = workload.training_settings.nodes
        fits = gang_capacity(pool, count)
        if workers <= fits:
            continue
        resource = pool_gpu_resource(pool)
        per_node = pool_units_per_node(pool) // count
        yield ConfigIssue(
            ("workloads", index, "training", "nodes"),
            f"the job's {workers} workers x {count} {resource} must run at once, but pool "
            f"{pool.name!r} holds at most {fits}: {_one_or_many(pool.node_count, 'node')} "
            f"({_node_bound(pool)}) x {_one_or_many(per_node, 'worker')} per node "
            f"({_node_offer(pool)} / {count} per worker); it has {pool_capacity(pool)} "
            f"{resource} in all, the job needs {workers * count}",
        )


def workload_priority_classes(config: PlatformConfig) -> Iterator[ConfigIssue]:
    teams = _first_teams(config)
    known = _priority_classes(config)
    for index, workload in parsed(config.workloads):
        path = ("workloads", index, "priorityClass")
        name = workload.priority_class or _default_priority_class(config)
        if name is None:
            continue  # no global default: reported by one_default_priority_class
        if name not in known:
            yield ConfigIssue(
                path, f"unknown priority class {name!r}; defined: {', '.join(known.names())}"
            )
            continue
        team = teams.get(workload.team)
        allowed = team[1].priority_classes if team else None
        if allowed is None or name in allowed or not all(pc in known for pc in allowed):
            continue  # a team list naming unknown classes is reported on the team
        if workload.priority_class is None:
            message = (
                f"the default priority class {name!r} is not allowed for team "
                f"{workload.team!r}; set one of: {', '.join(allowed)}"
            )
        else:
            message = (
                f"team {workload.team!r} may use priority classes {', '.join(allowed)}; got "
                f"{name!r}"
            )
        yield ConfigIssue(path, message)


def _volume_problem(team: TeamConfig, claim: str) -> str | None:
    names = sorted(volume.name for volume in team.volumes)
    if claim in names:
        return None
    listed = f"its volumes: {', '.join(names)}" if names else "it has none"
    return f"team {team.name!r} has no volume {claim!r}; {listed}"


def _modes(team: TeamConfig, claim: str) -> set[str]:
    return next((set(v.access_modes) for v in team.volumes if v.name == claim), set())


def workload_volumes(config: PlatformConfig) -> Iterator[ConfigIssue]:
    teams = _first_teams(config)
    classes = {sc.name: sc for sc in config.storage.classes}
    defined_classes = ", ".join(sorted(classes))
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        path = ("workloads", index)
        if workload.kind == "training":
            settings = workload.training_settings
            workers = settings.nodes
            if settings.dataset is not None:
                where = (*path, "training", "dataset")
                problem = _volume_problem(team, settings.dataset)
                if problem:
                    yield ConfigIssue(where, problem)
                elif workers > 1 and not _modes(team, settings.dataset) & SHARED_ACCESS_MODES:
                    yield ConfigIssue(
                        where,
                        f"volume {settings.dataset!r} is not shared across nodes "
                        f"({', '.join(sorted(_modes(team, settings.dataset)))}); the {workers} "
                        "workers run on different nodes and need ReadOnlyMany or ReadWriteMany",
                    )
            if settings.checkpoints is not None:
                yield from _checkpoint_issues(
                    workload, team, settings.checkpoints, classes, (*path, "training")
                )
            continue
        inference = workload.inference_settings
        if inference.model is not None:
            where = (*path, "inference", "model")
            problem = _volume_problem(team, inference.model)
            if problem:
                yield ConfigIssue(where, problem)
            elif inference.max_replicas > 1 and not (
                _modes(team, inference.model) & SHARED_ACCESS_MODES
            ):
                yield ConfigIssue(
                    where,
                    f"volume {inference.model!r} is not shared across nodes "
                    f"({', '.join(sorted(_modes(team, inference.model)))}); replicas on "
                    "different nodes need ReadOnlyMany or ReadWriteMany",
                )
        for position, dependency in enumerate(inference.stateful_dependencies):
            if dependency.storage_class not in classes:
                yield ConfigIssue(
                    (*path, "inference", "statefulDependencies", position, "storageClass"),
                    f"unknown storage class {dependency.storage_class!r}; defined: "
                    f"{defined_classes}",
                )


def _checkpoint_issues(
    workload: WorkloadConfig,
    team: TeamConfig,
    checkpoints: CheckpointConfig,
    classes: dict[str, StorageClassConfig],
    path: tuple[str | int, ...],
) -> Iterator[ConfigIssue]:
    where = (*path, "checkpoints")
    workers = workload.training_settings.nodes
    creates = checkpoints.storage_class is not None or checkpoints.size is not None
    if (checkpoints.claim is None) == (not creates):
        yield ConfigIssue(
            where,
            "set claim (an existing team volume) or storageClass and size (a new claim), "
            "exactly one of the two",
        )
        return
    shared = "ReadWriteMany"
    if checkpoints.claim is not None:
        problem = _volume_problem(team, checkpoints.claim)
        if problem:
            yield ConfigIssue((*where, "claim"), problem)
        elif workers > 1 and shared not in _modes(team, checkpoints.claim):
            yield ConfigIssue(
                (*where, "claim"),
                f"volume {checkpoints.claim!r} is not ReadWriteMany; the {workers} workers "
                "write checkpoints from different nodes",
            )
        return
    for key, value in (("storageClass", checkpoints.storage_class), ("size", checkpoints.size)):
        if value is None:
            yield ConfigIssue((*where, key), "required with storageClass or size")
    claim_name = f"{workload.name}-checkpoints"
    if any(volume.name == claim_name for volume in team.volumes):
        yield ConfigIssue(
            where, f"the claim it creates, {claim_name!r}, is already a volume of the team"
        )
    if checkpoints.storage_class is None:
        return
    storage_class = classes.get(checkpoints.storage_class)
    if storage_class is None:
        yield ConfigIssue(
            (*where, "storageClass"),
            f"unknown storage class {checkpoints.storage_class!r}; defined: "
            f"{', '.join(sorted(classes))}",
        )
    elif storage_class.provisioner in BLOCK_PROVISIONERS and (
        set(checkpoints.access_modes) & SHARED_ACCESS_MODES
    ):
        yield ConfigIssue(
            (*where, "accessModes"),
            f"storage class {storage_class.name!r} ({storage_class.provisioner}) provides "
            "volumes one node mounts at a time; ReadWriteMany needs a shared filesystem class",
        )
    elif workers > 1 and shared not in checkpoints.access_modes:
        yield ConfigIssue(
            (*where, "accessModes"),
            f"must include ReadWriteMany: the {workers} workers write checkpoints from "
            "different nodes",
        )


def _gpu_quota(team: TeamConfig, pool: GpuNodePoolConfig) -> tuple[int, str]:
    """The team's namespace quota for the pool's GPU resource, and the key that sets it."""
    resource = pool_gpu_resource(pool)
    if resource == GPU_RESOURCE:
        return team.quota.gpus, "quota.gpus"
    profile = resource.removeprefix(MIG_RESOURCE_PREFIX)
    return team.quota.mig_slices.get(profile, 0), f"quota.migSlices.{profile}"


def workloads_fit_team_quota(config: PlatformConfig) -> Iterator[ConfigIssue]:
    teams = _first_teams(config)
    pools = _first_pools(config)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        path = ("workloads", index)
        demand = workload_demand(workload)
        quota = team.quota
        owner = f"team {team.name!r}"
        resources = workload.resources
        for resource, key, per_pod, hard, shown in (
            ("cpu", "cpu", resources.cpu, parse_quantity(quota.cpu), quota.cpu),
            (
                "memory_limit",
                "memoryLimit" if resources.memory_limit else "memory",
                resources.memory_limit or resources.memory,
                parse_quantity(quota.memory),
                quota.memory,
            ),
        ):
            total = demand.total(resource)
            if total > hard:
                noun = "CPU" if resource == "cpu" else "memory (limits)"
                amount = _show_amount(resource.removesuffix("_limit"), total)
                yield ConfigIssue(
                    (*path, "resources", key),
                    f"needs {amount} {noun} at its peak ({demand.detail(resource, per_pod)}), "
                    f"above the quota of {owner} ({shown})",
                )
        if demand.total("pods") > quota.pods:
            yield ConfigIssue(
                path,
                f"runs up to {demand.total('pods')} pods at its peak, above the pod quota of "
                f"{owner} ({quota.pods})",
            )
        found_pool = pools.get(workload.gpus.pool) if workload.gpus else None
        if workload.gpus is None or found_pool is None:
            continue
        pool = found_pool[1]
        if not pool_is_sound(pool) or not _fits_a_node(workload, pool):
            continue
        hard_gpus, shown_key = _gpu_quota(team, pool)
        resource_name = pool_gpu_resource(pool)
        if hard_gpus == 0:
            yield ConfigIssue(
                (*path, "gpus"),
                f"{owner} has no quota for {resource_name} "
                f"({entry_ref('teams', team.name)}.{shown_key} is 0)",
            )
            continue
        total_gpus = demand.total("gpus")
        if total_gpus > hard_gpus:
            yield ConfigIssue(
                (*path, "gpus", "count"),
                f"needs {int(total_gpus)} {resource_name} at its peak "
                f"({demand.detail('gpus', str(workload.gpus.count))}), above the quota of "
                f"{owner} ({hard_gpus})",
            )


def workload_claims_fit_team_quota(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """Claims the workloads create, on top of the team's volumes, fit its storage quota;
    reported at the claim that crosses the line, with everything that counts."""
    teams = _first_teams(config)
    used: dict[str, list[tuple[str, Decimal, int]]] = {
        name: [(v.name, parse_quantity(v.size), 1) for v in team.volumes]
        for name, (_, team) in teams.items()
    }
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        volumes_alone = sum((parse_quantity(v.size) for v in team.volumes), Decimal(0))
        if (
            volumes_alone > parse_quantity(team.quota.storage)
            or len(team.volumes) > team.quota.persistent_volume_claims
        ):
            continue  # the team's own volumes already exceed it: reported on the team
        claims: list[tuple[tuple[str | int, ...], str, str, int]] = []
        if workload.kind == "training":
            checkpoints = workload.training_settings.checkpoints
            if checkpoints is not None and checkpoints.claim is None and checkpoints.size:
                claims.append(
                    (
                        ("training", "checkpoints", "size"),
                        f"{workload.name}-checkpoints",
                        checkpoints.size,
                        1,
                    )
                )
        else:
            for position, dep in enumerate(workload.inference_settings.stateful_dependencies):
                claims.append(
                    (
                        ("inference", "statefulDependencies", position, "size"),
                        f"{workload.name}-{dep.name}",
                        dep.size,
                        dep.replicas,
                    )
                )
        for where, claim, size, count in claims:
            counted = used[team.name]
            before = sum((amount * n for _, amount, n in counted), Decimal(0))
            claims_before = sum(n for _, _, n in counted)
            counted.append((claim, parse_quantity(size), count))
            storage = before + parse_quantity(size) * count
            number = claims_before + count
            path = ("workloads", index, *where)
            parts = " + ".join(
                f"{name} {_show_amount('memory', amount)}" + (f" x {n}" if n > 1 else "")
                for name, amount, n in counted
            )
            quota = team.quota
            if before <= parse_quantity(quota.storage) < storage:
                yield ConfigIssue(
                    path,
                    f"the volumes and workload claims of team {team.name!r} add up to "
                    f"{_show_amount('memory', storage)} ({parts}), above its storage quota of "
                    f"{quota.storage}",
                )
            if claims_before <= quota.persistent_volume_claims < number:
                names = " + ".join(name + (f" x {n}" if n > 1 else "") for name, _, n in counted)
                yield ConfigIssue(
                    path,
                    f"the volumes and workload claims of team {team.name!r} add up to {number} "
                    f"PVCs ({names}), above its quota of {quota.persistent_volume_claims}",
                )


def serving_floor_fits_team_quota(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """A team's inference services at their minimum replicas run all the time: they must fit.
    Reported at the service that crosses the line, with each service's share."""
    teams = _first_teams(config)
    shares: dict[tuple[str, str], list[tuple[str, Decimal]]] = {}
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None or workload.kind != "inference":
            continue
        team = found[1]
        demand = workload_demand(workload, floor=True)
        for resource, hard, shown, noun in (
            ("cpu", parse_quantity(team.quota.cpu), team.quota.cpu, "CPU"),
            ("memory_limit", parse_quantity(team.quota.memory), team.quota.memory, "memory"),
        ):
            counted = shares.setdefault((team.name, resource), [])
            before = sum((amount for _, amount in counted), Decimal(0))
            counted.append((workload.name, demand.total(resource)))
            total = before + demand.total(resource)
            # Report once, at the service that crosses the line; a service that alone
            # exceeds the quota is reported by workloads_fit_team_quota already.
            if before <= hard < total and before > 0:
                show = functools.partial(_show_amount, resource.removesuffix("_limit"))
                parts = " + ".join(f"{name} {show(amount)}" for name, amount in counted)
                yield ConfigIssue(
                    ("workloads", index),
                    f"the inference services of team {team.name!r} need {show(total)} {noun} "
                    f"at their minimum replicas ({parts}), above the team's quota of {shown}",
                )


def workloads_fit_queues(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """A queued workload's pool must be in the team's queue, and one job must fit what the
    queue can ever admit there (nominal + borrowing): otherwise Kueue never admits it."""
    teams = _first_teams(config)
    pools = _first_pools(config)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        found_pool = pools.get(workload.gpus.pool) if workload.gpus else None
        if found is None or workload.gpus is None or found_pool is None:
            continue
        team, pool = found[1], found_pool[1]
        path = ("workloads", index)
        inference = workload.kind == "inference"
        if not config.queueing.enabled or (inference and not workload.inference_settings.queued):
            continue  # without Kueue every workload runs unqueued
        if team.queue is None:
            if inference:
                yield ConfigIssue(
                    (*path, "inference", "queued"),
                    f"team {team.name!r} has no Kueue queue "
                    f"({entry_ref('teams', team.name)}.queue)",
                )
            continue
        entries = {entry.pool: entry for entry in _queued(team)}
        if not all(name in pools for name in entries) or not pool_is_sound(pool):
            continue  # the queue or the pool is broken itself: reported there
        if not _fits_a_node(workload, pool):
            continue
        entry = entries.get(workload.gpus.pool)
        if entry is None:
            yield ConfigIssue(
                (*path, "gpus", "pool"),
                f"team {team.name!r} queues GPU work on {', '.join(entries)} only; add "
                f"{workload.gpus.pool!r} to {entry_ref('teams', team.name)}.queue.pools or "
                "Kueue never admits this workload",
            )
            continue
        demand = workload_demand(workload)
        pods = 1 if inference else demand.pods  # Kueue admits a Deployment pod by pod
        borrow = entry.borrowing_limit
        resource_name = pool_gpu_resource(pool)
        for key, needed, nominal, borrowing, name in (
            (
                ("gpus", "count"),
                Decimal(demand.gpus * pods),
                Decimal(entry.gpus),
                Decimal(borrow.gpus or 0),
                resource_name,
            ),
            (
                ("resources", "cpu"),
                demand.cpu * pods,
                parse_quantity(entry.cpu),
                parse_quantity(borrow.cpu or "0"),
                "cpu",
            ),
            (
                ("resources", "memory"),
                demand.memory * pods,
                parse_quantity(entry.memory),
                parse_quantity(borrow.memory or "0"),
                "memory",
            ),
        ):
            if needed > nominal + borrowing:
                show = functools.partial(_show_amount, name)
                what = "the job needs" if not inference else "one replica needs"
                yield ConfigIssue(
                    (*path, *key),
                    f"{what} {show(needed)} {name} at once, more than the queue of team "
                    f"{team.name!r} can ever admit on pool {pool.name!r} (nominal "
                    f"{show(nominal)} + borrowing {show(borrowing)})",
                )


def default_queue_work_fits(config: PlatformConfig) -> Iterator[ConfigIssue]:
    """What a team runs through its default queue (CPU-only workloads and every stateful
    dependency, which name no queue) fits what that queue admits at the workload's peak: the
    namespace quota less what the GPU queue may take. Otherwise Kueue holds it forever."""
    if not config.queueing.enabled:
        return
    teams = _first_teams(config)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        demand = workload_demand(workload)
        if workload.gpus is None:
            needs = {r: demand.total(r) for r in ("cpu", "memory")}
            path: tuple[str | int, ...] = ("workloads", index, "resources")
            what = "its pods"
        elif workload.kind == "inference" and demand.dependency_pods:
            needs = {"cpu": demand.dependency_cpu, "memory": demand.dependency_memory}
            path = ("workloads", index, "inference", "statefulDependencies")
            what = "its stateful dependencies"
        else:
            continue
        capacity = default_queue_capacity(team.quota.cpu, team.quota.memory, team.queue)
        for resource, hard in (("cpu", team.quota.cpu), ("memory", team.quota.memory)):
            if not capacity[resource] < needs[resource] <= parse_quantity(hard):
                continue  # fits; or beyond the whole quota: workloads_fit_team_quota says so
            show = functools.partial(_show_amount, resource)
            taken = parse_quantity(hard) - capacity[resource]
            key = path if workload.gpus else (*path, resource)
            yield ConfigIssue(
                key,
                f"{what} need {show(needs[resource])} {resource} at their peak through the "
                f"default queue of team {team.name!r}, which admits {show(capacity[resource])}: "
                f"the namespace quota of {hard} less the {show(taken)} its GPU queue may take "
                f"(nominal + borrowing). Raise {entry_ref('teams', team.name)}.quota.{resource} "
                f"to {show(taken + needs[resource])} or lower the queue's {resource}; Kueue "
                "admits each queue's work within its own share only",
            )


WORKLOAD_RULES: tuple[Rule, ...] = (
    workload_teams_exist,
    unique_workload_names,
    workload_kind_settings,
    workload_gpus_fit_pools,
    gangs_fit_their_pool,
    workload_priority_classes,
    workload_volumes,
    workloads_fit_team_quota,
    workload_claims_fit_team_quota,
    serving_floor_fits_team_quota,
    workloads_fit_queues,
    default_queue_work_fits,
)
"""Rules of issue 5: references, GPU sharing, volumes, quotas and queues of team workloads."""


def extra_manifests_are_registrable(config: PlatformConfig) -> Iterator[ConfigIssue]:
    yield from extra_manifest_issues(config.extra_manifests)


OTHER_RULES: tuple[Rule, ...] = (
    *MONITORING_RULES,
    extra_manifests_are_registrable,
    extra_manifests_stay_in_the_fence,
    *CHART_RULES,
    *GUARDRAIL_RULES,
)


ALL_RULES: tuple[Rule, ...] = (*RULES, *GPU_RULES, *WORKLOAD_RULES, *OTHER_RULES)


def cross_field_check(
    config: PlatformConfig, partial: bool = False
) -> tuple[list[ConfigIssue], list[SkippedCheck]]:
    """Every rule's issues, and the checks that did not run because their input did not parse
    (``partial``: the config is :func:`partial_config`'s)."""
    return run_rules(ALL_RULES, config, partial)


def cross_field_issues(config: PlatformConfig) -> list[ConfigIssue]:
    return cross_field_check(config)[0]
