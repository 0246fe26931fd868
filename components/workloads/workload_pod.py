"""WorkloadPodArgs: what every team workload's pods share, and the pure functions that render it.

A workload kind (TrainingJob, InferenceService) is a controller object around pods that must
all look alike to the platform: a team's service account and env ConfigMap, the ``restricted``
security contexts, a read-only root with a writable ``/tmp``, the pool's placement and GPU
resource, a priority class, a Kueue queue, DNS plus the allowed external ranges as egress. Those
inputs and their checks live here once; a kind's args extend ``WorkloadPodArgs`` with what is
its own, and its ``*_spec`` functions build pods from ``workload_container`` and
``workload_pod_spec``.

Adding a kind (a Ray cluster, a Celery worker pool):

1. ``@frozen class RayClusterArgs(WorkloadPodArgs)``: set ``KIND`` (it names the
   kind in errors) and, if needed, ``MAX_NAME_LENGTH`` and ``POD_NOUN``; add only the kind's
   fields, each with a default (the base's required fields come first); redeclare a base field
   to change its default (``tmp_size: str = "8Gi"``).
2. Extend ``__post_init__`` (call ``super().__post_init__()`` first) for the kind's own checks,
   and ``reserved_env`` with the variables the kind sets itself.
3. Render containers with ``workload_container`` (add probes or ports to the dict it returns),
   pods with ``workload_pod_spec``, volumes with the ``*_volume`` pairs and ``split_volumes``;
   label pod templates with ``pod_labels`` and add ``redis_egress`` to the kind's
   NetworkPolicy egress, so the pods of a team with a Redis reach it (the container's
   ``REDIS_URL`` and ``STATUS_CHANNEL`` come with ``workload_container``).
4. In ``infra/workloads/build.py``, ``pod_fields`` gives the base fields from a workload's
   config; pass them with the kind's own: ``RayClusterArgs(**pod_fields(...), head=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, ClassVar, Final

import pulumi

from ..constants import (
    KUEUE_QUEUE_LABEL,
    TEAM_ENV_CONFIGMAP,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
    TRAINING_ENV_VAR,
)
from ..frozen import frozen
from ..scheduling_contract import SchedulingContract
from ..team_redis import (
    REDIS_CLIENT_ENV,
    RedisClient,
    redis_client_env,
    redis_client_labels,
    redis_egress_rule,
)
from .common import (
    SHM_MOUNT_PATH,
    TMP_MOUNT_PATH,
    ComputeResources,
    EgressAllowance,
    check_env,
    check_name,
    container_resources,
    container_security_context,
    placement,
    pod_security_context,
)

POD_RESERVED_ENV: Final = frozenset({"LOG_LEVEL", "HOME", "TMPDIR", TRAINING_ENV_VAR})
"""Set on every workload container (``TRAINING_ENV_VAR`` by the team ConfigMap)."""

MAX_NAME_LENGTH: Final = 40
"""Leaves room for derived names: ``<name>-network``, ``<name>-checkpoints``, ``<job>-<index>``
hostnames, ``<service>-<dependency>`` StatefulSets."""

Volume = tuple[dict[str, Any], dict[str, Any]]
"""A pod volume and the container's mount of it."""


@frozen
class WorkloadPodArgs:
    """Inputs every workload kind's pods take. Defaults are the platform's seed values; a kind
    redeclares a field to change its default."""

    KIND: ClassVar[str] = "Workload"
    """Names the kind in error messages."""
    POD_NOUN: ClassVar[str] = "pod"
    """What one pod of the kind is called in error messages (a worker, a replica)."""
    MAX_NAME_LENGTH: ClassVar[int] = MAX_NAME_LENGTH
    """A kind with longer derived names lowers it."""

    team: str
    """Owning team: the team label on every object."""
    namespace: pulumi.Input[str]
    """Pass ``TeamNamespace.namespace`` so every object waits for the namespace."""
    name: str
    """The workload's name: a DNS-1035 label of at most ``MAX_NAME_LENGTH`` characters;
    prefixes every derived name."""
    image: str
    """The main container's image, pinned (tag or digest)."""
    resources: ComputeResources
    """CPU and memory of one pod's main container."""
    command: Sequence[str] = ()
    args: Sequence[str] = ()
    gpus: int = 0
    """Units of the pool's GPU resource per pod."""
    scheduling: SchedulingContract | None = None
    """The pool's contract: node selector, tolerations, GPU resource. Required with GPUs."""
    priority_class: str | None = None
    """None: no ``priorityClassName``; the cluster's global default class applies."""
    queue_name: str | None = None
    """The team's Kueue LocalQueue the pods are submitted through (the kind says how); None:
    not queued, only the namespace quota applies."""
    shm_size: str | None = None
    """``/dev/shm`` (memory-backed, counts against the memory limit); None: none."""
    tmp_size: str = "4Gi"
    """The writable ``/tmp`` next to the read-only root filesystem."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment; names the component sets (``reserved_env``) are rejected."""
    log_level: str = "info"
    """``LOG_LEVEL``."""
    env_config_map: str | None = TEAM_ENV_CONFIGMAP
    """ConfigMap loaded with ``envFrom`` (the team's); None for none."""
    service_account: str = TEAM_WORKLOAD_SERVICE_ACCOUNT
    egress: EgressAllowance = field(default_factory=EgressAllowance)
    """External ranges (object storage) the pods may reach; nothing else leaves the cluster."""
    termination_grace_period_seconds: int = 60
    run_as_user: int = 1000
    run_as_group: int = 1000
    fs_group: int = 1000
    """Group that owns the files of the mounted volumes."""
    read_only_root_filesystem: bool = True
    redis: RedisClient | None = None
    """The team's Redis, when the team has one: every pod is its client (``REDIS_URL`` from
    its Secret and ``STATUS_CHANNEL`` in the main container, the label its NetworkPolicy
    admits, and the egress rule to it in the kind's NetworkPolicy). None: no team Redis."""

    def __post_init__(self) -> None:
        check_name(self.name, f"{self.KIND} name", self.MAX_NAME_LENGTH)
        who = self.who
        if self.gpus < 0:
            raise ValueError(f"{who}: gpus must be >= 0")
        if self.gpus and self.scheduling is None:
            raise ValueError(f"{who}: GPUs need a pool's SchedulingContract")
        if self.scheduling and self.gpus > self.scheduling.resources_per_node:
            raise ValueError(
                f"{who}: {self.gpus} {self.scheduling.gpu_resource} per {self.POD_NOUN}, but a "
                f"node of pool {self.scheduling.pool} has {self.scheduling.resources_per_node}"
            )
        reserved = self.reserved_env() | (REDIS_CLIENT_ENV if self.redis else frozenset())
        check_env(self.env, reserved, who)

    @property
    def who(self) -> str:
        """The workload as error messages name it."""
        return f"{self.KIND} {self.name}"

    def reserved_env(self) -> frozenset[str]:
        """Environment variables the component sets; a kind adds its own."""
        return POD_RESERVED_ENV

    @property
    def placement_contract(self) -> SchedulingContract | None:
        """The pool whose selector and tolerations the pods get: only pods that use its GPUs
        go there."""
        return self.scheduling if self.gpus else None


def queued_labels(labels: Mapping[str, str], args: WorkloadPodArgs) -> dict[str, str]:
    """The labels of the object Kueue admits: the queue's label when the workload is queued."""
    if not args.queue_name:
        return dict(labels)
    return {**labels, KUEUE_QUEUE_LABEL: args.queue_name}


def pod_labels(args: WorkloadPodArgs, labels: Mapping[str, str]) -> dict[str, str]:
    """A pod template's labels: the kind's, and the team Redis' client label for its clients."""
    return {**labels, **(redis_client_labels() if args.redis else {})}


def redis_egress(args: WorkloadPodArgs) -> list[dict[str, Any]]:
    """The egress rule to the team Redis for its clients (a kind's NetworkPolicy adds it)."""
    return [redis_egress_rule()] if args.redis else []


def workload_env(args: WorkloadPodArgs, own: Mapping[str, str]) -> dict[str, str]:
    """``LOG_LEVEL``, the user's environment, what the kind sets, then ``HOME`` and ``TMPDIR``.

    Caches (Triton, torch.compile, Hugging Face) live under ``$HOME``: it points at the writable
    ``/tmp``, next to the read-only root filesystem and whatever user the image expects.
    """
    return {
        "LOG_LEVEL": args.log_level,
        **dict(args.env),
        **own,
        "HOME": TMP_MOUNT_PATH,
        "TMPDIR": TMP_MOUNT_PATH,
    }


def workload_container(
    args: WorkloadPodArgs,
    name: str,
    *,
    ports: Sequence[Mapping[str, Any]],
    env: Sequence[Mapping[str, Any]],
    mounts: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The main container: image, command, the team ConfigMap, the team Redis' connection for
    its clients, resources with the pool's GPUs, ``restricted`` security; a kind adds probes to
    the dict."""
    redis = redis_client_env(args.redis.status_channel) if args.redis else []
    container: dict[str, Any] = {
        "name": name,
        "image": args.image,
        # No empty list: the provider drops it, and the state would differ from the program.
        **({"ports": list(ports)} if ports else {}),
        "env": [*env, *redis],
        "envFrom": env_from(args),
        "resources": pod_resources(args),
        "securityContext": container_security_context(args.read_only_root_filesystem),
        "volumeMounts": list(mounts),
    }
    if args.command:
        container["command"] = list(args.command)
    if args.args:
        container["args"] = list(args.args)
    return container


def env_from(args: WorkloadPodArgs) -> list[dict[str, Any]]:
    """The team ConfigMap as ``envFrom``, if the workload loads one."""
    return [{"configMapRef": {"name": args.env_config_map}}] if args.env_config_map else []


def pod_resources(args: WorkloadPodArgs) -> dict[str, dict[str, str]]:
    """The main container's requests and limits, with the pool's GPU resource."""
    return container_resources(args.resources, args.scheduling, args.gpus)


def workload_pod_spec(
    args: WorkloadPodArgs,
    containers: Sequence[Mapping[str, Any]],
    volumes: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """A pod spec with the team's identity (no API token, no service links), the priority class,
    ``restricted`` security and the pool's placement; a kind adds its own keys."""
    return {
        "serviceAccountName": args.service_account,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        **({"priorityClassName": args.priority_class} if args.priority_class else {}),
        "terminationGracePeriodSeconds": args.termination_grace_period_seconds,
        "securityContext": pod_security_context(args.run_as_user, args.run_as_group, args.fs_group),
        **placement(args.placement_contract),
        "containers": list(containers),
        "volumes": list(volumes),
    }


def tmp_volume(size: str) -> Volume:
    """The writable ``/tmp`` emptyDir beside the read-only root."""
    volume = {"name": "tmp", "emptyDir": {"sizeLimit": size}}
    return volume, {"name": "tmp", "mountPath": TMP_MOUNT_PATH}


def shm_volume(size: str) -> Volume:
    """A memory-backed ``/dev/shm`` (dataloaders, NCCL, tensor-parallel servers)."""
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": size}}
    return volume, {"name": "dshm", "mountPath": SHM_MOUNT_PATH}


def claim_volume(name: str, claim: str, mount_path: str, *, read_only: bool) -> Volume:
    """A PersistentVolumeClaim mounted at ``mount_path``; read-only data is read-only twice
    (the claim and the mount)."""
    flag: dict[str, Any] = {"readOnly": True} if read_only else {}
    volume = {"name": name, "persistentVolumeClaim": {"claimName": claim, **flag}}
    return volume, {"name": name, "mountPath": mount_path, **flag}


def split_volumes(pairs: Sequence[Volume]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pod volumes and container mounts, in the given order."""
    return [volume for volume, _ in pairs], [mount for _, mount in pairs]
