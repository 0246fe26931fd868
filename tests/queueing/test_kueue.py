"""Kueue: flavours mirror pools exactly, team ClusterQueues share a cohort, quotas add up."""

from __future__ import annotations

import yaml

from components.constants import (
    DEFAULT_QUEUE_FLAVOR,
    GPU_CAPACITY_ANNOTATION,
    GPU_RESOURCE_ANNOTATION,
    KUEUE_CHART,
    KUEUE_CHART_REPO,
    KUEUE_CHART_VERSION,
    KUEUE_NAMESPACE,
    KUEUE_RELEASE,
    NAMESPACE_NAME_LABEL,
    NODE_POOL_LABEL,
    PSA_ENFORCE_LABEL,
    TEAM_LOCAL_QUEUE_NAME,
)
from components.kueue import cluster_queue_name
from tests.harness import run_stack


def _kueue_release(run):
    [release] = [
        r for r in run.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == KUEUE_RELEASE
    ]
    return release


def test_kueue_release_is_pinned_and_enables_fair_sharing(prod_run):
    inputs = _kueue_release(prod_run).inputs
    assert inputs["chart"] == f"{KUEUE_CHART_REPO}/{KUEUE_CHART}"
    assert inputs["version"] == KUEUE_CHART_VERSION
    assert inputs["namespace"] == KUEUE_NAMESPACE
    assert "repositoryOpts" not in inputs  # OCI chart
    assert inputs["skipAwait"] is False
    config = yaml.safe_load(inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["manageJobsWithoutQueueName"] is True
    assert config["fairSharing"]["preemptionStrategies"]
    assert prod_run.find("Namespace", KUEUE_NAMESPACE).metadata["labels"][PSA_ENFORCE_LABEL] == (
        "restricted"
    )


def _selected(selector, labels):
    """A label selector's matchExpressions, as the API server evaluates them."""
    for expression in selector["matchExpressions"]:
        key, operator, values = expression["key"], expression["operator"], expression.get("values")
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
    return True


def test_kueue_webhooks_see_team_namespaces_only(prod_run):
    """Kueue's webhooks fail closed: a platform namespace (a chart's hook Job, say) must never
    depend on Kueue being up, while every team namespace stays managed."""
    release = _kueue_release(prod_run)
    config = yaml.safe_load(
        release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    selector = config["managedJobsNamespaceSelector"]
    namespaces = {
        r.metadata["name"]: {
            **r.metadata.get("labels", {}),
            NAMESPACE_NAME_LABEL: r.metadata["name"],
        }
        for r in prod_run.kubernetes_objects()
        if r.kind == "Namespace"
    }
    managed = {name for name, labels in namespaces.items() if _selected(selector, labels)}
    teams = {team.namespace for team in prod_run.value.teams.values()}
    assert managed == teams
    assert not _selected(selector, {NAMESPACE_NAME_LABEL: "kube-system"})


def test_queue_objects_wait_for_the_kueue_webhooks(prod_run):
    release = _kueue_release(prod_run)
    for resource in prod_run.kubernetes_objects():
        if resource.kind in ("ResourceFlavor", "WorkloadPriorityClass"):
            assert release.urn in resource.options["dependsOn"], resource.urn


def test_flavors_mirror_pools_exactly(prod_run):
    contracts = prod_run.value.gpu_pools
    flavors = {
        r.metadata["name"]: r
        for r in prod_run.kubernetes_objects()
        if r.kind == "ResourceFlavor" and r.metadata["name"] != DEFAULT_QUEUE_FLAVOR
    }
    assert sorted(flavors) == sorted(contracts)  # and the default queues' no-gpu flavor
    for name, contract in contracts.items():
        spec = flavors[name].inputs["spec"]
        assert spec["nodeLabels"] == contract.node_selector
        assert spec["tolerations"] == contract.tolerations
        assert [{**t, "operator": "Equal"} for t in spec["nodeTaints"]] == contract.tolerations
        annotations = flavors[name].metadata["annotations"]
        assert annotations[GPU_RESOURCE_ANNOTATION] == contract.gpu_resource
    capacity = {n: f.metadata["annotations"][GPU_CAPACITY_ANNOTATION] for n, f in flavors.items()}
    assert capacity == {"h100-training": "64", "l4-inference": "64", "spot-batch": "24"}


def test_team_cluster_queue(prod_run):
    spec = prod_run.find("ClusterQueue", cluster_queue_name("research")).inputs["spec"]
    assert spec["cohortName"] == "gpu-prod"
    assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "research"}}
    assert spec["preemption"]["reclaimWithinCohort"] == "Any"
    assert spec["preemption"]["withinClusterQueue"] == "LowerPriority"
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    [group] = spec["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    h100, spot = group["flavors"]
    assert h100["name"] == "h100-training" and spot["name"] == "spot-batch"
    assert h100["resources"][2] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "56",
        "borrowingLimit": "8",
        "lendingLimit": "24",
    }
    assert spot["resources"][0] == {"name": "cpu", "nominalQuota": "128", "borrowingLimit": "0"}


def test_mig_flavor_gets_its_own_covered_resource(dev_run):
    spec = dev_run.find("ClusterQueue", cluster_queue_name("search-serving")).inputs["spec"]
    [group] = spec["resourceGroups"]
    assert group["coveredResources"] == [
        "cpu",
        "memory",
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/gpu",
    ]
    mig, whole = group["flavors"]
    # Each flavour lists every covered resource; the one its pool lacks gets no quota.
    assert {r["name"]: r["nominalQuota"] for r in mig["resources"]} == {
        "cpu": "16",
        "memory": "64Gi",
        "nvidia.com/mig-1g.10gb": "14",
        "nvidia.com/gpu": "0",
    }
    assert {r["name"]: r["nominalQuota"] for r in whole["resources"]}["nvidia.com/gpu"] == "2"
    hard = dev_run.find("ResourceQuota", "team-quota", "search-serving").inputs["spec"]["hard"]
    assert hard["requests.nvidia.com/mig-1g.10gb"] == "21"


def test_local_queue_in_team_namespace_and_outputs(prod_run):
    for team in ("research", "search-serving", "platform"):
        local = prod_run.find("LocalQueue", TEAM_LOCAL_QUEUE_NAME, team).inputs
        assert local["spec"] == {"clusterQueue": cluster_queue_name(team)}
        outputs = prod_run.value.teams[team]
        assert (outputs.local_queue, outputs.cluster_queue) == (
            TEAM_LOCAL_QUEUE_NAME,
            cluster_queue_name(team),
        )


def test_workload_priority_classes_mirror_priority_classes(prod_run):
    mirrors = {
        r.metadata["name"]: r.inputs["value"]
        for r in prod_run.kubernetes_objects()
        if r.kind == "WorkloadPriorityClass"
    }
    classes = {
        r.metadata["name"]: r.inputs["value"]
        for r in prod_run.kubernetes_objects()
        if r.kind == "PriorityClass"
    }
    assert mirrors == classes


def test_queueing_off_and_unqueued_teams(dev_config):
    dev_config["queueing"] = {"enabled": False}
    run = run_stack(dev_config)
    assert not [r for r in run.kubernetes_objects() if r.inputs["apiVersion"].startswith("kueue")]
    assert run.value.teams["research"].local_queue is None
    assert run.find("Node", "gpu-node-01")  # pools stay


def test_flavor_labels_name_their_pool(dev_run):
    flavor = dev_run.find("ResourceFlavor", "lab-a100-mig")
    assert flavor.metadata["labels"][NODE_POOL_LABEL] == "lab-a100-mig"


# --- default queues: the namespace quota less what the GPU queue may take -------------------------
def _default_queue(run, team):
    spec = run.find("ClusterQueue", f"default-{team}").inputs["spec"]
    (flavor,) = spec["resourceGroups"][0]["flavors"]
    return {r["name"]: r["nominalQuota"] for r in flavor["resources"]}


def test_default_queue_gets_what_the_gpu_queue_cannot_take(dev_run):
    """Both ClusterQueues of a namespace admit into its one ResourceQuota, which Kueue does not
    see: sized to the whole quota, the default queue admitted CPU-only work that the quota then
    lacked for a GPU job Kueue admitted next (on the real controller: its pods refused with
    ``exceeded quota``). research's GPU queue may take 64 cpu and 512Gi of its 66 and 514Gi
    (48 + 16, 384Gi + 128Gi; the rest is its Redis'), search-serving's 24 of 32 and 96Gi of
    128Gi, platform's 4 of 16 and 16Gi of 64Gi."""
    assert _default_queue(dev_run, "research") == {"cpu": "2", "memory": "2Gi"}
    assert _default_queue(dev_run, "search-serving") == {"cpu": "8", "memory": "32Gi"}
    assert _default_queue(dev_run, "platform") == {"cpu": "12", "memory": "48Gi"}


def test_default_queue_of_a_team_without_a_gpu_queue_is_its_whole_quota(dev_config):
    del dev_config["teams"][2]["queue"]
    assert _default_queue(run_stack(dev_config), "platform") == {"cpu": "16", "memory": "64Gi"}


def test_default_queue_keeps_fractions_as_kubernetes_writes_them(dev_config):
    dev_config["teams"][2]["quota"].update({"cpu": "16500m", "memory": "64.5Gi"})
    assert _default_queue(run_stack(dev_config), "platform") == {
        "cpu": "12500m",
        "memory": "49664Mi",
    }
