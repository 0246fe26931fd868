"""What a workload holds at once: the one place workload demand is computed.

The quota, queue and default-queue rules size a workload with :func:`workload_demand`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from components.workloads.worker_pool import MAX_SURGE

from ..config.errors import plural
from ..config.quantity import parse_quantity
from .config import DependencyConfig, WorkloadConfig


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
        text = f"{plural(self.pods, 'pod')} x {per_pod}"
        if self.dependency_pods and resource in ("cpu", "memory", "memory_limit"):
            text += f" + {plural(self.dependency_pods, 'dependency pod')}"
        return text


def limit_of(request: str, limit: str | None) -> Decimal:
    """A limit as set, else the request it defaults to."""
    return parse_quantity(limit or request)


def workload_demand(workload: WorkloadConfig, floor: bool = False) -> WorkloadDemand:
    """Peak demand (``floor``: an inference service at its minimum replicas, no surge)."""
    resources = workload.resources
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
