"""Hand-written manifests, one valid and one invalid per CRD schema in the shared catalog.

Each invalid example lists the exact error paths it must produce, with a fragment of each
message, so a change in routing, strictness or path formatting shows up as a failure.
Factories return fresh dicts: tests may mutate them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Manifest = dict[str, Any]

TEAM = "aiplatform.io/team"
NODE_POOL = "aiplatform.io/node-pool"


@dataclass(frozen=True)
class Invalid:
    """A manifest and the errors it must produce: ``(path, message fragment)``, sorted by path."""

    build: Callable[[], Manifest]
    errors: tuple[tuple[str, str], ...]


# --- Built-in kinds ------------------------------------------------------------------------------


def deployment() -> Manifest:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm-server", "namespace": "research", "labels": {TEAM: "research"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "llm-server"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "llm-server", TEAM: "research"}},
                "spec": {
                    "securityContext": {
                        "runAsNonRoot": True,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "tolerations": [
                        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "containers": [
                        {
                            "name": "server",
                            "image": "registry.example.com/llm-server:1.0",
                            "ports": [{"name": "http", "containerPort": 8080}],
                            "resources": {
                                "limits": {"cpu": "4", "memory": "32Gi", "nvidia.com/gpu": 1},
                                "requests": {"cpu": 2, "memory": "16Gi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}},
                        }
                    ],
                },
            },
        },
    }


def container(manifest: Manifest) -> dict[str, Any]:
    """The first container of a Deployment, for tests that break one field."""
    first: dict[str, Any] = manifest["spec"]["template"]["spec"]["containers"][0]
    return first


def service() -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "llm-server", "namespace": "research"},
        "spec": {
            "selector": {"app.kubernetes.io/name": "llm-server"},
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
        },
    }


def namespace() -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "research", "labels": {TEAM: "research"}},
    }


def unknown_kind() -> Manifest:
    """A custom resource of a group no catalog has."""
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "tune", "namespace": "research"},
        "spec": {"size": 1},
    }


# --- Custom resources: valid -------------------------------------------------------------------


def node_pool() -> Manifest:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "gpu-a100", "labels": {NODE_POOL: "gpu-a100"}},
        "spec": {
            "template": {
                "metadata": {"labels": {NODE_POOL: "gpu-a100"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "gpu",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["p4d"],
                        },
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                    ],
                    "taints": [
                        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
                    ],
                    "expireAfter": "720h",
                },
            },
            "limits": {"cpu": "1000", "nvidia.com/gpu": 64},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": "10m",
                "budgets": [{"nodes": "10%"}],
            },
        },
    }


def ec2_node_class() -> Manifest:
    discovery = {"karpenter.sh/discovery": "dev-cluster"}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "gpu"},
        "spec": {
            "role": "KarpenterNodeRole-dev-cluster",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": discovery}],
            "securityGroupSelectorTerms": [{"tags": discovery}],
        },
    }


def cluster_queue() -> Manifest:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "research"},
        "spec": {
            "cohortName": "platform",
            "namespaceSelector": {"matchLabels": {TEAM: "research"}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "a100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": 96},
                                {"name": "memory", "nominalQuota": "1Ti"},
                                {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 8},
                            ],
                        }
                    ],
                }
            ],
        },
    }


def local_queue() -> Manifest:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "default", "namespace": "research"},
        "spec": {"clusterQueue": "research"},
    }


def resource_flavor() -> Manifest:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "a100"},
        "spec": {
            "nodeLabels": {NODE_POOL: "gpu-a100"},
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
    }


def workload_priority_class() -> Manifest:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": "production"},
        "value": 1000,
        "description": "Inference and deadline-bound training.",
    }


def cohort() -> Manifest:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Cohort",
        "metadata": {"name": "platform"},
        "spec": {"fairSharing": {"weight": "1"}},
    }


def topology() -> Manifest:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {
            "levels": [
                {"nodeLabel": "topology.kubernetes.io/zone"},
                {"nodeLabel": "kubernetes.io/hostname"},
            ]
        },
    }


def prometheus_rule() -> Manifest:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "gpu-alerts", "namespace": "monitoring"},
        "spec": {
            "groups": [
                {
                    "name": "gpu",
                    "interval": "1m",
                    "partial_response_strategy": "Warn",  # Go's (?i): case-insensitive
                    "rules": [
                        {
                            "alert": "GpuXidErrors",
                            "expr": "increase(DCGM_FI_DEV_XID_ERRORS[5m]) > 0",
                            "for": "5m",
                            "labels": {"severity": "warning"},
                            "annotations": {"summary": "XID errors on {{ $labels.Hostname }}"},
                        },
                        {"record": "team:gpu_allocated:sum", "expr": "sum(kube_gpu) by (team)"},
                    ],
                }
            ]
        },
    }


def service_monitor() -> Manifest:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "dcgm-exporter", "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}},
            "namespaceSelector": {"matchNames": ["gpu-operator"]},
            "endpoints": [{"port": "metrics", "interval": "30s", "scheme": "http"}],
        },
    }


def pod_monitor() -> Manifest:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": "trainers", "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"aiplatform.io/workload-type": "training"}},
            "namespaceSelector": {"any": True},
            "podMetricsEndpoints": [{"port": "metrics", "interval": "15s"}],
        },
    }


def cluster_policy() -> Manifest:
    return {
        "apiVersion": "nvidia.com/v1",
        "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy"},
        "spec": {
            "operator": {"defaultRuntime": "containerd"},
            "daemonsets": {"priorityClassName": "system-node-critical"},
            "driver": {"enabled": True},
            "toolkit": {"enabled": True},
            "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": True},
            "dcgmExporter": {"enabled": True},
            "gfd": {"enabled": True},
            "nodeStatusExporter": {"enabled": False},
        },
    }


def scaled_object() -> Manifest:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "llm-server", "namespace": "research"},
        "spec": {
            "scaleTargetRef": {"name": "llm-server"},
            "minReplicaCount": 1,
            "maxReplicaCount": 4,
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": "http://prometheus.monitoring:9090",
                        "query": "sum(rate(requests_total[1m]))",
                        "threshold": "10",
                    },
                }
            ],
        },
    }


def node_feature_rule() -> Manifest:
    return {
        "apiVersion": "nfd.k8s-sigs.io/v1alpha1",
        "kind": "NodeFeatureRule",
        "metadata": {"name": "nvidia-gpu"},
        "spec": {
            "rules": [
                {
                    "name": "nvidia-gpu",
                    "labels": {"aiplatform.io/gpu": "true"},
                    "matchFeatures": [
                        {
                            "feature": "pci.device",
                            "matchExpressions": {"vendor": {"op": "In", "value": ["10de"]}},
                        }
                    ],
                }
            ]
        },
    }


def _ray_args() -> dict[str, Any]:
    from components.scheduling_contract import SchedulingContract, Taint
    from components.workloads.common import ComputeResources

    contract = SchedulingContract(
        pool="lab-a100",
        product="NVIDIA-A100-SXM4-80GB",
        capacity_type="on-demand",
        gpu_resource="nvidia.com/gpu",
        gpus_per_node=4,
        resources_per_node=4,
        node_selector={NODE_POOL: "lab-a100"},
        taints=(Taint("nvidia.com/gpu", "present"),),
    )
    return {
        "team": "research",
        "namespace": "research",
        "name": "ray-lab",
        "image": "rayproject/ray:2.49.2-py312-gpu",
        "resources": ComputeResources("8", "64Gi"),
        "gpus": 1,
        "scheduling": contract,
        "queue_name": "gpu-queue",
        "gcs_fault_tolerance": True,
    }


def ray_cluster() -> Manifest:
    """As ``components.workloads.ray`` renders it: autoscaled, queued, GCS on the team Redis."""
    from components.workloads.ray import RayClusterArgs, ray_cluster_spec

    args = RayClusterArgs(**_ray_args(), min_workers=1, max_workers=2)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray-lab", "namespace": "research"},
        "spec": ray_cluster_spec(args, "research"),
    }


def ray_job() -> Manifest:
    from components.workloads.ray import RayJobArgs, ray_job_spec

    args = RayJobArgs(
        **_ray_args(),
        min_workers=2,
        max_workers=2,
        entrypoint="python sweep.py --num-workers=2",
        runtime_env={"env_vars": {"WANDB_MODE": "offline"}},
    )
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "ray-sweep", "namespace": "research"},
        "spec": ray_job_spec(args, "research"),
    }


VALID_CUSTOM: dict[str, Callable[[], Manifest]] = {
    "NodePool": node_pool,
    "EC2NodeClass": ec2_node_class,
    "ClusterQueue": cluster_queue,
    "LocalQueue": local_queue,
    "ResourceFlavor": resource_flavor,
    "WorkloadPriorityClass": workload_priority_class,
    "Cohort": cohort,
    "Topology": topology,
    "PrometheusRule": prometheus_rule,
    "ServiceMonitor": service_monitor,
    "PodMonitor": pod_monitor,
    "ClusterPolicy": cluster_policy,
    "ScaledObject": scaled_object,
    "NodeFeatureRule": node_feature_rule,
    "RayCluster": ray_cluster,
    "RayJob": ray_job,
}
"""Every schema file in the shared catalog, keyed by kind."""


# --- Custom resources: invalid -----------------------------------------------------------------


def _bad_node_pool() -> Manifest:
    m = node_pool()
    m["metadata"]["labels"][TEAM] = 7  # CR metadata is checked as ObjectMeta
    spec = m["spec"]["template"]["spec"]
    spec["requirements"][0]["operator"] = "Has"
    del spec["nodeClassRef"]["group"]
    m["spec"]["disruption"]["consolidateAfter"] = "10 minutes"
    return m


def _bad_ec2_node_class() -> Manifest:
    m = ec2_node_class()
    m["spec"]["amiSelectorTerms"] = []
    del m["spec"]["subnetSelectorTerms"]
    return m


def _bad_cluster_queue() -> Manifest:
    m = cluster_queue()
    m["spec"]["cohort"] = m["spec"].pop("cohortName")  # the v1beta1 spelling
    resources = m["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    resources[0]["nominalQuota"] = "lots"
    del resources[1]["nominalQuota"]
    return m


def _bad_local_queue() -> Manifest:
    m = local_queue()
    m["spec"]["clusterQueue"] = "Research_Queue"
    m["spec"]["stopPolicy"] = "Pause"
    return m


def _bad_resource_flavor() -> Manifest:
    m = resource_flavor()
    m["spec"]["nodeLabels"][NODE_POOL] = 1
    del m["spec"]["nodeTaints"][0]["key"]
    return m


def _bad_workload_priority_class() -> Manifest:
    m = workload_priority_class()
    m["spec"] = {"value": m.pop("value")}  # value sits at the top level, not under spec
    return m


def _bad_cohort() -> Manifest:
    m = cohort()
    m["spec"]["fairSharing"]["weight"] = "heavy"
    return m


def _bad_topology() -> Manifest:
    m = topology()
    m["spec"]["levels"] = []
    return m


def _bad_prometheus_rule() -> Manifest:
    m = prometheus_rule()
    group = m["spec"]["groups"][0]
    group["partial_response_strategy"] = "ignore"
    del group["rules"][0]["expr"]
    group["rules"][0]["for"] = "5 minutes"
    return m


def _bad_service_monitor() -> Manifest:
    m = service_monitor()
    del m["spec"]["selector"]
    endpoint = m["spec"]["endpoints"][0]
    endpoint["port"] = 9400
    endpoint["interval"] = "30 seconds"
    return m


def _bad_pod_monitor() -> Manifest:
    m = pod_monitor()
    m["spec"]["podMetricsEndpoints"][0]["path"] = ["/metrics"]
    del m["spec"]["selector"]
    return m


def _bad_cluster_policy() -> Manifest:
    m = cluster_policy()
    m["spec"]["driver"]["enabled"] = "yes"
    del m["spec"]["toolkit"]
    return m


def _bad_scaled_object() -> Manifest:
    m = scaled_object()
    m["spec"]["minReplicaCount"] = "1"
    trigger = m["spec"]["triggers"][0]
    del trigger["type"]
    trigger["metadata"]["threshold"] = 10
    return m


def _bad_node_feature_rule() -> Manifest:
    m = node_feature_rule()
    rule = m["spec"]["rules"][0]
    del rule["name"]
    rule["matchFeatures"][0]["matchExpressions"]["vendor"]["op"] = "Equals"
    return m


def _bad_ray_cluster() -> Manifest:
    m = ray_cluster()
    group = m["spec"]["workerGroupSpecs"][0]
    del group["maxReplicas"]
    group["rayStartParams"]["num-gpus"] = 1  # start params are strings
    m["spec"]["autoscalerOptions"]["upscalingMode"] = "Fast"
    return m


def _bad_ray_job() -> Manifest:
    m = ray_job()
    m["spec"]["shutdownAfterJobFinishes"] = "yes"
    m["spec"]["backoffLimit"] = "3"
    return m


MISSING = "required field is missing"
UNKNOWN = "unknown field (not in the schema)"
INVALID_CUSTOM: dict[str, Invalid] = {
    "NodePool": Invalid(
        _bad_node_pool,
        (
            ('metadata.labels["aiplatform.io/team"]', "7 is not of type 'string', 'null'"),
            ("spec.disruption.consolidateAfter", "'10 minutes' does not match"),
            ("spec.template.spec.nodeClassRef.group", MISSING),
            ("spec.template.spec.requirements[0].operator", "'Has' is not one of"),
        ),
    ),
    "EC2NodeClass": Invalid(
        _bad_ec2_node_class,
        (
            ("spec.amiSelectorTerms", "[] should be non-empty"),
            ("spec.subnetSelectorTerms", MISSING),
        ),
    ),
    "ClusterQueue": Invalid(
        _bad_cluster_queue,
        (
            ("spec.cohort", UNKNOWN),
            (
                "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota",
                "'lots' does not match",
            ),
            ("spec.resourceGroups[0].flavors[0].resources[1].nominalQuota", MISSING),
        ),
    ),
    "LocalQueue": Invalid(
        _bad_local_queue,
        (
            ("spec.clusterQueue", "'Research_Queue' does not match"),
            ("spec.stopPolicy", "'Pause' is not one of ['None', 'Hold', 'HoldAndDrain']"),
        ),
    ),
    "ResourceFlavor": Invalid(
        _bad_resource_flavor,
        (
            ('spec.nodeLabels["aiplatform.io/node-pool"]', "1 is not of type 'string'"),
            ("spec.nodeTaints[0].key", MISSING),
        ),
    ),
    "WorkloadPriorityClass": Invalid(
        _bad_workload_priority_class,
        (("spec", UNKNOWN), ("value", MISSING)),
    ),
    "Cohort": Invalid(
        _bad_cohort,
        (("spec.fairSharing.weight", "'heavy' does not match"),),
    ),
    "Topology": Invalid(
        _bad_topology,
        (("spec.levels", "[] should be non-empty"),),
    ),
    "PrometheusRule": Invalid(
        _bad_prometheus_rule,
        (
            # The message quotes the catalog's Go pattern, not its Python translation.
            ("spec.groups[0].partial_response_strategy", "'ignore' does not match '^(?i)(abort"),
            ("spec.groups[0].rules[0].expr", MISSING),
            ("spec.groups[0].rules[0].for", "'5 minutes' does not match"),
        ),
    ),
    "ServiceMonitor": Invalid(
        _bad_service_monitor,
        (
            ("spec.endpoints[0].interval", "'30 seconds' does not match"),
            ("spec.endpoints[0].port", "9400 is not of type 'string'"),
            ("spec.selector", MISSING),
        ),
    ),
    "PodMonitor": Invalid(
        _bad_pod_monitor,
        (
            ("spec.podMetricsEndpoints[0].path", "['/metrics'] is not of type 'string'"),
            ("spec.selector", MISSING),
        ),
    ),
    "ClusterPolicy": Invalid(
        _bad_cluster_policy,
        (
            ("spec.driver.enabled", "'yes' is not of type 'boolean'"),
            ("spec.toolkit", MISSING),
        ),
    ),
    "ScaledObject": Invalid(
        _bad_scaled_object,
        (
            ("spec.minReplicaCount", "'1' is not of type 'integer'"),
            ("spec.triggers[0].metadata.threshold", "10 is not of type 'string'"),
            ("spec.triggers[0].type", MISSING),
        ),
    ),
    "RayCluster": Invalid(
        _bad_ray_cluster,
        (
            ("spec.autoscalerOptions.upscalingMode", "'Fast' is not one of"),
            ("spec.workerGroupSpecs[0].maxReplicas", MISSING),
            ("spec.workerGroupSpecs[0].rayStartParams.num-gpus", "1 is not of type 'string'"),
        ),
    ),
    "RayJob": Invalid(
        _bad_ray_job,
        (
            ("spec.backoffLimit", "'3' is not of type 'integer'"),
            ("spec.shutdownAfterJobFinishes", "'yes' is not of type 'boolean'"),
        ),
    ),
    "NodeFeatureRule": Invalid(
        _bad_node_feature_rule,
        (
            ("spec.rules[0].matchFeatures[0].matchExpressions.vendor.op", "'Equals' is not one of"),
            ("spec.rules[0].name", MISSING),
        ),
    ),
}
