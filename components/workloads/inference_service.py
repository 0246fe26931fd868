"""InferenceService: a model server that scales, rolls out without losing capacity, and is
reachable only from where it should be.

Renders a Deployment, a ClusterIP Service (serving and ``metrics`` ports), an ``autoscaling/v2``
HorizontalPodAutoscaler, a PodDisruptionBudget, a NetworkPolicy, optionally a ServiceMonitor, and
per stateful dependency (a Redis for job status, a model cache) a StatefulSet with a volume claim
template behind a headless Service.

Why some choices (docs/workloads.md has the long form):

- ``spec.replicas`` is left out: the HPA owns it. Applying a replica count would fight the HPA
  (and, with server-side apply, conflict with its field manager) on every update.
- ``maxUnavailable: 0`` / ``maxSurge >= 1``: a rollout adds a new replica before it removes an
  old one, so serving capacity never drops below what the HPA asked for.
- Topology spread across nodes (``DoNotSchedule`` by default) and zones (``ScheduleAnyway``: a
  single-zone GPU pool must still schedule), counted per revision (``pod-template-hash``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, ClassVar, Final

import pulumi
import pulumi_kubernetes as k8s

from .. import kube
from ..constants import (
    HOSTNAME_LABEL,
    METRICS_PORT_NAME,
    MONITORING_NAMESPACE,
    WORKLOAD_TYPE_INFERENCE,
    ZONE_LABEL,
)
from ..frozen import frozen
from ..network_rules import dns_egress, namespaces_peer, pods_peer, tcp
from ..predicates import dependency_env, env_var_prefix, inference_conflicts
from . import workload_pod as pod
from .common import (
    MODEL_MOUNT_PATH,
    TMP_MOUNT_PATH,
    ComputeResources,
    check_name,
    cidr_egress_rules,
    container_resources,
    container_security_context,
    env_list,
    pod_security_context,
    selector_labels,
    workload_labels,
)

SERVER_CONTAINER: Final = "server"
SERVER_COMPONENT: Final = "server"
HTTP_PORT_NAME: Final = "http"
MAX_DEPENDENCY_NAME_LENGTH: Final = 11
"""``<service>-<dependency>`` names a StatefulSet, whose pods' revision-hash label value
(``<name>-<10 chars>``) must fit 63 characters: 40 + 1 + 11 = 52."""
RESERVED_ENV: Final = pod.POD_RESERVED_ENV | {"PORT", "METRICS_PORT", "MODEL_DIR"}
"""Set by the component (``<DEPENDENCY>_HOST``/``_PORT`` too); user env may not."""


@frozen
class CustomMetric:
    """A per-pod metric served by a metrics adapter (e.g. the Prometheus adapter)."""

    name: str
    """Metric name as the custom metrics API serves it, e.g. ``vllm_num_requests_waiting``."""
    average_value: str
    """Target per pod (a quantity): the HPA adds replicas while the average is above it."""


@frozen
class Autoscaling:
    """HorizontalPodAutoscaler bounds and targets (seed values: 2..5 replicas at 80% of the CPU
    and of the memory requested)."""

    min_replicas: int = 2
    """Two so one replica survives a node drain (prod policy floor)."""
    max_replicas: int = 5
    cpu_utilization: int | None = 80
    """Average CPU utilisation target in percent of requests; None: no CPU metric."""
    memory_utilization: int | None = 80
    """Average memory utilisation target in percent of requests; None: no memory metric."""
    custom_metric: CustomMetric | None = None
    """A better signal than CPU for GPU servers (queue depth, tokens in flight)."""

    def __post_init__(self) -> None:
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError(
                f"Autoscaling: need 1 <= min_replicas ({self.min_replicas}) <= max_replicas "
                f"({self.max_replicas})"
            )
        if (
            self.cpu_utilization is None
            and self.memory_utilization is None
            and self.custom_metric is None
        ):
            raise ValueError(
                "Autoscaling: set cpu_utilization, memory_utilization or a custom_metric"
            )


@frozen
class Probes:
    """HTTP probes on the serving port."""

    readiness_path: str = "/health"
    """Traffic only once the model is loaded."""
    liveness_path: str = "/health"
    """Restart a wedged server."""
    startup_timeout_seconds: int = 600
    """How long loading the model may take before liveness starts counting."""
    period_seconds: int = 10

    @property
    def startup_failure_threshold(self) -> int:
        return max(1, -(-self.startup_timeout_seconds // self.period_seconds))


@frozen
class StatefulDependency:
    """A small stateful service next to the server (Redis for job status, a model cache)."""

    name: str
    """Short name (at most 11 characters); objects are ``<service>-<name>``."""
    image: str
    port: int
    storage_class: str
    """Class of the per-replica volume (volume claim template)."""
    size: str
    resources: ComputeResources = field(
        default_factory=lambda: ComputeResources(cpu="250m", memory="512Mi")
    )
    mount_path: str = "/data"
    command: Sequence[str] = ()
    args: Sequence[str] = ()
    replicas: int = 1
    access_modes: tuple[str, ...] = ("ReadWriteOnce",)
    run_as_user: int = 999
    """Redis' and most database images' non-root user."""

    def __post_init__(self) -> None:
        check_name(self.name, "dependency name", MAX_DEPENDENCY_NAME_LENGTH)
        if self.replicas < 1:
            raise ValueError(f"dependency {self.name}: replicas must be >= 1")


@frozen
class InferenceServiceArgs(pod.WorkloadPodArgs):
    """Inputs of an InferenceService: the pod fields of ``WorkloadPodArgs`` (a pod is a replica;
    a queued service's pods go through Kueue's deployment integration) and the service's own.
    Defaults are the platform's seed values."""

    KIND: ClassVar[str] = "InferenceService"
    POD_NOUN: ClassVar[str] = "replica"

    port: int = 8080
    """Serving port (``PORT``); the Service exposes it as ``http``."""
    metrics_port: int = 9090
    """Prometheus port (``METRICS_PORT``), named ``metrics``; only the monitoring namespace may
    reach it."""
    metrics_path: str = "/metrics"
    probes: Probes = field(default_factory=Probes)
    autoscaling: Autoscaling = field(default_factory=Autoscaling)
    max_surge: int = 1
    """Extra replicas during a rollout (``maxUnavailable`` is always 0)."""
    pdb_max_unavailable: int | None = 1
    pdb_min_available: int | None = None
    """Set instead of ``pdb_max_unavailable``; must stay below ``min_replicas``."""
    model_claim: str | None = None
    """PVC with the model files, mounted read-only at ``/models`` (``MODEL_DIR``)."""
    allow_from_namespaces: Sequence[str] = ()
    """Namespaces (the ingress gateway's) whose pods may call the serving port."""
    monitoring_namespace: str = MONITORING_NAMESPACE
    """Namespace whose pods may scrape the metrics port."""
    service_monitor: bool = False
    """Create a ServiceMonitor (needs the Prometheus operator's CRDs)."""
    scrape_interval: str = "30s"
    node_spread: str = "DoNotSchedule"
    """``whenUnsatisfiable`` of the spread across nodes; zones always ``ScheduleAnyway``."""
    dependencies: Sequence[StatefulDependency] = ()
    retain_data: bool = False
    """Dependencies keep their volumes when scaled down or deleted (prod)."""
    rollout_timeout: str = "20m"
    """How long ``pulumi up`` waits for a rollout (model loading included)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        who = self.who
        if self.max_surge < 1:
            raise ValueError(f"{who}: max_surge must be >= 1 (maxUnavailable is 0)")
        if (self.pdb_max_unavailable is None) == (self.pdb_min_available is None):
            raise ValueError(f"{who}: set exactly one of pdb_max_unavailable, pdb_min_available")
        conflicts = inference_conflicts(
            port=self.port,
            metrics_port=self.metrics_port,
            min_replicas=self.autoscaling.min_replicas,
            max_replicas=self.autoscaling.max_replicas,
            has_metric=True,  # Autoscaling checks its own
            min_available=self.pdb_min_available,
            max_unavailable=self.pdb_max_unavailable,
        )
        if "ports" in conflicts:
            raise ValueError(f"{who}: port and metrics_port must differ")
        if "budget-blocks-drains" in conflicts:
            raise ValueError(f"{who}: pdb_min_available must be below min_replicas")
        if self.node_spread not in ("DoNotSchedule", "ScheduleAnyway"):
            raise ValueError(f"{who}: node_spread {self.node_spread!r}")
        names = [d.name for d in self.dependencies]
        if len(set(names)) != len(names):
            raise ValueError(f"{who}: dependency names must be unique")

    def reserved_env(self) -> frozenset[str]:
        """The component's names and each dependency's ``<DEPENDENCY>_HOST``/``_PORT``."""
        return RESERVED_ENV | dependency_env(d.name for d in self.dependencies)

    def dependency_service(self, dependency: StatefulDependency) -> str:
        return f"{self.name}-{dependency.name}"


def server_env(args: InferenceServiceArgs) -> list[dict[str, Any]]:
    values = pod.workload_env(
        args, {"PORT": str(args.port), "METRICS_PORT": str(args.metrics_port)}
    )
    if args.model_claim:
        values["MODEL_DIR"] = MODEL_MOUNT_PATH
    for dependency in args.dependencies:
        prefix = env_var_prefix(dependency.name)
        values[f"{prefix}_HOST"] = args.dependency_service(dependency)
        values[f"{prefix}_PORT"] = str(dependency.port)
    return env_list(values)


def _http_probe(path: str, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": HTTP_PORT_NAME},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def spread_constraints(selector: Mapping[str, str], node_spread: str) -> list[dict[str, Any]]:
    """Across nodes and zones, per revision, so a rollout's surge does not skew the spread."""
    return [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": dict(selector)},
            "matchLabelKeys": ["pod-template-hash"],
        }
        for key, when in ((HOSTNAME_LABEL, node_spread), (ZONE_LABEL, "ScheduleAnyway"))
    ]


def deployment_spec(args: InferenceServiceArgs) -> dict[str, Any]:
    selector = selector_labels(args.name, SERVER_COMPONENT)
    labels = workload_labels(args.team, args.name, SERVER_COMPONENT, WORKLOAD_TYPE_INFERENCE)
    pairs = [pod.tmp_volume(args.tmp_size)]
    if args.model_claim:
        pairs.append(pod.claim_volume("model", args.model_claim, MODEL_MOUNT_PATH, read_only=True))
    if args.shm_size:
        pairs.append(pod.shm_volume(args.shm_size))
    volumes, mounts = pod.split_volumes(pairs)
    probes = args.probes
    server = pod.workload_container(
        args,
        SERVER_CONTAINER,
        ports=[
            {"name": HTTP_PORT_NAME, "containerPort": args.port, "protocol": "TCP"},
            {"name": METRICS_PORT_NAME, "containerPort": args.metrics_port, "protocol": "TCP"},
        ],
        env=server_env(args),
        mounts=mounts,
    )
    server["readinessProbe"] = _http_probe(probes.readiness_path, probes.period_seconds, 3)
    server["livenessProbe"] = _http_probe(probes.liveness_path, probes.period_seconds * 2, 3)
    server["startupProbe"] = _http_probe(
        probes.liveness_path, probes.period_seconds, probes.startup_failure_threshold
    )
    return {
        # No replicas: the HPA owns the count.
        "selector": {"matchLabels": selector},
        "revisionHistoryLimit": 5,
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": args.max_surge},
        },
        "template": {
            "metadata": {"labels": pod.pod_labels(args, labels)},
            "spec": {
                **pod.workload_pod_spec(args, [server], volumes),
                "topologySpreadConstraints": spread_constraints(selector, args.node_spread),
            },
        },
    }


def hpa_spec(args: InferenceServiceArgs) -> dict[str, Any]:
    scaling = args.autoscaling
    metrics: list[dict[str, Any]] = [
        {
            "type": "Resource",
            "resource": {
                "name": resource,
                "target": {"type": "Utilization", "averageUtilization": utilization},
            },
        }
        for resource, utilization in (
            ("cpu", scaling.cpu_utilization),
            ("memory", scaling.memory_utilization),
        )
        if utilization is not None
    ]
    if scaling.custom_metric is not None:
        metrics.append(
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": scaling.custom_metric.name},
                    "target": {
                        "type": "AverageValue",
                        "averageValue": scaling.custom_metric.average_value,
                    },
                },
            }
        )
    return {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": args.name},
        "minReplicas": scaling.min_replicas,
        "maxReplicas": scaling.max_replicas,
        "metrics": metrics,
    }


def network_policy_spec(args: InferenceServiceArgs) -> dict[str, Any]:
    """Serving port from the gateway namespaces and the app itself; metrics port from
    monitoring; egress to DNS, the app's own serving port, the dependencies, the team Redis (for
    its clients) and the configured external ranges only."""
    own = pods_peer(selector_labels(args.name, SERVER_COMPONENT))
    callers: list[dict[str, Any]] = [own]
    if args.allow_from_namespaces:
        callers.insert(0, namespaces_peer(args.allow_from_namespaces))
    egress: list[dict[str, Any]] = [dns_egress(), {"to": [own], "ports": [tcp(args.port)]}]
    for dependency in args.dependencies:
        dep_selector = selector_labels(args.dependency_service(dependency), dependency.name)
        egress.append(
            {
                "to": [pods_peer(dep_selector)],
                "ports": [tcp(dependency.port)],
            }
        )
    egress += pod.redis_egress(args)
    egress += cidr_egress_rules(args.egress)
    return {
        **own,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {"from": callers, "ports": [tcp(args.port)]},
            {
                "from": [namespaces_peer([args.monitoring_namespace])],
                "ports": [tcp(args.metrics_port)],
            },
        ],
        "egress": egress,
    }


def dependency_network_policy_spec(
    args: InferenceServiceArgs, dependency: StatefulDependency
) -> dict[str, Any]:
    """The dependency accepts only the server (and its own replicas) and talks only to DNS
    and its own replicas."""
    own = pods_peer(selector_labels(args.dependency_service(dependency), dependency.name))
    server = pods_peer(selector_labels(args.name, SERVER_COMPONENT))
    return {
        **own,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [server], "ports": [tcp(dependency.port)]}, {"from": [own]}],
        "egress": [{"to": [own]}, dns_egress()],
    }


def statefulset_spec(args: InferenceServiceArgs, dependency: StatefulDependency) -> dict[str, Any]:
    """One replica set with a claim per pod; claims are retained when the stack protects data."""
    service = args.dependency_service(dependency)
    selector = selector_labels(service, dependency.name)
    labels = workload_labels(
        args.team, service, dependency.name, WORKLOAD_TYPE_INFERENCE, instance=args.name
    )
    retention = "Retain" if args.retain_data else "Delete"
    container: dict[str, Any] = {
        "name": dependency.name,
        "image": dependency.image,
        "ports": [{"name": "tcp", "containerPort": dependency.port, "protocol": "TCP"}],
        "resources": container_resources(dependency.resources, None, 0),
        "readinessProbe": {"tcpSocket": {"port": "tcp"}, "periodSeconds": 10},
        "livenessProbe": {"tcpSocket": {"port": "tcp"}, "periodSeconds": 20},
        "securityContext": container_security_context(True),
        "volumeMounts": [
            {"name": "data", "mountPath": dependency.mount_path},
            {"name": "tmp", "mountPath": TMP_MOUNT_PATH},
        ],
    }
    if dependency.command:
        container["command"] = list(dependency.command)
    if dependency.args:
        container["args"] = list(dependency.args)
    return {
        "serviceName": service,
        "replicas": dependency.replicas,
        "selector": {"matchLabels": selector},
        "persistentVolumeClaimRetentionPolicy": {
            "whenDeleted": retention,
            "whenScaled": retention,
        },
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "serviceAccountName": args.service_account,
                "automountServiceAccountToken": False,
                "enableServiceLinks": False,
                **({"priorityClassName": args.priority_class} if args.priority_class else {}),
                "securityContext": pod_security_context(
                    dependency.run_as_user, dependency.run_as_user, dependency.run_as_user
                ),
                "containers": [container],
                "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
            },
        },
        "volumeClaimTemplates": [
            {
                "metadata": {"name": "data", "labels": labels},
                "spec": {
                    "accessModes": list(dependency.access_modes),
                    "storageClassName": dependency.storage_class,
                    "resources": {"requests": {"storage": dependency.size}},
                },
            }
        ],
    }


class InferenceService(pulumi.ComponentResource):
    """Deployment, Service, HPA, PDB, NetworkPolicy, ServiceMonitor and stateful dependencies."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        deployment_name: str
        service_name: str
        dependency_services: dict[str, str]

    def __init__(
        self, name: str, args: InferenceServiceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:workloads:InferenceService", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = workload_labels(args.team, args.name, SERVER_COMPONENT, WORKLOAD_TYPE_INFERENCE)
        selector = selector_labels(args.name, SERVER_COMPONENT)
        timeouts = pulumi.CustomTimeouts(create=args.rollout_timeout, update=args.rollout_timeout)

        def meta(object_name: str, object_labels: Mapping[str, str]) -> dict[str, Any]:
            return {"name": object_name, "namespace": args.namespace, "labels": dict(object_labels)}

        dependencies: list[pulumi.Resource] = []
        for dependency in args.dependencies:
            service = args.dependency_service(dependency)
            dep_labels = workload_labels(
                args.team, service, dependency.name, WORKLOAD_TYPE_INFERENCE, instance=args.name
            )
            part = f"{name}-{dependency.name}"
            headless = kube.Service(
                f"{part}-service",
                metadata=meta(service, dep_labels),
                spec={
                    "clusterIP": "None",
                    "selector": selector_labels(service, dependency.name),
                    "ports": [
                        {
                            "name": "tcp",
                            "port": dependency.port,
                            "targetPort": "tcp",
                            "protocol": "TCP",
                        }
                    ],
                },
                opts=child,
            )
            network = kube.NetworkPolicy(
                f"{part}-network",
                metadata=meta(f"{service}-network", dep_labels),
                spec=dependency_network_policy_spec(args, dependency),
                opts=child,
            )
            if dependency.replicas > 1:
                kube.PodDisruptionBudget(
                    f"{part}-pdb",
                    metadata=meta(service, dep_labels),
                    spec={
                        "maxUnavailable": 1,
                        "selector": {"matchLabels": selector_labels(service, dependency.name)},
                    },
                    opts=child,
                )
            dependencies.append(
                kube.StatefulSet(
                    f"{part}-statefulset",
                    metadata=meta(service, dep_labels),
                    spec=statefulset_spec(args, dependency),
                    opts=pulumi.ResourceOptions(
                        parent=self, depends_on=[headless, network], custom_timeouts=timeouts
                    ),
                )
            )

        network_policy = kube.NetworkPolicy(
            f"{name}-network",
            metadata=meta(f"{args.name}-network", labels),
            spec=network_policy_spec(args),
            opts=child,
        )
        deployment_labels = pod.queued_labels(labels, args)
        kube.Deployment(
            f"{name}-deployment",
            metadata=meta(args.name, deployment_labels),
            spec=deployment_spec(args),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*dependencies, network_policy],
                custom_timeouts=timeouts,
            ),
        )
        kube.Service(
            f"{name}-service",
            metadata=meta(args.name, labels),
            spec={
                "type": "ClusterIP",
                "selector": selector,
                "ports": [
                    {
                        "name": HTTP_PORT_NAME,
                        "port": args.port,
                        "targetPort": HTTP_PORT_NAME,
                        "protocol": "TCP",
                    },
                    {
                        "name": METRICS_PORT_NAME,
                        "port": args.metrics_port,
                        "targetPort": METRICS_PORT_NAME,
                        "protocol": "TCP",
                    },
                ],
            },
            opts=pulumi.ResourceOptions(parent=self, custom_timeouts=timeouts),
        )
        kube.HorizontalPodAutoscaler(
            f"{name}-hpa",
            metadata=meta(args.name, labels),
            spec=hpa_spec(args),
            opts=child,
        )
        budget: dict[str, Any] = {"selector": {"matchLabels": selector}}
        if args.pdb_min_available is not None:
            budget["minAvailable"] = args.pdb_min_available
        else:
            budget["maxUnavailable"] = args.pdb_max_unavailable
        kube.PodDisruptionBudget(
            f"{name}-pdb", metadata=meta(args.name, labels), spec=budget, opts=child
        )
        if args.service_monitor:
            k8s.apiextensions.CustomResource(
                f"{name}-servicemonitor",
                api_version="monitoring.coreos.com/v1",
                kind="ServiceMonitor",
                metadata=meta(args.name, labels),
                spec={
                    "selector": {"matchLabels": selector},
                    "endpoints": [
                        {
                            "port": METRICS_PORT_NAME,
                            "path": args.metrics_path,
                            "interval": args.scrape_interval,
                        }
                    ],
                },
                opts=child,
            )

        self.deployment_name = args.name
        self.service_name = args.name
        self.dependency_services = {d.name: args.dependency_service(d) for d in args.dependencies}
        self.register_outputs(
            {
                "deploymentName": self.deployment_name,
                "serviceName": self.service_name,
                "dependencyServices": self.dependency_services,
            }
        )
