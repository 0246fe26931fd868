"""The stack outputs: a contract other teams read with a ``StackReference``.

Every field here is documented in docs/outputs.md; a test fails when they disagree. Renaming or
removing a field is a breaking change: bump ``OUTPUTS_VERSION`` and add an upgrade note.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

OUTPUTS_VERSION = 1
"""Major version of the outputs contract; consumers should check it."""


class OutputModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        serialize_by_alias=True,
        validate_by_name=True,
        frozen=True,
        extra="forbid",
        # Attribute docstrings become schema descriptions in infra/schema_docs.py, not here.
    )


class WorkloadOutputs(OutputModel):
    """How to find and reach one of the team's workloads."""

    kind: str
    """``training``, ``inference``, ``worker-pool``, ``ray-cluster`` or ``ray-job``."""
    workload_type: str
    """``training``, ``evaluation``, ``inference`` or ``worker`` (the workload-type label)."""
    object_name: str
    """Name of the Job (training), Deployment (inference, worker pool), RayCluster or RayJob in
    the team's namespace."""
    service_host: str | None = None
    """``<svc>.<ns>.svc.cluster.local``: an inference Service, a multi-node job's headless
    Service (worker ``i`` is ``<job>-<i>.<serviceHost>``) or a Ray cluster's head Service;
    None for single-node jobs and Ray jobs."""
    port: int | None = None
    """Serving port of an inference Service, rendezvous port of a multi-node job, Ray client
    port of a Ray cluster (``ray://<serviceHost>:<port>``)."""
    dependency_hosts: dict[str, str] = {}
    """Stateful dependency name → its headless Service's DNS name."""
    checkpoint_claim: str | None = None
    """PVC a training job writes checkpoints to (under ``/<job>``); None without one."""
    queues: list[str] = []
    """The Celery queues a worker pool consumes (send its tasks there); empty for others."""


class TeamRedisOutputs(OutputModel):
    """The team's Redis: where it answers and which Secret holds its credentials."""

    service: str
    """The Redis Service (and StatefulSet) in the team's namespace."""
    host: str
    """``<service>.<ns>.svc.cluster.local``; port 6379."""
    secret: str
    """Secret in the team's namespace: ``password`` and ``url``
    (``redis://:<password>@<host>:6379/0``). Only the team's own pods with the
    ``aiplatform.io/redis-client: "true"`` label get through the Redis NetworkPolicy."""


class TeamOutputs(OutputModel):
    """Where a team's workloads go and what they run as."""

    namespace: str
    """The team's namespace."""
    service_account: str
    """Service account for the team's workloads (token not automounted)."""
    env_config_map: str
    """ConfigMap with the team's environment (``envFrom`` it)."""
    volumes: dict[str, str]
    """Shared PVCs by purpose-qualified name: claim name → purpose."""
    local_queue: str | None = None
    """LocalQueue to name in ``kueue.x-k8s.io/queue-name``; None when the team queues nothing."""
    cluster_queue: str | None = None
    """The team's ClusterQueue (cluster-scoped); None when the team queues nothing."""
    workloads: dict[str, WorkloadOutputs] = {}
    """Per workload name (``ai-platform:workloads`` of this team)."""
    redis: TeamRedisOutputs | None = None
    """The team Redis; null when ``teams[].redis.enabled`` is false."""


class GpuPoolOutputs(OutputModel):
    """A GPU node pool's scheduling contract: how a pod lands on the pool."""

    node_selector: dict[str, str]
    """Pod ``nodeSelector`` for the pool."""
    tolerations: list[dict[str, str]]
    """Pod tolerations for the pool's taints."""
    gpu_resource: str
    """Resource to request: ``nvidia.com/gpu`` or ``nvidia.com/mig-<profile>``."""
    gpus_per_node: int
    """Physical GPUs per node."""
    resources_per_node: int
    """Units of ``gpuResource`` per node (GPUs x time-slice replicas or MIG slices)."""
    product: str
    """``nvidia.com/gpu.product`` of the GPUs."""
    capacity_type: str
    """``on-demand``, ``spot`` or ``reserved``."""
    sharing: str
    """``exclusive``, ``time-slicing`` or ``mig``."""


class ClassSetOutputs(OutputModel):
    """A set of named cluster classes with one default."""

    names: list[str]
    """All class names."""
    default: str
    """The class used when none is named."""


class MonitoringOutputs(OutputModel):
    """Where the observability stack answers, inside the cluster."""

    namespace: str
    """Namespace of Prometheus, Alertmanager and Grafana."""
    logging_namespace: str
    """Namespace of Loki and Fluent Bit."""
    grafana_url: str
    """Grafana's in-cluster URL."""
    grafana_admin_secret: str
    """Secret (in the monitoring namespace) holding Grafana's admin credentials."""
    prometheus_url: str
    """Prometheus' in-cluster URL (query API)."""
    alertmanager_url: str
    """Alertmanager's in-cluster URL."""
    loki_push_url: str
    """Loki's push endpoint for log shippers."""


class StackOutputs(OutputModel):
    """Everything the stack exports. Top-level fields are the stack output names."""

    outputs_version: int = OUTPUTS_VERSION
    """Major version of this contract."""
    cluster_name: str
    """``ai-platform:cluster.name``."""
    environment: str
    """``dev``, ``staging`` or ``prod``."""
    teams: dict[str, TeamOutputs]
    """Per team name."""
    priority_classes: ClassSetOutputs
    """Priority class names and the global default."""
    storage_classes: ClassSetOutputs
    """Storage class names and the default."""
    gpu_pools: dict[str, GpuPoolOutputs] = {}
    """Per GPU node pool name, its scheduling contract."""
    kubelet_drop_ins: dict[str, dict[str, Any]] = {}
    """Per static GPU node pool name, the ``KubeletConfiguration`` drop-in (eviction thresholds,
    reservations) its node administrators install in each node's kubelet ``--config-dir``
    (docs/operations.md). Karpenter pools are not listed: their node class carries it."""
    monitoring: MonitoringOutputs | None = None
    """The observability stack's addresses; null when ``monitoring.enabled`` is false."""


def export_outputs(outputs: StackOutputs) -> None:
    """One stack output per top-level field, JSON-shaped, camelCase keys."""
    for key, value in outputs.model_dump(mode="json").items():
        pulumi.export(key, value)
