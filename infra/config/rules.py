"""Cross-field rules: what no single field can check. One function per rule.

Each rule reads a structurally valid ``PlatformConfig`` and yields ``ConfigIssue``s with the exact
key path of the offending value, so users see every problem at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
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

from .errors import ConfigIssue
from .gpu import GpuNodePoolConfig
from .quantity import format_bytes, parse_quantity
from .queueing import TeamPoolQuota
from .root import PlatformConfig
from .teams import TeamConfig

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


def _duplicates(names: list[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def _repeats(names: list[str]) -> Iterator[tuple[int, int]]:
    """``(index, first_index)`` for every name seen before: the first use is not an error."""
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first:
            yield index, first[name]
        else:
            first[name] = index


def unique_team_names(config: PlatformConfig) -> Iterator[ConfigIssue]:
    names = [team.name for team in config.teams]
    for index, first in _repeats(names):
        yield ConfigIssue(
            ("teams", index, "name"),
            f"duplicate team name {names[index]!r} (first used by teams[{first}])",
        )


def unique_team_namespaces(config: PlatformConfig) -> Iterator[ConfigIssue]:
    names = [team.name for team in config.teams]
    namespaces = [team.namespace_name for team in config.teams]
    for index, first in _repeats(namespaces):
        if names[index] != names[first]:  # a duplicate team name is reported once, above
            team = config.teams[index]
            yield ConfigIssue(
                ("teams", index, "namespace" if team.namespace else "name"),
                f"namespace {namespaces[index]!r} is already used by team {names[first]!r}",
            )
    for index, team in enumerate(config.teams):
        key = "namespace" if team.namespace else "name"
        if team.namespace_name in RESERVED_NAMESPACES:
            yield ConfigIssue(
                ("teams", index, key),
                f"namespace {team.namespace_name!r} is reserved for the system or the platform",
            )


def team_priority_classes_exist(config: PlatformConfig) -> Iterator[ConfigIssue]:
    known = {pc.name for pc in config.priority_classes}
    for index, team in enumerate(config.teams):
        for position, name in enumerate(team.priority_classes or []):
            if name not in known:
                yield ConfigIssue(
                    ("teams", index, "priorityClasses", position),
                    f"unknown priority class {name!r}; defined: {', '.join(sorted(known))}",
                )


def container_limits_cover_requests(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in enumerate(config.teams):
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
    for index, team in enumerate(config.teams):
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
    for index, team in enumerate(config.teams):
        for key in team.env:
            if key in PLATFORM_ENV_KEYS:
                yield ConfigIssue(("teams", index, "env", key), "is set by the platform; remove it")


def unique_groups(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in enumerate(config.teams):
        for field, alias in (("admin_groups", "adminGroups"), ("viewer_groups", "viewerGroups")):
            groups: list[str] = getattr(team, field)
            for position, group in enumerate(groups):
                if not group.strip():
                    yield ConfigIssue(("teams", index, alias, position), "group name is empty")
            for group in sorted(_duplicates(groups)):
                yield ConfigIssue(("teams", index, alias), f"group {group!r} is listed twice")


def volumes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = {sc.name for sc in config.storage.classes}
    for index, team in enumerate(config.teams):
        for position, _ in _repeats([volume.name for volume in team.volumes]):
            yield ConfigIssue(
                ("teams", index, "volumes", position, "name"),
                f"duplicate volume name {team.volumes[position].name!r}",
            )
        total = 0
        for position, volume in enumerate(team.volumes):
            path = ("teams", index, "volumes", position)
            if volume.storage_class not in classes:
                yield ConfigIssue(
                    (*path, "storageClass"),
                    f"unknown storage class {volume.storage_class!r}; defined: "
                    f"{', '.join(sorted(classes))}",
                )
            total += int(parse_quantity(volume.size))
        if total > parse_quantity(team.quota.storage):
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"volumes request {total} bytes in all, above the team's storage quota of "
                f"{team.quota.storage}",
            )
        if len(team.volumes) > team.quota.persistent_volume_claims:
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"{len(team.volumes)} volumes exceed the team's quota of "
                f"{team.quota.persistent_volume_claims} PVCs",
            )


def priority_classes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = config.priority_classes
    for index, _ in _repeats([pc.name for pc in classes]):
        yield ConfigIssue(
            ("priorityClasses", index, "name"), f"duplicate priority class {classes[index].name!r}"
        )
    for index, pc in enumerate(classes):
        if pc.name.startswith("system-"):
            yield ConfigIssue(
                ("priorityClasses", index, "name"),
                f"names starting with 'system-' are reserved by Kubernetes, got {pc.name!r}",
            )
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


def pool_capacity(pool: GpuNodePoolConfig) -> int:
    """Most units of the pool's GPU resource: nodes x GPUs per node x units per GPU."""
    return pool.node_count * pool.gpus_per_node * pool_units_per_gpu(pool)


def _capacity_text(pool: GpuNodePoolConfig) -> str:
    text = f"{pool.node_count} nodes x {pool.gpus_per_node} GPUs"
    if pool.sharing.mode == "time-slicing":
        text += f" x {pool_units_per_gpu(pool)} replicas"
    elif pool.sharing.mode == "mig":
        text += f" x {pool_units_per_gpu(pool)} {pool.sharing.mig_profile} slices"
    return text


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
    pools: dict[str, tuple[int, GpuNodePoolConfig]] = {}
    seen: set[str] = set()
    for index, pool in enumerate(config.node_pools):
        if pool.name not in seen and pool_is_sound(pool):
            pools[pool.name] = (index, pool)
        seen.add(pool.name)
    return pools


def _queued(team: TeamConfig) -> list[TeamPoolQuota]:
    """The team's queue entries, first entry per pool only."""
    if team.queue is None:
        return []
    seen: set[str] = set()
    entries = []
    for entry in team.queue.pools:
        if entry.pool not in seen:
            entries.append(entry)
        seen.add(entry.pool)
    return entries


def unique_pool_names(config: PlatformConfig) -> Iterator[ConfigIssue]:
    names = [pool.name for pool in config.node_pools]
    for index, first in _repeats(names):
        yield ConfigIssue(
            ("nodePools", index, "name"),
            f"duplicate node pool name {names[index]!r} (first used by nodePools[{first}])",
        )


def pool_backends_are_complete(config: PlatformConfig) -> Iterator[ConfigIssue]:
    owner: dict[str, str] = {}
    for index, pool in enumerate(config.node_pools):
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
    for index, pool in enumerate(config.node_pools):
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
            f"nodePools[{first}] uses {config.node_pools[first].sharing.mig_strategy!r}",
        )


def karpenter_settings_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    created: dict[str, str] = {}
    for index, pool in enumerate(config.node_pools):
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
    pools = {pool.name for pool in config.node_pools}
    for index, team in enumerate(config.teams):
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
                defined = ", ".join(sorted(pools)) or "none"
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
    overcommit = Decimal(str(config.queueing.overcommit))
    for index, pool in _sound_pools(config).values():
        nominal = sum(
            entry.gpus
            for team in config.teams
            for entry in _queued(team)
            if entry.pool == pool.name
        )
        capacity = pool_capacity(pool)
        if nominal > capacity * overcommit:
            yield ConfigIssue(
                ("nodePools", index),
                f"teams' nominal quotas on this pool add up to {nominal} "
                f"{pool_gpu_resource(pool)}, above its {capacity} ({_capacity_text(pool)}) x "
                f"overcommit {config.queueing.overcommit}",
            )


def namespace_quotas_cover_queues(config: PlatformConfig) -> Iterator[ConfigIssue]:
    pools = {name: pool for name, (_, pool) in _sound_pools(config).items()}
    for index, team in enumerate(config.teams):
        queued: dict[str, tuple[Decimal, Decimal]] = {}
        for entry in _queued(team):
            pool = pools.get(entry.pool)
            if pool is None:
                continue  # unknown or unsound pool: reported by the rules above
            limit = entry.borrowing_limit
            for resource, nominal, borrow in (
                (pool_gpu_resource(pool), Decimal(entry.gpus), Decimal(limit.gpus or 0)),
                ("cpu", parse_quantity(entry.cpu), parse_quantity(limit.cpu or "0")),
                ("memory", parse_quantity(entry.memory), parse_quantity(limit.memory or "0")),
            ):
                old = queued.get(resource, (Decimal(0), Decimal(0)))
                queued[resource] = (old[0] + nominal, old[1] + borrow)
        quota = team.quota
        for resource, (nominal, borrow) in queued.items():
            if resource == "cpu":
                key, hard, shown_hard = "cpu", parse_quantity(quota.cpu), quota.cpu
            elif resource == "memory":
                key, hard, shown_hard = "memory", parse_quantity(quota.memory), quota.memory
            elif resource == GPU_RESOURCE:
                key, hard, shown_hard = "gpus", Decimal(quota.gpus), str(quota.gpus)
            else:
                profile = resource.removeprefix(MIG_RESOURCE_PREFIX)
                slices = quota.mig_slices.get(profile, 0)
                key, hard, shown_hard = "migSlices", Decimal(slices), f"{slices} {profile} slices"
            if nominal + borrow > hard:
                total = _show_amount(resource, nominal + borrow)
                yield ConfigIssue(
                    ("teams", index, "quota", key),
                    f"the team's queue may admit {total} {resource} (nominal "
                    f"{_show_amount(resource, nominal)} + borrowing "
                    f"{_show_amount(resource, borrow)}), above the namespace quota of {shown_hard}",
                )


def _show_amount(resource: str, amount: Decimal) -> str:
    if resource == "memory":
        return format_bytes(amount)
    return str(amount.normalize()) if amount % 1 else str(int(amount))


GPU_RULES: tuple[Rule, ...] = (
    unique_pool_names,
    pool_backends_are_complete,
    gpu_sharing_is_valid,
    karpenter_settings_are_consistent,
    team_queues_reference_pools,
    pool_quotas_fit_capacity,
    namespace_quotas_cover_queues,
)
"""Rules of issue 4: pools, sharing, node classes, queue references and quota arithmetic."""


def cross_field_issues(config: PlatformConfig) -> list[ConfigIssue]:
    return [issue for rule in (*RULES, *GPU_RULES) for issue in rule(config)]
