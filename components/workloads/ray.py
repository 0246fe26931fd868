"""RayCluster and RayJob: a team's Ray head and GPU workers on a pool, queued, restricted and
isolated. docs/workloads.md has the long form.

- Pods are built on :class:`~.workload_pod.WorkloadPodArgs`: the workers are the workload's pods
  (its resources and GPUs, the pool's selector and tolerations, ``num-gpus`` from the pool's GPU
  resource); the head is the same pod with the head's resources, no GPUs and no placement (it
  runs no tasks: ``num-cpus``/``num-gpus`` 0).
- Every Ray port is pinned in ``rayStartParams`` (:data:`RAY_PORTS`), so the NetworkPolicy can
  open exactly those between the cluster's own head and workers; nothing else reaches them but
  the operator and a RayJob's submitter (the head's dashboard port) and Prometheus (metrics).
- The Ray autoscaler (a sidecar of the head) sizes the worker group between its minimum and
  maximum. Kueue manages every RayCluster of a team namespace, and admits an autoscaled one as an
  elastic job (``kueue.x-k8s.io/elastic-job``, Kueue's ElasticJobsViaWorkloadSlices gate): the
  head with the minimum workers first, each scale-up as a slice of its own. The sidecar gets the
  API token in its own container only; the Ray container, where user code runs, has none.
- GCS fault tolerance keeps the head's state in the team's Redis (``components.team_redis``):
  address and password from the team Redis Secret, never from config.
- A RayJob embeds the same cluster, submits its entrypoint from a submitter pod (restricted like
  the rest), deletes the cluster when the run ends and retries a failed run ``backoffLimit``
  times on a new cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Final

import pulumi
import pulumi_kubernetes as k8s

from .. import kube
from ..constants import (
    ANYWHERE_CIDRS,
    APP_COMPONENT_LABEL,
    APP_NAME_LABEL,
    RAY_API_VERSION,
    RAY_DASHBOARD_PORT,
    RAY_METRICS_PORT,
    SKIP_AWAIT_ANNOTATION,
    WORKLOAD_TYPE_TRAINING,
)
from ..frozen import frozen
from ..network_policies import api_server_egress
from ..network_rules import (
    dns_egress,
    namespaces_peer,
    pod_selector,
    pods_peer,
    ports,
    tcp,
)
from ..team_redis import (
    REDIS_PASSWORD_KEY,
    REDIS_PORT,
    REDIS_SECRET,
    REDIS_SERVICE,
    redis_client_labels,
)
from ..yaml_text import dump_yaml
from .common import (
    ComputeResources,
    cidr_egress_rules,
    container_resources,
    container_security_context,
    env_list,
    selector_labels,
    service_dns_name,
    workload_labels,
)
from .workload_pod import (
    POD_RESERVED_ENV,
    WorkloadPodArgs,
    queued_labels,
    shm_volume,
    split_volumes,
    tmp_volume,
    workload_container,
    workload_env,
    workload_pod_spec,
)

RAY_CONTAINER: Final = "ray"
"""The Ray container: first in every pod, as KubeRay requires."""
SUBMITTER_CONTAINER: Final = "submitter"
HEAD_COMPONENT: Final = "ray-head"
WORKER_COMPONENT: Final = "ray-worker"
SUBMITTER_COMPONENT: Final = "ray-submitter"
WORKER_GROUP: Final = "workers"
"""The worker group's name (Kueue reserves ``head``)."""
ELASTIC_JOB: Final = "kueue.x-k8s.io/elastic-job"
"""Kueue's annotation and scheduling gate of an elastic job (workload slices)."""
SERVICE_ACCOUNT_MOUNT: Final = "/var/run/secrets/kubernetes.io/serviceaccount"

RAY_PORTS: Final[dict[str, int]] = {
    "port": 6379,
    "dashboard-port": RAY_DASHBOARD_PORT,
    "ray-client-server-port": 10001,
    "object-manager-port": 8076,
    "node-manager-port": 8077,
    "dashboard-agent-grpc-port": 8078,
    "dashboard-agent-listen-port": 52365,
    "runtime-env-agent-port": 8079,
    "metrics-export-port": RAY_METRICS_PORT,
}
"""Every port a Ray node listens on, by its ``ray start`` option (the head's GCS, dashboard and
client server; every node's object manager, raylet, agents and metrics), pinned instead of
Ray's random picks so a NetworkPolicy can name them."""
HEAD_ONLY_PORTS: Final = frozenset({"port", "dashboard-port", "ray-client-server-port"})
WORKER_PORTS: Final = (10002, 10999)
"""``min-worker-port`` and ``max-worker-port``: one per Ray worker process of a node."""

AUTOSCALER_RESOURCES: Final = ComputeResources(cpu="500m", memory="512Mi")
"""The Ray autoscaler sidecar of a head (KubeRay's default, stated so quotas can count it)."""
DEFAULT_HEAD_RESOURCES: Final = ComputeResources(cpu="2", memory="8Gi")
SUBMITTER_RESOURCES: Final = ComputeResources(cpu="500m", memory="512Mi")
"""A RayJob's submitter pod: ``ray job submit`` and following the logs."""

KUBERAY_ENV: Final = frozenset(
    {
        "RAY_ADDRESS",
        "RAY_IP",
        "FQ_RAY_IP",
        "RAY_PORT",
        "RAY_CLUSTER_NAME",
        "RAY_CLOUD_INSTANCE_ID",
        "RAY_NODE_TYPE_NAME",
        "RAY_USAGE_STATS_KUBERAY_IN_USE",
        "RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE",
        "RAY_REDIS_ADDRESS",
        "REDIS_PASSWORD",
        "RAY_external_storage_namespace",
        "KUBERAY_GEN_RAY_START_CMD",
    }
)
"""What KubeRay sets in Ray containers (GCS fault tolerance included)."""
RESERVED_ENV: Final = KUBERAY_ENV | POD_RESERVED_ENV
"""Environment variables KubeRay, the component or the team ConfigMap set; user env may not."""


@frozen
class RayClusterArgs(WorkloadPodArgs):
    """Inputs of a RayCluster. The base's ``resources`` and ``gpus`` are one worker's; ``image``
    is the Ray image of every pod (head, workers, submitter)."""

    KIND: ClassVar[str] = "RayCluster"
    POD_NOUN: ClassVar[str] = "worker"

    head_resources: ComputeResources = DEFAULT_HEAD_RESOURCES
    """The head's Ray container (the autoscaler sidecar has :data:`AUTOSCALER_RESOURCES`)."""
    min_workers: int = 1
    max_workers: int = 1
    """Above ``min_workers`` turns the Ray autoscaler on."""
    idle_timeout_seconds: int = 60
    """How long a worker above the minimum idles before the autoscaler removes it."""
    shm_size: str | None = "4Gi"
    """``/dev/shm`` of every Ray pod: the object store."""
    workload_type: str = WORKLOAD_TYPE_TRAINING
    gcs_fault_tolerance: bool = False
    """Keep the GCS in the team's Redis (``components.team_redis``)."""
    api_server_cidrs: Sequence[str] = ANYWHERE_CIDRS
    """Where the API server is: the autoscaler sidecar calls it (NetworkPolicies cannot select
    it by label)."""
    operator_namespace: str = "ray-system"
    """Where the KubeRay operator runs: it calls the head's dashboard port."""
    monitoring_namespace: str | None = "monitoring"
    """Where Prometheus runs (it scrapes Ray's metrics port); None: nothing scrapes."""
    kueue_managed: bool = True
    """Kueue manages the team namespace's Ray objects (queueing on): an autoscaled cluster is
    then an elastic job; without Kueue its pods must not wait for Kueue's scheduling gate."""
    depends_on: Sequence[pulumi.Resource] = ()
    """What every object waits for (the team's queue, the operator and its CRDs)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.min_workers <= self.max_workers:
            raise ValueError(f"{self.who}: need 0 <= min_workers <= max_workers")

    def reserved_env(self) -> frozenset[str]:
        return RESERVED_ENV

    @property
    def autoscaling(self) -> bool:
        return self.max_workers > self.min_workers

    @property
    def elastic(self) -> bool:
        """Kueue admits the cluster slice by slice (its autoscaler grows and shrinks it)."""
        return self.autoscaling and self.kueue_managed

    @property
    def network_policy_name(self) -> str:
        return f"{self.name}-ray-network"


@frozen
class RayJobArgs(RayClusterArgs):
    """Inputs of a RayJob: its own cluster (the base, with ``min_workers == max_workers``, no
    autoscaler) and the run."""

    KIND: ClassVar[str] = "RayJob"

    entrypoint: str = ""
    """What ``ray job submit`` runs; required."""
    runtime_env: Mapping[str, Any] = field(default_factory=dict)
    """Ray runtime environment, passed as ``runtimeEnvYAML``."""
    backoff_limit: int = 0
    """Retries of a failed run, each on a new cluster."""
    active_deadline_seconds: int = 259200
    ttl_seconds_after_finished: int = 86400
    submitter_resources: ComputeResources = SUBMITTER_RESOURCES

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.entrypoint.strip():
            raise ValueError(f"{self.who}: an entrypoint is required")
        if self.autoscaling:
            raise ValueError(f"{self.who}: a Ray job's workers are fixed (min == max)")


def head_start_params(args: RayClusterArgs) -> dict[str, str]:
    """``ray start`` options of the head: every port pinned, no tasks and no GPUs on it."""
    return {
        "dashboard-host": "0.0.0.0",
        "num-cpus": "0",
        "num-gpus": "0",
        **{option: str(port) for option, port in RAY_PORTS.items()},
        "min-worker-port": str(WORKER_PORTS[0]),
        "max-worker-port": str(WORKER_PORTS[1]),
    }


def worker_start_params(args: RayClusterArgs) -> dict[str, str]:
    """``ray start`` options of a worker: its ports pinned, ``num-gpus`` the pool's units (KubeRay
    would not count a MIG slice as a GPU)."""
    params = {
        option: str(port) for option, port in RAY_PORTS.items() if option not in HEAD_ONLY_PORTS
    }
    params["min-worker-port"] = str(WORKER_PORTS[0])
    params["max-worker-port"] = str(WORKER_PORTS[1])
    params["num-gpus"] = str(args.gpus)
    return params


def _ports(params: Mapping[str, str]) -> list[dict[str, Any]]:
    names = {
        "port": "gcs-server",
        "dashboard-port": "dashboard",
        "ray-client-server-port": "client",
        "metrics-export-port": "metrics",
    }
    return [
        {"name": names[option], "containerPort": int(params[option]), "protocol": "TCP"}
        for option in names
        if option in params
    ]


def _pod_template(
    args: RayClusterArgs, component: str, params: Mapping[str, str], *, head: bool
) -> dict[str, Any]:
    pod_args = replace(args, resources=args.head_resources, gpus=0) if head else args
    volumes, mounts = split_volumes(
        [tmp_volume(args.tmp_size), *([shm_volume(args.shm_size)] if args.shm_size else [])]
    )
    container = workload_container(
        pod_args,
        RAY_CONTAINER,
        ports=_ports(params),
        env=env_list(workload_env(pod_args, {})),
        mounts=mounts,
    )
    spec = workload_pod_spec(pod_args, [container], volumes)
    if head and args.autoscaling:
        # KubeRay gives the autoscaler a service account of the cluster's own (RBAC on its
        # pods and RayCluster): the head names none, and only the sidecar gets the token.
        del spec["serviceAccountName"]
        spec["volumes"].append(_token_volume())
    if args.elastic:
        spec["schedulingGates"] = [{"name": ELASTIC_JOB}]
    labels = {
        **workload_labels(args.team, args.name, component, args.workload_type),
        **(redis_client_labels() if args.gcs_fault_tolerance else {}),
    }
    return {"metadata": {"labels": labels}, "spec": spec}


def _token_volume() -> dict[str, Any]:
    """The API credentials of the pod's service account, for the autoscaler container alone."""
    return {
        "name": "autoscaler-token",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ]
        },
    }


def autoscaler_options(args: RayClusterArgs) -> dict[str, Any]:
    """The sidecar: restricted like every container, its own resources, the token mount."""
    return {
        "upscalingMode": "Default",
        "idleTimeoutSeconds": args.idle_timeout_seconds,
        "resources": container_resources(AUTOSCALER_RESOURCES, None, 0),
        "securityContext": container_security_context(args.read_only_root_filesystem),
        "env": env_list({"HOME": "/tmp/ray", "TMPDIR": "/tmp/ray"}),
        "volumeMounts": [
            {"name": "autoscaler-token", "mountPath": SERVICE_ACCOUNT_MOUNT, "readOnly": True}
        ],
    }


def gcs_fault_tolerance(args: RayClusterArgs, namespace: str) -> dict[str, Any]:
    """The team Redis as the GCS store: its address, and the password from its Secret."""
    return {
        "redisAddress": f"{service_dns_name(REDIS_SERVICE, namespace)}:{REDIS_PORT}",
        "redisPassword": {
            "valueFrom": {"secretKeyRef": {"name": REDIS_SECRET, "key": REDIS_PASSWORD_KEY}}
        },
        "externalStorageNamespace": args.name,
    }


def ray_cluster_spec(args: RayClusterArgs, namespace: str) -> dict[str, Any]:
    """``RayCluster.spec`` (also a RayJob's ``rayClusterSpec``): head, one GPU worker group,
    the autoscaler, GCS fault tolerance; suspended when queued (Kueue admits it)."""
    worker_params = worker_start_params(args)
    spec: dict[str, Any] = {
        "enableInTreeAutoscaling": args.autoscaling,
        "headGroupSpec": {
            "rayStartParams": head_start_params(args),
            "template": _pod_template(args, HEAD_COMPONENT, head_start_params(args), head=True),
        },
        "workerGroupSpecs": [
            {
                "groupName": WORKER_GROUP,
                "replicas": args.min_workers,
                "minReplicas": args.min_workers,
                "maxReplicas": args.max_workers,
                "rayStartParams": worker_params,
                "template": _pod_template(args, WORKER_COMPONENT, worker_params, head=False),
            }
        ],
    }
    if args.autoscaling:
        spec["autoscalerOptions"] = autoscaler_options(args)
    if args.gcs_fault_tolerance:
        spec["gcsFaultToleranceOptions"] = gcs_fault_tolerance(args, namespace)
    return spec


def ray_job_spec(args: RayJobArgs, namespace: str) -> dict[str, Any]:
    """``RayJob.spec``: the run, its own cluster, cleanup and a failure budget; the submitter
    pod restricted and isolated like the cluster's."""
    submitter_args = replace(args, resources=args.submitter_resources, gpus=0)
    container = workload_container(
        submitter_args,
        SUBMITTER_CONTAINER,
        ports=[],
        env=env_list(workload_env(submitter_args, {})),
        mounts=[split_volumes([tmp_volume(args.tmp_size)])[1][0]],
    )
    pod_spec = workload_pod_spec(
        submitter_args, [container], split_volumes([tmp_volume(args.tmp_size)])[0]
    )
    pod_spec["restartPolicy"] = "Never"
    spec: dict[str, Any] = {
        "entrypoint": args.entrypoint,
        "submissionMode": "K8sJobMode",
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": args.ttl_seconds_after_finished,
        "backoffLimit": args.backoff_limit,
        "activeDeadlineSeconds": args.active_deadline_seconds,
        "rayClusterSpec": ray_cluster_spec(args, namespace),
        "submitterPodTemplate": {
            "metadata": {
                "labels": workload_labels(
                    args.team, args.name, SUBMITTER_COMPONENT, args.workload_type
                )
            },
            "spec": pod_spec,
        },
    }
    if args.runtime_env:
        spec["runtimeEnvYAML"] = dump_yaml(dict(args.runtime_env))
    if args.queue_name:
        spec["suspend"] = True
    return spec


def ray_ports() -> list[dict[str, Any]]:
    """Every pinned Ray port and the worker port range."""
    return [*ports(RAY_PORTS.values()), {**tcp(WORKER_PORTS[0]), "endPort": WORKER_PORTS[1]}]


def network_policy_spec(args: RayClusterArgs) -> dict[str, Any]:
    """Ray's ports between the cluster's own head and workers only; the head's dashboard from
    the operator (and a RayJob's submitter); metrics from Prometheus; egress to the cluster
    itself, DNS, the configured external ranges, the API server for the autoscaler and the
    team Redis for GCS fault tolerance."""
    nodes = {
        "podSelector": {
            "matchLabels": {APP_NAME_LABEL: args.name},
            "matchExpressions": [
                {
                    "key": APP_COMPONENT_LABEL,
                    "operator": "In",
                    "values": [HEAD_COMPONENT, WORKER_COMPONENT],
                }
            ],
        }
    }
    dashboard_callers: list[dict[str, Any]] = [namespaces_peer([args.operator_namespace])]
    if isinstance(args, RayJobArgs):
        dashboard_callers.append(pods_peer(selector_labels(args.name, SUBMITTER_COMPONENT)))
    ingress: list[dict[str, Any]] = [
        {"from": [nodes], "ports": ray_ports()},
        {"from": dashboard_callers, "ports": [tcp(RAY_DASHBOARD_PORT)]},
    ]
    if args.monitoring_namespace is not None:
        ingress.append(
            {
                "from": [namespaces_peer([args.monitoring_namespace])],
                "ports": [tcp(RAY_METRICS_PORT)],
            }
        )
    egress: list[dict[str, Any]] = [{"to": [nodes], "ports": ray_ports()}, dns_egress()]
    if args.autoscaling:
        egress.append(api_server_egress(args.api_server_cidrs))
    if args.gcs_fault_tolerance:
        egress.append(
            {"to": [pods_peer({APP_NAME_LABEL: REDIS_SERVICE})], "ports": [tcp(REDIS_PORT)]}
        )
    egress += cidr_egress_rules(args.egress)
    spec: dict[str, Any] = {
        **nodes,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": ingress,
        "egress": egress,
    }
    return spec


def submitter_network_policy_spec(args: RayJobArgs) -> dict[str, Any]:
    """The submitter reaches the head's dashboard and DNS; nothing reaches it."""
    head = pods_peer(selector_labels(args.name, HEAD_COMPONENT))
    return {
        "podSelector": pod_selector(selector_labels(args.name, SUBMITTER_COMPONENT)),
        "policyTypes": ["Ingress", "Egress"],  # no ingress rule: nothing reaches it
        "egress": [{"to": [head], "ports": [tcp(RAY_DASHBOARD_PORT)]}, dns_egress()],
    }


QUEUE_OWNED_FIELDS: tuple[str, ...] = ("spec.suspend",)
"""What Kueue owns on a queued Ray object once it exists (it unsuspends and suspends it)."""
AUTOSCALER_OWNED_FIELDS: tuple[str, ...] = ("spec.workerGroupSpecs[0].replicas",)
"""What the Ray autoscaler owns on an autoscaled RayCluster: the worker count."""


def ray_options(args: RayClusterArgs, spec_root: str = "spec") -> dict[str, Any]:
    """A changed spec is a new object (the name is fixed: the old one goes first); what Kueue
    and the autoscaler own is theirs."""
    ignored = list(QUEUE_OWNED_FIELDS) if args.queue_name else []
    if args.autoscaling:
        ignored += AUTOSCALER_OWNED_FIELDS
    return {
        "replace_on_changes": [spec_root],
        "delete_before_replace": True,
        "ignore_changes": ignored,
    }


class RayCluster(pulumi.ComponentResource):
    """A team's RayCluster (or, as ``RayJob``, a Ray job with a cluster of its own), its
    NetworkPolicies, on the pool's contract and the team's queue."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        object_name: str
        head_service: str

    def __init__(
        self, name: str, args: RayClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(f"aiplatform:workloads:{type(self).__name__}", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        labels = workload_labels(args.team, args.name, HEAD_COMPONENT, args.workload_type)
        namespace = str(args.namespace)
        policies: list[pulumi.Resource] = [
            kube.NetworkPolicy(
                f"{name}-network",
                metadata={
                    "name": args.network_policy_name,
                    "namespace": args.namespace,
                    "labels": labels,
                },
                spec=network_policy_spec(args),
                opts=child,
            )
        ]
        if isinstance(args, RayJobArgs):
            policies.append(
                kube.NetworkPolicy(
                    f"{name}-submitter-network",
                    metadata={
                        "name": f"{args.name}-submitter-network",
                        "namespace": args.namespace,
                        "labels": labels,
                    },
                    spec=submitter_network_policy_spec(args),
                    opts=child,
                )
            )
            kind, spec = "RayJob", ray_job_spec(args, namespace)
        else:
            kind, spec = "RayCluster", ray_cluster_spec(args, namespace)
        annotations = {SKIP_AWAIT_ANNOTATION: "true"}
        if args.elastic:
            annotations[ELASTIC_JOB] = "true"
        if args.queue_name and kind == "RayCluster":
            spec["suspend"] = True
        k8s.apiextensions.CustomResource(
            f"{name}-{kind.lower()}",
            api_version=RAY_API_VERSION,
            kind=kind,
            metadata={
                "name": args.name,
                "namespace": args.namespace,
                "labels": queued_labels(labels, args),
                "annotations": annotations,
            },
            spec=spec,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*args.depends_on, *policies],
                **ray_options(args),
            ),
        )
        self.object_name = args.name
        self.head_service = f"{args.name}-head-svc"
        self.register_outputs({"name": self.object_name, "headService": self.head_service})


class RayJob(RayCluster):
    """A Ray job on a cluster of its own (``RayJobArgs``)."""
