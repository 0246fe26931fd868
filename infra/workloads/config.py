"""``ai-platform:workloads``: training jobs, inference services, worker pools, Ray clusters and
Ray jobs, each naming its team.

Common settings (image, resources, GPUs, priority, egress) sit on the workload; what only one
kind has sits in its block, ``training:``, ``inference:``, ``workerPool:``, ``rayCluster:`` or
``rayJob:``. Cross-field rules (the team, pool, volumes, storage classes and priority class
exist; requests fit the team's quota and queue) are in ``rules.py``, what a workload holds in
``demand.py``, the mapping to components in ``build.py``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from components.constants import CHECKPOINT_GRACE_SECONDS, TORCHRUN_MASTER_PORT
from components.predicates import is_dns1035_label
from components.workloads.inference_service import MAX_DEPENDENCY_NAME_LENGTH
from components.workloads.workload_pod import MAX_NAME_LENGTH

from ..config.base import ConfigModel, DnsLabel, cidr, matching
from ..config.quantity import Quantity
from ..redis.config import StatusChannel
from ..tenancy.config import AccessMode, EnvMap

WorkloadKind = Literal["training", "inference", "worker-pool", "ray-cluster", "ray-job"]
RAY_KINDS: tuple[WorkloadKind, ...] = ("ray-cluster", "ray-job")
"""The kinds the KubeRay operator runs (``ai-platform:ray``)."""
TrainingWorkloadType = Literal["training", "evaluation"]
LogLevel = Literal["debug", "info", "warning", "error"]
NodeSpread = Literal["DoNotSchedule", "ScheduleAnyway"]

MAX_WORKLOAD_NAME = MAX_NAME_LENGTH
MAX_DEPENDENCY_NAME = MAX_DEPENDENCY_NAME_LENGTH


def _dns1035(max_length: int, why: str) -> AfterValidator:
    def check(value: str) -> str:
        if not is_dns1035_label(value, max_length):
            raise ValueError(
                f"must be a DNS-1035 label of at most {max_length} characters (lower-case "
                f"letters, digits and '-', starting with a letter): {why}, got {value!r}"
            )
        return value

    return AfterValidator(check)


def _image(value: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"must be an image reference such as 'nvcr.io/x/y:1.2', got {value!r}")
    return value


def _read_write_once() -> list[AccessMode]:
    return ["ReadWriteOnce"]


WorkloadName = Annotated[
    str, _dns1035(MAX_WORKLOAD_NAME, "it names the Job or Service and prefixes derived objects")
]
DependencyName = Annotated[
    str, _dns1035(MAX_DEPENDENCY_NAME, "'<workload>-<dependency>' names a StatefulSet")
]
_CELERY_APP = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(:[A-Za-z_][A-Za-z0-9_.]*)?$"
)
_CELERY_QUEUE = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")


_celery_app = matching(
    _CELERY_APP,
    "a Python module path as 'celery -A' takes it, optionally with ':attribute' "
    "('pipelines.celery_app', 'pipelines.app:celery')",
    200,
)
_celery_queue = matching(
    _CELERY_QUEUE,
    "a Celery queue name: letters, digits, '_', '.', ':' and '-' (no commas: -Q takes a "
    "comma-separated list)",
)


CeleryApp = Annotated[str, AfterValidator(_celery_app)]
"""What ``celery -A`` takes: a module path, optionally ``:attribute`` (``pipelines.app:celery``)."""
CeleryQueue = Annotated[str, AfterValidator(_celery_queue)]
"""A Celery queue name, which is also the Redis list holding its tasks."""
Cidr = Annotated[str, AfterValidator(cidr("52.216.0.0/15"))]
Image = Annotated[str, AfterValidator(_image)]
Port = Annotated[int, Field(ge=1, le=65535)]
ExitCode = Annotated[int, Field(ge=1, le=255)]


class ComputeConfig(ConfigModel):
    """CPU and memory of one pod's main container."""

    cpu: Quantity
    """CPU request."""
    memory: Quantity
    """Memory request."""
    cpu_limit: Quantity | None = None
    """Default: the request (always set, so the team's default limit never applies)."""
    memory_limit: Quantity | None = None
    """Default: the request."""


class GpuRequestConfig(ConfigModel):
    """GPUs per pod, from one node pool's scheduling contract."""

    pool: DnsLabel
    """A pool from ``ai-platform:nodePools``."""
    count: int = Field(ge=1)
    """Units of the pool's GPU resource per pod (whole GPUs, time-slice replicas or MIG slices)
    per worker or replica; at most what one node of the pool offers."""


class EgressConfig(ConfigModel):
    """Cluster-external destinations (object storage) the workload may reach."""

    cidrs: list[Cidr] = []
    """IP ranges, e.g. the region's S3 prefixes. Default: none (DNS only)."""
    ports: list[Port] = Field(default_factory=lambda: [443], min_length=1)
    """TCP ports on those ranges. Default: 443."""


class CheckpointConfig(ConfigModel):
    """The checkpoint volume: an existing team volume (``claim``), or a new claim."""

    claim: DnsLabel | None = None
    """A volume of the team (``teams[].volumes``)."""
    storage_class: str | None = None
    """Create ``<job>-checkpoints`` on this class (protected in prod)."""
    size: Quantity | None = None
    """Size of the created claim."""
    access_modes: list[AccessMode] = Field(default_factory=_read_write_once, min_length=1)
    """Of the created claim; multi-node jobs need ``ReadWriteMany``."""


class PreflightConfig(ConfigModel):
    """The ``--start-check`` init container."""

    enabled: bool = True
    image: Image | None = None
    """Default: the workload's image."""
    dataset_min_files: int = Field(default=1, ge=1)
    """Fewer files under the dataset fail the job at once."""
    checkpoint_min_free: Quantity | None = None
    """Free space the checkpoint volume must have."""
    fail_job_on_gpu_mismatch: bool = False
    """Fail the job (instead of retrying) when a worker sees the wrong number of GPUs."""


_MAX_GRACE_SECONDS = 86400
"""A day: a grace period longer than that is a typo, and holds the node as long."""


class TrainingConfig(ConfigModel):
    """Settings of ``kind: training`` workloads."""

    workload_type: TrainingWorkloadType = "training"
    """``training`` or ``evaluation``: the workload-type label (dashboards, showback)."""
    nodes: int = Field(default=1, ge=1, le=64)
    """Workers, one pod (and node) each."""
    dataset: DnsLabel | None = None
    """Team volume mounted read-only at ``/datasets``."""
    checkpoints: CheckpointConfig | None = None
    """Mounted at ``/checkpoints``; omit for jobs that write none."""
    shm_size: Quantity = "16Gi"
    """``/dev/shm`` size; it counts against the memory limit."""
    master_port: Port = TORCHRUN_MASTER_PORT
    """torchrun rendezvous port on worker 0."""
    backoff_limit: int = Field(default=3, ge=0, le=10)
    """Pod failures tolerated; preemptions and drains do not count."""
    active_deadline_seconds: int = Field(default=259200, ge=60)
    """Wall-clock limit of the run (default three days)."""
    ttl_seconds_after_finished: int = Field(default=604800, ge=0)
    """How long a finished job and its pods stay (default a week)."""
    non_retryable_exit_codes: list[ExitCode] = []
    """Trainer exit codes that fail the job at once (config errors of the trainer)."""
    termination_grace_period_seconds: int = Field(
        default=CHECKPOINT_GRACE_SECONDS, ge=0, le=_MAX_GRACE_SECONDS
    )
    """Seconds between SIGTERM and SIGKILL when a worker is preempted, drained or evicted: time
    to save a checkpoint (docs/workloads.md, the SIGTERM contract). At most the pool's
    ``kubelet.evictionMaxPodGracePeriod``, which caps it on soft evictions. Default: 120."""
    preflight: PreflightConfig = PreflightConfig()
    publish_status: bool = False
    """Publish the job's start, progress and exit as JSON on the team Redis (the workload's
    ``statusChannel``): the status publisher runs ``command`` and reports on it. Needs the team
    Redis and a ``command``. Default: off."""


class CustomMetricConfig(ConfigModel):
    """A per-pod custom metric target for the autoscaler."""

    name: str = Field(min_length=1)
    """As the custom metrics API serves it, e.g. ``vllm_num_requests_waiting``."""
    average_value: Quantity
    """Target average per pod."""


class DependencyConfig(ConfigModel):
    """A stateful service next to an inference server: a StatefulSet with a volume per replica."""

    name: DependencyName
    """Short name; objects are ``<workload>-<name>``; the server gets ``<NAME>_HOST/_PORT``."""
    image: Image
    port: Port
    storage_class: str
    """A class from ``ai-platform:storage.classes``."""
    size: Quantity
    """Volume per replica."""
    mount_path: str = "/data"
    resources: ComputeConfig = ComputeConfig.model_validate({"cpu": "250m", "memory": "512Mi"})
    """Default: 250m CPU / 512Mi."""
    replicas: int = Field(default=1, ge=1, le=5)
    command: list[str] = []
    args: list[str] = []
    run_as_user: int = Field(default=999, ge=1)
    """Non-root user of the image (999: Redis)."""


class InferenceConfig(ConfigModel):
    """Settings of ``kind: inference`` workloads."""

    port: Port = 8080
    """Serving port (``http``)."""
    metrics_port: Port = 9090
    """Prometheus port (``metrics``); only the monitoring namespace reaches it."""
    metrics_path: str = "/metrics"
    readiness_path: str = "/health"
    liveness_path: str = "/health"
    startup_timeout_seconds: int = Field(default=600, ge=10)
    """Longest model load before liveness counts."""
    min_replicas: int = Field(default=2, ge=1)
    max_replicas: int = Field(default=5, ge=1)
    target_cpu_utilization: int | None = Field(default=80, ge=1, le=100)
    """Average CPU utilisation target (percent of the requests, read from metrics-server);
    ``null``: no CPU metric."""
    target_memory_utilization: int | None = Field(default=80, ge=1, le=100)
    """Average memory utilisation target (percent of the requests, read from metrics-server);
    ``null``: no memory metric."""
    custom_metric: CustomMetricConfig | None = None
    """Per-pod metric target, served by the Prometheus adapter
    (``ai-platform:autoscaling.prometheusAdapter``) from the platform's Prometheus."""
    max_surge: int = Field(default=1, ge=1)
    """Extra replicas during a rollout (never fewer than the current count)."""
    max_unavailable: int | None = Field(default=None, ge=1)
    """PodDisruptionBudget; default 1 unless ``minAvailable`` is set."""
    min_available: int | None = Field(default=None, ge=1)
    """PodDisruptionBudget alternative; must stay below ``minReplicas``."""
    model: DnsLabel | None = None
    """Team volume with the model, mounted read-only at ``/models``."""
    shm_size: Quantity | None = None
    """``/dev/shm`` for tensor-parallel servers."""
    allow_from_namespaces: list[DnsLabel] = []
    """Namespaces (the ingress gateway's) whose pods may call the serving port."""
    service_monitor: bool = False
    """Create a per-service ServiceMonitor (the monitoring stack also scrapes every inference
    Service's ``metrics`` port by label)."""
    node_spread: NodeSpread = "DoNotSchedule"
    """Spread across nodes; zones are always best effort."""
    queued: bool = False
    """Admit the GPU pods through the team's Kueue queue (Kueue's deployment integration)."""
    stateful_dependencies: list[DependencyConfig] = []
    """E.g. a Redis for job status or a model cache."""

    @property
    def pdb_min_available(self) -> int | None:
        return self.min_available

    @property
    def pdb_max_unavailable(self) -> int | None:
        if self.min_available is not None:
            return None
        return self.max_unavailable or 1


class WorkerPoolConfig(ConfigModel):
    """Settings of ``kind: worker-pool`` workloads: Celery workers on the team Redis broker."""

    app: CeleryApp
    """The Celery application, as ``celery -A`` takes it (``pipelines.celery_app``). Its broker
    must come from ``CELERY_BROKER_URL`` (Celery's default when the app sets none)."""
    concurrency: int = Field(default=2, ge=1, le=64)
    """Worker processes per pod (``--concurrency``); size ``resources`` for all of them."""
    queues: list[CeleryQueue] = []
    """Queues the workers consume (``-Q``), each a Redis list the autoscaler reads. Default:
    Celery's default queue, ``celery``."""
    min_replicas: int = Field(default=1, ge=0, le=100)
    """Fewest pods; 0 lets an idle pool scale to zero (only with ``autoscale``)."""
    max_replicas: int = Field(default=4, ge=1, le=100)
    """Most pods the autoscaler may run."""
    autoscale: bool = True
    """Scale on the queue length with KEDA (``ai-platform:autoscaling.keda`` must be enabled).
    Off: a fixed ``minReplicas`` pods."""
    tasks_per_replica: int = Field(default=10, ge=1, le=100000)
    """Waiting tasks per pod the autoscaler aims at (the trigger's ``listLength``)."""
    polling_interval_seconds: int = Field(default=15, ge=5, le=300)
    """How often KEDA reads the queue lengths."""
    cooldown_seconds: int = Field(default=300, ge=0, le=86400)
    """How long an empty queue waits before a pool at ``minReplicas: 0`` goes to zero."""
    termination_grace_period_seconds: int = Field(default=300, ge=30, le=86400)
    """Warm shutdown budget: on SIGTERM a worker takes no new tasks and finishes the ones it
    runs; whatever still runs after this many seconds is killed (docs/workloads.md)."""
    probe_timeout_seconds: int = Field(default=10, ge=1, le=60)
    """How long the probe waits for the worker's ``ping`` reply through the broker."""
    probe_period_seconds: int = Field(default=30, ge=10, le=600)
    """How often the probes ping the worker; each ping starts a ``celery`` process."""


class RayHeadConfig(ConfigModel):
    """The Ray head: the cluster's GCS, dashboard and job API. It runs no tasks and no GPUs."""

    resources: ComputeConfig = ComputeConfig.model_validate({"cpu": "2", "memory": "8Gi"})
    """CPU and memory of the head's Ray container (the autoscaler sidecar comes on top).
    Default: 2 CPU / 8Gi."""


class RayShapeConfig(ConfigModel):
    """What every Ray workload has: a head, the object store's shared memory, GCS fault
    tolerance."""

    head: RayHeadConfig = RayHeadConfig()
    shm_size: Quantity = "4Gi"
    """``/dev/shm`` of every Ray pod (the object store lives there); counts against the memory
    limit."""
    gcs_fault_tolerance: bool = False
    """Keep the head's GCS state in the team's Redis, so the workers and their actors survive a
    head restart (the modern form of ``ray.init(redis_address=...)``); needs a team Redis."""


class RayClusterConfig(RayShapeConfig):
    """Settings of ``kind: ray-cluster`` workloads: a long-running cluster whose GPU workers the
    Ray autoscaler sizes between ``minWorkers`` and ``maxWorkers`` (each worker: the workload's
    ``resources`` and ``gpus``)."""

    min_workers: int = Field(default=1, ge=0, le=64)
    """Workers the cluster keeps (and Kueue admits at once, with the head): they must fit the
    pool and the team's queue together."""
    max_workers: int = Field(default=1, ge=1, le=64)
    """Most workers the autoscaler adds; above ``minWorkers`` turns the autoscaler on."""
    idle_timeout_seconds: int = Field(default=60, ge=0)
    """How long a worker above the minimum idles before the autoscaler removes it."""

    @property
    def autoscaling(self) -> bool:
        return self.max_workers > self.min_workers


class RayJobConfig(RayShapeConfig):
    """Settings of ``kind: ray-job`` workloads: a batch run that gets a cluster of its own, runs
    ``entrypoint`` on it and deletes the cluster when the run ends."""

    entrypoint: str = Field(min_length=1)
    """What ``ray job submit`` runs, e.g. ``python train.py --num-workers=8``. Required."""
    workers: int = Field(default=1, ge=0, le=64)
    """Worker pods (fixed: a batch run gets what it asked for, all at once)."""
    runtime_env: dict[str, Any] = {}
    """Ray runtime environment (``pip``, ``env_vars``, ``working_dir``...), passed as
    ``runtimeEnvYAML``. Default: none."""
    backoff_limit: int = Field(default=0, ge=0, le=10)
    """Retries of a failed run, each on a new cluster."""
    active_deadline_seconds: int = Field(default=259200, ge=60)
    """Wall-clock limit of the run (default three days)."""
    ttl_seconds_after_finished: int = Field(default=86400, ge=0)
    """How long the finished RayJob object stays (its cluster goes at once)."""


class WorkloadConfig(ConfigModel):
    """One workload of one team."""

    name: WorkloadName
    """Unique within the team."""
    team: DnsLabel
    """A team from ``ai-platform:teams``; the workload runs in its namespace."""
    kind: WorkloadKind
    """``training`` (an Indexed Job), ``inference`` (a Deployment behind a Service),
    ``worker-pool`` (a Deployment of Celery workers on the team Redis), ``ray-cluster`` (a
    RayCluster) or ``ray-job`` (a RayJob)."""
    image: Image
    """Pinned image (tag or digest) from an allowed registry."""
    command: list[str] = []
    """Not for ``worker-pool`` (the platform runs ``celery worker``) nor for Ray kinds (KubeRay
    starts Ray; a RayJob runs ``rayJob.entrypoint``)."""
    args: list[str] = []
    """For ``worker-pool``: more ``celery worker`` options (``--prefetch-multiplier=1``)."""
    env: EnvMap = {}
    """Extra environment; names the platform sets are rejected."""
    log_level: LogLevel = "info"
    """``LOG_LEVEL``."""
    resources: ComputeConfig
    """CPU and memory per worker or replica (for Ray: per worker; the head has its own)."""
    gpus: GpuRequestConfig | None = None
    """Omit for CPU-only workloads."""
    priority_class: str | None = None
    """Default: the stack's global default class; must be one the team may use."""
    egress: EgressConfig = EgressConfig()
    training: TrainingConfig | None = None
    """Only for ``kind: training``; defaults apply when omitted."""
    inference: InferenceConfig | None = None
    """Only for ``kind: inference``; defaults apply when omitted."""
    worker_pool: WorkerPoolConfig | None = None
    """Only for ``kind: worker-pool``, and required there (it names the Celery app)."""
    ray_cluster: RayClusterConfig | None = None
    """Only for ``kind: ray-cluster``; defaults apply when omitted."""
    ray_job: RayJobConfig | None = None
    """Only for ``kind: ray-job``, and required there (its ``entrypoint``)."""
    status_channel: StatusChannel | None = None
    """Redis pub/sub channel of the workload's status (``STATUS_CHANNEL``); naming one needs
    the team Redis. Default: the team Redis' ``statusChannel``, when the team has one."""

    def team_redis_uses(self) -> list[tuple[tuple[str | int, ...], str]]:
        """The settings that talk to the team Redis: their key path below the workload, and
        what they are (``workloads_have_team_redis`` reports them when the team has none)."""
        uses: list[tuple[tuple[str | int, ...], str]] = []
        if self.status_channel is not None:
            uses.append((("statusChannel",), "a status channel"))
        if self.kind == "training" and self.training_settings.publish_status:
            uses.append((("training", "publishStatus"), "publishing status"))
        if self.kind == "worker-pool":
            uses.append((("kind",), "a worker pool (its Celery broker)"))
        return uses

    @property
    def training_settings(self) -> TrainingConfig:
        return self.training or TrainingConfig()

    @property
    def inference_settings(self) -> InferenceConfig:
        return self.inference or InferenceConfig()

    @property
    def ray_cluster_settings(self) -> RayClusterConfig:
        return self.ray_cluster or RayClusterConfig()

    @property
    def ray_settings(self) -> RayShapeConfig | None:
        """The Ray block of a Ray kind (None for a ``ray-job`` without its block)."""
        if self.kind == "ray-cluster":
            return self.ray_cluster_settings
        if self.kind == "ray-job":
            return self.ray_job
        return None

    @property
    def ray_workers(self) -> tuple[int, int]:
        """(fewest, most) worker pods of a Ray kind at once: what Kueue admits first, and what
        the autoscaler may reach."""
        if self.kind == "ray-cluster":
            settings = self.ray_cluster_settings
            return settings.min_workers, max(settings.min_workers, settings.max_workers)
        workers = self.ray_job.workers if self.ray_job else 1
        return workers, workers
