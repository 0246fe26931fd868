"""Queueing policies: Kueue may only admit what the GPU pools can hold and the team quotas allow.

The stack config rules check the same arithmetic on the config; this checks it on what the program
actually rendered. It reads only the objects themselves: ResourceFlavors carry their pool's
capacity, GPU resource and overcommit factor as annotations, Karpenter NodePools and static-pool
Node patches carry the pool label, ClusterQueues select their team's namespace by name and
ResourceQuotas cap that namespace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Final

from pulumi_policy import PolicyResource, ReportViolation, Severity, StackValidationArgs

from .gpu import is_gpu_resource
from .kube import (
    as_map,
    as_seq,
    as_str,
    dig,
    effective_namespace,
    fmt_num,
    format_bytes,
    labels_of,
    metadata,
    name_of,
    parse_quantity,
    parse_type,
)
from .registry import NO_KNOBS, Category, stack_policy
from .shared import (
    GPU_CAPACITY_ANNOTATION,
    GPU_RESOURCE_ANNOTATION,
    NAMESPACE_NAME_LABEL,
    NODE_POOL_LABEL,
    QUOTA_OVERCOMMIT_ANNOTATION,
)

KUEUE_GROUP: Final = "kueue.x-k8s.io"
RESOURCE_FLAVOR: Final = f"{KUEUE_GROUP}/ResourceFlavor"
CLUSTER_QUEUE: Final = f"{KUEUE_GROUP}/ClusterQueue"
LOCAL_QUEUE: Final = f"{KUEUE_GROUP}/LocalQueue"
KARPENTER_NODE_POOL: Final = "karpenter.sh/NodePool"
NODE_KINDS: Final = frozenset({"core/Node", "core/NodePatch"})
RESOURCE_QUOTA: Final = "core/ResourceQuota"

QUOTA_ALIASES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
"""ResourceQuota keys that mean the same as their ``requests.`` form."""
BYTE_RESOURCES: Final = frozenset({"memory", "ephemeral-storage", "storage"})


def quota_key(resource: str) -> str:
    """The ResourceQuota key that caps requests of ``resource``."""
    return f"requests.{resource}"


def show(amount: Decimal, resource: str) -> str:
    """An amount of ``resource`` as people write it (``4Ti`` of memory, ``88`` GPUs)."""
    return format_bytes(amount) if resource in BYTE_RESOURCES else fmt_num(amount)


def node_pools(resources: list[PolicyResource]) -> set[str]:
    """Pools that exist as Karpenter NodePools or as labels on (patched) Nodes."""
    pools: set[str] = set()
    for resource in resources:
        token = parse_type(resource.resource_type)
        if token is None:
            continue
        if token.group_kind == KARPENTER_NODE_POOL:
            template = as_map(dig(resource.props, "spec", "template", "metadata"))
            pool = as_str(labels_of(template).get(NODE_POOL_LABEL)) or name_of(resource.props)
            if pool:
                pools.add(pool)
        elif token.group_kind in NODE_KINDS:
            label = as_str(labels_of(metadata(resource.props)).get(NODE_POOL_LABEL))
            if label:
                pools.add(label)
    return pools


@dataclass
class Queues:
    """The Kueue objects and namespace quotas of a stack, read once."""

    flavors: dict[str, PolicyResource] = field(default_factory=dict)
    cluster_queues: dict[str, PolicyResource] = field(default_factory=dict)
    local_queues: list[PolicyResource] = field(default_factory=list)
    quotas: dict[str, dict[str, Decimal]] = field(default_factory=dict)
    """Namespace → quota key (``requests.<resource>``) → the tightest hard limit on it."""


def collect(resources: list[PolicyResource]) -> Queues:
    found = Queues()
    for resource in resources:
        token = parse_type(resource.resource_type)
        if token is None:
            continue
        kind = token.group_kind
        if kind == RESOURCE_FLAVOR:
            found.flavors[name_of(resource.props)] = resource
        elif kind == CLUSTER_QUEUE:
            found.cluster_queues[name_of(resource.props)] = resource
        elif kind == LOCAL_QUEUE:
            found.local_queues.append(resource)
        elif kind == RESOURCE_QUOTA:
            hard = found.quotas.setdefault(effective_namespace(resource.props), {})
            for key, value in as_map(dig(resource.props, "spec", "hard")).items():
                amount = parse_quantity(value)
                if amount is None:
                    continue
                key = quota_key(key) if key in QUOTA_ALIASES else key
                old = hard.get(key)
                hard[key] = amount if old is None else min(old, amount)
    return found


@dataclass(frozen=True)
class FlavorCapacity:
    resource: str
    """The extended resource the flavour's pool advertises (GPU, time-slice replica, MIG slice)."""
    units: Decimal
    factor: Decimal

    @property
    def limit(self) -> Decimal:
        return self.units * self.factor


def steers_nothing(flavor: PolicyResource) -> bool:
    """A flavour with no node labels, taints, tolerations or GPU annotations: what it admits
    runs wherever the scheduler puts it (the default queues' CPU flavour). It needs no pool."""
    spec = as_map(flavor.props.get("spec"))
    annotations = as_map(metadata(flavor.props).get("annotations"))
    return not any(
        as_map(spec.get(key)) or as_seq(spec.get(key))
        for key in ("nodeLabels", "nodeTaints", "tolerations")
    ) and not any(key in annotations for key in (GPU_CAPACITY_ANNOTATION, GPU_RESOURCE_ANNOTATION))


def _flavor_capacity(
    name: str, flavor: PolicyResource, pools: set[str], report: ReportViolation
) -> FlavorCapacity | None:
    """Check that the flavour maps to a pool; its capacity, or ``None`` if it cannot be read."""
    who = f'ResourceFlavor "{name}"'
    pool = as_str(as_map(dig(flavor.props, "spec", "nodeLabels")).get(NODE_POOL_LABEL))
    if not pool:
        report(f"{who} selects no node pool (spec.nodeLabels lacks {NODE_POOL_LABEL})", flavor.urn)
    elif pool not in pools:
        report(
            f'{who} selects node pool "{pool}", which no Karpenter NodePool or labelled node '
            "provides",
            flavor.urn,
        )
    annotations = as_map(metadata(flavor.props).get("annotations"))
    raw_units = annotations.get(GPU_CAPACITY_ANNOTATION)
    resource = as_str(annotations.get(GPU_RESOURCE_ANNOTATION))
    if raw_units is None or raw_units == "" or not resource:
        missing = [
            key
            for key, value in (
                (GPU_CAPACITY_ANNOTATION, raw_units),
                (GPU_RESOURCE_ANNOTATION, resource),
            )
            if value is None or value == ""
        ]
        report(
            f"{who} lacks the {' and '.join(missing)} "
            f"annotation{'s' if len(missing) > 1 else ''}; its capacity cannot be checked",
            flavor.urn,
        )
        return None
    units = parse_quantity(raw_units)
    if units is None or units < 0:
        report(
            f'{who} has {GPU_CAPACITY_ANNOTATION}="{raw_units}", which is not a non-negative '
            "quantity; its capacity cannot be checked",
            flavor.urn,
        )
        return None
    raw_factor = annotations.get(QUOTA_OVERCOMMIT_ANNOTATION)
    factor = Decimal(1) if raw_factor is None else parse_quantity(raw_factor)
    if factor is None or factor <= 0:
        report(
            f'{who} has {QUOTA_OVERCOMMIT_ANNOTATION}="{raw_factor}", which is not a positive '
            "number; its capacity cannot be checked",
            flavor.urn,
        )
        return None
    return FlavorCapacity(resource, units, factor)


def _check_cluster_queue(
    name: str,
    queue: PolicyResource,
    found: Queues,
    capacity: Mapping[str, FlavorCapacity],
    shares: dict[str, dict[str, Decimal]],
    report: ReportViolation,
) -> None:
    """Flavours exist, borrowing is bounded, nominal + borrowing fits the namespace's quota;
    records the queue's nominal share of each flavour's GPU resource in ``shares``."""
    who = f'ClusterQueue "{name}"'
    spec = as_map(queue.props.get("spec"))
    in_cohort = bool(as_str(spec.get("cohortName")))
    admitted: dict[str, Decimal] = {}
    for group in as_seq(spec.get("resourceGroups")):
        for flavor in as_seq(as_map(group).get("flavors")):
            flavor = as_map(flavor)
            flavor_name = as_str(flavor.get("name")) or ""
            if flavor_name not in found.flavors:
                report(
                    f'{who} uses flavor "{flavor_name}", which no ResourceFlavor defines',
                    queue.urn,
                )
            pool = capacity.get(flavor_name)
            for entry in as_seq(flavor.get("resources")):
                entry = as_map(entry)
                resource = as_str(entry.get("name")) or ""
                nominal = parse_quantity(entry.get("nominalQuota")) or Decimal(0)
                raw_borrow = entry.get("borrowingLimit")
                borrow = parse_quantity(raw_borrow)
                if pool is not None and resource == pool.resource:
                    per_queue = shares.setdefault(flavor_name, {})
                    per_queue[name] = per_queue.get(name, Decimal(0)) + nominal
                if (
                    flavor_name in found.flavors
                    and steers_nothing(found.flavors[flavor_name])
                    and is_gpu_resource(resource)
                    and (nominal or borrow)
                ):
                    report(
                        f'{who} gives {resource} quota on flavor "{flavor_name}", which selects '
                        "no GPU node pool: Kueue would admit GPU pods that no node can run",
                        queue.urn,
                    )
                if in_cohort and borrow is None:
                    report(
                        f'{who} may borrow {resource} in flavor "{flavor_name}" without limit; '
                        "set borrowingLimit so the namespace quota bounds it",
                        queue.urn,
                    )
                    continue
                admitted[resource] = admitted.get(resource, Decimal(0)) + nominal + (borrow or 0)
    namespace = as_str(
        as_map(dig(spec, "namespaceSelector", "matchLabels")).get(NAMESPACE_NAME_LABEL)
    )
    if namespace is None:
        report(
            f"{who} does not select one namespace by {NAMESPACE_NAME_LABEL} "
            "(spec.namespaceSelector.matchLabels); its quota cannot be checked",
            queue.urn,
        )
        return
    hard = found.quotas.get(namespace, {})
    for resource, amount in sorted(admitted.items()):
        if amount == 0:
            continue
        key = quota_key(resource)
        limit = hard.get(key)
        admits = (
            f"{who} admits up to {show(amount, resource)} {resource} (nominal + borrowing) into "
            f'namespace "{namespace}"'
        )
        if limit is None:
            report(f"{admits}, which has no ResourceQuota on {key}", queue.urn)
        elif amount > limit:
            report(f"{admits}, above its ResourceQuota {key} of {show(limit, resource)}", queue.urn)


def _check_queue_capacity(args: StackValidationArgs, report: ReportViolation, _: None) -> None:
    found = collect(args.resources)
    if not (found.flavors or found.cluster_queues or found.local_queues):
        return
    pools = node_pools(args.resources)

    capacity: dict[str, FlavorCapacity] = {}
    for name, flavor in found.flavors.items():
        if steers_nothing(flavor):
            continue
        flavor_capacity = _flavor_capacity(name, flavor, pools, report)
        if flavor_capacity is not None:
            capacity[name] = flavor_capacity

    shares: dict[str, dict[str, Decimal]] = {}
    for name, queue in sorted(found.cluster_queues.items()):
        _check_cluster_queue(name, queue, found, capacity, shares, report)

    for flavor_name, per_queue in sorted(shares.items()):
        pool = capacity[flavor_name]
        total = sum(per_queue.values(), Decimal(0))
        if total > pool.limit:
            listed = ", ".join(
                f"{queue}: {show(amount, pool.resource)}"
                for queue, amount in sorted(per_queue.items())
                if amount
            )
            report(
                f'ClusterQueues\' nominal quotas on flavor "{flavor_name}" add up to '
                f"{show(total, pool.resource)} {pool.resource}, above the pool's capacity of "
                f"{fmt_num(pool.units)} x overcommit {fmt_num(pool.factor)} = "
                f"{show(pool.limit, pool.resource)} ({listed})",
                found.flavors[flavor_name].urn,
            )

    for local in found.local_queues:
        target = as_str(as_map(local.props.get("spec")).get("clusterQueue")) or ""
        if target not in found.cluster_queues:
            report(
                f'LocalQueue "{name_of(local.props)}" in namespace '
                f'"{effective_namespace(local.props)}" points at ClusterQueue "{target}", which '
                "does not exist",
                local.urn,
            )


queue_capacity = stack_policy(
    name="queue-capacity",
    description=(
        "Kueue queues fit the GPU pools behind their flavors and the ResourceQuotas of their "
        "team namespaces."
    ),
    category=Category.GPU,
    severity=Severity.HIGH,
    remediation=(
        "Keep the ClusterQueues' nominalQuota of a flavor's GPU resource, summed over all "
        f"queues, within the pool's capacity: {GPU_CAPACITY_ANNOTATION} x "
        f"{QUOTA_OVERCOMMIT_ANNOTATION} on the ResourceFlavor (lower nominal quotas or grow the "
        "pool). Give every queue in a cohort an explicit borrowingLimit, and size each team "
        "namespace's ResourceQuota (requests.<resource>) to at least nominal + borrowing of its "
        "ClusterQueue, or Kueue admits work the quota then rejects. Every ResourceFlavor must "
        f"select, through spec.nodeLabels {NODE_POOL_LABEL}, a pool that a Karpenter NodePool or "
        "labelled nodes provide and carry the capacity annotations, unless it steers nothing "
        "(no node labels, taints or tolerations: a CPU flavor, which gives no GPU quota); every "
        "ClusterQueue must "
        f"select its team namespace by {NAMESPACE_NAME_LABEL} and use only defined flavors; "
        "every LocalQueue must name an existing ClusterQueue."
    ),
    check=_check_queue_capacity,
    knobs=NO_KNOBS,
)
