"""The whole stack config: one key per domain under the ``ai-platform:`` namespace."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ..autoscaling.config import AutoscalingConfig
from ..gpu.config import GpuNodePoolConfig, GpuStackConfig
from ..manifests.config import EscapeHatchConfig
from ..monitoring.config import MonitoringConfig
from ..queueing.config import QueueingConfig
from ..ray.config import RayConfig
from ..scheduling.config import DEFAULT_PRIORITY_CLASSES, PriorityClassConfig
from ..storage.config import StorageConfig
from ..tenancy.config import TeamConfig
from ..workloads.config import WorkloadConfig
from .base import ConfigModel
from .charts import ChartsConfig
from .cluster import ClusterConfig
from .images import ImagesConfig


class PlatformConfig(ConfigModel):
    """Everything ``Pulumi.<stack>.yaml`` says under ``ai-platform:``.

    Each field is one stack config key: ``ai-platform:cluster``, ``ai-platform:teams``, ...
    """

    cluster: ClusterConfig
    """Target cluster and environment. Required."""
    teams: list[TeamConfig] = Field(min_length=1)
    """The tenants. At least one."""
    priority_classes: list[PriorityClassConfig] = Field(
        default_factory=lambda: list(DEFAULT_PRIORITY_CLASSES), min_length=1
    )
    """Priority classes. Default: critical, high, normal (global default), batch-low."""
    storage: StorageConfig
    """Storage classes. Required."""
    node_pools: list[GpuNodePoolConfig] = []
    """GPU node pools (Karpenter-launched or existing nodes). Default: none."""
    gpu_stack: GpuStackConfig = GpuStackConfig()
    """The NVIDIA GPU operator. Default: installed with driver, toolkit, GFD and DCGM exporter."""
    queueing: QueueingConfig = QueueingConfig()
    """Kueue: flavours per pool, a ClusterQueue per queued team. Default: installed."""
    autoscaling: AutoscalingConfig = AutoscalingConfig()
    """What the autoscalers read: KEDA, which scales worker pools on their queue length.
    Default: KEDA not installed."""
    ray: RayConfig = RayConfig()
    """The KubeRay operator, for Ray clusters and Ray jobs. Default: not installed."""
    workloads: list[WorkloadConfig] = []
    """Training jobs and inference services, each naming its team. Default: none."""
    workload_files: list[str] = []
    """More workloads, in files beside the stack file: paths or globs relative to the project
    folder, each file a mapping ``workloads: [...]`` of the same shape; their workloads follow
    these, checked as if written here. For team-owned files, and for stacks whose config would
    pass the engine's size limit (docs/operations.md, "How large one stack can be").
    Default: none."""
    monitoring: MonitoringConfig = MonitoringConfig()
    """Metrics, alerts, dashboards and logs. Default: installed, single-binary Loki."""
    extra_manifests: list[dict[str, Any]] = []
    """Kubernetes objects the platform does not model, applied as written (escape hatch),
    within the fence of ``escapeHatch``. The policy pack judges them like everything else.
    Default: none."""
    escape_hatch: EscapeHatchConfig = EscapeHatchConfig()
    """What ``extraManifests`` may apply. Default: namespaced kinds in team namespaces only."""
    charts: ChartsConfig = ChartsConfig()
    """Where the Helm charts come from. Default: their public repositories."""
    images: ImagesConfig = ImagesConfig()
    """A registry mirror for every image the platform deploys. Default: none."""
