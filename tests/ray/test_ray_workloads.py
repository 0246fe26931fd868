"""Ray clusters and Ray jobs as the dev stack renders them: the pool's contract on the workers,
the team's queue, restricted pods, Ray's ports pinned and opened between the cluster's own pods
only, metrics scraped, the autoscaler and Kueue's elastic admission, the RayJob's run."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.constants import (
    KUEUE_QUEUE_LABEL,
    NODE_POOL_LABEL,
    RAY_DASHBOARD_PORT,
    RAY_METRICS_PORT,
    TEAM_LOCAL_QUEUE_NAME,
)
from components.kueue import ELASTIC_JOBS_GATE
from components.workloads.common import ComputeResources
from components.workloads.ray import (
    AUTOSCALER_OWNED_FIELDS,
    ELASTIC_JOB,
    RAY_PORTS,
    SERVICE_ACCOUNT_MOUNT,
    WORKER_PORTS,
    RayClusterArgs,
    gcs_fault_tolerance,
)
from tests.harness import run_stack, stack_config
from tools.mockrun import MockRun

RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAY_JOB = "kubernetes:ray.io/v1:RayJob"


@pytest.fixture(scope="module")
def dev_run() -> MockRun[Any]:
    return run_stack("dev")


def _one(run: MockRun[Any], type_token: str) -> Any:
    [found] = run.by_type(type_token)
    return found


def _containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    spec = template["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def _restricted(pod: dict[str, Any], container: dict[str, Any]) -> None:
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["runAsNonRoot"] is True
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}


def test_the_cluster_is_queued_and_its_workers_follow_the_pool_contract(
    dev_run: MockRun[Any],
) -> None:
    cluster = _one(dev_run, RAY_CLUSTER)
    assert cluster.metadata["labels"][KUEUE_QUEUE_LABEL] == TEAM_LOCAL_QUEUE_NAME
    spec = cluster.inputs["spec"]
    assert spec["suspend"] is True
    [group] = spec["workerGroupSpecs"]
    assert (group["minReplicas"], group["maxReplicas"], group["replicas"]) == (1, 2, 1)
    worker = group["template"]["spec"]
    assert worker["nodeSelector"] == {NODE_POOL_LABEL: "lab-a100"}
    assert {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "present",
        "effect": "NoSchedule",
    } in worker["tolerations"]
    [ray] = worker["containers"]
    assert ray["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert ray["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert group["rayStartParams"]["num-gpus"] == "1"
    head = spec["headGroupSpec"]
    assert "nodeSelector" not in head["template"]["spec"]
    assert head["rayStartParams"]["num-gpus"] == "0"
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert "nvidia.com/gpu" not in head["template"]["spec"]["containers"][0]["resources"]["limits"]


def test_every_ray_port_is_pinned(dev_run: MockRun[Any]) -> None:
    spec = _one(dev_run, RAY_CLUSTER).inputs["spec"]
    head = spec["headGroupSpec"]["rayStartParams"]
    worker = spec["workerGroupSpecs"][0]["rayStartParams"]
    for option, port in RAY_PORTS.items():
        assert head[option] == str(port)
    assert {"port", "dashboard-port", "ray-client-server-port"}.isdisjoint(worker)
    for params in (head, worker):
        assert (params["min-worker-port"], params["max-worker-port"]) == tuple(
            str(p) for p in WORKER_PORTS
        )
        assert params["metrics-export-port"] == str(RAY_METRICS_PORT)


def test_the_autoscaler_is_on_restricted_and_kueue_admits_the_cluster_elastically(
    dev_run: MockRun[Any],
) -> None:
    cluster = _one(dev_run, RAY_CLUSTER)
    spec = cluster.inputs["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    assert cluster.metadata["annotations"][ELASTIC_JOB] == "true"
    head = spec["headGroupSpec"]["template"]["spec"]
    worker = spec["workerGroupSpecs"][0]["template"]["spec"]
    for pod in (head, worker):
        assert pod["schedulingGates"] == [{"name": ELASTIC_JOB}]
    options = spec["autoscalerOptions"]
    _restricted(head, options)
    assert options["securityContext"]["readOnlyRootFilesystem"] is True
    assert options["resources"]["requests"] == options["resources"]["limits"]
    # Only the sidecar holds the API token: KubeRay's service account for the cluster.
    assert "serviceAccountName" not in head
    assert head["automountServiceAccountToken"] is False
    assert options["volumeMounts"] == [
        {"name": "autoscaler-token", "mountPath": SERVICE_ACCOUNT_MOUNT, "readOnly": True}
    ]
    assert worker["serviceAccountName"] == "workload"
    assert cluster.options["ignoreChanges"] == ["spec.suspend", *AUTOSCALER_OWNED_FIELDS]
    kueue = next(
        r for r in dev_run.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kueue"
    )
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["featureGates"] == {ELASTIC_JOBS_GATE: True}
    assert "ray.io/raycluster" in config["integrations"]["frameworks"]


def test_every_ray_pod_is_restricted(dev_run: MockRun[Any]) -> None:
    for type_token in (RAY_CLUSTER, RAY_JOB):
        spec = _one(dev_run, type_token).inputs["spec"]
        cluster = spec.get("rayClusterSpec", spec)
        templates = [
            cluster["headGroupSpec"]["template"],
            *(group["template"] for group in cluster["workerGroupSpecs"]),
        ]
        if "submitterPodTemplate" in spec:
            templates.append(spec["submitterPodTemplate"])
        for template in templates:
            for container in _containers(template):
                _restricted(template["spec"], container)
                assert container["securityContext"]["readOnlyRootFilesystem"] is True


def test_the_network_policy_opens_rays_ports_between_its_own_pods_only(
    dev_run: MockRun[Any],
) -> None:
    policy = dev_run.find("NetworkPolicy", "ray-lab-ray-network", "research").inputs["spec"]
    selector = policy["podSelector"]
    assert selector["matchLabels"] == {"app.kubernetes.io/name": "ray-lab"}
    own, dashboard, metrics = policy["ingress"]
    assert own["from"] == [{"podSelector": selector}]
    ports = {p["port"]: p.get("endPort") for p in own["ports"]}
    assert ports == {**{p: None for p in RAY_PORTS.values()}, WORKER_PORTS[0]: WORKER_PORTS[1]}
    assert dashboard["ports"] == [{"protocol": "TCP", "port": RAY_DASHBOARD_PORT}]
    [operator] = dashboard["from"]
    assert operator["namespaceSelector"]["matchExpressions"][0]["values"] == ["ray-system"]
    assert metrics["ports"] == [{"protocol": "TCP", "port": RAY_METRICS_PORT}]
    assert metrics["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        "monitoring"
    ]
    egress_targets = [rule["to"] for rule in policy["egress"]]
    assert [{"podSelector": selector}] in egress_targets
    # The autoscaler calls the API server; nothing else leaves but DNS.
    assert any("ipBlock" in peer for rule in egress_targets for peer in rule)


def test_prometheus_scrapes_every_ray_pod(dev_run: MockRun[Any]) -> None:
    monitor = dev_run.find("PodMonitor", "ray-nodes", "monitoring").inputs["spec"]
    assert monitor["selector"]["matchLabels"] == {"ray.io/is-ray-node": "yes"}
    [endpoint] = monitor["podMetricsEndpoints"]
    assert endpoint["port"] == "metrics"
    targets = {r["targetLabel"] for r in endpoint["relabelings"]}
    assert targets == {"ray_cluster", "ray_node_type", "team"}


def test_the_ray_job_runs_its_entrypoint_on_a_cluster_of_its_own(dev_run: MockRun[Any]) -> None:
    job = _one(dev_run, RAY_JOB)
    spec = job.inputs["spec"]
    assert job.metadata["labels"][KUEUE_QUEUE_LABEL] == TEAM_LOCAL_QUEUE_NAME
    assert spec["entrypoint"] == "python /home/ray/sweep.py --num-workers=2"
    assert yaml.safe_load(spec["runtimeEnvYAML"]) == {"env_vars": {"WANDB_MODE": "offline"}}
    assert spec["shutdownAfterJobFinishes"] is True
    assert spec["ttlSecondsAfterFinished"] == 86400
    assert spec["backoffLimit"] == 0
    assert spec["suspend"] is True
    cluster = spec["rayClusterSpec"]
    assert cluster["enableInTreeAutoscaling"] is False
    [group] = cluster["workerGroupSpecs"]
    assert group["replicas"] == group["minReplicas"] == group["maxReplicas"] == 2
    assert "schedulingGates" not in group["template"]["spec"]
    submitter = spec["submitterPodTemplate"]["spec"]
    assert submitter["restartPolicy"] == "Never"
    assert "command" not in submitter["containers"][0]  # KubeRay's ray job submit
    policy = dev_run.find("NetworkPolicy", "ray-sweep-submitter-network", "research")
    assert "ingress" not in policy.inputs["spec"]
    assert "Ingress" in policy.inputs["spec"]["policyTypes"]


def test_the_outputs_name_the_cluster_and_its_client_address(dev_run: MockRun[Any]) -> None:
    outputs = dev_run.value.model_dump(mode="json", by_alias=True)["teams"]["research"]["workloads"]
    assert outputs["ray-lab"]["objectName"] == "ray-lab"
    assert outputs["ray-lab"]["serviceHost"] == "ray-lab-head-svc.research.svc.cluster.local"
    assert outputs["ray-lab"]["port"] == RAY_PORTS["ray-client-server-port"]
    assert outputs["ray-sweep"]["serviceHost"] is None


def test_gcs_fault_tolerance_reads_the_team_redis_secret() -> None:
    args = RayClusterArgs(
        team="research",
        namespace="research",
        name="ray-lab",
        image="rayproject/ray:2.49.2",
        resources=ComputeResources("4", "16Gi"),
        gcs_fault_tolerance=True,
    )
    options = gcs_fault_tolerance(args, "research")
    assert options["redisAddress"] == "team-redis.research.svc.cluster.local:6379"
    assert options["redisPassword"] == {
        "valueFrom": {"secretKeyRef": {"name": "team-redis-auth", "key": "password"}}
    }


def test_without_kueue_an_autoscaled_cluster_is_not_gated() -> None:
    config = stack_config("dev")
    config["queueing"] = {"enabled": False}
    for team in config["teams"]:
        team.pop("queue", None)
    config["workloads"] = [w for w in config["workloads"] if w["kind"] == "ray-cluster"]
    run = run_stack(config)
    cluster = _one(run, RAY_CLUSTER)
    assert ELASTIC_JOB not in cluster.metadata["annotations"]
    assert "suspend" not in cluster.inputs["spec"]
    for group in cluster.inputs["spec"]["workerGroupSpecs"]:
        assert "schedulingGates" not in group["template"]["spec"]
