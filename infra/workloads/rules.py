"""Cross-field rules of training jobs, inference services, worker pools and Ray workloads:
references, GPU sharing, volumes, quotas, queues and what a worker pool needs (KEDA to
autoscale).

Each reads only what ``WorkloadPlatform`` declares; demand comes from ``demand.py``, pool
capacity from ``infra.gpu.capacity``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from components.constants import GPU_RESOURCE, MIG_RESOURCE_PREFIX
from components.predicates import (
    InferenceConflict,
    dependency_env,
    global_default,
    inference_conflicts,
    opens_everything,
)
from components.team_redis_server import REDIS_CLAIM
from components.workloads.inference_service import RESERVED_ENV as INFERENCE_RESERVED_ENV
from components.workloads.ray import RESERVED_ENV as RAY_RESERVED_ENV
from components.workloads.training_job import RESERVED_ENV as TRAINING_RESERVED_ENV
from components.workloads.worker_pool import RESERVED_ENV as WORKER_RESERVED_ENV

from ..config.errors import ConfigIssue, entry_ref, plural
from ..config.partial import by_name, parsed, repeats
from ..config.quantity import parse_quantity, show_amount
from ..config.views import (
    HasAutoscaling,
    HasNodePools,
    HasPriorityClasses,
    HasQueueing,
    HasStorage,
    HasTeams,
    HasWorkloads,
)
from ..gpu.capacity import (
    gang_capacity,
    node_bound,
    node_offer,
    pool_capacity,
    pool_gpu_resource,
    pool_is_sound,
    pool_units_per_node,
)
from ..gpu.config import GpuNodePoolConfig, duration_seconds
from ..queueing.config import default_queue_capacity
from ..queueing.rules import queued
from ..storage.config import StorageClassConfig
from ..tenancy.config import TeamConfig
from .config import RAY_KINDS, CheckpointConfig, WorkloadConfig
from .demand import limit_of, workload_demand


class WorkloadPlatform(
    HasTeams,
    HasNodePools,
    HasPriorityClasses,
    HasStorage,
    HasQueueing,
    HasAutoscaling,
    HasWorkloads,
    Protocol,
):
    """What the workload rules read."""


BLOCK_PROVISIONERS = frozenset(
    {
        "ebs.csi.aws.com",
        "kubernetes.io/aws-ebs",
        "pd.csi.storage.gke.io",
        "disk.csi.azure.com",
        "rancher.io/local-path",
    }
)
"""CSI drivers whose volumes only one node mounts at a time: no ReadWriteMany across nodes."""
SHARED_ACCESS_MODES = frozenset({"ReadWriteMany", "ReadOnlyMany"})
"""Access modes that let pods on different nodes mount one volume."""


def _fits_a_node(workload: WorkloadConfig, pool: GpuNodePoolConfig) -> bool:
    """Whether one pod's GPUs fit one node; quota arithmetic skips pods that never schedule."""
    count = workload.gpus.count if workload.gpus else 0
    return count <= pool_units_per_node(pool)


def _reserved_env(workload: WorkloadConfig) -> frozenset[str]:
    """What the workload's component sets itself, dependency addresses included."""
    if workload.kind == "training":
        return frozenset(TRAINING_RESERVED_ENV)
    if workload.kind == "worker-pool":
        return frozenset(WORKER_RESERVED_ENV)
    if workload.kind in RAY_KINDS:
        return frozenset(RAY_RESERVED_ENV)
    dependencies = workload.inference_settings.stateful_dependencies
    return INFERENCE_RESERVED_ENV | dependency_env(d.name for d in dependencies)


def workload_teams_exist(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    teams = by_name(config.teams)
    for index, workload in parsed(config.workloads):
        if workload.team not in teams:
            yield ConfigIssue(
                ("workloads", index, "team"),
                f"unknown team {workload.team!r}; defined: {', '.join(teams.names())}",
            )


def unique_workload_names(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    keys = [(index, f"{w.team}/{w.name}") for index, w in parsed(config.workloads)]
    for index, first in repeats(keys):
        workload = config.workloads[index]
        yield ConfigIssue(
            ("workloads", index, "name"),
            f"duplicate workload name {workload.name!r} in team {workload.team!r} (first used "
            f"by workloads[{first}])",
        )


def workload_kind_settings(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    for index, workload in parsed(config.workloads):
        path = ("workloads", index)
        for block, key, kind in (
            (workload.training, "training", "training"),
            (workload.inference, "inference", "inference"),
            (workload.worker_pool, "workerPool", "worker-pool"),
            (workload.ray_cluster, "rayCluster", "ray-cluster"),
            (workload.ray_job, "rayJob", "ray-job"),
        ):
            if block is not None and workload.kind != kind:
                yield ConfigIssue((*path, key), f"only for kind {kind!r}")
        if workload.kind in RAY_KINDS:
            yield from _ray_settings(workload, path)
        resources = workload.resources
        for resource, limit_key in (("cpu", "cpuLimit"), ("memory", "memoryLimit")):
            request = getattr(resources, resource)
            limit = getattr(resources, f"{resource}_limit")
            if limit is not None and parse_quantity(limit) < parse_quantity(request):
                yield ConfigIssue(
                    (*path, "resources", limit_key),
                    f"limit {limit} is below the request {request}",
                )
        reserved = _reserved_env(workload)
        for key in workload.env:
            if key in reserved:
                yield ConfigIssue((*path, "env", key), "is set by the platform; remove it")
        for position, cidr in enumerate(workload.egress.cidrs):
            if opens_everything(cidr):
                yield ConfigIssue(
                    (*path, "egress", "cidrs", position),
                    f"{cidr} opens egress to the whole internet; name the ranges the workload "
                    "needs (object storage)",
                )
        memory_limit = limit_of(resources.memory, resources.memory_limit)
        shown_limit = resources.memory_limit or resources.memory
        ray = workload.ray_settings
        if workload.kind == "training":
            shm = workload.training_settings.shm_size
            shm_path: tuple[str, ...] = ("training", "shmSize")
        elif ray is not None:
            shm = ray.shm_size
            shm_path = ("rayCluster" if workload.kind == "ray-cluster" else "rayJob", "shmSize")
        else:
            shm = workload.inference_settings.shm_size or "0"
            shm_path = ("inference", "shmSize")
        if workload.kind != "worker-pool" and parse_quantity(shm) >= memory_limit:
            yield ConfigIssue(
                (*path, *shm_path),
                f"shared memory {shm} would take all of the {shown_limit} memory limit (a "
                "memory-backed /dev/shm counts against it)",
            )
        if workload.kind == "inference":
            yield from _inference_settings(workload, path)
        if workload.kind == "worker-pool":
            yield from _worker_pool_settings(workload, path, config.autoscaling.keda.enabled)


def _worker_pool_settings(
    workload: WorkloadConfig, path: tuple[str | int, ...], keda: bool
) -> Iterator[ConfigIssue]:
    settings = workload.worker_pool
    if settings is None:
        yield ConfigIssue(
            (*path, "workerPool"),
            "required for kind 'worker-pool': name the Celery app (workerPool.app)",
        )
        return
    if workload.command:
        yield ConfigIssue(
            (*path, "command"),
            "a worker pool runs 'celery -A <app> worker'; put extra worker options in args",
        )
    where = (*path, "workerPool")
    if settings.min_replicas > settings.max_replicas:
        yield ConfigIssue(
            (*where, "minReplicas"),
            f"minReplicas {settings.min_replicas} exceeds maxReplicas {settings.max_replicas}",
        )
    if settings.autoscale and not keda:
        yield ConfigIssue(
            (*where, "autoscale"),
            "autoscaling on the queue length needs KEDA: set ai-platform:autoscaling.keda.enabled "
            "to true, or autoscale to false (a fixed minReplicas pods)",
        )
    if not settings.autoscale and settings.min_replicas == 0:
        yield ConfigIssue(
            (*where, "minReplicas"),
            "0 runs no worker without autoscale; set minReplicas >= 1 or autoscale: true",
        )
    for position, first in repeats(list(settings.queues)):
        yield ConfigIssue(
            (*where, "queues", position),
            f"duplicate queue {settings.queues[position]!r} (first at queues[{first}])",
        )


def _ray_settings(workload: WorkloadConfig, path: tuple[str | int, ...]) -> Iterator[ConfigIssue]:
    """A Ray workload: KubeRay starts Ray itself, a RayJob needs its block, the workers' range
    is a range, and the head's shared memory fits its memory limit."""
    for key, value in (("command", workload.command), ("args", workload.args)):
        if value:
            yield ConfigIssue(
                (*path, key),
                "not for Ray workloads: KubeRay starts Ray in every pod; a ray-job runs "
                "rayJob.entrypoint",
            )
    if workload.kind == "ray-job" and workload.ray_job is None:
        yield ConfigIssue((*path, "rayJob"), "required for kind 'ray-job' (its entrypoint)")
    key = "rayCluster" if workload.kind == "ray-cluster" else "rayJob"
    if workload.kind == "ray-cluster":
        settings = workload.ray_cluster_settings
        if settings.max_workers < settings.min_workers:
            yield ConfigIssue(
                (*path, key, "maxWorkers"),
                f"maxWorkers {settings.max_workers} is below minWorkers {settings.min_workers}",
            )
    ray = workload.ray_settings
    if ray is None:
        return
    head = ray.head.resources
    for resource, limit_key in (("cpu", "cpuLimit"), ("memory", "memoryLimit")):
        request = getattr(head, resource)
        limit = getattr(head, f"{resource}_limit")
        if limit is not None and parse_quantity(limit) < parse_quantity(request):
            yield ConfigIssue(
                (*path, key, "head", "resources", limit_key),
                f"limit {limit} is below the request {request}",
            )
    if parse_quantity(ray.shm_size) >= limit_of(head.memory, head.memory_limit):
        yield ConfigIssue(
            (*path, key, "shmSize"),
            f"shared memory {ray.shm_size} would take all of the head's "
            f"{head.memory_limit or head.memory} memory limit (a memory-backed /dev/shm counts "
            "against it)",
        )


def _inference_settings(
    workload: WorkloadConfig, path: tuple[str | int, ...]
) -> Iterator[ConfigIssue]:
    settings = workload.inference_settings
    where = (*path, "inference")
    conflicts = inference_conflicts(
        port=settings.port,
        metrics_port=settings.metrics_port,
        min_replicas=settings.min_replicas,
        max_replicas=settings.max_replicas,
        has_metric=settings.target_cpu_utilization is not None
        or settings.target_memory_utilization is not None
        or settings.custom_metric is not None,
        min_available=settings.min_available,
        max_unavailable=settings.max_unavailable,
    )
    messages: dict[InferenceConflict, tuple[str, str]] = {
        "replicas": (
            "minReplicas",
            f"minReplicas {settings.min_replicas} exceeds maxReplicas {settings.max_replicas}",
        ),
        "budget-both": ("minAvailable", "set maxUnavailable or minAvailable, not both"),
        "budget-blocks-drains": (
            "minAvailable",
            f"must be below minReplicas ({settings.min_replicas}): a budget that keeps every "
            "replica blocks node drains",
        ),
        "ports": (
            "metricsPort",
            f"must differ from port {settings.port}: the monitoring namespace may reach the "
            "metrics port only",
        ),
        "no-metric": (
            "targetCpuUtilization",
            "set targetCpuUtilization, targetMemoryUtilization or customMetric: the autoscaler "
            "needs a metric",
        ),
    }
    for conflict in conflicts:
        key, message = messages[conflict]
        yield ConfigIssue((*where, key), message)
    if settings.queued and workload.gpus is None:
        yield ConfigIssue(
            (*where, "queued"),
            "only GPU workloads are queued: the team's LocalQueue admits onto GPU pools",
        )
    names = [d.name for d in settings.stateful_dependencies]
    for position, first in repeats(names):
        yield ConfigIssue(
            (*where, "statefulDependencies", position, "name"),
            f"duplicate dependency name {names[position]!r} (first used by "
            f"statefulDependencies[{first}])",
        )


def workload_gpus_fit_pools(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    pools = by_name(config.node_pools)
    for index, workload in parsed(config.workloads):
        if workload.gpus is None:
            continue
        path = ("workloads", index, "gpus")
        if workload.gpus.pool not in pools:
            defined = ", ".join(pools.names()) or "none"
            yield ConfigIssue(
                (*path, "pool"), f"unknown node pool {workload.gpus.pool!r}; defined: {defined}"
            )
            continue
        found = pools.get(workload.gpus.pool)
        if found is None:
            continue  # the pool did not parse
        _, pool = found
        if not pool_is_sound(pool):
            continue  # the pool's own rules say why; its capacity is unknown
        count = workload.gpus.count
        resource = pool_gpu_resource(pool)
        per_node = pool_units_per_node(pool)
        if count > per_node:
            yield ConfigIssue(
                (*path, "count"),
                f"{count} {resource} per pod, but a node of pool {pool.name!r} offers "
                f"{per_node} ({node_offer(pool)})",
            )
        elif pool.sharing.mode == "time-slicing" and count > 1:
            yield ConfigIssue(
                (*path, "count"),
                f"pool {pool.name!r} time-slices its GPUs: a pod asking for {count} {resource} "
                "may get slices of one GPU; request 1",
            )
        elif _distributed_on_shared_gpus(workload, pool):
            yield ConfigIssue(
                (*path, "pool"),
                f"distributed training needs whole GPUs, but pool {pool.name!r} shares them "
                f"({pool.sharing.mode}); use an exclusive pool or one {resource} on one node",
            )


def _distributed_on_shared_gpus(workload: WorkloadConfig, pool: GpuNodePoolConfig) -> bool:
    count = workload.gpus.count if workload.gpus else 0
    return (
        workload.kind == "training"
        and pool.sharing.mode != "exclusive"
        and (count > 1 or workload.training_settings.nodes > 1)
    )


def gangs_fit_their_pool(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """A multi-node job runs all its workers at once or not at all (torchrun waits for every
    rank), and Kueue admits a Ray cluster's head with its minimum workers (a Ray job's with all
    of them) at once: the pool must hold all of them together, whether Kueue admits the
    workload or not."""
    pools = by_name(config.node_pools)
    for index, workload in parsed(config.workloads):
        found = pools.get(workload.gpus.pool) if workload.gpus else None
        gang = workload.kind == "training" or workload.kind in RAY_KINDS
        if not gang or workload.gpus is None or found is None:
            continue
        pool, count = found[1], workload.gpus.count
        if (
            not pool_is_sound(pool)
            or not _fits_a_node(workload, pool)
            or _distributed_on_shared_gpus(workload, pool)
        ):
            continue  # reported by workload_gpus_fit_pools or the pool's own rules
        workers, key, whose, noun = _gang(workload)
        fits = gang_capacity(pool, count)
        if workers <= fits:
            continue
        resource = pool_gpu_resource(pool)
        per_node = pool_units_per_node(pool) // count
        yield ConfigIssue(
            ("workloads", index, *key),
            f"{whose} {workers} workers x {count} {resource} must run at once, but pool "
            f"{pool.name!r} holds at most {fits}: {plural(pool.node_count, 'node')} "
            f"({node_bound(pool)}) x {plural(per_node, 'worker')} per node "
            f"({node_offer(pool)} / {count} per worker); it has {pool_capacity(pool)} "
            f"{resource} in all, the {noun} needs {workers * count}",
        )


def _gang(workload: WorkloadConfig) -> tuple[int, tuple[str, ...], str, str]:
    """Workers that start together, the key that sets them, and (for messages) whose they are
    and what the workload is called."""
    if workload.kind == "ray-cluster":
        minimum = workload.ray_workers[0]
        return minimum, ("rayCluster", "minWorkers"), "the cluster's minimum", "cluster"
    if workload.kind == "ray-job":
        return workload.ray_workers[0], ("rayJob", "workers"), "the Ray job's", "Ray job"
    return workload.training_settings.nodes, ("training", "nodes"), "the job's", "job"


def team_has_redis(team: TeamConfig) -> bool:
    """Whether the platform runs a Redis in the team's namespace (``teams[].redis``)."""
    return team.redis.enabled


def workloads_needing_redis_have_it(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """GCS fault tolerance keeps a Ray head's state in the team's Redis: without one the head
    could not start."""
    teams = by_name(config.teams)
    for index, workload in parsed(config.workloads):
        ray = workload.ray_settings
        found = teams.get(workload.team)
        if ray is None or not ray.gcs_fault_tolerance or found is None:
            continue
        if team_has_redis(found[1]):
            continue
        key = "rayCluster" if workload.kind == "ray-cluster" else "rayJob"
        yield ConfigIssue(
            ("workloads", index, key, "gcsFaultTolerance"),
            f"needs the Redis of team {workload.team!r}, and the team has none; turn "
            "gcsFaultTolerance off (a head restart then restarts the cluster's work)",
        )


def training_grace_fits_pool_eviction(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """A soft eviction gives a pod at most its pool's ``evictionMaxPodGracePeriod``: a training
    job that needs longer to save its checkpoint would be killed while it writes."""
    pools = by_name(config.node_pools)
    for index, workload in parsed(config.workloads):
        found = pools.get(workload.gpus.pool) if workload.gpus else None
        if workload.kind != "training" or found is None:
            continue
        pool = found[1]
        grace = workload.training_settings.termination_grace_period_seconds
        path = ("workloads", index, "training", "terminationGracePeriodSeconds")
        cap = pool.kubelet.eviction_max_pod_grace_period
        if pool.kubelet.eviction_soft and grace > cap:
            yield ConfigIssue(
                path,
                f"{grace} s is longer than pool {pool.name!r} grants on a soft eviction "
                f"(evictionMaxPodGracePeriod {cap} s): the workers would be killed before their "
                f"checkpoint is saved; shorten it or raise "
                f"{entry_ref('nodePools', pool.name)}.kubelet.evictionMaxPodGracePeriod",
            )
        drain = pool.karpenter.disruption.termination_grace_period if pool.karpenter else None
        drain_seconds = duration_seconds(drain) if drain else None
        if drain_seconds is not None and grace > drain_seconds:
            yield ConfigIssue(
                path,
                f"{grace} s is longer than Karpenter waits for pods on a draining node of pool "
                f"{pool.name!r} (karpenter.disruption.terminationGracePeriod {drain}): the "
                "workers would be killed before their checkpoint is saved",
            )


def workload_priority_classes(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    teams = by_name(config.teams)
    known = by_name(config.priority_classes)
    for index, workload in parsed(config.workloads):
        path = ("workloads", index, "priorityClass")
        name = workload.priority_class or global_default(config.priority_classes)
        if name is None:
            continue  # no global default: reported by one_default_priority_class
        if name not in known:
            yield ConfigIssue(
                path, f"unknown priority class {name!r}; defined: {', '.join(known.names())}"
            )
            continue
        team = teams.get(workload.team)
        allowed = team[1].priority_classes if team else None
        if allowed is None or name in allowed or not all(pc in known for pc in allowed):
            continue  # a team list naming unknown classes is reported on the team
        if workload.priority_class is None:
            message = (
                f"the default priority class {name!r} is not allowed for team "
                f"{workload.team!r}; set one of: {', '.join(allowed)}"
            )
        else:
            message = (
                f"team {workload.team!r} may use priority classes {', '.join(allowed)}; got "
                f"{name!r}"
            )
        yield ConfigIssue(path, message)


def _volume_problem(team: TeamConfig, claim: str) -> str | None:
    names = sorted(volume.name for volume in team.volumes)
    if claim in names:
        return None
    listed = f"its volumes: {', '.join(names)}" if names else "it has none"
    return f"team {team.name!r} has no volume {claim!r}; {listed}"


def _modes(team: TeamConfig, claim: str) -> set[str]:
    return next((set(v.access_modes) for v in team.volumes if v.name == claim), set())


def workload_volumes(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    teams = by_name(config.teams)
    classes = {sc.name: sc for sc in config.storage.classes}
    defined_classes = ", ".join(sorted(classes))
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        path = ("workloads", index)
        if workload.kind in RAY_KINDS:
            continue  # a Ray workload mounts no team volume
        if workload.kind == "training":
            settings = workload.training_settings
            workers = settings.nodes
            if settings.dataset is not None:
                where = (*path, "training", "dataset")
                problem = _volume_problem(team, settings.dataset)
                if problem:
                    yield ConfigIssue(where, problem)
                elif workers > 1 and not _modes(team, settings.dataset) & SHARED_ACCESS_MODES:
                    yield ConfigIssue(
                        where,
                        f"volume {settings.dataset!r} is not shared across nodes "
                        f"({', '.join(sorted(_modes(team, settings.dataset)))}); the {workers} "
                        "workers run on different nodes and need ReadOnlyMany or ReadWriteMany",
                    )
            if settings.checkpoints is not None:
                yield from _checkpoint_issues(
                    workload, team, settings.checkpoints, classes, (*path, "training")
                )
            continue
        inference = workload.inference_settings
        if inference.model is not None:
            where = (*path, "inference", "model")
            problem = _volume_problem(team, inference.model)
            if problem:
                yield ConfigIssue(where, problem)
            elif inference.max_replicas > 1 and not (
                _modes(team, inference.model) & SHARED_ACCESS_MODES
            ):
                yield ConfigIssue(
                    where,
                    f"volume {inference.model!r} is not shared across nodes "
                    f"({', '.join(sorted(_modes(team, inference.model)))}); replicas on "
                    "different nodes need ReadOnlyMany or ReadWriteMany",
                )
        for position, dependency in enumerate(inference.stateful_dependencies):
            if dependency.storage_class not in classes:
                yield ConfigIssue(
                    (*path, "inference", "statefulDependencies", position, "storageClass"),
                    f"unknown storage class {dependency.storage_class!r}; defined: "
                    f"{defined_classes}",
                )


def _checkpoint_issues(
    workload: WorkloadConfig,
    team: TeamConfig,
    checkpoints: CheckpointConfig,
    classes: dict[str, StorageClassConfig],
    path: tuple[str | int, ...],
) -> Iterator[ConfigIssue]:
    where = (*path, "checkpoints")
    workers = workload.training_settings.nodes
    creates = checkpoints.storage_class is not None or checkpoints.size is not None
    if (checkpoints.claim is None) == (not creates):
        yield ConfigIssue(
            where,
            "set claim (an existing team volume) or storageClass and size (a new claim), "
            "exactly one of the two",
        )
        return
    shared = "ReadWriteMany"
    if checkpoints.claim is not None:
        problem = _volume_problem(team, checkpoints.claim)
        if problem:
            yield ConfigIssue((*where, "claim"), problem)
        elif workers > 1 and shared not in _modes(team, checkpoints.claim):
            yield ConfigIssue(
                (*where, "claim"),
                f"volume {checkpoints.claim!r} is not ReadWriteMany; the {workers} workers "
                "write checkpoints from different nodes",
            )
        return
    for key, value in (("storageClass", checkpoints.storage_class), ("size", checkpoints.size)):
        if value is None:
            yield ConfigIssue((*where, key), "required with storageClass or size")
    claim_name = f"{workload.name}-checkpoints"
    if any(volume.name == claim_name for volume in team.volumes):
        yield ConfigIssue(
            where, f"the claim it creates, {claim_name!r}, is already a volume of the team"
        )
    if checkpoints.storage_class is None:
        return
    storage_class = classes.get(checkpoints.storage_class)
    if storage_class is None:
        yield ConfigIssue(
            (*where, "storageClass"),
            f"unknown storage class {checkpoints.storage_class!r}; defined: "
            f"{', '.join(sorted(classes))}",
        )
    elif storage_class.provisioner in BLOCK_PROVISIONERS and (
        set(checkpoints.access_modes) & SHARED_ACCESS_MODES
    ):
        yield ConfigIssue(
            (*where, "accessModes"),
            f"storage class {storage_class.name!r} ({storage_class.provisioner}) provides "
            "volumes one node mounts at a time; ReadWriteMany needs a shared filesystem class",
        )
    elif workers > 1 and shared not in checkpoints.access_modes:
        yield ConfigIssue(
            (*where, "accessModes"),
            f"must include ReadWriteMany: the {workers} workers write checkpoints from "
            "different nodes",
        )


def _gpu_quota(team: TeamConfig, pool: GpuNodePoolConfig) -> tuple[int, str]:
    """The team's namespace quota for the pool's GPU resource, and the key that sets it."""
    resource = pool_gpu_resource(pool)
    if resource == GPU_RESOURCE:
        return team.quota.gpus, "quota.gpus"
    profile = resource.removeprefix(MIG_RESOURCE_PREFIX)
    return team.quota.mig_slices.get(profile, 0), f"quota.migSlices.{profile}"


def workloads_fit_team_quota(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    teams = by_name(config.teams)
    pools = by_name(config.node_pools)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        path = ("workloads", index)
        demand = workload_demand(workload)
        quota = team.quota
        owner = f"team {team.name!r}"
        resources = workload.resources
        for resource, key, per_pod, hard, shown in (
            ("cpu", "cpu", resources.cpu, parse_quantity(quota.cpu), quota.cpu),
            (
                "memory_limit",
                "memoryLimit" if resources.memory_limit else "memory",
                resources.memory_limit or resources.memory,
                parse_quantity(quota.memory),
                quota.memory,
            ),
        ):
            total = demand.total(resource)
            if total > hard:
                noun = "CPU" if resource == "cpu" else "memory (limits)"
                amount = show_amount(resource.removesuffix("_limit"), total)
                yield ConfigIssue(
                    (*path, "resources", key),
                    f"needs {amount} {noun} at its peak ({demand.detail(resource, per_pod)}), "
                    f"above the quota of {owner} ({shown})",
                )
        if demand.total("pods") > quota.pods:
            yield ConfigIssue(
                path,
                f"runs up to {demand.total('pods')} pods at its peak, above the pod quota of "
                f"{owner} ({quota.pods})",
            )
        found_pool = pools.get(workload.gpus.pool) if workload.gpus else None
        if workload.gpus is None or found_pool is None:
            continue
        pool = found_pool[1]
        if not pool_is_sound(pool) or not _fits_a_node(workload, pool):
            continue
        hard_gpus, shown_key = _gpu_quota(team, pool)
        resource_name = pool_gpu_resource(pool)
        if hard_gpus == 0:
            yield ConfigIssue(
                (*path, "gpus"),
                f"{owner} has no quota for {resource_name} "
                f"({entry_ref('teams', team.name)}.{shown_key} is 0)",
            )
            continue
        total_gpus = demand.total("gpus")
        if total_gpus > hard_gpus:
            yield ConfigIssue(
                (*path, "gpus", "count"),
                f"needs {int(total_gpus)} {resource_name} at its peak "
                f"({demand.detail('gpus', str(workload.gpus.count))}), above the quota of "
                f"{owner} ({hard_gpus})",
            )


def _team_claims(team: TeamConfig) -> list[tuple[str, Decimal, int]]:
    """The claims a team has before its workloads': its volumes and its Redis' volume."""
    claims = [(v.name, parse_quantity(v.size), 1) for v in team.volumes]
    if team.redis.enabled:
        claims.append((REDIS_CLAIM, parse_quantity(team.redis.size), 1))
    return claims


def workload_claims_fit_team_quota(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """Claims the workloads create, on top of the team's volumes, fit its storage quota;
    reported at the claim that crosses the line, with everything that counts."""
    teams = by_name(config.teams)
    used: dict[str, list[tuple[str, Decimal, int]]] = {
        name: _team_claims(team) for name, (_, team) in teams.items()
    }
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        own = _team_claims(team)
        volumes_alone = sum((amount for _, amount, _ in own), Decimal(0))
        if (
            volumes_alone > parse_quantity(team.quota.storage)
            or len(own) > team.quota.persistent_volume_claims
        ):
            continue  # the team's own volumes already exceed it: reported on the team
        claims: list[tuple[tuple[str | int, ...], str, str, int]] = []
        if workload.kind == "training":
            checkpoints = workload.training_settings.checkpoints
            if checkpoints is not None and checkpoints.claim is None and checkpoints.size:
                claims.append(
                    (
                        ("training", "checkpoints", "size"),
                        f"{workload.name}-checkpoints",
                        checkpoints.size,
                        1,
                    )
                )
        elif workload.kind == "inference":
            for position, dep in enumerate(workload.inference_settings.stateful_dependencies):
                claims.append(
                    (
                        ("inference", "statefulDependencies", position, "size"),
                        f"{workload.name}-{dep.name}",
                        dep.size,
                        dep.replicas,
                    )
                )
        for where, claim, size, count in claims:
            counted = used[team.name]
            before = sum((amount * n for _, amount, n in counted), Decimal(0))
            claims_before = sum(n for _, _, n in counted)
            counted.append((claim, parse_quantity(size), count))
            storage = before + parse_quantity(size) * count
            number = claims_before + count
            path = ("workloads", index, *where)
            parts = " + ".join(
                f"{name} {show_amount('memory', amount)}" + (f" x {n}" if n > 1 else "")
                for name, amount, n in counted
            )
            quota = team.quota
            if before <= parse_quantity(quota.storage) < storage:
                yield ConfigIssue(
                    path,
                    f"the volumes and workload claims of team {team.name!r} add up to "
                    f"{show_amount('memory', storage)} ({parts}), above its storage quota of "
                    f"{quota.storage}",
                )
            if claims_before <= quota.persistent_volume_claims < number:
                names = " + ".join(name + (f" x {n}" if n > 1 else "") for name, _, n in counted)
                yield ConfigIssue(
                    path,
                    f"the volumes and workload claims of team {team.name!r} add up to {number} "
                    f"PVCs ({names}), above its quota of {quota.persistent_volume_claims}",
                )


def serving_floor_fits_team_quota(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """A team's inference services at their minimum replicas run all the time: they must fit.
    Reported at the service that crosses the line, with each service's share."""
    teams = by_name(config.teams)
    shares: dict[tuple[str, str], list[tuple[str, Decimal]]] = {}
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None or workload.kind != "inference":
            continue
        team = found[1]
        demand = workload_demand(workload, floor=True)
        for resource, hard, shown, noun in (
            ("cpu", parse_quantity(team.quota.cpu), team.quota.cpu, "CPU"),
            ("memory_limit", parse_quantity(team.quota.memory), team.quota.memory, "memory"),
        ):
            counted = shares.setdefault((team.name, resource), [])
            before = sum((amount for _, amount in counted), Decimal(0))
            counted.append((workload.name, demand.total(resource)))
            total = before + demand.total(resource)
            # Report once, at the service that crosses the line; a service that alone
            # exceeds the quota is reported by workloads_fit_team_quota already.
            if before <= hard < total and before > 0:
                show = functools.partial(show_amount, resource.removesuffix("_limit"))
                parts = " + ".join(f"{name} {show(amount)}" for name, amount in counted)
                yield ConfigIssue(
                    ("workloads", index),
                    f"the inference services of team {team.name!r} need {show(total)} {noun} "
                    f"at their minimum replicas ({parts}), above the team's quota of {shown}",
                )


def workloads_fit_queues(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """A queued workload's pool must be in the team's queue, and one job must fit what the
    queue can ever admit there (nominal + borrowing): otherwise Kueue never admits it."""
    teams = by_name(config.teams)
    pools = by_name(config.node_pools)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        found_pool = pools.get(workload.gpus.pool) if workload.gpus else None
        if found is None or workload.gpus is None or found_pool is None:
            continue
        team, pool = found[1], found_pool[1]
        path = ("workloads", index)
        inference = workload.kind == "inference"
        per_pod = workload.kind in ("inference", "worker-pool")  # Deployments: pod by pod
        if not config.queueing.enabled or (inference and not workload.inference_settings.queued):
            continue  # without Kueue every workload runs unqueued
        if team.queue is None:
            if per_pod:
                key = ("inference", "queued") if inference else ("gpus",)
                yield ConfigIssue(
                    (*path, *key),
                    f"team {team.name!r} has no Kueue queue "
                    f"({entry_ref('teams', team.name)}.queue)",
                )
            continue
        entries = {entry.pool: entry for entry in queued(team)}
        if not all(name in pools for name in entries) or not pool_is_sound(pool):
            continue  # the queue or the pool is broken itself: reported there
        if not _fits_a_node(workload, pool):
            continue
        entry = entries.get(workload.gpus.pool)
        if entry is None:
            yield ConfigIssue(
                (*path, "gpus", "pool"),
                f"team {team.name!r} queues GPU work on {', '.join(entries)} only; add "
                f"{workload.gpus.pool!r} to {entry_ref('teams', team.name)}.queue.pools or "
                "Kueue never admits this workload",
            )
            continue
        # Kueue admits a Deployment pod by pod, a job's workers at once, and a Ray workload's
        # head with its fewest workers at once (the autoscaler's extra workers come later).
        demand = workload_demand(workload, floor=True)
        borrow = entry.borrowing_limit
        resource_name = pool_gpu_resource(pool)
        for key, needed, nominal, borrowing, name in (
            (
                ("gpus", "count"),
                Decimal(demand.gpus) if per_pod else demand.total("gpus"),
                Decimal(entry.gpus),
                Decimal(borrow.gpus or 0),
                resource_name,
            ),
            (
                ("resources", "cpu"),
                demand.cpu if per_pod else demand.total("cpu"),
                parse_quantity(entry.cpu),
                parse_quantity(borrow.cpu or "0"),
                "cpu",
            ),
            (
                ("resources", "memory"),
                demand.memory if per_pod else demand.total("memory"),
                parse_quantity(entry.memory),
                parse_quantity(borrow.memory or "0"),
                "memory",
            ),
        ):
            if needed > nominal + borrowing:
                show = functools.partial(show_amount, name)
                what = {
                    "inference": "one replica needs",
                    "worker-pool": "one replica needs",
                    "ray-cluster": "the cluster's head and minimum workers need",
                    "ray-job": "the Ray job's head and workers need",
                }.get(workload.kind, "the job needs")
                yield ConfigIssue(
                    (*path, *key),
                    f"{what} {show(needed)} {name} at once, more than the queue of team "
                    f"{team.name!r} can ever admit on pool {pool.name!r} (nominal "
                    f"{show(nominal)} + borrowing {show(borrowing)})",
                )


def default_queue_work_fits(config: WorkloadPlatform) -> Iterator[ConfigIssue]:
    """What a team runs through its default queue (CPU-only workloads and every stateful
    dependency, which name no queue) fits what that queue admits at the workload's peak: the
    namespace quota less what the GPU queue may take. Otherwise Kueue holds it forever."""
    if not config.queueing.enabled:
        return
    teams = by_name(config.teams)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if found is None:
            continue
        team = found[1]
        demand = workload_demand(workload)
        if workload.gpus is None:
            needs = {r: demand.total(r) for r in ("cpu", "memory")}
            path: tuple[str | int, ...] = ("workloads", index, "resources")
            what = "its pods"
        elif workload.kind == "inference" and demand.dependency_pods:
            needs = {"cpu": demand.dependency_cpu, "memory": demand.dependency_memory}
            path = ("workloads", index, "inference", "statefulDependencies")
            what = "its stateful dependencies"
        else:
            continue
        capacity = default_queue_capacity(team.quota.cpu, team.quota.memory, team.queue)
        for resource, hard in (("cpu", team.quota.cpu), ("memory", team.quota.memory)):
            if not capacity[resource] < needs[resource] <= parse_quantity(hard):
                continue  # fits; or beyond the whole quota: workloads_fit_team_quota says so
            show = functools.partial(show_amount, resource)
            taken = parse_quantity(hard) - capacity[resource]
            key = path if workload.gpus else (*path, resource)
            yield ConfigIssue(
                key,
                f"{what} need {show(needs[resource])} {resource} at their peak through the "
                f"default queue of team {team.name!r}, which admits {show(capacity[resource])}: "
                f"the namespace quota of {hard} less the {show(taken)} its GPU queue may take "
                f"(nominal + borrowing). Raise {entry_ref('teams', team.name)}.quota.{resource} "
                f"to {show(taken + needs[resource])} or lower the queue's {resource}; Kueue "
                "admits each queue's work within its own share only",
            )


RULES = (
    workload_teams_exist,
    unique_workload_names,
    workload_kind_settings,
    workload_gpus_fit_pools,
    gangs_fit_their_pool,
    workloads_needing_redis_have_it,
    training_grace_fits_pool_eviction,
    workload_priority_classes,
    workload_volumes,
    workloads_fit_team_quota,
    workload_claims_fit_team_quota,
    serving_floor_fits_team_quota,
    workloads_fit_queues,
    default_queue_work_fits,
)
"""The workload rules, in the order they report."""
