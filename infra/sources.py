"""Which stack config entry each component renders: names, and the way back from a resource.

``build_platform`` names its components with these functions, and the preview uses
:func:`config_sources` to say which entry of the stack file a policy finding came from
(``ai-platform:workloads[llama-eval]``): the user edits the stack file, not the rendered objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.data_volume import DataVolume
from components.gpu_node_pool import GpuNodePool
from components.gpu_operator import GpuOperator
from components.keda import Keda
from components.kuberay import KubeRayOperator
from components.kueue import DefaultQueue, Kueue, TeamQueue
from components.metrics_server import MetricsServer
from components.monitoring.stack import MonitoringStack
from components.priority_classes import PriorityClasses
from components.prometheus_adapter import PrometheusAdapter
from components.raw_manifests import RawManifests
from components.storage_classes import StorageClasses
from components.team_namespace import TeamNamespace
from components.team_redis_server import TeamRedis
from components.workloads import InferenceService, TrainingJob
from components.workloads.ray import RayCluster, RayJob
from components.workloads.worker_pool import WorkerPool

from .config import PlatformConfig
from .config.errors import PathPart
from .gpu.config import GpuNodePoolConfig
from .tenancy.config import TeamConfig, TeamVolume
from .workloads.config import WorkloadConfig

PRIORITY_CLASSES = "priority"
STORAGE_CLASSES = "storage"
GPU_OPERATOR = "gpu-operator"
KUEUE = "kueue"
KEDA = "keda"
KUBERAY = "kuberay"
METRICS_SERVER = "metrics-server"
PROMETHEUS_ADAPTER = "prometheus-adapter"
MONITORING = "monitoring"
EXTRA_MANIFESTS = "extra"
"""Logical names of the components the stack has one of."""


def pool_name(pool: GpuNodePoolConfig) -> str:
    return f"pool-{pool.name}"


def team_queue_name(team: TeamConfig) -> str:
    return f"{team.name}-queue"


def default_queue_name(team: TeamConfig) -> str:
    return f"{team.name}-default-queue"


def redis_name(team: TeamConfig) -> str:
    return f"{team.name}-redis"


def volume_name(team: TeamConfig, volume: TeamVolume) -> str:
    return f"{team.name}-{volume.name}"


def workload_name(workload: WorkloadConfig) -> str:
    return f"{workload.team}-{workload.name}"


ObjectKey = tuple[str, str | None, str]
"""``(kind, namespace, name)`` of a Kubernetes object."""


def config_sources(
    config: PlatformConfig,
) -> tuple[dict[tuple[str, str], tuple[PathPart, ...]], dict[ObjectKey, tuple[PathPart, ...]]]:
    """``(component type, logical name)`` → config path, and for objects written in the config
    one by one (priority classes, storage classes, extra manifests) ``(kind, namespace, name)`` →
    config path. The component type is the last part of its type token (``TrainingJob``)."""
    components: dict[tuple[str, str], tuple[PathPart, ...]] = {
        (PriorityClasses.__name__, PRIORITY_CLASSES): ("priorityClasses",),
        (StorageClasses.__name__, STORAGE_CLASSES): ("storage", "classes"),
        (GpuOperator.__name__, GPU_OPERATOR): ("gpuStack",),
        (Kueue.__name__, KUEUE): ("queueing",),
        (Keda.__name__, KEDA): ("autoscaling", "keda"),
        (MetricsServer.__name__, METRICS_SERVER): ("autoscaling", "metricsServer"),
        (PrometheusAdapter.__name__, PROMETHEUS_ADAPTER): ("autoscaling", "prometheusAdapter"),
        (KubeRayOperator.__name__, KUBERAY): ("ray",),
        (MonitoringStack.__name__, MONITORING): ("monitoring",),
        (RawManifests.__name__, EXTRA_MANIFESTS): ("extraManifests",),
    }
    for index, pool in enumerate(config.node_pools):
        components.setdefault((GpuNodePool.__name__, pool_name(pool)), ("nodePools", index))
    for index, team in enumerate(config.teams):
        components.setdefault((TeamNamespace.__name__, team.name), ("teams", index))
        queue = ("teams", index, "queue")
        components.setdefault((TeamQueue.__name__, team_queue_name(team)), queue)
        components.setdefault((DefaultQueue.__name__, default_queue_name(team)), ("teams", index))
        components.setdefault((TeamRedis.__name__, redis_name(team)), ("teams", index, "redis"))
        for position, volume in enumerate(team.volumes):
            components.setdefault(
                (DataVolume.__name__, volume_name(team, volume)),
                ("teams", index, "volumes", position),
            )
    for index, workload in enumerate(config.workloads):
        kind = {
            "training": TrainingJob,
            "inference": InferenceService,
            "worker-pool": WorkerPool,
            "ray-cluster": RayCluster,
            "ray-job": RayJob,
        }[workload.kind]
        components.setdefault((kind.__name__, workload_name(workload)), ("workloads", index))
    objects: dict[ObjectKey, tuple[PathPart, ...]] = {}
    for index, pc in enumerate(config.priority_classes):
        objects.setdefault(("PriorityClass", None, pc.name), ("priorityClasses", index))
    for index, sc in enumerate(config.storage.classes):
        objects.setdefault(("StorageClass", None, sc.name), ("storage", "classes", index))
    for index, manifest in enumerate(config.extra_manifests):
        objects.setdefault(object_key(manifest), ("extraManifests", index))
    return components, objects


def object_key(manifest: Mapping[str, Any]) -> ObjectKey:
    meta = manifest.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace = meta.get("namespace")
    return (
        str(manifest.get("kind", "")),
        str(namespace) if namespace else None,
        str(meta.get("name", "")),
    )
