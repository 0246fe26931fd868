"""``ai-platform:teams``: the tenants of the platform, one namespace each."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from components.predicates import is_env_name

from ..config.base import ConfigModel, DnsLabel, LabelMap
from ..config.quantity import Count, Quantity
from ..queueing.config import TeamQueueConfig
from ..redis.config import TeamRedisConfig

TeamPurpose = Literal["training", "serving", "platform"]
AccessMode = Literal["ReadWriteOnce", "ReadWriteOncePod", "ReadOnlyMany", "ReadWriteMany"]
VolumePurpose = Literal["datasets", "checkpoints", "models", "general"]


def _env_names(value: dict[str, str]) -> dict[str, str]:
    for key in value:
        if not is_env_name(key):
            raise ValueError(
                f"environment variable names must match [A-Za-z_][A-Za-z0-9_]*, got {key!r}"
            )
    return value


EnvMap = Annotated[dict[str, str], AfterValidator(_env_names)]


class TeamQuota(ConfigModel):
    """The team's share of the cluster, enforced by a ResourceQuota in its namespace."""

    cpu: Quantity
    """Sum of CPU requests (``requests.cpu``)."""
    memory: Quantity
    """Sum of memory requests and of memory limits (``requests.memory``, ``limits.memory``)."""
    gpus: Count
    """Sum of GPU requests (``requests.nvidia.com/gpu``). 0 keeps the team off GPUs."""
    storage: Quantity = "1Ti"
    """Sum of PVC sizes (``requests.storage``)."""
    persistent_volume_claims: Count = 20
    """Number of PVCs."""
    pods: Count = 200
    """Number of non-terminal pods."""
    mig_slices: dict[str, Count] = {}
    """MIG profile → slices (``requests.nvidia.com/mig-<profile>``) for mixed-strategy MIG pools."""


class ComputeAmounts(ConfigModel):
    """A cpu/memory pair."""

    cpu: Quantity
    memory: Quantity


class ContainerDefaults(ConfigModel):
    """LimitRange defaults for containers that state no resources (seed values)."""

    requests: ComputeAmounts = ComputeAmounts.model_validate({"cpu": "2", "memory": "8Gi"})
    """Default requests: 2 CPU / 8Gi."""
    limits: ComputeAmounts = ComputeAmounts.model_validate({"cpu": "4", "memory": "16Gi"})
    """Default limits: 4 CPU / 16Gi. Must be >= the default requests."""


class TeamVolume(ConfigModel):
    """A PersistentVolumeClaim the team's workloads share (datasets, checkpoints, models)."""

    name: DnsLabel
    """Claim name, unique within the team."""
    purpose: VolumePurpose
    """``datasets`` (read by many), ``checkpoints`` (one writer), ``models``, ``general``."""
    storage_class: str
    """A class from ``ai-platform:storage.classes``."""
    size: Quantity
    """Requested size, e.g. ``2Ti``."""
    access_modes: list[AccessMode] = Field(default=["ReadWriteOnce"], min_length=1)
    """Datasets shared by many pods want ``ReadWriteMany`` or ``ReadOnlyMany``."""


class TeamConfig(ConfigModel):
    """One team: its namespace, quota, defaults, access and shared volumes."""

    name: DnsLabel
    """Team name; unique; the value of the ``aiplatform.io/team`` label."""
    namespace: DnsLabel | None = None
    """Namespace name. Default: the team name."""
    purpose: TeamPurpose
    """``training``, ``serving`` or ``platform``: labels the namespace, picks dashboards."""
    description: str = ""
    admin_groups: list[str] = []
    """Identity-provider groups bound to the team's admin Role (full control in the namespace)."""
    viewer_groups: list[str] = []
    """Groups bound to the team's read-only Role."""
    quota: TeamQuota
    container_defaults: ContainerDefaults = ContainerDefaults()
    """LimitRange defaults; override per team."""
    priority_classes: list[str] | None = None
    """Priority classes the team may use. Default: all of ``ai-platform:priorityClasses``."""
    env: EnvMap = {}
    """Team workloads' environment (a ConfigMap). The platform sets ``TRAINING_ENV``."""
    labels: LabelMap = {}
    """Extra labels for the namespace (cost centre, owner)."""
    volumes: list[TeamVolume] = []
    """Shared PVCs created in the namespace. Protected in prod."""
    reachable_from: list[DnsLabel] = []
    """Teams whose pods may connect to this team's pods: only then may either team's
    NetworkPolicies allow it. Default: none, teams are isolated from each other."""
    queue: TeamQueueConfig | None = None
    """Kueue quotas per GPU pool. Omit: the team queues nothing (its jobs are not admitted by
    Kueue and only the namespace quota applies)."""
    redis: TeamRedisConfig = TeamRedisConfig()
    """The team's own Redis (job status, Celery broker, Ray GCS). Default: none."""

    @property
    def namespace_name(self) -> str:
        return self.namespace or self.name
