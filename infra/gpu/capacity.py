"""What a GPU pool holds: the one place pool arithmetic is written.

The config rules (pools, queues, workloads), the build (Kueue flavours) and the messages all
count a pool's GPU resource with these functions; units per GPU come from
``components.gpu_products.units_per_gpu``, which ``GpuNodePool`` uses too.
"""

from __future__ import annotations

from components.gpu_products import mig_slices_per_gpu, units_per_gpu
from components.scheduling_contract import gpu_resource_name

from ..config.errors import plural
from .config import GpuNodePoolConfig


def pool_gpu_resource(pool: GpuNodePoolConfig) -> str:
    """The extended resource the pool's nodes advertise."""
    sharing = pool.sharing
    return gpu_resource_name(sharing.mode, sharing.mig_profile, sharing.mig_strategy)


def pool_units_per_gpu(pool: GpuNodePoolConfig) -> int:
    """Units of the pool's GPU resource one physical GPU yields (1 when unknown)."""
    sharing = pool.sharing
    return units_per_gpu(pool.gpu_product, sharing.mode, sharing.replicas, sharing.mig_profile)


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


def pool_is_sound(pool: GpuNodePoolConfig) -> bool:
    """Sized and shareable as configured; quota arithmetic skips pools that are not (the pool
    rules report why), so one mistake yields one error, not a cascade."""
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


def node_bound(pool: GpuNodePoolConfig) -> str:
    """What sets the pool's node count, for messages."""
    return "maxNodes" if pool.backend == "karpenter" else "its node list"


def node_offer(pool: GpuNodePoolConfig) -> str:
    """What one node offers, for messages: ``8 GPUs x 7 1g.10gb slices``."""
    text = plural(pool.gpus_per_node, "GPU")
    if pool.sharing.mode == "time-slicing":
        text += f" x {pool_units_per_gpu(pool)} replicas"
    elif pool.sharing.mode == "mig":
        text += f" x {pool_units_per_gpu(pool)} {pool.sharing.mig_profile} slices"
    return text


def capacity_text(pool: GpuNodePoolConfig) -> str:
    """The pool's capacity spelled out, for messages: ``4 nodes x 8 GPUs``."""
    return f"{plural(pool.node_count, 'node')} x {node_offer(pool)}"
