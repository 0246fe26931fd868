"""GpuOperator: chart pinned once, privileged namespace, per-pool device plugin configs."""

from __future__ import annotations

import yaml

from components.constants import (
    DEVICE_PLUGIN_CONFIGMAP,
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_CHART_REPO,
    GPU_OPERATOR_CHART_VERSION,
    GPU_OPERATOR_NAMESPACE,
    GPU_OPERATOR_RELEASE,
    PSA_ENFORCE_LABEL,
    SYSTEM_NAMESPACE_LABEL,
    TEAM_LABEL,
)
from tests.harness import run_stack

RELEASE = "kubernetes:helm.sh/v3:Release"


def _gpu_release(run):
    [release] = [r for r in run.by_type(RELEASE) if r.inputs["name"] == GPU_OPERATOR_RELEASE]
    return release


def test_release_is_pinned_and_waits_with_rollback(prod_run):
    inputs = _gpu_release(prod_run).inputs
    assert inputs["chart"] == GPU_OPERATOR_CHART
    assert inputs["version"] == GPU_OPERATOR_CHART_VERSION
    assert inputs["repositoryOpts"] == {"repo": GPU_OPERATOR_CHART_REPO}
    assert inputs["namespace"] == GPU_OPERATOR_NAMESPACE
    assert inputs["skipAwait"] is False
    assert inputs["atomic"] is True
    assert inputs["timeout"] == 600


def test_namespace_is_the_privileged_system_exception(prod_run):
    labels = prod_run.find("Namespace", GPU_OPERATOR_NAMESPACE).metadata["labels"]
    assert labels[PSA_ENFORCE_LABEL] == "privileged"
    assert labels[SYSTEM_NAMESPACE_LABEL] == "true"
    assert TEAM_LABEL not in labels


def test_managed_images_skip_driver_and_toolkit(prod_run):
    values = _gpu_release(prod_run).inputs["values"]
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}
    assert values["gfd"] == {"enabled": True}
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert values["devicePlugin"]["config"] == {
        "create": False,
        "name": DEVICE_PLUGIN_CONFIGMAP,
        "default": "default",
    }
    assert values["migManager"] == {"enabled": False}


def test_daemonsets_tolerate_every_pool_taint(prod_run):
    values = _gpu_release(prod_run).inputs["values"]
    tolerations = values["daemonsets"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert {
        "key": "aiplatform.io/preemptible",
        "operator": "Equal",
        "value": "true",
        "effect": "NoSchedule",
    } in tolerations
    nfd = values["node-feature-discovery"]["worker"]["tolerations"]
    assert all(t in nfd for t in tolerations)


def test_one_device_plugin_entry_per_pool(prod_run, dev_run):
    data = prod_run.find("ConfigMap", DEVICE_PLUGIN_CONFIGMAP, GPU_OPERATOR_NAMESPACE).inputs[
        "data"
    ]
    assert sorted(data) == ["default", "h100-training", "l4-inference", "spot-batch"]
    l4 = yaml.safe_load(data["l4-inference"])
    assert l4["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert yaml.safe_load(data["h100-training"]) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
    }
    dev_data = dev_run.find("ConfigMap", DEVICE_PLUGIN_CONFIGMAP, GPU_OPERATOR_NAMESPACE).inputs[
        "data"
    ]
    assert yaml.safe_load(dev_data["lab-a100-mig"])["flags"] == {"migStrategy": "mixed"}
    dev_values = _gpu_release(dev_run).inputs["values"]
    assert dev_values["mig"] == {"strategy": "mixed"}
    assert dev_values["migManager"] == {"enabled": True}
    assert dev_values["dcgmExporter"]["enabled"] is False


def test_service_monitor_follows_config(dev_config):
    dev_config["gpuStack"] = {"dcgmExporter": True, "serviceMonitor": True}
    values = _gpu_release(run_stack(dev_config)).inputs["values"]
    assert values["dcgmExporter"]["serviceMonitor"] == {"enabled": True}


def test_gpu_stack_off_still_previews(dev_config):
    dev_config["gpuStack"] = {"enabled": False}
    run = run_stack(dev_config)
    assert not [r for r in run.by_type(RELEASE) if r.inputs["chart"] == GPU_OPERATOR_CHART]
    assert not [
        r for r in run.kubernetes_objects() if r.metadata.get("namespace") == GPU_OPERATOR_NAMESPACE
    ]
    # Pools and queues do not depend on the operator being installed by this stack.
    assert run.find("ResourceFlavor", "lab-a100")


def test_cluster_without_gpus_previews(dev_config):
    dev_config["gpuStack"] = {"enabled": False}
    dev_config["nodePools"] = []
    for team in dev_config["teams"]:
        team.pop("queue", None)
    # Without pools there is nothing to run GPU workloads on: keep the CPU-only ones.
    dev_config["workloads"] = [w for w in dev_config["workloads"] if "gpus" not in w]
    run = run_stack(dev_config)
    assert run.value.gpu_pools == {}
    assert all(team.local_queue is None for team in run.value.teams.values())
