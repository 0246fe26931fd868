"""Kueue: GPU queueing with quotas per team, borrowing of idle GPUs and preemption.

- ``Kueue``: the controller (Helm chart, ``kueue-system``), one ``ResourceFlavor`` per GPU node
  pool and one ``WorkloadPriorityClass`` per PriorityClass.
- ``TeamQueue``: a team's ``ClusterQueue`` (nominal quota per pool flavour, a cohort shared with
  the other teams, borrowing/lending limits, preemption) and its ``LocalQueue``.

API ``kueue.x-k8s.io/v1beta2``: the cohort field is ``spec.cohortName`` (``spec.cohort`` in
v1beta1, which Kueue 0.20 stops serving).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes import _utilities as k8s_utilities

from .charts import KUEUE, Chart, ChartImage, chart_image_values, merge_values
from .constants import (
    CLUSTER_QUEUE_PREFIX,
    DEFAULT_CLUSTER_QUEUE_PREFIX,
    DEFAULT_QUEUE_FLAVOR,
    GPU_CAPACITY_ANNOTATION,
    GPU_RESOURCE_ANNOTATION,
    KUEUE_API_VERSION,
    KUEUE_CHART_VERSION,
    KUEUE_DEFAULT_LOCAL_QUEUE,
    KUEUE_NAMESPACE,
    KUEUE_RELEASE,
    NAMESPACE_NAME_LABEL,
    NODE_POOL_LABEL,
    QUOTA_OVERCOMMIT_ANNOTATION,
    TEAM_LABEL,
    TEAM_LOCAL_QUEUE_NAME,
)
from .frozen import frozen
from .labels import platform_labels, team_labels
from .network_policies import kueue_policies
from .platform_chart import ChartInstall, PlatformChartArgs
from .scheduling_contract import SchedulingContract
from .yaml_text import dump_yaml

COMPUTE_RESOURCES: tuple[str, str] = ("cpu", "memory")

KUEUE_FRAMEWORKS: tuple[str, ...] = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/mpijob",
    "kubeflow.org/pytorchjob",
    "trainer.kubeflow.org/trainjob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
"""Job kinds Kueue manages when they carry a queue name; each one the pinned chart's webhooks
and RBAC cover."""

CHART_IMAGES: tuple[ChartImage, ...] = (
    ChartImage(
        ("controllerManager", "manager", "image"), "registry.k8s.io/kueue/kueue", "repository"
    ),
    ChartImage(
        ("kueueViz", "backend", "image"), "registry.k8s.io/kueue/kueueviz-backend", "repository"
    ),
    ChartImage(
        ("kueueViz", "frontend", "image"), "registry.k8s.io/kueue/kueueviz-frontend", "repository"
    ),
)
"""Every image the Kueue chart can deploy (its values.yaml), for a registry mirror."""


class KubernetesObject(pulumi.CustomResource):
    """A custom object with top-level fields besides ``spec``.

    Why: ``apiextensions.CustomResource`` accepts only ``metadata`` and ``spec``, but a
    WorkloadPriorityClass carries ``value`` and ``description`` at the top level.
    """

    def __init__(
        self,
        name: str,
        api_version: str,
        kind: str,
        fields: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(version=k8s_utilities.get_version())
        )
        props = {"apiVersion": api_version, "kind": kind, **dict(fields)}
        super().__init__(f"kubernetes:{api_version}:{kind}", name, props, opts)


def cluster_queue_name(team: str) -> str:
    """The ClusterQueue of a team; derived here and nowhere else."""
    return f"{CLUSTER_QUEUE_PREFIX}{team}"


ELASTIC_JOBS_GATE = "ElasticJobsViaWorkloadSlices"
"""Kueue's feature gate (alpha, off by default) for jobs that grow and shrink while admitted:
a RayCluster of a namespace Kueue manages may use the Ray autoscaler only with it on."""


def manager_config(fair_sharing: bool, elastic_jobs: bool = False) -> dict[str, Any]:
    """Kueue's controller Configuration (the chart's default, plus fair sharing, plus elastic
    jobs for autoscaled Ray clusters)."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "clientConnection": {"qps": 50, "burst": 100},
        # Nothing in a team namespace runs past Kueue: what names no queue gets the namespace's
        # "default" LocalQueue (LocalQueue defaulting; DefaultQueue), and whatever still has
        # none is held, not run. GPU work must name the GPU queue (the tenant guardrails).
        "manageJobsWithoutQueueName": True,
        # Kueue's webhooks (failurePolicy Fail) see team namespaces only: no platform chart's
        # Deployment or hook Job may depend on Kueue being up (the chart makes this the
        # webhooks' namespaceSelector).
        "managedJobsNamespaceSelector": {
            "matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}]
        },
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
    }
    if fair_sharing:
        config["fairSharing"] = {
            "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
        }
    if elastic_jobs:
        config["featureGates"] = {ELASTIC_JOBS_GATE: True}
    return config


@frozen
class FlavorSpec:
    """A ResourceFlavor mirroring one GPU node pool."""

    contract: SchedulingContract
    capacity: int
    """Most units of the pool's GPU resource (max nodes x units per node)."""
    overcommit: str = "1"
    """Factor by which teams' nominal quotas may exceed ``capacity``."""


@frozen
class WorkloadPrioritySpec:
    """One Kueue WorkloadPriorityClass: its name, value and description."""

    name: str
    value: int
    description: str = ""


@frozen
class KueueArgs(PlatformChartArgs):
    """Inputs of the Kueue component."""

    chart: Chart = KUEUE
    namespace: str = KUEUE_NAMESPACE
    flavors: Sequence[FlavorSpec] = ()
    priority_classes: Sequence[WorkloadPrioritySpec] = ()
    """Mirrors of the cluster's PriorityClasses (same names and values)."""
    fair_sharing: bool = True
    """Preemption-based fair sharing between the cohort's ClusterQueues (by weight)."""
    elastic_jobs: bool = False
    """Admit jobs that resize while running (autoscaled Ray clusters), slice by slice."""
    service_monitor: bool = False
    """Let the chart create Kueue's ServiceMonitor (needs the Prometheus operator CRDs)."""


KUEUE_IMAGE_TAG = f"v{KUEUE_CHART_VERSION}"
"""The controller's image tag: chart and controller are one release."""


def chart_values(args: KueueArgs) -> dict[str, Any]:
    """Helm values of the Kueue chart (keys as in its values.yaml).

    The images are named here, not left to the chart: the chart as tagged in Kueue's source
    (the one a mirror built from it holds) points at a staging registry and a branch tag, which
    Kueue's release packaging rewrites; naming them makes every source install the same
    images."""
    values: dict[str, Any] = {
        "enablePrometheus": args.service_monitor,
        "managerConfig": {
            "controllerManagerConfigYaml": dump_yaml(
                manager_config(args.fair_sharing, args.elastic_jobs)
            )
        },
    }
    for image in CHART_IMAGES:
        block: dict[str, Any] = {
            "repository": image.default,
            "tag": KUEUE_IMAGE_TAG,
            "pullPolicy": "IfNotPresent",
        }
        for key in reversed(image.path):
            block = {key: block}
        values = merge_values(values, block)
    return merge_values(values, chart_image_values(CHART_IMAGES, args.registry_mirror))


def flavor_manifest(spec: FlavorSpec) -> dict[str, Any]:
    """ResourceFlavor metadata and spec for one pool (without apiVersion/kind)."""
    contract = spec.contract
    return {
        "metadata": {
            "name": contract.pool,
            "labels": platform_labels({NODE_POOL_LABEL: contract.pool}),
            "annotations": {
                GPU_CAPACITY_ANNOTATION: str(spec.capacity),
                GPU_RESOURCE_ANNOTATION: contract.gpu_resource,
                QUOTA_OVERCOMMIT_ANNOTATION: spec.overcommit,
            },
        },
        "spec": {
            "nodeLabels": dict(contract.node_selector),
            "nodeTaints": [taint.manifest() for taint in contract.taints],
            "tolerations": contract.tolerations,
        },
    }


class Kueue(pulumi.ComponentResource):
    """The Kueue controller, the GPU flavours and the workload priority classes."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace_name: str
        flavor_names: list[str]

    def __init__(
        self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:queueing:Kueue", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        install = ChartInstall(self, name, args, kueue_policies)
        # Awaited: Kueue's webhooks validate every queue object below.
        release = install.release(KUEUE_RELEASE, chart_values(args))
        after_release = pulumi.ResourceOptions.merge(
            child, pulumi.ResourceOptions(depends_on=[release])
        )
        for spec in args.flavors:
            manifest = flavor_manifest(spec)
            k8s.apiextensions.CustomResource(
                f"{name}-flavor-{spec.contract.pool}",
                api_version=KUEUE_API_VERSION,
                kind="ResourceFlavor",
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=after_release,
            )
        k8s.apiextensions.CustomResource(
            f"{name}-flavor-{DEFAULT_QUEUE_FLAVOR}",
            api_version=KUEUE_API_VERSION,
            kind="ResourceFlavor",
            metadata={"name": DEFAULT_QUEUE_FLAVOR, "labels": platform_labels()},
            # No node labels, no tolerations: it admits without steering (default queues).
            spec={},
            opts=after_release,
        )
        for priority in args.priority_classes:
            KubernetesObject(
                f"{name}-priority-{priority.name}",
                KUEUE_API_VERSION,
                "WorkloadPriorityClass",
                {
                    "metadata": {"name": priority.name, "labels": platform_labels()},
                    "value": priority.value,
                    "description": priority.description,
                },
                opts=after_release,
            )
        self.namespace_name = args.namespace
        self.flavor_names = [spec.contract.pool for spec in args.flavors]
        self.register_outputs({"namespace": self.namespace_name, "flavors": self.flavor_names})


@frozen
class QuotaLimits:
    """Quota of one resource in one flavour (Kubernetes quantities)."""

    nominal: str
    borrowing_limit: str | None = None
    """Most the team may borrow from the cohort beyond ``nominal``; None: no limit."""
    lending_limit: str | None = None
    """Most of ``nominal`` other teams may borrow while idle; None: all of it."""

    def manifest(self, name: str) -> dict[str, str]:
        entry = {"name": name, "nominalQuota": self.nominal}
        if self.borrowing_limit is not None:
            entry["borrowingLimit"] = self.borrowing_limit
        if self.lending_limit is not None:
            entry["lendingLimit"] = self.lending_limit
        return entry


@frozen
class FlavorQuota:
    """A team's quota in one pool flavour: cpu, memory and the pool's GPU resource."""

    flavor: str
    resources: Mapping[str, QuotaLimits]
    """Resource name → limits. Covered resources the map lacks get a nominal quota of 0."""


@frozen
class TeamQueueArgs:
    """Inputs of a TeamQueue."""

    team: str
    namespace: str
    cohort: str
    """Cohort the ClusterQueue joins; teams in one cohort borrow each other's idle quota."""
    flavors: Sequence[FlavorQuota]
    """In preference order: Kueue tries the first flavour with room first."""
    fair_sharing_weight: str = "1"
    queueing_strategy: str = "BestEffortFIFO"
    reclaim_within_cohort: str = "Any"
    """Preempt borrowers in the cohort to get nominal quota back."""
    within_cluster_queue: str = "LowerPriority"
    """Preempt the team's own lower-priority work for higher-priority work."""
    borrow_within_cohort: str = "Never"
    local_queue: str = TEAM_LOCAL_QUEUE_NAME
    labels: Mapping[str, str] = field(default_factory=dict)


_NONE = QuotaLimits("0", borrowing_limit="0")
"""A covered resource the flavour's pool does not offer: no quota, no borrowing."""


def covered_resources(flavors: Sequence[FlavorQuota]) -> list[str]:
    """cpu, memory, then every GPU resource in first-seen order."""
    names = list(COMPUTE_RESOURCES)
    for flavor in flavors:
        names.extend(r for r in flavor.resources if r not in names)
    return names


def cluster_queue_spec(args: TeamQueueArgs) -> dict[str, Any]:
    """ClusterQueue spec (v1beta2) for a team."""
    covered = covered_resources(args.flavors)
    return {
        "cohortName": args.cohort,
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: args.namespace}},
        "queueingStrategy": args.queueing_strategy,
        "fairSharing": {"weight": args.fair_sharing_weight},
        "preemption": {
            "reclaimWithinCohort": args.reclaim_within_cohort,
            "withinClusterQueue": args.within_cluster_queue,
            "borrowWithinCohort": {"policy": args.borrow_within_cohort},
        },
        "resourceGroups": [
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": flavor.flavor,
                        "resources": [
                            flavor.resources.get(name, _NONE).manifest(name) for name in covered
                        ],
                    }
                    for flavor in args.flavors
                ],
            }
        ],
    }


class TeamQueue(pulumi.ComponentResource):
    """A team's ClusterQueue in the shared cohort and the LocalQueue its jobs name."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        cluster_queue_name: str
        local_queue_name: str
        local_queue: k8s.apiextensions.CustomResource
        """The LocalQueue: registered only after this component's dependencies, so depending on
        it orders a workload after them too."""

    def __init__(
        self, name: str, args: TeamQueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:queueing:TeamQueue", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = team_labels(args.team, dict(args.labels))
        cq_name = cluster_queue_name(args.team)
        cluster_queue = k8s.apiextensions.CustomResource(
            f"{name}-cluster-queue",
            api_version=KUEUE_API_VERSION,
            kind="ClusterQueue",
            metadata={"name": cq_name, "labels": labels},
            spec=cluster_queue_spec(args),
            opts=child,
        )
        self.local_queue = k8s.apiextensions.CustomResource(
            f"{name}-local-queue",
            api_version=KUEUE_API_VERSION,
            kind="LocalQueue",
            metadata={"name": args.local_queue, "namespace": args.namespace, "labels": labels},
            spec={"clusterQueue": cq_name},
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[cluster_queue])
            ),
        )
        self.cluster_queue_name = cq_name
        self.local_queue_name = args.local_queue
        self.register_outputs(
            {"clusterQueue": self.cluster_queue_name, "localQueue": self.local_queue_name}
        )


@frozen
class DefaultQueueArgs:
    """Inputs of a DefaultQueue: the team's namespace quota for cpu and memory."""

    team: str
    namespace: str
    cpu: str
    memory: str


def default_cluster_queue_name(team: str) -> str:
    """The ClusterQueue behind a team's ``default`` LocalQueue; derived here and nowhere else."""
    return f"{DEFAULT_CLUSTER_QUEUE_PREFIX}{team}"


def default_cluster_queue_spec(args: DefaultQueueArgs) -> dict[str, Any]:
    """As much cpu and memory as the namespace quota, on the flavour that steers nothing: Kueue
    admits CPU-only work as the ResourceQuota would, and nothing that requests a GPU (the queue
    covers none)."""
    return {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: args.namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": list(COMPUTE_RESOURCES),
                "flavors": [
                    {
                        "name": DEFAULT_QUEUE_FLAVOR,
                        "resources": [
                            {"name": "cpu", "nominalQuota": args.cpu},
                            {"name": "memory", "nominalQuota": args.memory},
                        ],
                    }
                ],
            }
        ],
    }


class DefaultQueue(pulumi.ComponentResource):
    """A team's ``default`` LocalQueue, which Kueue gives everything that names no queue.

    Why: with ``manageJobsWithoutQueueName`` a Job, pod, Deployment or StatefulSet of a team
    namespace that names no queue would be held forever; this queue admits it at once within the
    team's cpu and memory quota (its ClusterQueue joins no cohort and borrows nothing)."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        local_queue: k8s.apiextensions.CustomResource

    def __init__(
        self, name: str, args: DefaultQueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:queueing:DefaultQueue", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        labels = team_labels(args.team)
        cq_name = default_cluster_queue_name(args.team)
        cluster_queue = k8s.apiextensions.CustomResource(
            f"{name}-cluster-queue",
            api_version=KUEUE_API_VERSION,
            kind="ClusterQueue",
            metadata={"name": cq_name, "labels": labels},
            spec=default_cluster_queue_spec(args),
            opts=child,
        )
        self.local_queue = k8s.apiextensions.CustomResource(
            f"{name}-local-queue",
            api_version=KUEUE_API_VERSION,
            kind="LocalQueue",
            metadata={
                "name": KUEUE_DEFAULT_LOCAL_QUEUE,
                "namespace": args.namespace,
                "labels": labels,
            },
            spec={"clusterQueue": cq_name},
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[cluster_queue])
            ),
        )
        self.register_outputs({"clusterQueue": cq_name, "localQueue": KUEUE_DEFAULT_LOCAL_QUEUE})
