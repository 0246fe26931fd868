"""InferenceService: every option, on the manifests it renders under mocks."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import (
    APP_COMPONENT_LABEL,
    APP_INSTANCE_LABEL,
    APP_NAME_LABEL,
    GPU_RESOURCE,
    KUEUE_QUEUE_LABEL,
    METRICS_PORT_NAME,
    NODE_POOL_LABEL,
    TEAM_ENV_CONFIGMAP,
    TEAM_LABEL,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
    WORKLOAD_TYPE_LABEL,
    ZONE_LABEL,
)
from components.workloads import (
    Autoscaling,
    ComputeResources,
    CustomMetric,
    EgressAllowance,
    InferenceService,
    InferenceServiceArgs,
    Probes,
    StatefulDependency,
)
from tests.workloads.conftest import container, env_of, h100, kinds, only, pod_spec, render

REDIS = StatefulDependency(
    name="redis",
    image="public.ecr.aws/docker/library/redis:7.4-alpine",
    port=6379,
    storage_class="fast",
    size="20Gi",
    args=("--appendonly", "yes"),
)


def service_args(**overrides: Any) -> InferenceServiceArgs:
    base: dict[str, Any] = {
        "team": "search-serving",
        "namespace": "search-serving",
        "name": "llm",
        "image": "ghcr.io/acme-ml/vllm-openai:v0.10.1",
        "resources": ComputeResources(cpu="6", memory="24Gi"),
        "args": ("--model", "/models/m"),
        "gpus": 1,
        "scheduling": h100(),
        "priority_class": "critical",
        "model_claim": "models",
        "allow_from_namespaces": ("ingress-nginx",),
    }
    base.update(overrides)
    return InferenceServiceArgs(**base)


def rendered(args: InferenceServiceArgs):
    return render(lambda: InferenceService("s", args))


@pytest.fixture(scope="module")
def gpu_service():
    return rendered(service_args())


@pytest.fixture(scope="module")
def cpu_service():
    return rendered(
        service_args(
            name="embed",
            gpus=0,
            scheduling=None,
            model_claim=None,
            autoscaling=Autoscaling(min_replicas=3, max_replicas=10, cpu_utilization=70),
            pdb_max_unavailable=None,
            pdb_min_available=2,
            service_monitor=True,
            dependencies=(REDIS,),
            retain_data=True,
            node_spread="ScheduleAnyway",
        )
    )


def test_renders_the_serving_objects(gpu_service, cpu_service):
    assert kinds(gpu_service) == [
        "Deployment",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Service",
    ]
    assert kinds(cpu_service) == [
        "Deployment",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Service",
        "Service",
        "ServiceMonitor",
        "StatefulSet",
    ]


# --- Deployment -----------------------------------------------------------------------------------
def test_replicas_are_left_to_the_autoscaler(gpu_service):
    assert "replicas" not in only(gpu_service, "Deployment").inputs["spec"]


def test_rollouts_never_drop_below_capacity(gpu_service):
    strategy = only(gpu_service, "Deployment").inputs["spec"]["strategy"]
    assert strategy == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    surge = rendered(service_args(max_surge=2))
    assert only(surge, "Deployment").inputs["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 2


def test_probes_on_the_serving_port(gpu_service):
    server = container(only(gpu_service, "Deployment"), "server")
    assert server["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert server["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    startup = server["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == 600
    custom = rendered(
        service_args(
            probes=Probes(
                readiness_path="/ready", liveness_path="/live", startup_timeout_seconds=905
            )
        )
    )
    server = container(only(custom, "Deployment"), "server")
    assert server["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert server["livenessProbe"]["httpGet"]["path"] == "/live"
    assert server["startupProbe"]["failureThreshold"] == 91


def test_spread_across_nodes_and_zones_per_revision(gpu_service, cpu_service):
    constraints = pod_spec(only(gpu_service, "Deployment"))["topologySpreadConstraints"]
    selector = {APP_NAME_LABEL: "llm", APP_COMPONENT_LABEL: "server"}
    assert constraints == [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": selector},
            "matchLabelKeys": ["pod-template-hash"],
        },
        {
            "maxSkew": 1,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": selector},
            "matchLabelKeys": ["pod-template-hash"],
        },
    ]
    relaxed = pod_spec(only(cpu_service, "Deployment"))["topologySpreadConstraints"]
    assert relaxed[0]["whenUnsatisfiable"] == "ScheduleAnyway"


def test_gpus_from_the_contract_and_cpu_only_lands_anywhere(gpu_service, cpu_service):
    deployment = only(gpu_service, "Deployment")
    spec = pod_spec(deployment)
    assert spec["nodeSelector"] == {NODE_POOL_LABEL: "h100-training"}
    assert spec["tolerations"] == h100().tolerations
    resources = container(deployment, "server")["resources"]
    assert resources["requests"][GPU_RESOURCE] == resources["limits"][GPU_RESOURCE] == "1"
    cpu_spec = pod_spec(only(cpu_service, "Deployment"))
    assert "nodeSelector" not in cpu_spec and "tolerations" not in cpu_spec
    cpu_resources = container(only(cpu_service, "Deployment"), "server")["resources"]
    assert GPU_RESOURCE not in cpu_resources["limits"]


def test_model_mounted_read_only_and_writable_tmp(gpu_service, cpu_service):
    deployment = only(gpu_service, "Deployment")
    volumes = {v["name"]: v for v in pod_spec(deployment)["volumes"]}
    assert volumes["model"]["persistentVolumeClaim"] == {"claimName": "models", "readOnly": True}
    mounts = {m["mountPath"]: m for m in container(deployment, "server")["volumeMounts"]}
    assert mounts["/models"]["readOnly"] is True and "/tmp" in mounts
    assert "/dev/shm" not in mounts
    assert env_of(container(deployment, "server"))["MODEL_DIR"] == "/models"
    assert {v["name"] for v in pod_spec(only(cpu_service, "Deployment"))["volumes"]} == {"tmp"}


def test_shared_memory_for_tensor_parallel_servers():
    run = rendered(service_args(shm_size="2Gi"))
    volumes = {v["name"]: v for v in pod_spec(only(run, "Deployment"))["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}


def test_without_a_priority_class_the_clusters_default_applies():
    """No opinion, no field, on the server and on its stateful dependencies alike."""
    dependency = StatefulDependency("redis", "redis:7", 6379, "fast", "1Gi")
    run = rendered(service_args(priority_class=None, dependencies=(dependency,)))
    for kind in ("Deployment", "StatefulSet"):
        assert "priorityClassName" not in pod_spec(only(run, kind))


def test_security_identity_priority_and_environment(gpu_service):
    deployment = only(gpu_service, "Deployment")
    spec = pod_spec(deployment)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    server = container(deployment, "server")
    assert server["securityContext"]["allowPrivilegeEscalation"] is False
    assert server["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert server["securityContext"]["readOnlyRootFilesystem"] is True
    assert spec["serviceAccountName"] == TEAM_WORKLOAD_SERVICE_ACCOUNT
    assert spec["automountServiceAccountToken"] is False
    assert spec["priorityClassName"] == "critical"
    assert server["envFrom"] == [{"configMapRef": {"name": TEAM_ENV_CONFIGMAP}}]
    env = env_of(server)
    assert (env["LOG_LEVEL"], env["PORT"], env["METRICS_PORT"]) == ("info", "8080", "9090")
    assert server["ports"] == [
        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
        {"name": METRICS_PORT_NAME, "containerPort": 9090, "protocol": "TCP"},
    ]


def test_team_labels_and_inference_type_everywhere(gpu_service):
    for resource in gpu_service.kubernetes_objects():
        labels = resource.metadata["labels"]
        assert labels[TEAM_LABEL] == "search-serving", resource.kind
        assert labels[WORKLOAD_TYPE_LABEL] == "inference"
        assert labels[APP_NAME_LABEL] == "llm"
    template = only(gpu_service, "Deployment").inputs["spec"]["template"]["metadata"]["labels"]
    assert template[TEAM_LABEL] == "search-serving"
    assert template[WORKLOAD_TYPE_LABEL] == "inference"


def test_rollouts_may_take_as_long_as_a_model_load(gpu_service):
    deployment = only(gpu_service, "Deployment")
    assert deployment.options["customTimeouts"] == {
        "create": "20m",
        "update": "20m",
        "delete": "",
    }


def test_queue_label_only_when_asked(gpu_service):
    assert KUEUE_QUEUE_LABEL not in only(gpu_service, "Deployment").metadata["labels"]
    queued = rendered(service_args(queue_name="gpu-queue"))
    assert only(queued, "Deployment").metadata["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"


# --- Service, HPA, PDB, ServiceMonitor ------------------------------------------------------------
def test_cluster_ip_service_with_serving_and_metrics_ports(gpu_service):
    service = only(gpu_service, "Service").inputs["spec"]
    assert service["type"] == "ClusterIP"
    assert service["selector"] == {APP_NAME_LABEL: "llm", APP_COMPONENT_LABEL: "server"}
    assert [(p["name"], p["port"], p["targetPort"]) for p in service["ports"]] == [
        ("http", 8080, "http"),
        (METRICS_PORT_NAME, 9090, METRICS_PORT_NAME),
    ]


def test_autoscaler_seed_defaults(gpu_service):
    spec = only(gpu_service, "HorizontalPodAutoscaler").inputs["spec"]
    assert only(gpu_service, "HorizontalPodAutoscaler").inputs["apiVersion"] == "autoscaling/v2"
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm"}
    assert (spec["minReplicas"], spec["maxReplicas"]) == (2, 5)
    # The seed scales on both, 80 % of the requests each (metrics-server serves them).
    assert spec["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": resource,
                "target": {"type": "Utilization", "averageUtilization": 80},
            },
        }
        for resource in ("cpu", "memory")
    ]


def test_autoscaler_custom_metric():
    scaling = Autoscaling(
        min_replicas=2,
        max_replicas=8,
        cpu_utilization=None,
        memory_utilization=None,
        custom_metric=CustomMetric("vllm_num_requests_waiting", "5"),
    )
    spec = only(rendered(service_args(autoscaling=scaling)), "HorizontalPodAutoscaler").inputs[
        "spec"
    ]
    assert spec["metrics"] == [
        {
            "type": "Pods",
            "pods": {
                "metric": {"name": "vllm_num_requests_waiting"},
                "target": {"type": "AverageValue", "averageValue": "5"},
            },
        }
    ]


def test_disruption_budget(gpu_service, cpu_service):
    selector = {"matchLabels": {APP_NAME_LABEL: "llm", APP_COMPONENT_LABEL: "server"}}
    assert only(gpu_service, "PodDisruptionBudget").inputs["spec"] == {
        "selector": selector,
        "maxUnavailable": 1,
    }
    assert only(cpu_service, "PodDisruptionBudget").inputs["spec"]["minAvailable"] == 2


def test_service_monitor_only_when_on(gpu_service, cpu_service):
    assert "ServiceMonitor" not in kinds(gpu_service)
    monitor = only(cpu_service, "ServiceMonitor").inputs
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == "search-serving"
    assert monitor["spec"] == {
        "selector": {"matchLabels": {APP_NAME_LABEL: "embed", APP_COMPONENT_LABEL: "server"}},
        "endpoints": [{"port": METRICS_PORT_NAME, "path": "/metrics", "interval": "30s"}],
    }


# --- Stateful dependencies ------------------------------------------------------------------------
def test_dependency_is_a_statefulset_with_claim_templates(cpu_service):
    statefulset = only(cpu_service, "StatefulSet").inputs
    spec = statefulset["spec"]
    assert statefulset["metadata"]["name"] == "embed-redis"
    assert spec["serviceName"] == "embed-redis" and spec["replicas"] == 1
    assert spec["volumeClaimTemplates"][0]["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "fast",
        "resources": {"requests": {"storage": "20Gi"}},
    }
    assert spec["persistentVolumeClaimRetentionPolicy"] == {
        "whenDeleted": "Retain",
        "whenScaled": "Retain",
    }
    labels = spec["template"]["metadata"]["labels"]
    assert labels[APP_INSTANCE_LABEL] == "embed" and labels[APP_COMPONENT_LABEL] == "redis"
    redis = spec["template"]["spec"]["containers"][0]
    assert redis["readinessProbe"]["tcpSocket"] == {"port": "tcp"}
    assert redis["args"] == ["--appendonly", "yes"]
    assert {m["mountPath"] for m in redis["volumeMounts"]} == {"/data", "/tmp"}
    assert spec["template"]["spec"]["securityContext"]["runAsUser"] == 999


def test_dependency_volumes_go_with_the_stack_unless_data_is_protected():
    run = rendered(service_args(dependencies=(REDIS,)))
    policy = only(run, "StatefulSet").inputs["spec"]["persistentVolumeClaimRetentionPolicy"]
    assert policy == {"whenDeleted": "Delete", "whenScaled": "Delete"}


def test_dependency_headless_service_and_server_environment(cpu_service):
    headless = next(
        r
        for r in cpu_service.kubernetes_objects()
        if r.kind == "Service" and r.metadata["name"] == "embed-redis"
    )
    assert headless.inputs["spec"]["clusterIP"] == "None"
    env = env_of(container(only(cpu_service, "Deployment"), "server"))
    assert (env["REDIS_HOST"], env["REDIS_PORT"]) == ("embed-redis", "6379")
    assert cpu_service.value.dependency_services == {"redis": "embed-redis"}
    deployment = only(cpu_service, "Deployment")
    statefulset = only(cpu_service, "StatefulSet")
    assert statefulset.urn in deployment.options["dependsOn"]


def test_replicated_dependency_gets_a_disruption_budget():
    redis = StatefulDependency(
        name="cache", image=REDIS.image, port=6379, storage_class="fast", size="5Gi", replicas=3
    )
    run = rendered(service_args(dependencies=(redis,)))
    budgets = [r for r in run.kubernetes_objects() if r.kind == "PodDisruptionBudget"]
    assert sorted(b.metadata["name"] for b in budgets) == ["llm", "llm-cache"]


# --- Argument checks ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"scheduling": None}, "GPUs need a pool's SchedulingContract"),
        ({"metrics_port": 8080}, "port and metrics_port must differ"),
        ({"max_surge": 0}, "max_surge must be >= 1"),
        ({"pdb_min_available": 1}, "exactly one of pdb_max_unavailable, pdb_min_available"),
        ({"pdb_max_unavailable": None, "pdb_min_available": 2}, "below min_replicas"),
        ({"node_spread": "Never"}, "node_spread"),
        ({"dependencies": (REDIS, REDIS)}, "dependency names must be unique"),
        ({"env": {"PORT": "1"}}, "'PORT' is set by the component"),
        ({"dependencies": (REDIS,), "env": {"REDIS_HOST": "x"}}, "'REDIS_HOST' is set"),
        ({"name": "llm_chat"}, "DNS-1035"),
    ],
)
def test_bad_arguments(overrides, message):
    with pytest.raises(ValueError, match=message):
        service_args(**overrides)


def test_bad_autoscaling_and_dependency_names():
    with pytest.raises(ValueError, match="min_replicas"):
        Autoscaling(min_replicas=6, max_replicas=5)
    with pytest.raises(ValueError, match="a custom_metric"):
        Autoscaling(cpu_utilization=None, memory_utilization=None)
    # Memory alone is a metric.
    Autoscaling(cpu_utilization=None)
    with pytest.raises(ValueError, match="at most 11 characters"):
        StatefulDependency("model-cache-x", REDIS.image, 1, "fast", "1Gi")
    with pytest.raises(ValueError, match="whole internet"):
        service_args(egress=EgressAllowance(cidrs=("::/0",)))


def test_network_policy_without_gateway_with_custom_monitoring_and_egress():
    args = service_args(
        allow_from_namespaces=(),
        monitoring_namespace="observability",
        egress=EgressAllowance(cidrs=("52.216.0.0/15",)),
    )
    spec = only(rendered(args), "NetworkPolicy").inputs["spec"]
    own = {"podSelector": {"matchLabels": {APP_NAME_LABEL: "llm", APP_COMPONENT_LABEL: "server"}}}
    assert spec["ingress"][0] == {"from": [own], "ports": [{"protocol": "TCP", "port": 8080}]}
    monitoring = spec["ingress"][1]["from"][0]["namespaceSelector"]["matchExpressions"][0]
    assert monitoring["values"] == ["observability"]
    assert spec["ingress"][1]["ports"] == [{"protocol": "TCP", "port": 9090}]
    assert spec["egress"][-1]["to"] == [{"ipBlock": {"cidr": "52.216.0.0/15"}}]


def test_scrape_timeouts_and_scratch_are_configurable():
    run = rendered(
        service_args(
            service_monitor=True,
            metrics_path="/prometheus",
            scrape_interval="15s",
            rollout_timeout="45m",
            tmp_size="16Gi",
            termination_grace_period_seconds=120,
            port=8000,
            metrics_port=8002,
        )
    )
    endpoint = only(run, "ServiceMonitor").inputs["spec"]["endpoints"][0]
    assert (endpoint["path"], endpoint["interval"]) == ("/prometheus", "15s")
    deployment = only(run, "Deployment")
    assert deployment.options["customTimeouts"]["create"] == "45m"
    assert only(run, "Service").options["customTimeouts"]["update"] == "45m"
    spec = pod_spec(deployment)
    assert spec["terminationGracePeriodSeconds"] == 120
    assert {v["name"]: v for v in spec["volumes"]}["tmp"]["emptyDir"]["sizeLimit"] == "16Gi"
    assert [p["containerPort"] for p in container(deployment, "server")["ports"]] == [8000, 8002]
