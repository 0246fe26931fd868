"""TrainingJob: a (multi-node) torchrun training run that survives failures and fails fast.

What it renders and why (docs/workloads.md has the long form):

- A ``batch/v1`` Job in ``Indexed`` completion mode, one pod per node: each pod gets a stable
  completion index (its ``NODE_RANK``) and, with the headless Service as its ``subdomain``, a
  stable DNS name ``<job>-<index>.<job>``; worker 0's name is ``MASTER_ADDR``.
- ``restartPolicy: Never`` + ``backoffLimit`` + ``podFailurePolicy``: the API rejects a
  ``podFailurePolicy`` with ``OnFailure``. Disruptions (preemption, drains: the
  ``DisruptionTarget`` condition) are ignored and retried for free; the preflight's config-error
  codes and the trainer's declared non-retryable codes fail the Job at once.
- The preflight init container (``components.workloads.preflight``) with the trainer's exact
  resources, so it measures what the trainer will get.
- ``pulumi.com/skipAwait``: the provider would otherwise wait for the Job to complete, which a
  multi-day or Kueue-suspended run never does within a deployment.
- Any change of ``spec`` replaces the Job (delete first: the name is fixed). Job templates are
  immutable, and so are other spec fields the provider does not know about
  (``podFailurePolicy``, ``completionMode``); replacing is the only change that works, so it is
  made explicit instead of failing at apply time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Final

import pulumi

from .. import kube
from ..constants import (
    CHECKPOINT_GRACE_SECONDS,
    DISRUPTION_TARGET_CONDITION,
    JOB_COMPLETION_INDEX_ANNOTATION,
    JOB_COMPLETION_INDEX_ENV,
    KARPENTER_DO_NOT_DISRUPT_ANNOTATION,
    SKIP_AWAIT_ANNOTATION,
    TORCHRUN_MASTER_PORT,
    VOLUME_PURPOSE_LABEL,
    WORKLOAD_TYPE_EVALUATION,
    WORKLOAD_TYPE_TRAINING,
)
from ..frozen import frozen
from ..network_rules import dns_egress, pods_peer
from ..scheduling_contract import SchedulingContract
from . import workload_pod as pod
from .common import (
    CHECKPOINT_MOUNT_PATH,
    DATASET_MOUNT_PATH,
    SHM_MOUNT_PATH,
    cidr_egress_rules,
    env_list,
    selector_labels,
    workload_labels,
)
from .preflight import (
    CONTAINER_SCRIPT_DIR,
    CONTAINER_SCRIPT_PATH,
    EXIT_CODES,
    NON_RETRYABLE_EXIT_CODES,
    STATUS_SCRIPT_PATH,
    scripts,
)

TRAINER_CONTAINER: Final = "trainer"
PREFLIGHT_CONTAINER: Final = "preflight"
TRAINER_COMPONENT: Final = "trainer"
RENDEZVOUS_PORT_NAME: Final = "rendezvous"
GPU_MISMATCH_EXIT_CODE: Final = EXIT_CODES["gpu"]

TORCHRUN_ENV: Final = frozenset(
    {
        "MASTER_ADDR",
        "MASTER_PORT",
        "NNODES",
        "NPROC_PER_NODE",
        "WORLD_SIZE",
        "NODE_RANK",
        JOB_COMPLETION_INDEX_ENV,
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
    }
)
"""What the component derives for torchrun (``PET_*`` are torchrun's own option variables)."""
RESERVED_ENV: Final = pod.POD_RESERVED_ENV | TORCHRUN_ENV | {"DATASET_DIR", "CHECKPOINT_DIR"}
"""Environment variables the component (or the team ConfigMap) sets; user env may not."""


@frozen
class CheckpointVolume:
    """Where checkpoints go: an existing claim, or one the job creates (``storage_class`` +
    ``size``). Exactly one of the two."""

    claim: str | None = None
    """An existing PVC in the namespace (a team volume)."""
    storage_class: str | None = None
    """Create ``<job>-checkpoints`` on this class."""
    size: str | None = None
    access_modes: tuple[str, ...] = ("ReadWriteOnce",)
    """Multi-node jobs need ``ReadWriteMany``: every worker writes its shard."""
    protect: bool = False
    """Created claims only: Pulumi refuses to delete or replace the claim (prod)."""

    def __post_init__(self) -> None:
        creates = self.storage_class is not None or self.size is not None
        if (self.claim is None) == (not creates) or (
            creates and (self.storage_class is None or self.size is None)
        ):
            raise ValueError(
                "CheckpointVolume: name an existing claim, or storage_class and size to create one"
            )


@frozen
class PreflightSpec:
    """The ``--start-check`` init container."""

    enabled: bool = True
    image: str | None = None
    """Default: the trainer's image (it has Python; no second image to pull or pin)."""
    dataset_min_files: int = 1
    """Fewer files under the dataset mount fail the job (exit 14)."""
    checkpoint_min_free: str | None = None
    """Free space the checkpoint volume must have, e.g. ``500Gi`` (exit 16)."""
    fail_job_on_gpu_mismatch: bool = False
    """Off: a wrong visible-GPU count (exit 12) is retried. It usually means a sick node (a GPU
    fell off the bus), which a new pod elsewhere does not have; on, it fails the job at once."""


@frozen
class TrainingJobArgs(pod.WorkloadPodArgs):
    """Inputs of a TrainingJob: the pod fields of ``WorkloadPodArgs`` (a pod is a worker: its
    ``gpus`` are torchrun's ``NPROC_PER_NODE``, the preflight gets its ``resources``) and the
    job's own. Defaults are the platform's seed values."""

    KIND: ClassVar[str] = "TrainingJob"
    POD_NOUN: ClassVar[str] = "worker"

    shm_size: str | None = "16Gi"
    """``/dev/shm`` (memory-backed, counts against the memory limit): dataloaders and NCCL."""
    tmp_size: str = "8Gi"
    termination_grace_period_seconds: int = CHECKPOINT_GRACE_SECONDS
    """Time to write a last checkpoint after SIGTERM (preemption, drain, soft eviction)."""
    nodes: int = 1
    """Workers (pods), one per node: ``completions == parallelism == nodes``."""
    workload_type: str = WORKLOAD_TYPE_TRAINING
    """``training`` or ``evaluation``: the workload-type label."""
    dataset_claim: str | None = None
    """PVC mounted read-only at ``/datasets``."""
    checkpoints: CheckpointVolume | None = None
    """Mounted at ``/checkpoints``; the job writes to ``/checkpoints/<job>``."""
    master_port: int = TORCHRUN_MASTER_PORT
    """Rendezvous port on worker 0."""
    backoff_limit: int = 3
    """Pod failures tolerated (disruptions do not count)."""
    active_deadline_seconds: int = 3 * 86400
    """The job's wall-clock limit, suspended time excluded: three days."""
    ttl_seconds_after_finished: int = 7 * 86400
    """Finished jobs (and their pods' logs) are kept a week."""
    non_retryable_exit_codes: Sequence[int] = ()
    """Trainer exit codes that mean "a rerun fails the same way": FailJob at once."""
    preflight: PreflightSpec = field(default_factory=PreflightSpec)
    do_not_disrupt: bool = True
    """``karpenter.sh/do-not-disrupt``: Karpenter never voluntarily takes a worker's node."""
    depends_on: Sequence[pulumi.Resource] = ()
    """What the job's objects wait for (the team's queue, the claims it mounts), given here
    rather than as the component's ``depends_on``: the engine counts a parent's dependencies as
    its children's, so a protected checkpoint claim under a component that depends on the queue
    would depend on the queue, the Kueue release and the team's other claims. ``pulumi destroy``
    would then not reach (nor name) those claims, and ``--exclude-protected`` would keep all of
    it. The checkpoint claim the job creates waits for ``claim_namespace`` instead."""
    claim_namespace: pulumi.Input[str] | None = None
    """The namespace for a checkpoint claim the job creates, as ``TeamNamespace.namespace``
    (its Output): the claim then depends on its namespace and nothing else. None: ``namespace``,
    and the claim waits for ``depends_on`` like the job's other objects."""
    publish_status: bool = False
    """Run the trainer under the status publisher (shipped beside the preflight), which
    publishes its start, ``progress:`` lines and exit on ``redis.status_channel``. Needs
    ``redis`` and a ``command`` (it wraps the command; an image's entrypoint cannot be)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.publish_status and self.redis is None:
            raise ValueError(f"{self.who}: publish_status needs the team Redis (redis)")
        if self.publish_status and not self.command:
            raise ValueError(f"{self.who}: publish_status wraps the command; set command")
        if self.nodes < 1:
            raise ValueError(f"{self.who}: nodes must be >= 1, got {self.nodes}")
        if self.workload_type not in (WORKLOAD_TYPE_TRAINING, WORKLOAD_TYPE_EVALUATION):
            raise ValueError(f"{self.who}: workload_type {self.workload_type!r}")
        for code in self.non_retryable_exit_codes:
            if not 1 <= code <= 255:
                raise ValueError(f"{self.who}: exit code {code} is not in 1..255")

    def reserved_env(self) -> frozenset[str]:
        return RESERVED_ENV

    @property
    def placement_contract(self) -> SchedulingContract | None:
        """A job given a pool's contract runs on that pool, GPUs or not."""
        return self.scheduling

    @property
    def nproc_per_node(self) -> int:
        """Processes per worker: one per GPU, one for CPU-only jobs."""
        return self.gpus or 1

    @property
    def service_name(self) -> str | None:
        """The headless Service of a multi-node job (the job's name); None for one node."""
        return self.name if self.nodes > 1 else None

    @property
    def master_addr(self) -> str:
        """Worker 0's stable name, resolved through the pod's DNS search path."""
        return f"{self.name}-0.{self.name}" if self.nodes > 1 else "localhost"

    @property
    def checkpoint_claim(self) -> str | None:
        if self.checkpoints is None:
            return None
        return self.checkpoints.claim or f"{self.name}-checkpoints"

    @property
    def checkpoint_dir(self) -> str:
        return f"{CHECKPOINT_MOUNT_PATH}/{self.name}"

    @property
    def preflight_config_map(self) -> str | None:
        """The ConfigMap holding the preflight script (and the status publisher); None when
        the job runs neither."""
        if self.preflight.enabled or self.publish_status:
            return f"{self.name}-preflight"
        return None

    @property
    def status_channel(self) -> str | None:
        """Where the trainer's status goes; None when it publishes none."""
        return self.redis.status_channel if self.redis and self.publish_status else None


def _index_ref() -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}}


def torchrun_env(args: TrainingJobArgs) -> list[dict[str, Any]]:
    """What ``torchrun`` (and plain ``torch.distributed``) read; ``PET_*`` let a bare
    ``torchrun train.py`` pick the options up without flags."""
    nproc = args.nproc_per_node
    static = {
        "MASTER_ADDR": args.master_addr,
        "MASTER_PORT": str(args.master_port),
        "NNODES": str(args.nodes),
        "NPROC_PER_NODE": str(nproc),
        "WORLD_SIZE": str(args.nodes * nproc),
        "PET_MASTER_ADDR": args.master_addr,
        "PET_MASTER_PORT": str(args.master_port),
        "PET_NNODES": str(args.nodes),
        "PET_NPROC_PER_NODE": str(nproc),
    }
    return [
        *env_list(static),
        {"name": "NODE_RANK", "valueFrom": _index_ref()},
        {"name": "PET_NODE_RANK", "valueFrom": _index_ref()},
        {"name": JOB_COMPLETION_INDEX_ENV, "valueFrom": _index_ref()},
    ]


def trainer_env(args: TrainingJobArgs) -> list[dict[str, Any]]:
    """The workload environment with the data locations, then the torchrun variables."""
    data: dict[str, str] = {}
    if args.dataset_claim:
        data["DATASET_DIR"] = DATASET_MOUNT_PATH
    if args.checkpoints is not None:
        data["CHECKPOINT_DIR"] = args.checkpoint_dir
    return [*env_list(pod.workload_env(args, data)), *torchrun_env(args)]


def preflight_command(args: TrainingJobArgs) -> list[str]:
    """``--start-check`` with the trainer's own numbers; ``--all`` reports every problem."""
    command = [
        "python3",
        CONTAINER_SCRIPT_PATH,
        "--start-check",
        "--all",
        "--min-memory",
        args.resources.memory,
        "--min-cpus",
        args.resources.cpu,
        "--expect-gpus",
        str(args.gpus),
    ]
    if args.dataset_claim:
        command += [
            "--dataset-path",
            DATASET_MOUNT_PATH,
            "--dataset-min-files",
            str(args.preflight.dataset_min_files),
        ]
    if args.checkpoints is not None:
        command += ["--checkpoint-path", args.checkpoint_dir, "--checkpoint-create"]
        if args.preflight.checkpoint_min_free:
            command += ["--checkpoint-min-free", args.preflight.checkpoint_min_free]
    return command


def trainer_command(args: TrainingJobArgs) -> list[str]:
    """The trainer's command, under the status publisher when the job publishes status."""
    if args.status_channel is None:
        return list(args.command)
    publisher = ["python3", STATUS_SCRIPT_PATH, "--status-channel", args.status_channel]
    return [*publisher, "--job", args.name, "--", *args.command]


def preflight_exit_codes(spec: PreflightSpec) -> list[int]:
    """The preflight codes that fail the job at once (sorted, as the API demands)."""
    return [
        code
        for code in NON_RETRYABLE_EXIT_CODES
        if spec.fail_job_on_gpu_mismatch or code != GPU_MISMATCH_EXIT_CODE
    ]


def pod_failure_policy(args: TrainingJobArgs) -> dict[str, Any]:
    """Ignore disruptions first (a preempted trainer may exit with any code), then FailJob."""
    rules: list[dict[str, Any]] = [
        {
            "action": "Ignore",
            "onPodConditions": [{"type": DISRUPTION_TARGET_CONDITION, "status": "True"}],
        }
    ]
    if args.preflight.enabled:
        rules.append(
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": PREFLIGHT_CONTAINER,
                    "operator": "In",
                    "values": preflight_exit_codes(args.preflight),
                },
            }
        )
    if args.non_retryable_exit_codes:
        rules.append(
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": TRAINER_CONTAINER,
                    "operator": "In",
                    "values": sorted(set(args.non_retryable_exit_codes)),
                },
            }
        )
    return {"rules": rules}


def _volumes(args: TrainingJobArgs) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Pod volumes and the mounts the trainer and the preflight share."""
    pairs = [pod.tmp_volume(args.tmp_size)]
    if args.shm_size:
        pairs.append(pod.shm_volume(args.shm_size))
    if args.dataset_claim:
        pairs.append(
            pod.claim_volume("dataset", args.dataset_claim, DATASET_MOUNT_PATH, read_only=True)
        )
    if args.checkpoint_claim:
        pairs.append(
            pod.claim_volume(
                "checkpoints", args.checkpoint_claim, CHECKPOINT_MOUNT_PATH, read_only=False
            )
        )
    return pod.split_volumes(pairs)


def job_spec(args: TrainingJobArgs) -> dict[str, Any]:
    """The Job's ``spec``: Indexed, bounded, failure-policy'd, suspended when queued."""
    pod_labels = pod.pod_labels(
        args, workload_labels(args.team, args.name, TRAINER_COMPONENT, args.workload_type)
    )
    volumes, mounts = _volumes(args)
    trainer = pod.workload_container(
        args,
        TRAINER_CONTAINER,
        ports=[
            {"name": RENDEZVOUS_PORT_NAME, "containerPort": args.master_port, "protocol": "TCP"}
        ],
        env=trainer_env(args),
        mounts=mounts,
    )
    scripts_mount = {"name": "preflight", "mountPath": CONTAINER_SCRIPT_DIR, "readOnly": True}
    if args.status_channel is not None:
        trainer["command"] = trainer_command(args)
        trainer["volumeMounts"] = [*trainer["volumeMounts"], scripts_mount]
    pod_spec = {"restartPolicy": "Never", **pod.workload_pod_spec(args, [trainer], volumes)}
    if args.service_name:
        pod_spec["subdomain"] = args.service_name
    if args.preflight.enabled:
        pod_spec["initContainers"] = [
            {
                "name": PREFLIGHT_CONTAINER,
                "image": args.preflight.image or args.image,
                "command": preflight_command(args),
                "env": env_list({"PYTHONDONTWRITEBYTECODE": "1"}),
                "resources": trainer["resources"],
                "securityContext": trainer["securityContext"],
                "volumeMounts": [
                    *(m for m in mounts if m["mountPath"] != SHM_MOUNT_PATH),
                    scripts_mount,
                ],
            }
        ]
    if args.preflight_config_map:
        pod_spec["volumes"] = [
            *volumes,
            {
                "name": "preflight",
                "configMap": {"name": args.preflight_config_map, "defaultMode": 0o444},
            },
        ]
    annotations = {KARPENTER_DO_NOT_DISRUPT_ANNOTATION: "true"} if args.do_not_disrupt else {}
    spec: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": args.nodes,
        "parallelism": args.nodes,
        "backoffLimit": args.backoff_limit,
        "podFailurePolicy": pod_failure_policy(args),
        "podReplacementPolicy": "Failed",
        "activeDeadlineSeconds": args.active_deadline_seconds,
        "ttlSecondsAfterFinished": args.ttl_seconds_after_finished,
        "template": {
            "metadata": {"labels": pod_labels, "annotations": annotations},
            "spec": pod_spec,
        },
    }
    if args.queue_name:
        spec["suspend"] = True
    return spec


QUEUE_OWNED_FIELDS: tuple[str, ...] = ("spec.suspend",)
"""Fields of a queued Job that Kueue owns once it exists: it unsuspends the Job when it admits
it and suspends it again to preempt it. The Job is created suspended, and these are never
diffed again: re-applying ``suspend: true`` after a refresh would stop a running job (and,
``spec`` being a replace trigger, replace it)."""


def job_options(args: TrainingJobArgs) -> dict[str, Any]:
    """Resource options of the Job: a changed spec is a new Job (the name is fixed, so the old
    one goes first), and what Kueue owns is Kueue's."""
    return {
        "replace_on_changes": ["spec"],
        "delete_before_replace": True,
        "ignore_changes": list(QUEUE_OWNED_FIELDS) if args.queue_name else [],
    }


def network_policy_spec(args: TrainingJobArgs) -> dict[str, Any]:
    """Workers reach each other on every port (rendezvous, NCCL's ephemeral ports), DNS, the
    team Redis (its clients) and the configured external ranges; nothing else in or out."""
    own = pods_peer(selector_labels(args.name, TRAINER_COMPONENT))
    return {
        **own,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [own]}],
        "egress": [
            {"to": [own]},
            dns_egress(),
            *pod.redis_egress(args),
            *cidr_egress_rules(args.egress),
        ],
    }


class TrainingJob(pulumi.ComponentResource):
    """An Indexed Job with preflight, failure policy, torchrun wiring, data and isolation."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        job_name: str
        service_name: str | None
        master_addr: str
        checkpoint_claim: str | None

    def __init__(
        self, name: str, args: TrainingJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:workloads:TrainingJob", name, None, opts)
        after = list(args.depends_on)
        child = pulumi.ResourceOptions(parent=self, depends_on=after)
        labels = workload_labels(args.team, args.name, TRAINER_COMPONENT, args.workload_type)

        def meta(object_name: str, **extra: Any) -> dict[str, Any]:
            return {"name": object_name, "namespace": args.namespace, "labels": labels, **extra}

        before_job: list[pulumi.Resource] = []
        if args.preflight_config_map:
            before_job.append(
                kube.ConfigMap(
                    f"{name}-preflight",
                    metadata=meta(args.preflight_config_map),
                    data=scripts(status=args.publish_status),
                    opts=child,
                )
            )
        checkpoints = args.checkpoints
        if checkpoints is not None and checkpoints.claim is None:
            before_job.append(
                kube.PersistentVolumeClaim(
                    f"{name}-checkpoints",
                    metadata={
                        "name": args.checkpoint_claim,
                        "namespace": args.claim_namespace or args.namespace,
                        "labels": {**labels, VOLUME_PURPOSE_LABEL: "checkpoints"},
                        # Pending until the first worker mounts it (WaitForFirstConsumer).
                        "annotations": {SKIP_AWAIT_ANNOTATION: "true"},
                    },
                    spec={
                        "accessModes": list(checkpoints.access_modes),
                        "storageClassName": checkpoints.storage_class,
                        "resources": {"requests": {"storage": checkpoints.size}},
                    },
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        protect=checkpoints.protect,
                        depends_on=[] if args.claim_namespace is not None else after,
                    ),
                )
            )
        if args.service_name:
            before_job.append(
                kube.Service(
                    f"{name}-workers",
                    metadata=meta(args.service_name),
                    spec={
                        "clusterIP": "None",
                        # Workers need each other's names before any of them is Ready.
                        "publishNotReadyAddresses": True,
                        "selector": selector_labels(args.name, TRAINER_COMPONENT),
                        "ports": [
                            {
                                "name": RENDEZVOUS_PORT_NAME,
                                "port": args.master_port,
                                "targetPort": args.master_port,
                                "protocol": "TCP",
                            }
                        ],
                    },
                    opts=child,
                )
            )
        before_job.append(
            kube.NetworkPolicy(
                f"{name}-network",
                metadata=meta(f"{args.name}-network"),
                spec=network_policy_spec(args),
                opts=child,
            )
        )
        job_labels = pod.queued_labels(labels, args)
        kube.Job(
            f"{name}-job",
            metadata={
                "name": args.name,
                "namespace": args.namespace,
                "labels": job_labels,
                "annotations": {SKIP_AWAIT_ANNOTATION: "true"},
            },
            spec=job_spec(args),
            # After its objects, so after ``depends_on`` (the network policy always waits for it).
            opts=pulumi.ResourceOptions(parent=self, depends_on=before_job, **job_options(args)),
        )

        self.job_name = args.name
        self.service_name = args.service_name
        self.master_addr = args.master_addr
        self.checkpoint_claim = args.checkpoint_claim
        self.register_outputs(
            {
                "jobName": self.job_name,
                "serviceName": self.service_name,
                "masterAddr": self.master_addr,
                "checkpointClaim": self.checkpoint_claim,
            }
        )
