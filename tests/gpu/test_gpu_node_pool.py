"""GpuNodePool: Karpenter and static backends, sharing modes and the scheduling contract."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import (
    CAPACITY_TYPE_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_RESOURCE,
    KARPENTER_GPU_COUNT_LABEL,
    MIG_CONFIG_LABEL,
    NODE_POOL_LABEL,
    PATCH_FIELD_MANAGER_ANNOTATION,
)
from components.gpu_node_pool import GPU_TAINT, GpuSharing
from tests.harness import run_stack, stack_config

GPU_TOLERATION = {
    "key": "nvidia.com/gpu",
    "operator": "Equal",
    "value": "present",
    "effect": "NoSchedule",
}


DEFAULT_EVICTION = {
    "evictionHard": {
        "memory.available": "10%",
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
    },
    "evictionSoft": {"memory.available": "20%"},
    "evictionSoftGracePeriod": {"memory.available": "1m30s"},
    "evictionMaxPodGracePeriod": 300,
}
"""Every pool's kubelet settings unless it sets its own."""


def _requirements(nodepool: Any) -> dict[str, list[str]]:
    spec = nodepool.inputs["spec"]["template"]["spec"]
    return {r["key"]: r["values"] for r in spec["requirements"]}


def test_training_pool_on_reserved_h100s(prod_run):
    spec = prod_run.find("NodePool", "h100-training").inputs["spec"]
    assert spec["limits"] == {GPU_RESOURCE: "64"}  # 8 nodes x 8 GPUs
    assert spec["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert spec["disruption"]["consolidateAfter"] == "30m"
    assert {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h"} in spec["disruption"][
        "budgets"
    ]
    template = spec["template"]
    assert template["spec"]["expireAfter"] == "Never"
    assert template["spec"]["taints"] == [GPU_TAINT.manifest()]
    assert template["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "gpu-training",
    }
    assert template["metadata"]["labels"] == {
        NODE_POOL_LABEL: "h100-training",
        DEVICE_PLUGIN_CONFIG_LABEL: "h100-training",
    }
    requirements = _requirements(prod_run.find("NodePool", "h100-training"))
    assert requirements[CAPACITY_TYPE_LABEL] == ["reserved"]
    assert requirements["node.kubernetes.io/instance-type"] == ["p5.48xlarge"]
    assert requirements[KARPENTER_GPU_COUNT_LABEL] == ["8"]
    assert requirements["kubernetes.io/arch"] == ["amd64"]


def test_inference_and_spot_pools(prod_run):
    l4 = prod_run.find("NodePool", "l4-inference").inputs["spec"]
    assert l4["limits"] == {GPU_RESOURCE: "16"}  # physical GPUs, not time-slice replicas
    assert l4["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert l4["template"]["spec"]["expireAfter"] == "720h"
    assert _requirements(prod_run.find("NodePool", "l4-inference"))[
        "karpenter.k8s.aws/instance-family"
    ] == ["g6"]
    spot = prod_run.find("NodePool", "spot-batch").inputs["spec"]
    assert _requirements(prod_run.find("NodePool", "spot-batch"))[CAPACITY_TYPE_LABEL] == ["spot"]
    assert spot["template"]["spec"]["taints"][1] == {
        "key": "aiplatform.io/preemptible",
        "value": "true",
        "effect": "NoSchedule",
    }


def test_pool_owns_its_ec2_node_class_with_eviction_thresholds(prod_run):
    spec = prod_run.find("EC2NodeClass", "gpu-training").inputs["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20251110"}]
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpu-prod"}}]
    # The pool's kubelet settings, defaults: memory 20% soft for 1m30s, 10% hard, and the
    # kubelet's own disk floors, which it drops once evictionHard is set at all.
    assert spec["kubelet"] == {
        **DEFAULT_EVICTION,
    }
    assert spec["capacityReservationSelectorTerms"] == [
        {"tags": {"aiplatform.io/pool": "h100-training"}}
    ]
    assert spec["instanceStorePolicy"] == "RAID0"
    [device] = spec["blockDeviceMappings"]
    assert device["ebs"]["volumeSize"] == "500Gi" and device["ebs"]["encrypted"] is True
    # The spot pool references the L4 pool's node class instead of creating a second one.
    kinds = [r.metadata["name"] for r in prod_run.kubernetes_objects() if r.kind == "EC2NodeClass"]
    assert sorted(kinds) == ["gpu-general", "gpu-training"]


def test_static_pool_patches_named_nodes_with_its_own_field_manager(dev_run):
    patches = {r.metadata["name"]: r for r in dev_run.by_type("kubernetes:core/v1:NodePatch")}
    assert sorted(patches) == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    node = patches["gpu-node-01"]
    assert node.metadata["labels"] == {
        NODE_POOL_LABEL: "lab-a100",
        DEVICE_PLUGIN_CONFIG_LABEL: "lab-a100",
    }
    assert node.metadata["annotations"] == {
        PATCH_FIELD_MANAGER_ANNOTATION: "aiplatform-node-pool-lab-a100"
    }
    assert node.inputs["spec"] == {"taints": [GPU_TAINT.manifest()]}
    # Removing the pool must never delete a Node: patches are not retained, and nothing
    # registers a Node object that Pulumi would own.
    assert not node.options["retainOnDelete"] and not node.options["protect"]
    assert not dev_run.by_type("kubernetes:core/v1:Node")


def test_mig_pool_labels_nodes_for_mig_manager_and_advertises_slices(dev_run):
    node = dev_run.find("Node", "gpu-node-03")
    assert node.metadata["labels"][MIG_CONFIG_LABEL] == "all-1g.10gb"
    contract = dev_run.value.gpu_pools["lab-a100-mig"]
    assert contract.gpu_resource == "nvidia.com/mig-1g.10gb"
    assert contract.resources_per_node == 28  # 4 GPUs x 7 slices


def test_contract_is_the_pool_label_and_gpu_toleration(dev_run):
    contract = dev_run.value.gpu_pools["lab-a100"]
    assert contract.node_selector == {NODE_POOL_LABEL: "lab-a100"}
    assert contract.tolerations == [GPU_TOLERATION]
    assert contract.gpu_resource == GPU_RESOURCE
    assert (contract.gpus_per_node, contract.resources_per_node) == (4, 4)
    assert contract.product == "NVIDIA-A100-SXM4-80GB"


def test_time_sliced_contract_counts_replicas(prod_run):
    contract = prod_run.value.gpu_pools["l4-inference"]
    assert contract.sharing == "time-slicing"
    assert contract.gpu_resource == GPU_RESOURCE
    assert contract.resources_per_node == 4
    spot = prod_run.value.gpu_pools["spot-batch"]
    assert spot.tolerations == [
        GPU_TOLERATION,
        {
            "key": "aiplatform.io/preemptible",
            "operator": "Equal",
            "value": "true",
            "effect": "NoSchedule",
        },
    ]


@pytest.mark.parametrize(
    ("sharing", "config"),
    [
        (GpuSharing(), {"version": "v1", "flags": {"migStrategy": "none"}}),
        (
            GpuSharing(mode="time-slicing", replicas=4),
            {
                "version": "v1",
                "flags": {"migStrategy": "none"},
                "sharing": {"timeSlicing": {"resources": [{"name": GPU_RESOURCE, "replicas": 4}]}},
            },
        ),
        (
            GpuSharing(mode="mig", mig_profile="1g.10gb", mig_strategy="single"),
            {"version": "v1", "flags": {"migStrategy": "single"}},
        ),
    ],
)
def test_device_plugin_config_per_sharing_mode(sharing, config):
    assert sharing.device_plugin_config() == config


def test_static_capacity_when_min_equals_max(prod_config):
    pool = prod_config["nodePools"][0]
    pool["minNodes"] = pool["maxNodes"] = 8
    spec = run_stack(prod_config, stack="prod").find("NodePool", "h100-training").inputs["spec"]
    assert spec["replicas"] == 8
    assert spec["limits"] == {"nodes": "8"}
    assert "weight" not in spec


def test_karpenter_pool_without_owned_node_class(prod_config):
    del prod_config["nodePools"][0]["karpenter"]["ec2NodeClass"]
    run = run_stack(prod_config, stack="prod")
    assert not [
        r
        for r in run.kubernetes_objects()
        if r.metadata.get("name") == "gpu-training" and r.kind == "EC2NodeClass"
    ]
    ref = run.find("NodePool", "h100-training").inputs["spec"]["template"]["spec"]["nodeClassRef"]
    assert ref["name"] == "gpu-training"


def test_pool_kubelet_settings_reach_its_node_class():
    config = stack_config("prod")
    kubelet = {
        "evictionHard": {"memory.available": "16Gi"},
        "evictionSoft": {"memory.available": "64Gi"},
        "evictionSoftGracePeriod": {"memory.available": "2m"},
        "evictionMaxPodGracePeriod": 600,
        "kubeReserved": {"cpu": "1", "memory": "8Gi"},
        "maxPods": 64,
    }
    config["nodePools"][0]["kubelet"] = kubelet
    config["nodePools"][0]["nodeMemory"] = "2Ti"  # p5.48xlarge
    spec = run_stack(config, "prod").find("EC2NodeClass", "gpu-training").inputs["spec"]
    assert spec["kubelet"] == kubelet


def test_static_pool_publishes_its_kubelet_drop_in(dev_run):
    drop_ins = dev_run.value.kubelet_drop_ins
    assert sorted(drop_ins) == ["lab-a100", "lab-a100-mig"]
    assert drop_ins["lab-a100"] == {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        **DEFAULT_EVICTION,
        "systemReserved": {"cpu": "2", "memory": "8Gi"},
        "kubeReserved": {"cpu": "1", "memory": "4Gi"},
    }
    # The drop-in is published, never applied: no object on the cluster carries it.
    assert not [r for r in dev_run.kubernetes_objects() if r.kind == "KubeletConfiguration"]


def test_karpenter_pools_publish_no_drop_in(prod_run):
    assert prod_run.value.kubelet_drop_ins == {}
