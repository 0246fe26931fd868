"""WorkerPool: Celery workers on the team Redis, scaled by KEDA on the length of their queues.

Renders a Deployment running ``celery -A <app> worker --loglevel=info --concurrency=<n>``, a
NetworkPolicy (no ingress; egress to the team Redis and DNS, plus the workload's external
ranges), and with autoscaling a KEDA ``ScaledObject`` (one ``redis`` list trigger per queue)
and the ``TriggerAuthentication`` that gives KEDA the Redis password from the team Secret.

The contract with the worker's code (docs/workloads.md has the long form):

- The broker is ``CELERY_BROKER_URL``, read from the team Redis Secret; the app must not set
  another. Each queue is the Redis list of that name, which is what KEDA counts.
- Probes prove the worker answers: ``celery inspect ping`` to this pod's node name
  (``celery@$HOSTNAME``, Celery's default), through the broker, within ``probe_timeout``. A
  pod whose worker stops answering is taken out of the rollout (readiness) and, after
  ``liveness_failures`` periods, restarted; the kubelet does not run liveness probes on a pod
  that is terminating, so a warm shutdown is never cut short by one.
- SIGTERM is Celery's warm shutdown: the worker stops taking tasks and finishes the ones it
  runs. ``termination_grace_period_seconds`` is the budget; after it the kubelet kills what
  is left (a task not acknowledged late is then lost). The container's process is ``celery``
  itself (exec form), so it gets the signal.
- ``spec.replicas`` is left to KEDA's HPA when autoscaling (as the InferenceService leaves it to
  its HPA); a rollout adds a pod before it stops one.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Final

import pulumi
import pulumi_kubernetes as k8s

from .. import kube
from ..constants import KEDA_API_VERSION, WORKLOAD_TYPE_WORKER
from ..frozen import frozen
from ..network_rules import dns_egress, pod_selector
from ..team_redis import (
    REDIS_CLIENT_ENV,
    REDIS_PASSWORD_KEY,
    REDIS_PORT,
    REDIS_SECRET,
    REDIS_SERVICE,
    REDIS_URL_KEY,
    RedisClient,
    secret_env,
)
from . import workload_pod as pod
from .common import (
    cidr_egress_rules,
    env_list,
    selector_labels,
    service_dns_name,
    workload_labels,
)

WORKER_CONTAINER: Final = "worker"
WORKER_COMPONENT: Final = "worker"
DEFAULT_QUEUE: Final = "celery"
"""Celery's default queue (``task_default_queue``), the Redis list a worker without ``-Q`` reads."""
BROKER_ENV: Final = "CELERY_BROKER_URL"
QUEUE_TRIGGER_PREFIX: Final = "celery-"
"""A ScaledObject trigger is named ``celery-<queue>``: KEDA labels its metrics with the trigger's
name (``scaler``), which the Celery backlog alert reads the queue from."""
MAX_SURGE: Final = 1
"""Pods a rollout starts before it stops an old one (``maxUnavailable`` is 0)."""
RESERVED_ENV: Final = pod.POD_RESERVED_ENV | {BROKER_ENV} | REDIS_CLIENT_ENV
"""Set by the component (a worker is always a team Redis client); user env may not."""


@frozen
class QueueAutoscaling:
    """KEDA's ScaledObject: replicas follow the longest queue."""

    min_replicas: int = 1
    """0 lets an idle pool scale to zero (KEDA activates it on the first task)."""
    max_replicas: int = 4
    tasks_per_replica: int = 10
    """Waiting tasks per replica the HPA aims at (the redis trigger's ``listLength``)."""
    polling_interval_seconds: int = 15
    cooldown_seconds: int = 300
    """How long an empty queue waits before the pool goes from 1 to 0 (``minReplicas: 0``)."""

    def __post_init__(self) -> None:
        if not 0 <= self.min_replicas <= self.max_replicas or self.max_replicas < 1:
            raise ValueError(
                f"QueueAutoscaling: need 0 <= min_replicas ({self.min_replicas}) <= "
                f"max_replicas ({self.max_replicas}) and max_replicas >= 1"
            )
        if self.tasks_per_replica < 1:
            raise ValueError("QueueAutoscaling: tasks_per_replica must be >= 1")


@frozen
class WorkerPoolArgs(pod.WorkloadPodArgs):
    """Inputs of a WorkerPool: the pod fields of ``WorkloadPodArgs`` (``command`` stays empty:
    the component runs ``celery worker``; ``args`` are more worker options) and the pool's own.
    Defaults are the platform's seed values."""

    KIND: ClassVar[str] = "WorkerPool"
    POD_NOUN: ClassVar[str] = "worker"

    app: str = ""
    """``celery -A``: the Celery application (``pipelines.celery_app``). Required."""
    concurrency: int = 2
    """Worker processes per pod (``--concurrency``); ``resources`` are for all of them."""
    queues: Sequence[str] = ()
    """``-Q``; empty: Celery's default queue."""
    autoscaling: QueueAutoscaling | None = field(default_factory=QueueAutoscaling)
    """None: a fixed ``replicas`` pods, no KEDA objects."""
    replicas: int = 1
    """Pods without autoscaling."""
    termination_grace_period_seconds: int = 300
    """The warm shutdown's budget (see the module docstring)."""
    probe_timeout_seconds: int = 10
    """How long ``celery inspect ping`` waits for the reply."""
    probe_period_seconds: int = 30
    liveness_failures: int = 5
    """Liveness periods (twice the probe period) without a reply before the kubelet restarts
    the worker: a broker outage of a few minutes must not restart every worker at once."""
    redis: RedisClient | None = field(default_factory=RedisClient)
    """The team Redis, the pool's broker: required (the base's client label, egress and
    environment make the workers its clients)."""
    redis_secret: str = REDIS_SECRET
    redis_service: str = REDIS_SERVICE
    tmp_size: str = "1Gi"
    rollout_timeout: str = "10m"
    depends_on: Sequence[pulumi.Resource] = ()
    """What the ScaledObject waits for besides the Deployment (KEDA's release: its CRDs)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        who = self.who
        if not self.app:
            raise ValueError(f"{who}: app (celery -A) is required")
        if self.redis is None:
            raise ValueError(f"{who}: the team Redis is the broker: redis is required")
        if self.command:
            raise ValueError(f"{who}: command is 'celery worker'; pass worker options as args")
        if self.concurrency < 1:
            raise ValueError(f"{who}: concurrency must be >= 1")
        if self.autoscaling is None and self.replicas < 1:
            raise ValueError(f"{who}: replicas must be >= 1 without autoscaling")
        if len(set(self.queues)) != len(self.queues):
            raise ValueError(f"{who}: queues must be unique")
        if any(not queue or "," in queue for queue in self.queues):
            raise ValueError(f"{who}: a queue name is non-empty and has no comma")
        if self.probe_timeout_seconds < 1 or self.probe_period_seconds < 1:
            raise ValueError(f"{who}: probe timeout and period must be >= 1 s")

    def reserved_env(self) -> frozenset[str]:
        return RESERVED_ENV

    @property
    def consumed_queues(self) -> tuple[str, ...]:
        return tuple(self.queues) or (DEFAULT_QUEUE,)

    @property
    def trigger_authentication_name(self) -> str:
        return f"{self.name}-redis"


def worker_command(args: WorkerPoolArgs) -> list[str]:
    """``celery -A <app> worker --loglevel=<l> --concurrency=<n> [-Q a,b] [args...]``."""
    command = [
        "celery",
        "-A",
        args.app,
        "worker",
        f"--loglevel={args.log_level}",
        f"--concurrency={args.concurrency}",
    ]
    if args.queues:
        command += ["-Q", ",".join(args.queues)]
    return [*command, *args.args]


def ping_command(args: WorkerPoolArgs) -> list[str]:
    """The probe: this pod's worker answers ``ping`` through the broker within the timeout.

    A shell, because the kubelet expands no variables in a probe's command: ``$HOSTNAME`` is the
    pod's hostname, which Celery's default node name (``celery@<hostname>``) is made of. Celery
    exits non-zero when no node replied in time."""
    return [
        "sh",
        "-c",
        f'exec celery -A {shlex.quote(args.app)} inspect ping --destination "celery@$HOSTNAME" '
        f"--timeout {args.probe_timeout_seconds}",
    ]


def _probe(args: WorkerPoolArgs, failures: int, period: int) -> dict[str, Any]:
    return {
        "exec": {"command": ping_command(args)},
        "periodSeconds": period,
        # The ping's own wait, plus starting Python and importing the app on a busy node.
        "timeoutSeconds": args.probe_timeout_seconds + 20,
        "failureThreshold": failures,
    }


def worker_env(args: WorkerPoolArgs) -> list[dict[str, Any]]:
    """The broker from the team Secret, then the environment every workload pod gets."""
    return [
        secret_env(BROKER_ENV, REDIS_URL_KEY, args.redis_secret),
        *env_list(pod.workload_env(args, {})),
    ]


def pod_labels(args: WorkerPoolArgs) -> dict[str, str]:
    return pod.pod_labels(
        args, workload_labels(args.team, args.name, WORKER_COMPONENT, WORKLOAD_TYPE_WORKER)
    )


def deployment_spec(args: WorkerPoolArgs) -> dict[str, Any]:
    selector = selector_labels(args.name, WORKER_COMPONENT)
    volumes, mounts = pod.split_volumes([pod.tmp_volume(args.tmp_size)])
    worker = pod.workload_container(
        args, WORKER_CONTAINER, ports=[], env=worker_env(args), mounts=mounts
    )
    worker.pop("args", None)  # the worker's options are part of its command
    worker["command"] = worker_command(args)
    # Startup: up to ten periods to import the app and reach the broker.
    worker["startupProbe"] = _probe(args, 10, args.probe_period_seconds)
    worker["readinessProbe"] = _probe(args, 2, args.probe_period_seconds)
    # Each ping starts a Python process: liveness asks half as often as readiness.
    worker["livenessProbe"] = _probe(args, args.liveness_failures, 2 * args.probe_period_seconds)
    spec: dict[str, Any] = {
        "selector": {"matchLabels": selector},
        "revisionHistoryLimit": 5,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": MAX_SURGE},
        },
        "template": {
            "metadata": {"labels": pod_labels(args)},
            "spec": pod.workload_pod_spec(args, [worker], volumes),
        },
    }
    if args.autoscaling is None:
        spec["replicas"] = args.replicas
    return spec


def network_policy_spec(args: WorkerPoolArgs) -> dict[str, Any]:
    """No ingress: a worker takes its work from the broker. Egress: DNS, the team Redis, and
    the workload's external ranges (object storage)."""
    return {
        "podSelector": pod_selector(selector_labels(args.name, WORKER_COMPONENT)),
        # Ingress isolated, no rule: nothing may connect (an empty list the provider drops).
        "policyTypes": ["Ingress", "Egress"],
        "egress": [dns_egress(), *pod.redis_egress(args), *cidr_egress_rules(args.egress)],
    }


def trigger_authentication_spec(args: WorkerPoolArgs) -> dict[str, Any]:
    """KEDA reads the Redis password from the team Secret; it never appears in the stack."""
    return {
        "secretTargetRef": [
            {"parameter": "password", "name": args.redis_secret, "key": REDIS_PASSWORD_KEY}
        ]
    }


def scaled_object_spec(args: WorkerPoolArgs, namespace: str) -> dict[str, Any]:
    """One ``redis`` list trigger per queue: the HPA follows the queue that needs most pods."""
    scaling = args.autoscaling
    if scaling is None:
        raise ValueError(f"WorkerPool {args.name}: no autoscaling, no ScaledObject")
    address = f"{service_dns_name(args.redis_service, namespace)}:{REDIS_PORT}"
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": args.name},
        "minReplicaCount": scaling.min_replicas,
        "maxReplicaCount": scaling.max_replicas,
        "pollingInterval": scaling.polling_interval_seconds,
        "cooldownPeriod": scaling.cooldown_seconds,
        "triggers": [
            {
                "type": "redis",
                "name": f"{QUEUE_TRIGGER_PREFIX}{queue}",
                "metadata": {
                    "address": address,
                    "listName": queue,
                    "listLength": str(scaling.tasks_per_replica),
                    "databaseIndex": "0",
                },
                "authenticationRef": {"name": args.trigger_authentication_name},
            }
            for queue in args.consumed_queues
        ],
    }


class WorkerPool(pulumi.ComponentResource):
    """Deployment, NetworkPolicy, and (autoscaling) ScaledObject and TriggerAuthentication."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        deployment_name: str
        queues: tuple[str, ...]

    def __init__(
        self, name: str, args: WorkerPoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:workloads:WorkerPool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = workload_labels(args.team, args.name, WORKER_COMPONENT, WORKLOAD_TYPE_WORKER)
        timeouts = pulumi.CustomTimeouts(create=args.rollout_timeout, update=args.rollout_timeout)

        def meta(object_name: str, object_labels: Mapping[str, str]) -> dict[str, Any]:
            return {"name": object_name, "namespace": args.namespace, "labels": dict(object_labels)}

        network_policy = kube.NetworkPolicy(
            f"{name}-network",
            metadata=meta(f"{args.name}-network", labels),
            spec=network_policy_spec(args),
            opts=child,
        )
        deployment = kube.Deployment(
            f"{name}-deployment",
            metadata=meta(args.name, pod.queued_labels(labels, args)),
            spec=deployment_spec(args),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[network_policy], custom_timeouts=timeouts
            ),
        )
        if args.autoscaling is not None:
            keda = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
            auth = k8s.apiextensions.CustomResource(
                f"{name}-trigger-auth",
                api_version=KEDA_API_VERSION,
                kind="TriggerAuthentication",
                metadata=meta(args.trigger_authentication_name, labels),
                spec=trigger_authentication_spec(args),
                opts=keda,
            )
            k8s.apiextensions.CustomResource(
                f"{name}-scaled-object",
                api_version=KEDA_API_VERSION,
                kind="ScaledObject",
                metadata=meta(args.name, labels),
                spec=pulumi.Output.from_input(args.namespace).apply(
                    lambda namespace: scaled_object_spec(args, namespace)
                ),
                opts=pulumi.ResourceOptions.merge(
                    keda, pulumi.ResourceOptions(depends_on=[deployment, auth])
                ),
            )
        self.deployment_name = args.name
        self.queues = args.consumed_queues
        self.register_outputs({"deploymentName": self.deployment_name, "queues": self.queues})
