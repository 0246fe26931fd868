"""Stack-level capacity check on rendered resources: do the queues fit the pools and the quotas?

Why: the config rules (infra/config/rules.py) check the stack config, but a policy pack only sees
what the program registered. This is the same arithmetic on the rendered objects, written as a
pure function so the CrossGuard pack can wrap it in a stack policy unchanged:

    check_queue_capacity([{"type": ..., "inputs": {...}}, ...]) -> ["violation", ...]

It reads only the objects themselves: ResourceFlavors carry their pool's capacity, GPU resource
and overcommit factor as annotations (``aiplatform.io/gpu-capacity`` and friends), Karpenter
NodePools and static-pool Node patches carry the pool label, ClusterQueues select their team's
namespace by name and ResourceQuotas cap that namespace.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from components.constants import (
    GPU_CAPACITY_ANNOTATION,
    GPU_RESOURCE_ANNOTATION,
    NAMESPACE_NAME_LABEL,
    NODE_POOL_LABEL,
    QUOTA_OVERCOMMIT_ANNOTATION,
)
from infra.config.quantity import parse_quantity

_KUEUE = "kubernetes:kueue.x-k8s.io/"
_NODE_POOL_TYPE = "kubernetes:karpenter.sh/v1:NodePool"
_NODE_TYPES = ("kubernetes:core/v1:NodePatch", "kubernetes:core/v1:Node")
_QUOTA_TYPES = ("kubernetes:core/v1:ResourceQuota",)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _kind(record: Mapping[str, Any]) -> str:
    return str(record.get("type", "")).rsplit(":", 1)[-1]


def _amount(value: Any) -> Decimal | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except (ValueError, InvalidOperation):
        return None


def _show(amount: Decimal) -> str:
    return str(int(amount)) if amount == amount.to_integral_value() else str(amount.normalize())


def _quota_key(resource: str) -> str:
    return f"requests.{resource}"


def _pools(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """Pool names that exist as Karpenter NodePools or as labels on (patched) Nodes."""
    pools: set[str] = set()
    for record in records:
        inputs = _map(record.get("inputs"))
        if record.get("type") == _NODE_POOL_TYPE:
            labels = _map(
                _map(_map(_map(inputs.get("spec")).get("template")).get("metadata")).get("labels")
            )
            pools.add(str(labels.get(NODE_POOL_LABEL) or _map(inputs.get("metadata")).get("name")))
        elif record.get("type") in _NODE_TYPES:
            label = _map(_map(inputs.get("metadata")).get("labels")).get(NODE_POOL_LABEL)
            if label:
                pools.add(str(label))
    return pools


def check_queue_capacity(resources: list[dict[str, Any]]) -> list[str]:
    """Violations, one message each; an empty list means the queues fit."""
    violations: list[str] = []
    pools = _pools(resources)
    flavors: dict[str, Mapping[str, Any]] = {}
    cluster_queues: dict[str, Mapping[str, Any]] = {}
    local_queues: list[tuple[str, str, str]] = []
    quotas: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for record in resources:
        record_type = str(record.get("type", ""))
        inputs = _map(record.get("inputs"))
        metadata = _map(inputs.get("metadata"))
        name = str(metadata.get("name", ""))
        if record_type.startswith(_KUEUE):
            kind = _kind(record)
            if kind == "ResourceFlavor":
                flavors[name] = inputs
            elif kind == "ClusterQueue":
                cluster_queues[name] = inputs
            elif kind == "LocalQueue":
                target = str(_map(inputs.get("spec")).get("clusterQueue", ""))
                local_queues.append((str(metadata.get("namespace", "")), name, target))
        elif record_type in _QUOTA_TYPES:
            namespace = str(metadata.get("namespace", ""))
            for key, value in _map(_map(inputs.get("spec")).get("hard")).items():
                amount = _amount(value)
                if amount is not None:
                    old = quotas[namespace].get(key)
                    quotas[namespace][key] = amount if old is None else min(old, amount)

    # Every flavour maps to a pool and says how much it can hold.
    capacity: dict[str, tuple[str, Decimal]] = {}
    for name, flavor in flavors.items():
        pool = _map(_map(flavor.get("spec")).get("nodeLabels")).get(NODE_POOL_LABEL)
        if not pool:
            violations.append(
                f"ResourceFlavor {name!r} selects no node pool (nodeLabels lacks {NODE_POOL_LABEL})"
            )
        elif pool not in pools:
            violations.append(
                f"ResourceFlavor {name!r} selects node pool {pool!r}, which no Karpenter NodePool "
                "or labelled node provides"
            )
        annotations = _map(_map(flavor.get("metadata")).get("annotations"))
        units = _amount(annotations.get(GPU_CAPACITY_ANNOTATION))
        resource = annotations.get(GPU_RESOURCE_ANNOTATION)
        factor = _amount(annotations.get(QUOTA_OVERCOMMIT_ANNOTATION, "1")) or Decimal(1)
        if units is None or not resource:
            violations.append(
                f"ResourceFlavor {name!r} lacks the {GPU_CAPACITY_ANNOTATION} and "
                f"{GPU_RESOURCE_ANNOTATION} annotations; its capacity cannot be checked"
            )
            continue
        capacity[name] = (str(resource), units * factor)

    nominal_by_flavor: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for cq_name, queue in sorted(cluster_queues.items()):
        spec = _map(queue.get("spec"))
        in_cohort = bool(spec.get("cohortName"))
        selected = _map(_map(spec.get("namespaceSelector")).get("matchLabels")).get(
            NAMESPACE_NAME_LABEL
        )
        admitted: dict[str, Decimal] = defaultdict(Decimal)
        for group in _list(spec.get("resourceGroups")):
            for flavor in _list(_map(group).get("flavors")):
                flavor_name = str(_map(flavor).get("name", ""))
                if flavor_name not in flavors:
                    violations.append(
                        f"ClusterQueue {cq_name!r} uses flavor {flavor_name!r}, which no "
                        "ResourceFlavor defines"
                    )
                for entry in _list(_map(flavor).get("resources")):
                    entry = _map(entry)
                    resource = str(entry.get("name", ""))
                    nominal = _amount(entry.get("nominalQuota")) or Decimal(0)
                    borrow = _amount(entry.get("borrowingLimit"))
                    if flavor_name in capacity and resource == capacity[flavor_name][0]:
                        nominal_by_flavor[flavor_name][cq_name] = nominal
                    if in_cohort and borrow is None:
                        violations.append(
                            f"ClusterQueue {cq_name!r} may borrow {resource} in flavor "
                            f"{flavor_name!r} without limit; set borrowingLimit so the namespace "
                            "quota bounds it"
                        )
                        continue
                    admitted[resource] += nominal + (borrow or Decimal(0))
        if not isinstance(selected, str):
            violations.append(
                f"ClusterQueue {cq_name!r} does not select one namespace by "
                f"{NAMESPACE_NAME_LABEL}; its quota cannot be checked"
            )
            continue
        namespace = selected
        hard = quotas.get(namespace, {})
        for resource, amount in sorted(admitted.items()):
            if amount == 0:
                continue
            limit = hard.get(_quota_key(resource))
            if limit is None:
                violations.append(
                    f"ClusterQueue {cq_name!r} admits {_show(amount)} {resource} into namespace "
                    f"{namespace!r}, which has no ResourceQuota on {_quota_key(resource)}"
                )
            elif amount > limit:
                violations.append(
                    f"ClusterQueue {cq_name!r} admits up to {_show(amount)} {resource} (nominal "
                    f"+ borrowing) into namespace {namespace!r}, above its ResourceQuota of "
                    f"{_show(limit)}"
                )

    for flavor_name, per_queue in sorted(nominal_by_flavor.items()):
        resource, limit = capacity[flavor_name]
        total = sum(per_queue.values(), Decimal(0))
        if total > limit:
            shares = ", ".join(f"{cq}: {_show(v)}" for cq, v in sorted(per_queue.items()) if v)
            violations.append(
                f"ClusterQueues' nominal quotas on flavor {flavor_name!r} add up to "
                f"{_show(total)} {resource}, above the pool's capacity x overcommit of "
                f"{_show(limit)} ({shares})"
            )

    for namespace, name, target in local_queues:
        if target not in cluster_queues:
            violations.append(
                f"LocalQueue {namespace}/{name} points at ClusterQueue {target!r}, which does "
                "not exist"
            )
    return violations
