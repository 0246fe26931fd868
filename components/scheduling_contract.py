"""The scheduling contract of a GPU node pool: how a pod lands on it, and what it may request.

Why: workloads, Kueue flavours and the stack outputs all need the same node selector,
tolerations and GPU resource name. The pool builds its contract once; everybody else reads it and
nobody retypes a label, taint or resource key.

The node selector is the pool label alone. ``nvidia.com/gpu.product`` is deliberately not in
it: GPU feature discovery owns that label and rewrites it on shared GPUs (``<product>-SHARED``
under time-slicing, ``<product>-MIG-<profile>`` under the ``single`` MIG strategy), so a
selector on the plain product would stop matching the pool's own nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from typing import Any

from .constants import GPU_RESOURCE, MIG_RESOURCE_PREFIX
from .frozen import frozen


@frozen
class Taint:
    """A node taint and the toleration that matches exactly it."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def manifest(self) -> dict[str, str]:
        """The taint as Kubernetes writes it (empty value omitted)."""
        taint = {"key": self.key, "effect": self.effect}
        if self.value:
            taint["value"] = self.value
        return taint

    def toleration(self) -> dict[str, str]:
        """``Equal`` on key, value and effect; ``Exists`` when the taint has no value."""
        if self.value:
            return {
                "key": self.key,
                "operator": "Equal",
                "value": self.value,
                "effect": self.effect,
            }
        return {"key": self.key, "operator": "Exists", "effect": self.effect}


def gpu_resource_name(sharing: str, mig_profile: str | None, mig_strategy: str) -> str:
    """``nvidia.com/mig-<profile>`` under the ``mixed`` MIG strategy, else ``nvidia.com/gpu``.

    Time-slicing keeps the name (``renameByDefault: false``); the ``single`` MIG strategy
    advertises every slice as ``nvidia.com/gpu``.
    """
    if sharing == "mig" and mig_strategy == "mixed" and mig_profile:
        return f"{MIG_RESOURCE_PREFIX}{mig_profile}"
    return GPU_RESOURCE


@frozen
class SchedulingContract:
    """Everything a workload or a queue needs to target one GPU node pool."""

    pool: str
    """Pool name; also the value of the pool label on its nodes."""
    product: str
    """``nvidia.com/gpu.product`` of the physical GPUs (informational, see the module doc)."""
    capacity_type: str
    """``on-demand``, ``spot`` or ``reserved``: spot pools run only preemptible work."""
    gpu_resource: str
    """Extended resource to request: ``nvidia.com/gpu`` or ``nvidia.com/mig-<profile>``."""
    gpus_per_node: int
    """Physical GPUs per node."""
    resources_per_node: int
    """Units of ``gpu_resource`` a node advertises (GPUs x time-slice replicas or MIG slices)."""
    sharing: str = "exclusive"
    """``exclusive``, ``time-slicing`` or ``mig``."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    """Labels a pod must select to land on the pool."""
    taints: tuple[Taint, ...] = ()
    """Taints on every node of the pool."""

    @property
    def tolerations(self) -> list[dict[str, str]]:
        """One toleration per pool taint, exactly matching it."""
        return [taint.toleration() for taint in self.taints]

    def gpu_limits(self, count: int) -> dict[str, str]:
        """``resources.limits`` for ``count`` units (requests default to limits)."""
        return {self.gpu_resource: str(count)}

    def to_output(self) -> dict[str, Any]:
        """JSON shape of the stack output ``gpuPools.<pool>``."""
        return {
            "nodeSelector": dict(self.node_selector),
            "tolerations": self.tolerations,
            "gpuResource": self.gpu_resource,
            "gpusPerNode": self.gpus_per_node,
            "resourcesPerNode": self.resources_per_node,
            "product": self.product,
            "capacityType": self.capacity_type,
            "sharing": self.sharing,
        }
