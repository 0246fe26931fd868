"""What a workload holds at once: the one place workload demand is computed.

The quota, queue and default-queue rules size a workload with :func:`workload_demand`. A Ray
workload's main pods are its workers; its head (with the autoscaler sidecar) is a side pod.
"""

from __future__ import annotations

from decimal import Decimal

from components.frozen import frozen
from components.workloads.ray import AUTOSCALER_RESOURCES, SUBMITTER_RESOURCES
from components.workloads.worker_pool import MAX_SURGE

from ..config.errors import plural
from ..config.quantity import parse_quantity
from .config import RAY_KINDS, ComputeConfig, DependencyConfig, RayHeadConfig, WorkloadConfig


@frozen
class WorkloadDemand:
    """What a workload holds at once: its main pods and its stateful dependencies."""

    pods: int
    """Main pods: a job's or a Ray cluster's workers, or an inference service's replicas (plus
    the surge)."""
    cpu: Decimal
    """Per main pod (the preflight init container has the same, so it adds nothing)."""
    memory: Decimal
    memory_limit: Decimal
    gpus: int
    dependency_pods: int = 0
    """Side pods: an inference service's stateful dependencies, a Ray workload's head."""
    dependency_cpu: Decimal = Decimal(0)
    """Sum over side pods."""
    dependency_memory: Decimal = Decimal(0)
    dependency_memory_limit: Decimal = Decimal(0)
    side_noun: str = "dependency pod"
    """What a side pod is called in messages."""

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
        text = f"{plural(self.pods, 'pod')} x {per_pod}"
        if self.dependency_pods and resource in ("cpu", "memory", "memory_limit"):
            text += f" + {plural(self.dependency_pods, self.side_noun)}"
        return text


def limit_of(request: str, limit: str | None) -> Decimal:
    """A limit as set, else the request it defaults to."""
    return parse_quantity(limit or request)


def _ray_side_pods(head: ComputeConfig, submitter: bool) -> tuple[Decimal, Decimal, Decimal]:
    """CPU, memory and memory limit of a Ray workload's side pods: the head (its Ray container
    and the autoscaler sidecar, counted whether it runs or not) and a Ray job's submitter."""
    extra = [AUTOSCALER_RESOURCES, *([SUBMITTER_RESOURCES] if submitter else [])]
    cpu = sum((parse_quantity(r.cpu) for r in extra), Decimal(0))
    memory = sum((parse_quantity(r.memory) for r in extra), Decimal(0))
    return (
        parse_quantity(head.cpu) + cpu,
        parse_quantity(head.memory) + memory,
        limit_of(head.memory, head.memory_limit) + memory,
    )


def workload_demand(workload: WorkloadConfig, floor: bool = False) -> WorkloadDemand:
    """Peak demand (``floor``: an inference service at its minimum replicas, no surge)."""
    resources = workload.resources
    ray = workload.ray_settings
    if workload.kind in RAY_KINDS:
        fewest, most = workload.ray_workers
        head = _ray_side_pods(
            ray.head.resources if ray else RayHeadConfig().resources, workload.kind == "ray-job"
        )
        return WorkloadDemand(
            pods=fewest if floor else most,
            cpu=parse_quantity(resources.cpu),
            memory=parse_quantity(resources.memory),
            memory_limit=limit_of(resources.memory, resources.memory_limit),
            gpus=workload.gpus.count if workload.gpus else 0,
            dependency_pods=2 if workload.kind == "ray-job" else 1,
            dependency_cpu=head[0],
            dependency_memory=head[1],
            dependency_memory_limit=head[2],
            side_noun="head/submitter pod" if workload.kind == "ray-job" else "head pod",
        )
    dependencies: list[DependencyConfig] = []
    if workload.kind == "training":
        pods = workload.training_settings.nodes
    elif workload.kind == "worker-pool":
        pool = workload.worker_pool
        low, high = (pool.min_replicas, pool.max_replicas) if pool else (1, 1)
        pods = low if floor else high + MAX_SURGE  # a rollout adds one before it stops one
    else:
        settings = workload.inference_settings
        pods = settings.min_replicas if floor else settings.max_replicas + settings.max_surge
        dependencies = settings.stateful_dependencies
    return WorkloadDemand(
        pods=pods,
        cpu=parse_quantity(resources.cpu),
        memory=parse_quantity(resources.memory),
        memory_limit=limit_of(resources.memory, resources.memory_limit),
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
                limit_of(d.resources.memory, d.resources.memory_limit) * d.replicas
                for d in dependencies
            ),
            Decimal(0),
        ),
    )
