"""``ai-platform:workloads`` in the stack: wiring to teams, pools, queues, volumes and outputs."""

from __future__ import annotations

import pytest

from components.constants import KUEUE_QUEUE_LABEL, NODE_POOL_LABEL
from tests.harness import run_stack
from tests.workloads.conftest import container, env_of, pod_spec

COMPONENTS = {
    "aiplatform:workloads:TrainingJob": "training",
    "aiplatform:workloads:InferenceService": "inference",
}


def _components(run):
    return {r.name: r for r in run.resources if r.type in COMPONENTS}


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_configured_workload_is_rendered_in_its_team_namespace(stack, dev_run, prod_run):
    run = {"dev": dev_run, "prod": prod_run}[stack]
    components = _components(run)
    assert set(components) == {
        "research-llama-finetune",
        "research-llama-eval",
        "search-serving-llm-chat",
        "search-serving-embeddings",
    }
    for name, component in components.items():
        team = "research" if name.startswith("research-") else "search-serving"
        children = [r for r in run.kubernetes_objects() if r.parent == component.urn]
        assert children
        assert {r.metadata["namespace"] for r in children} == {team}


def _registered_after(run, urn: str) -> set[str]:
    """Everything the SDK waits for before registering ``urn``: its dependencies and its parent,
    transitively (a child is registered after its parent, and a component after everything it
    depends on; each custom resource's registration returns once it exists)."""
    records = {r.urn: r for r in run.resources}
    seen: set[str] = set()
    pending = [urn]
    while pending:
        record = records.get(pending.pop())
        if record is None:
            continue
        for before in [*record.options["dependsOn"], record.parent]:
            if before and before not in seen:
                seen.add(before)
                pending.append(before)
    return seen


def _team_objects(run, team: str) -> set[str]:
    namespace_component = next(
        r.urn
        for r in run.resources
        if r.type == "aiplatform:tenancy:TeamNamespace" and r.name == team
    )
    return {r.urn for r in run.kubernetes_objects() if r.parent == namespace_component}


def _owner(run, component) -> str:
    """The workload's team: the namespace its objects are in (named after the team here)."""
    return next(
        r.metadata["namespace"] for r in run.kubernetes_objects() if r.parent == component.urn
    )


def _waits(run, component) -> list:
    """What carries a workload's edges: an InferenceService component; a TrainingJob's objects
    (its component has none, so a claim it creates depends on its namespace only)."""
    if component.type == "aiplatform:workloads:InferenceService":
        return [component]
    return [
        r
        for r in run.kubernetes_objects()
        if r.parent == component.urn and r.kind != "PersistentVolumeClaim"
    ]


def test_workloads_wait_for_the_whole_team_queue_and_mounted_volumes(prod_run):
    """One edge to the LocalQueue stands for the team: its TeamQueue waits for the namespace."""
    components = _components(prod_run)
    finetune = components["research-llama-finetune"]
    local_queue = prod_run.find("LocalQueue", "gpu-queue", "research").urn
    datasets = prod_run.find("PersistentVolumeClaim", "datasets", "research").urn
    checkpoints = prod_run.find("PersistentVolumeClaim", "checkpoints", "research").urn
    assert finetune.options["dependsOn"] == []
    network = prod_run.find("NetworkPolicy", "llama-finetune-network", "research")
    # The team Redis' Secret too: its pods read REDIS_URL from it when they start.
    redis_secret = prod_run.find("Secret", "team-redis-auth", "research").urn
    assert set(network.options["dependsOn"]) == {local_queue, datasets, redis_secret}
    team = _team_objects(prod_run, "research")
    assert {r.kind for r in prod_run.kubernetes_objects() if r.urn in team} >= {
        "Namespace",
        "ResourceQuota",
        "LimitRange",
        "ServiceAccount",
        "NetworkPolicy",
        "ConfigMap",
    }
    for component in components.values():
        waiting = _waits(prod_run, component)
        assert waiting, component.name
        for resource in waiting:
            assert _team_objects(prod_run, _owner(prod_run, component)) <= _registered_after(
                prod_run, resource.urn
            ), resource.name
    assert checkpoints not in _registered_after(prod_run, network.urn)  # a claim of its own
    evaluation = prod_run.find("NetworkPolicy", "llama-eval-network", "research")
    assert {datasets, checkpoints} <= set(evaluation.options["dependsOn"])
    embeddings = set(components["search-serving-embeddings"].options["dependsOn"])
    assert prod_run.find("PersistentVolumeClaim", "models", "search-serving").urn in embeddings


def test_a_claim_a_job_creates_waits_for_its_namespace_only(prod_run):
    """Not for the queue the job waits for: the engine orders a destroy by the same edges, and a
    protected claim behind the queue would be neither reached nor named by ``pulumi destroy``."""
    claim = prod_run.find("PersistentVolumeClaim", "llama-finetune-checkpoints", "research")
    namespace = prod_run.find("Namespace", "research")
    objects = {r.urn for r in prod_run.kubernetes_objects()}
    assert _registered_after(prod_run, claim.urn) & objects == {namespace.urn}


def test_without_a_queue_workloads_wait_for_the_team_namespace(dev_config):
    dev_config["queueing"] = {"enabled": False}
    run = run_stack(dev_config)
    for component in _components(run).values():
        team = _team_objects(run, _owner(run, component))
        for resource in _waits(run, component):
            assert team <= _registered_after(run, resource.urn), resource.name


def test_gpu_work_is_queued_and_cpu_work_is_not(prod_run):
    for name in ("llama-finetune", "llama-eval"):
        job = prod_run.find("Job", name, "research").inputs
        assert job["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"
        assert job["spec"]["suspend"] is True
    chat = prod_run.find("Deployment", "llm-chat", "search-serving")
    assert chat.metadata["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"
    embeddings = prod_run.find("Deployment", "embeddings", "search-serving")
    assert KUEUE_QUEUE_LABEL not in embeddings.metadata["labels"]


def test_queueing_off_runs_everything_unqueued(dev_config):
    dev_config["queueing"] = {"enabled": False}
    run = run_stack(dev_config)
    job = run.find("Job", "llama-finetune", "research").inputs
    assert KUEUE_QUEUE_LABEL not in job["metadata"]["labels"] and "suspend" not in job["spec"]
    chat = run.find("Deployment", "llm-chat", "search-serving")
    assert KUEUE_QUEUE_LABEL not in chat.metadata["labels"]


def test_pools_contracts_reach_the_pods(dev_run, prod_run):
    chat = dev_run.find("Deployment", "llm-chat", "search-serving")
    assert pod_spec(chat)["nodeSelector"] == {NODE_POOL_LABEL: "lab-a100-mig"}
    limits = container(chat, "server")["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.10gb"] == "1"
    evaluation = prod_run.find("Job", "llama-eval", "research")
    tolerations = pod_spec(evaluation)["tolerations"]
    assert {t["key"] for t in tolerations} == {"nvidia.com/gpu", "aiplatform.io/preemptible"}


def test_data_is_protected_in_prod_only(dev_run, prod_run):
    assert prod_run.find("PersistentVolumeClaim", "llama-finetune-checkpoints", "research").options[
        "protect"
    ]
    assert not dev_run.find(
        "PersistentVolumeClaim", "llama-finetune-checkpoints", "research"
    ).options["protect"]
    retention = {
        stack: run.find("StatefulSet", "llm-chat-redis", "search-serving").inputs["spec"][
            "persistentVolumeClaimRetentionPolicy"
        ]["whenDeleted"]
        for stack, run in (("dev", dev_run), ("prod", prod_run))
    }
    assert retention == {"dev": "Delete", "prod": "Retain"}


def test_defaults_fill_in_priority_and_log_level(dev_run):
    embeddings = dev_run.find("Deployment", "embeddings", "search-serving")
    assert pod_spec(embeddings)["priorityClassName"] == "normal"  # the global default
    evaluation = dev_run.find("Job", "llama-eval", "research")
    assert env_of(container(evaluation, "trainer"))["LOG_LEVEL"] == "warning"
    assert env_of(container(embeddings, "server"))["LOG_LEVEL"] == "info"


def test_outputs_name_the_services(dev_run):
    research = dev_run.value.teams["research"].workloads
    assert research["llama-finetune"].service_host == "llama-finetune.research.svc.cluster.local"
    assert research["llama-eval"].service_host is None
    embeddings = dev_run.value.teams["search-serving"].workloads["embeddings"]
    assert embeddings.service_host == "embeddings.search-serving.svc.cluster.local"
    assert embeddings.port == 8080 and embeddings.dependency_hosts == {}


def test_a_stack_without_workloads_renders_none(dev_config):
    dev_config.pop("workloads")
    run = run_stack(dev_config)
    assert _components(run) == {}
    assert all(team.workloads == {} for team in run.value.teams.values())


def test_config_settings_reach_the_manifests(prod_run):
    chat = prod_run.find("Deployment", "llm-chat", "search-serving")
    server = container(chat, "server")
    assert server["startupProbe"]["failureThreshold"] == 90  # startupTimeoutSeconds 900
    assert server["args"][:2] == ["--model", "/models/qwen2.5-3b-instruct"]
    volumes = {v["name"]: v for v in pod_spec(chat)["volumes"]}
    assert volumes["dshm"]["emptyDir"]["sizeLimit"] == "2Gi"
    hpa = prod_run.find("HorizontalPodAutoscaler", "llm-chat", "search-serving").inputs["spec"]
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (2, 8)
    assert [m["type"] for m in hpa["metrics"]] == ["Resource", "Resource", "Pods"]  # cpu, memory
    job = prod_run.find("Job", "llama-finetune", "research").inputs["spec"]
    assert job["activeDeadlineSeconds"] == 432000
    assert job["podFailurePolicy"]["rules"][-1]["onExitCodes"]["values"] == [78]
    preflight = container(
        prod_run.find("Job", "llama-finetune", "research"), "preflight", "initContainers"
    )
    assert preflight["command"][-2:] == ["--checkpoint-min-free", "500Gi"]
    policy = prod_run.find("NetworkPolicy", "llama-finetune-network", "research").inputs["spec"]
    assert policy["egress"][-1]["to"] == [{"ipBlock": {"cidr": "52.216.0.0/15"}}]


def test_training_pods_get_their_checkpoint_grace_period(dev_config):
    dev_config["workloads"][0]["training"]["terminationGracePeriodSeconds"] = 240
    run = run_stack(dev_config)
    assert (
        pod_spec(run.find("Job", "llama-finetune", "research"))["terminationGracePeriodSeconds"]
        == 240
    )
    # Unset: time for a last checkpoint, within the pool's soft-eviction cap (300 s).
    assert (
        pod_spec(run.find("Job", "llama-eval", "research"))["terminationGracePeriodSeconds"] == 120
    )
