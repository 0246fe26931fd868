"""One Protocol per stack config key: a domain's rules declare what they read by combining them
(``class QueuedPlatform(HasTeams, HasNodePools, HasQueueing, HasPriorityClasses, Protocol)``).

``PlatformConfig`` satisfies every one; so does the partial config the rules run on when part of
the file did not parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..autoscaling.config import AutoscalingConfig
from ..gpu.config import GpuNodePoolConfig
from ..monitoring.config import MonitoringConfig
from ..queueing.config import QueueingConfig
from ..ray.config import RayConfig
from ..scheduling.config import PriorityClassConfig
from ..storage.config import StorageConfig
from ..tenancy.config import TeamConfig
from ..workloads.config import WorkloadConfig
from .cluster import ClusterConfig


class HasCluster(Protocol):
    @property
    def cluster(self) -> ClusterConfig: ...


class HasTeams(Protocol):
    @property
    def teams(self) -> Sequence[TeamConfig]: ...


class HasPriorityClasses(Protocol):
    @property
    def priority_classes(self) -> Sequence[PriorityClassConfig]: ...


class HasStorage(Protocol):
    @property
    def storage(self) -> StorageConfig: ...


class HasNodePools(Protocol):
    @property
    def node_pools(self) -> Sequence[GpuNodePoolConfig]: ...


class HasQueueing(Protocol):
    @property
    def queueing(self) -> QueueingConfig: ...


class HasAutoscaling(Protocol):
    @property
    def autoscaling(self) -> AutoscalingConfig: ...


class HasWorkloads(Protocol):
    @property
    def workloads(self) -> Sequence[WorkloadConfig]: ...


class HasMonitoring(Protocol):
    @property
    def monitoring(self) -> MonitoringConfig: ...


class HasRay(Protocol):
    @property
    def ray(self) -> RayConfig: ...
