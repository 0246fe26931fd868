"""Fake GPU nodes for the local cluster, derived from the stack's node pools.

KWOK plays the kubelet of every Node carrying ``kwok.x-k8s.io/node: fake``. What the Node object
says is what the scheduler sees, so each fake node must look like the real one at the moment the
platform meets it:

- ``backend: static``: the existing servers, bare. They carry what a kubelet registers
  (hostname, os, arch) and what the GPU stack advertises (the allocatable GPU resource, the
  GPU labels), but neither the pool label nor the GPU taint: the platform's ``NodePatch`` puts
  those on (server-side apply), so ``pulumi up`` is what makes them schedulable for the pool.
- ``backend: karpenter``: the nodes Karpenter would launch from the platform's ``NodePool``:
  its template labels and taints, one value of every requirement (capacity type, arch, os,
  instance type or family, zone, GPU count) and the labels Karpenter adds itself. There is no
  Karpenter here to launch on demand, so the pool is created at its size: ``maxNodes`` nodes
  (the most ``spec.limits`` lets Karpenter launch), or ``minNodes`` when both are equal
  (Karpenter's static capacity).

The GPU resource and its amount come from the pool's scheduling contract (what the platform's
device-plugin config makes the plugin advertise): ``nvidia.com/gpu`` per GPU, times the
replicas under time-slicing; ``nvidia.com/mig-<profile>`` slices per GPU times GPUs under the
``mixed`` MIG strategy. KWOK cannot reconfigure a node, so each node shows the state after the
GPU operator acted. CPU and memory come from ``INSTANCE_SHAPES`` for known EC2 instance types and
from ``STATIC_SHAPE_PER_GPU`` otherwise; capacity equals allocatable (no kubelet reservations).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.constants import (
    ARCH_LABEL,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    HOSTNAME_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_AWS_GROUP,
    KARPENTER_GPU_COUNT_LABEL,
    KARPENTER_INSTANCE_FAMILY_LABEL,
    OS_LABEL,
    ZONE_LABEL,
)
from components.gpu_node_pool import (
    GpuNodePoolArgs,
    KarpenterBackend,
    nodepool_spec,
    scheduling_contract,
)
from infra.config import PlatformConfig
from infra.gpu.build import pool_args as _pool_args  # the platform's config -> pool-args mapping
from infra.gpu.config import GpuNodePoolConfig

KWOK_NODE_ANNOTATION: Final = "kwok.x-k8s.io/node"
"""KWOK runs with ``--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake``."""
KWOK_NODE_VALUE: Final = "fake"
POOL_ANNOTATION: Final = "e2e.aiplatform.io/pool"
"""Which pool a fake node stands for (an annotation: labels are what the platform owns)."""
BETA_ARCH_LABEL: Final = "beta.kubernetes.io/arch"
BETA_OS_LABEL: Final = "beta.kubernetes.io/os"
REGION_LABEL: Final = "topology.kubernetes.io/region"
GPU_COUNT_LABEL: Final = "nvidia.com/gpu.count"
NFD_NVIDIA_PCI_LABEL: Final = "feature.node.kubernetes.io/pci-10de.present"
"""What node-feature-discovery finds on a server with NVIDIA (PCI vendor 10de) devices."""
KARPENTER_NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
KARPENTER_REGISTERED_LABEL: Final = "karpenter.sh/registered"
KARPENTER_INITIALIZED_LABEL: Final = "karpenter.sh/initialized"
KARPENTER_NODECLASS_LABEL: Final = f"{KARPENTER_AWS_GROUP}/ec2nodeclass"
KARPENTER_INSTANCE_SIZE_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-size"
KARPENTER_INSTANCE_CPU_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-cpu"
KARPENTER_INSTANCE_MEMORY_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-memory"
KARPENTER_GPU_NAME_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-gpu-name"
KARPENTER_GPU_MANUFACTURER_LABEL: Final = f"{KARPENTER_AWS_GROUP}/instance-gpu-manufacturer"

DEFAULT_ZONE: Final = "e2e-1a"
"""Zone of Karpenter nodes when no pool of the stack names one. A pool without zones takes its
subnets' zones, which the config does not know: the zones other pools name stand in for them."""
DEFAULT_EPHEMERAL_STORAGE: Final = "500Gi"
"""Node disk when the config says nothing (static servers, pools without their node class)."""
DEFAULT_MAX_PODS: Final = 110
"""The kubelet's default ``maxPods``; a pool's ``kubelet.maxPods`` overrides it."""
SYSTEM_POOL: Final = "system"
SYSTEM_NODES: Final = 3
SYSTEM_SHAPE: Final = {"cpu": "32", "memory": "128Gi"}
"""The general-purpose nodes every cluster has besides its GPU pools, where the platform's
operators, Prometheus, Loki and CPU-only services run (the stack file does not describe them:
they are the cluster's, not the platform's). Untainted, one per zone of the stack."""


@dataclass(frozen=True)
class Shape:
    """CPU, memory and GPUs of one machine."""

    cpu: int
    memory_gib: int
    gpus: int
    gpu_name: str = ""


INSTANCE_SHAPES: Final[dict[str, Shape]] = {
    # vCPUs, GiB and NVIDIA GPUs of the GPU instance types the stacks use or could use.
    "p5.48xlarge": Shape(192, 2048, 8, "h100"),
    "p5e.48xlarge": Shape(192, 2048, 8, "h200"),
    "p5en.48xlarge": Shape(192, 2048, 8, "h200"),
    "p4d.24xlarge": Shape(96, 1152, 8, "a100"),
    "p4de.24xlarge": Shape(96, 1152, 8, "a100"),
    **{
        f"g6.{size}": Shape(cpu, cpu * 4, gpus, "l4")
        for size, cpu, gpus in (
            ("xlarge", 4, 1),
            ("2xlarge", 8, 1),
            ("4xlarge", 16, 1),
            ("8xlarge", 32, 1),
            ("16xlarge", 64, 1),
            ("12xlarge", 48, 4),
            ("24xlarge", 96, 4),
            ("48xlarge", 192, 8),
        )
    },
    **{
        f"g6e.{size}": Shape(cpu, cpu * 8, gpus, "l40s")
        for size, cpu, gpus in (
            ("xlarge", 4, 1),
            ("2xlarge", 8, 1),
            ("4xlarge", 16, 1),
            ("8xlarge", 32, 1),
            ("16xlarge", 64, 1),
            ("12xlarge", 48, 4),
            ("24xlarge", 96, 4),
            ("48xlarge", 192, 8),
        )
    },
    **{
        f"g5.{size}": Shape(cpu, cpu * 4, gpus, "a10g")
        for size, cpu, gpus in (
            ("xlarge", 4, 1),
            ("2xlarge", 8, 1),
            ("4xlarge", 16, 1),
            ("8xlarge", 32, 1),
            ("16xlarge", 64, 1),
            ("12xlarge", 48, 4),
            ("24xlarge", 96, 4),
            ("48xlarge", 192, 8),
        )
    },
}
"""Per AWS's instance type pages. Where a pool allows several types (a list, or a family), the
fake nodes take the largest allowed one with the pool's GPU count: Karpenter picks a size that
fits the pending pods, so CPU and memory must never be what stops a pod the real pool would
take; the GPU is the binding resource, as on the real pool."""

STATIC_SHAPE_PER_GPU: Final = Shape(cpu=32, memory_gib=256, gpus=1)
"""CPU and memory per GPU of a server the config does not describe (static pools, unknown
instance types): a DGX A100 has 256 threads and 2 TiB for 8 GPUs; this is the 1 TiB variant."""


def _largest(types: Sequence[str], gpus: int) -> tuple[str, Shape] | None:
    known = [(t, INSTANCE_SHAPES[t]) for t in types if t in INSTANCE_SHAPES]
    fitting = [(t, s) for t, s in known if s.gpus == gpus] or known
    return max(fitting, key=lambda item: (item[1].cpu, item[1].memory_gib), default=None)


def instance_type_for(pool: GpuNodePoolConfig) -> tuple[str, Shape]:
    """The instance type (and its shape) a Karpenter pool's fake nodes get."""
    karpenter = pool.karpenter
    assert karpenter is not None
    allowed = list(karpenter.instance_types) or [
        name
        for name in INSTANCE_SHAPES
        if name.split(".")[0] in karpenter.instance_families
        and INSTANCE_SHAPES[name].gpus == pool.gpus_per_node
    ]
    chosen = _largest(allowed, pool.gpus_per_node)
    if chosen is not None:
        return chosen
    name = allowed[0] if allowed else f"{karpenter.instance_families[0]}.unknown"
    return name, _static_shape(pool.gpus_per_node)


def _static_shape(gpus: int) -> Shape:
    return Shape(STATIC_SHAPE_PER_GPU.cpu * gpus, STATIC_SHAPE_PER_GPU.memory_gib * gpus, gpus)


def gpu_labels(args: GpuNodePoolArgs) -> dict[str, str]:
    """Labels node-feature-discovery and GPU feature discovery put on the pool's nodes. GFD
    renames the product on shared GPUs (see components/scheduling_contract.py)."""
    product = args.product
    sharing = args.sharing
    if sharing.mode == "time-slicing":
        product = f"{product}-SHARED"
    elif sharing.mode == "mig" and sharing.mig_strategy == "single" and sharing.mig_profile:
        product = f"{product}-MIG-{sharing.mig_profile}"
    return {
        NFD_NVIDIA_PCI_LABEL: "true",
        GPU_PRESENT_LABEL: "true",
        GPU_PRODUCT_LABEL: product,
        GPU_COUNT_LABEL: str(args.gpus_per_node),
    }


def _resources(args: GpuNodePoolArgs, shape: Shape, storage: str, max_pods: int) -> dict[str, str]:
    contract = scheduling_contract(args)
    return {
        "cpu": str(shape.cpu),
        "memory": f"{shape.memory_gib}Gi",
        "ephemeral-storage": storage,
        "pods": str(max_pods),
        contract.gpu_resource: str(contract.resources_per_node),
    }


def _node(
    name: str,
    pool: str,
    labels: dict[str, str],
    taints: list[dict[str, str]],
    resources: dict[str, str],
    arch: str,
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE, POOL_ANNOTATION: pool},
            "labels": {
                **labels,
                HOSTNAME_LABEL: name,
                ARCH_LABEL: arch,
                BETA_ARCH_LABEL: arch,
                OS_LABEL: "linux",
                BETA_OS_LABEL: "linux",
            },
        },
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "nodeInfo": {"architecture": arch, "operatingSystem": "linux"},
        },
    }
    if taints:
        node["spec"]["taints"] = taints
    return node


def _static_nodes(pool: GpuNodePoolConfig, args: GpuNodePoolArgs) -> list[dict[str, Any]]:
    resources = _resources(
        args, _static_shape(pool.gpus_per_node), DEFAULT_EPHEMERAL_STORAGE, DEFAULT_MAX_PODS
    )
    return [_node(name, pool.name, gpu_labels(args), [], resources, "amd64") for name in pool.nodes]


def karpenter_node_count(pool: GpuNodePoolConfig) -> int:
    """How many nodes stand for a Karpenter pool: its static capacity, else its maximum."""
    if pool.min_nodes and pool.min_nodes == pool.max_nodes:
        return pool.min_nodes
    return pool.max_nodes or 0


def _karpenter_nodes(
    pool: GpuNodePoolConfig, args: GpuNodePoolArgs, stack_zones: Sequence[str]
) -> list[dict[str, Any]]:
    backend = args.backend
    assert isinstance(backend, KarpenterBackend) and pool.karpenter is not None
    spec = nodepool_spec(args, backend)
    template = spec["template"]
    instance_type, shape = instance_type_for(pool)
    family, _, size = instance_type.partition(".")
    chosen = {
        INSTANCE_TYPE_LABEL: instance_type,
        KARPENTER_INSTANCE_FAMILY_LABEL: family,
        KARPENTER_GPU_COUNT_LABEL: str(pool.gpus_per_node),
    }
    zones = list(pool.karpenter.zones) or list(stack_zones) or [DEFAULT_ZONE]
    node_class = pool.karpenter.ec2_node_class
    storage = (
        next((d.volume_size for d in node_class.block_devices if d.root_volume), None)
        if node_class
        else None
    ) or DEFAULT_EPHEMERAL_STORAGE
    max_pods = pool.kubelet.max_pods or DEFAULT_MAX_PODS
    resources = _resources(args, shape, storage, max_pods)
    nodes = []
    for index in range(karpenter_node_count(pool)):
        zone = zones[index % len(zones)]
        labels: dict[str, str] = {}
        for requirement in template["spec"]["requirements"]:
            key, values = requirement["key"], requirement["values"]
            labels[key] = chosen.get(key) or (zone if key == ZONE_LABEL else values[0])
        labels.update(
            {
                ZONE_LABEL: zone,
                REGION_LABEL: zone[:-1] if zone[-1:].isalpha() else zone,
                INSTANCE_TYPE_LABEL: instance_type,
                KARPENTER_INSTANCE_FAMILY_LABEL: family,
                KARPENTER_INSTANCE_SIZE_LABEL: size,
                KARPENTER_INSTANCE_CPU_LABEL: str(shape.cpu),
                KARPENTER_INSTANCE_MEMORY_LABEL: str(shape.memory_gib * 1024),
                KARPENTER_GPU_COUNT_LABEL: str(pool.gpus_per_node),
                KARPENTER_GPU_MANUFACTURER_LABEL: "nvidia",
                KARPENTER_NODEPOOL_LABEL: pool.name,
                KARPENTER_REGISTERED_LABEL: "true",
                KARPENTER_INITIALIZED_LABEL: "true",
            }
        )
        if shape.gpu_name:
            labels[KARPENTER_GPU_NAME_LABEL] = shape.gpu_name
        if backend.node_class_group == KARPENTER_AWS_GROUP:
            labels[KARPENTER_NODECLASS_LABEL] = backend.node_class_name
        labels.update(gpu_labels(args))
        labels.update(template["metadata"]["labels"])
        nodes.append(
            _node(
                f"{pool.name}-{index}",
                pool.name,
                labels,
                [dict(t) for t in template["spec"]["taints"]],
                resources,
                labels[ARCH_LABEL],
            )
        )
    return nodes


def system_nodes(zones: Sequence[str]) -> list[dict[str, Any]]:
    """The cluster's untainted general-purpose nodes (``SYSTEM_SHAPE``), spread over ``zones``."""
    resources = {
        **SYSTEM_SHAPE,
        "ephemeral-storage": DEFAULT_EPHEMERAL_STORAGE,
        "pods": str(DEFAULT_MAX_PODS),
    }
    spread = list(zones) or [DEFAULT_ZONE]
    return [
        _node(
            f"{SYSTEM_POOL}-{index + 1}",
            SYSTEM_POOL,
            {ZONE_LABEL: spread[index % len(spread)]},
            [],
            resources,
            "amd64",
        )
        for index in range(SYSTEM_NODES)
    ]


def fake_nodes(config: PlatformConfig) -> list[dict[str, Any]]:
    """Node manifests: the cluster's system nodes, then every pool of the stack in pool order
    (pure: no cluster)."""
    stack_zones = sorted(
        {zone for pool in config.node_pools if pool.karpenter for zone in pool.karpenter.zones}
    )
    nodes = system_nodes(stack_zones)
    for pool in config.node_pools:
        args = _pool_args(pool)
        if pool.backend == "static":
            nodes += _static_nodes(pool, args)
        else:
            nodes += _karpenter_nodes(pool, args, stack_zones)
    return nodes
