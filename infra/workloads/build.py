"""Training jobs, inference services, worker pools and Ray workloads: config ->
``TrainingJobArgs`` / ``InferenceServiceArgs`` / ``WorkerPoolArgs`` / ``RayClusterArgs`` /
``RayJobArgs`` -> components, and the names the outputs publish."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.constants import WORKLOAD_TYPE_WORKER
from components.data_volume import DataVolume
from components.frozen import frozen
from components.images import mirrored
from components.kueue import DefaultQueue, TeamQueue
from components.predicates import global_default
from components.scheduling_contract import SchedulingContract
from components.team_namespace import TeamNamespace
from components.team_redis import RedisClient
from components.team_redis_server import TeamRedis
from components.workloads import (
    Autoscaling,
    CheckpointVolume,
    ComputeResources,
    CustomMetric,
    EgressAllowance,
    InferenceService,
    InferenceServiceArgs,
    PreflightSpec,
    Probes,
    QueueAutoscaling,
    StatefulDependency,
    TrainingJob,
    TrainingJobArgs,
    WorkerPool,
    WorkerPoolArgs,
    service_dns_name,
)
from components.workloads.ray import (
    RAY_PORTS,
    RayCluster,
    RayClusterArgs,
    RayJob,
    RayJobArgs,
)

from ..config.root import PlatformConfig
from ..outputs import WorkloadOutputs
from ..sources import workload_name
from ..tenancy.config import TeamConfig
from .config import RAY_KINDS, ComputeConfig, EgressConfig, WorkloadConfig

RAY_CLIENT_PORT = RAY_PORTS["ray-client-server-port"]
"""What a Ray cluster's output publishes: ``ray.init("ray://<serviceHost>:<port>")``."""


@frozen
class Tenant:
    """What a team's workloads need from the team: its config, namespace, queue and volumes.

    Workloads take the namespace by name (``config.namespace_name``), not as the TeamNamespace's
    Output: ``deploy_workload`` already orders each workload after the whole team namespace, and
    an Output would cost every child resource a property dependency and its cycle check in the
    SDK (docs/performance.md).
    """

    config: TeamConfig
    namespace: TeamNamespace
    queue: TeamQueue | None
    volumes: dict[str, DataVolume]
    default_queue: DefaultQueue | None = None
    """What Kueue gives the team's work that names no queue (CPU-only work)."""
    redis: TeamRedis | None = None
    """The team's Redis, if it has one: its workloads are its clients."""


def _compute(resources: ComputeConfig) -> ComputeResources:
    return ComputeResources(
        cpu=resources.cpu,
        memory=resources.memory,
        cpu_limit=resources.cpu_limit,
        memory_limit=resources.memory_limit,
    )


def _egress(egress: EgressConfig) -> EgressAllowance:
    return EgressAllowance(cidrs=tuple(egress.cidrs), ports=tuple(egress.ports))


def _image(reference: str, config: PlatformConfig) -> str:
    """A workload's image as the cluster pulls it: through the stack's mirror, if it has one."""
    return mirrored(reference, config.images.registry_mirror)


def _priority_class(workload: WorkloadConfig, config: PlatformConfig) -> str | None:
    """The workload's class as its field documents it: its own, else the stack's global
    default. Stated, not left to the cluster: the policy pack checks a GPU pod's class."""
    return workload.priority_class or global_default(config.priority_classes)


def _queue_name(workload: WorkloadConfig, owner: Tenant) -> str | None:
    """GPU jobs (and GPU services that ask) go through the team's LocalQueue; CPU-only work
    never does: the queue admits onto GPU flavours only."""
    if owner.queue is None or workload.gpus is None:
        return None
    if workload.kind == "inference" and not workload.inference_settings.queued:
        return None
    return owner.queue.local_queue_name


def pod_fields(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
) -> dict[str, Any]:
    """The ``WorkloadPodArgs`` fields of any workload kind, from its config; a kind's args
    add only their own (``TrainingJobArgs(**pod_fields(...), nodes=...)``)."""
    return {
        "team": workload.team,
        "namespace": owner.config.namespace_name,  # the name: see Tenant
        "name": workload.name,
        "image": _image(workload.image, config),
        "resources": _compute(workload.resources),
        "command": tuple(workload.command),
        "args": tuple(workload.args),
        "gpus": workload.gpus.count if workload.gpus else 0,
        "scheduling": contract,
        "priority_class": _priority_class(workload, config),
        "queue_name": _queue_name(workload, owner),
        "env": dict(workload.env),
        "log_level": workload.log_level,
        "egress": _egress(workload.egress),
        "redis": _redis_client(workload, owner),
    }


def _redis_client(workload: WorkloadConfig, owner: Tenant) -> RedisClient | None:
    """The workload's pods as clients of the team Redis (its own channel, else the team's)."""
    redis = owner.config.redis
    if not redis.enabled:
        return None
    return RedisClient(status_channel=workload.status_channel or redis.status_channel)


def worker_pool_args(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
    keda: Sequence[pulumi.Resource] = (),
) -> WorkerPoolArgs:
    settings = workload.worker_pool
    if settings is None:  # the rules refuse it first
        raise ValueError(f"workload {workload.name}: kind worker-pool needs workerPool")
    return WorkerPoolArgs(
        **pod_fields(workload, owner, contract, config),
        app=settings.app,
        concurrency=settings.concurrency,
        queues=tuple(settings.queues),
        autoscaling=QueueAutoscaling(
            min_replicas=settings.min_replicas,
            max_replicas=settings.max_replicas,
            tasks_per_replica=settings.tasks_per_replica,
            polling_interval_seconds=settings.polling_interval_seconds,
            cooldown_seconds=settings.cooldown_seconds,
        )
        if settings.autoscale
        else None,
        replicas=max(settings.min_replicas, 1),
        termination_grace_period_seconds=settings.termination_grace_period_seconds,
        probe_timeout_seconds=settings.probe_timeout_seconds,
        probe_period_seconds=settings.probe_period_seconds,
        depends_on=tuple(keda),
    )


def training_job_args(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
    after: Sequence[pulumi.Resource] = (),
) -> TrainingJobArgs:
    settings = workload.training_settings
    checkpoints = settings.checkpoints
    preflight = settings.preflight
    return TrainingJobArgs(
        **pod_fields(workload, owner, contract, config),
        nodes=settings.nodes,
        workload_type=settings.workload_type,
        dataset_claim=settings.dataset,
        checkpoints=None
        if checkpoints is None
        else CheckpointVolume(
            claim=checkpoints.claim,
            storage_class=checkpoints.storage_class,
            size=checkpoints.size,
            access_modes=tuple(checkpoints.access_modes),
            protect=config.cluster.protects_data,
        ),
        shm_size=settings.shm_size,
        master_port=settings.master_port,
        backoff_limit=settings.backoff_limit,
        active_deadline_seconds=settings.active_deadline_seconds,
        ttl_seconds_after_finished=settings.ttl_seconds_after_finished,
        non_retryable_exit_codes=tuple(settings.non_retryable_exit_codes),
        termination_grace_period_seconds=settings.termination_grace_period_seconds,
        preflight=PreflightSpec(
            enabled=preflight.enabled,
            image=None if preflight.image is None else _image(preflight.image, config),
            dataset_min_files=preflight.dataset_min_files,
            checkpoint_min_free=preflight.checkpoint_min_free,
            fail_job_on_gpu_mismatch=preflight.fail_job_on_gpu_mismatch,
        ),
        depends_on=tuple(after),
        # Its Output: a claim the job creates waits for the namespace (and nothing else).
        claim_namespace=owner.namespace.namespace,
        publish_status=settings.publish_status,
    )


def inference_service_args(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
) -> InferenceServiceArgs:
    settings = workload.inference_settings
    metric = settings.custom_metric
    return InferenceServiceArgs(
        **pod_fields(workload, owner, contract, config),
        port=settings.port,
        metrics_port=settings.metrics_port,
        metrics_path=settings.metrics_path,
        probes=Probes(
            readiness_path=settings.readiness_path,
            liveness_path=settings.liveness_path,
            startup_timeout_seconds=settings.startup_timeout_seconds,
        ),
        autoscaling=Autoscaling(
            min_replicas=settings.min_replicas,
            max_replicas=settings.max_replicas,
            cpu_utilization=settings.target_cpu_utilization,
            memory_utilization=settings.target_memory_utilization,
            custom_metric=None
            if metric is None
            else CustomMetric(metric.name, metric.average_value),
        ),
        max_surge=settings.max_surge,
        pdb_max_unavailable=settings.pdb_max_unavailable,
        pdb_min_available=settings.pdb_min_available,
        model_claim=settings.model,
        shm_size=settings.shm_size,
        allow_from_namespaces=tuple(settings.allow_from_namespaces),
        service_monitor=settings.service_monitor,
        node_spread=settings.node_spread,
        dependencies=tuple(
            StatefulDependency(
                name=dep.name,
                image=_image(dep.image, config),
                port=dep.port,
                storage_class=dep.storage_class,
                size=dep.size,
                resources=_compute(dep.resources),
                mount_path=dep.mount_path,
                command=tuple(dep.command),
                args=tuple(dep.args),
                replicas=dep.replicas,
                run_as_user=dep.run_as_user,
            )
            for dep in settings.stateful_dependencies
        ),
        retain_data=config.cluster.protects_data,
    )


def ray_args(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
    after: Sequence[pulumi.Resource],
) -> RayClusterArgs | RayJobArgs:
    """A Ray workload: the workers are its pods, the head has its own resources."""
    ray = workload.ray_settings
    assert ray is not None  # a ray-job without its block is a config error
    fewest, most = workload.ray_workers
    monitoring = config.monitoring
    cluster = RayClusterArgs(
        **pod_fields(workload, owner, contract, config),
        shm_size=ray.shm_size,
        head_resources=_compute(ray.head.resources),
        min_workers=fewest,
        max_workers=most,
        gcs_fault_tolerance=ray.gcs_fault_tolerance,
        api_server_cidrs=tuple(monitoring.network.api_server_cidrs),
        operator_namespace=config.ray.namespace,
        monitoring_namespace=monitoring.namespace if monitoring.enabled else None,
        kueue_managed=config.queueing.enabled,
        depends_on=tuple(after),
        idle_timeout_seconds=workload.ray_cluster_settings.idle_timeout_seconds,
    )
    job = workload.ray_job
    if job is None:
        return cluster
    return RayJobArgs(
        **{f.name: getattr(cluster, f.name) for f in fields(cluster)},
        entrypoint=job.entrypoint,
        runtime_env=dict(job.runtime_env),
        backoff_limit=job.backoff_limit,
        active_deadline_seconds=job.active_deadline_seconds,
        ttl_seconds_after_finished=job.ttl_seconds_after_finished,
    )


def deploy_workload(
    workload: WorkloadConfig,
    owner: Tenant,
    contract: SchedulingContract | None,
    config: PlatformConfig,
    provider: k8s.Provider,
    keda: Sequence[pulumi.Resource] = (),
    ray_operator: pulumi.Resource | None = None,
) -> TrainingJob | InferenceService | WorkerPool | RayCluster:
    """One workload in its team's namespace, after the team's queue and the volumes it mounts
    (a worker pool's KEDA objects after KEDA, ``keda``; a Ray workload after the KubeRay
    operator, ``ray_operator``: its CRDs come with it)."""
    claims: set[str | None] = set()
    if workload.kind == "training":
        settings = workload.training_settings
        claims = {settings.dataset, settings.checkpoints.claim if settings.checkpoints else None}
    elif workload.kind == "inference":
        claims = {workload.inference_settings.model}
    # One edge stands for the whole team: the LocalQueue is registered only after its TeamQueue's
    # dependencies, the TeamNamespace and everything in it (quota, limits, policies, identity),
    # so a workload after the LocalQueue is after all of them. Depending on the components
    # instead made the SDK expand and cycle-check a dozen resources per workload
    # (docs/performance.md). Without a queue, the TeamNamespace itself.
    after: list[pulumi.Resource] = [owner.queue.local_queue if owner.queue else owner.namespace]
    # Kueue holds what names no queue (CPU-only work, a service's stateful dependencies) until
    # the team's default LocalQueue exists, for good if it is created first.
    names_no_queue = _queue_name(workload, owner) is None or (
        workload.kind == "inference" and bool(workload.inference_settings.stateful_dependencies)
    )
    if owner.default_queue is not None and names_no_queue:
        after.append(owner.default_queue.local_queue)
    after += [volume for name, volume in owner.volumes.items() if name in claims]
    if owner.redis is not None:
        after.append(owner.redis.secret)  # the pods read REDIS_URL from it when they start
    name = workload_name(workload)
    if workload.kind in RAY_KINDS:
        if ray_operator is not None:
            after.append(ray_operator)
        args = ray_args(workload, owner, contract, config, after)
        kind = RayJob if isinstance(args, RayJobArgs) else RayCluster
        return kind(name, args, pulumi.ResourceOptions(provider=provider))
    if workload.kind == "training":
        # The job's objects wait, not the component: a checkpoint claim it creates would
        # otherwise depend on all of the above (TrainingJobArgs.depends_on says why).
        job_args = training_job_args(workload, owner, contract, config, after)
        return TrainingJob(name, job_args, pulumi.ResourceOptions(provider=provider))
    opts = pulumi.ResourceOptions(provider=provider, depends_on=after)
    if workload.kind == "worker-pool":
        return WorkerPool(name, worker_pool_args(workload, owner, contract, config, keda), opts)
    return InferenceService(name, inference_service_args(workload, owner, contract, config), opts)


def workload_outputs(
    workload: WorkloadConfig,
    component: TrainingJob | InferenceService | WorkerPool | RayCluster,
    namespace: str,
) -> WorkloadOutputs:
    """Names other programs use to reach the workload (``<svc>.<ns>.svc.cluster.local``), as
    the component named its objects."""
    if isinstance(component, RayCluster):
        cluster = not isinstance(component, RayJob)
        return WorkloadOutputs(
            kind=workload.kind,
            workload_type="training",
            object_name=component.object_name,
            service_host=service_dns_name(component.head_service, namespace) if cluster else None,
            port=RAY_CLIENT_PORT if cluster else None,
        )
    if isinstance(component, TrainingJob):
        settings = workload.training_settings
        service = component.service_name
        return WorkloadOutputs(
            kind=workload.kind,
            workload_type=settings.workload_type,
            object_name=component.job_name,
            service_host=service_dns_name(service, namespace) if service else None,
            port=settings.master_port if service else None,
            checkpoint_claim=component.checkpoint_claim,
        )
    if isinstance(component, WorkerPool):
        return WorkloadOutputs(
            kind=workload.kind,
            workload_type=WORKLOAD_TYPE_WORKER,
            object_name=component.deployment_name,
            queues=list(component.queues),
        )
    return WorkloadOutputs(
        kind=workload.kind,
        workload_type="inference",
        object_name=component.deployment_name,
        service_host=service_dns_name(component.service_name, namespace),
        port=workload.inference_settings.port,
        dependency_hosts={
            name: service_dns_name(service, namespace)
            for name, service in component.dependency_services.items()
        },
    )
