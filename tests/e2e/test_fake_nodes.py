"""Fake nodes from the stack config: what the local cluster's scheduler sees of each pool.

Pure: no cluster, no binaries. The exact manifests of one node per kind are spelled out; the
properties (pool sizes, requirements met, contracts satisfiable) hold for every node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.gpu_node_pool import KarpenterBackend, nodepool_spec, scheduling_contract
from infra.config import PlatformConfig, StackFile
from infra.gpu.build import pool_args as _pool_args
from tools.e2e.nodes import (
    POOL_ANNOTATION,
    SYSTEM_NODES,
    SYSTEM_POOL,
    fake_nodes,
    karpenter_node_count,
)

ROOT = Path(__file__).resolve().parents[2]


def _config(stack: str) -> PlatformConfig:
    return StackFile(ROOT / f"Pulumi.{stack}.yaml").platform_config()


def _pool_nodes(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for n in nodes if n["metadata"]["annotations"][POOL_ANNOTATION] != SYSTEM_POOL]


@pytest.fixture(scope="module")
def dev() -> list[dict[str, Any]]:
    return _pool_nodes(fake_nodes(_config("dev")))


@pytest.fixture(scope="module")
def prod() -> list[dict[str, Any]]:
    return _pool_nodes(fake_nodes(_config("prod")))


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_cluster_has_untainted_system_nodes_first(stack):
    """Operators, Prometheus and CPU-only services need nodes without the GPU taint; every
    stack gets the same three, before its pools, spread over the stack's zones."""
    nodes = fake_nodes(_config(stack))
    system = nodes[:SYSTEM_NODES]
    assert [n["metadata"]["name"] for n in system] == ["system-1", "system-2", "system-3"]
    for node in system:
        assert node["metadata"]["annotations"][POOL_ANNOTATION] == SYSTEM_POOL
        assert "taints" not in node["spec"]
        assert node["status"]["allocatable"]["cpu"] == "32"
        assert not any(key.startswith("nvidia.com/") for key in node["status"]["allocatable"])
    assert all(
        n["metadata"]["annotations"][POOL_ANNOTATION] != SYSTEM_POOL for n in nodes[SYSTEM_NODES:]
    )


def _by_name(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {node["metadata"]["name"]: node for node in nodes}


def _resources(cpu: str, memory: str, storage: str, gpu: tuple[str, str]) -> dict[str, str]:
    return {
        "cpu": cpu,
        "memory": memory,
        "ephemeral-storage": storage,
        "pods": "110",
        gpu[0]: gpu[1],
    }


BARE_A100 = {
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
    "nvidia.com/gpu.count": "4",
    "kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "beta.kubernetes.io/os": "linux",
}


def test_dev_static_servers_are_bare_until_the_platform_patches_them(dev):
    """The lab's servers as they are before ``pulumi up``: no pool label, no GPU taint (the
    platform's NodePatch adds both), the GPUs the device plugin advertises."""
    assert [n["metadata"]["name"] for n in dev] == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    assert _by_name(dev)["gpu-node-01"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "gpu-node-01",
            "annotations": {"kwok.x-k8s.io/node": "fake", "e2e.aiplatform.io/pool": "lab-a100"},
            "labels": {**BARE_A100, "kubernetes.io/hostname": "gpu-node-01"},
        },
        "spec": {},
        "status": {
            "capacity": _resources("128", "1024Gi", "500Gi", ("nvidia.com/gpu", "4")),
            "allocatable": _resources("128", "1024Gi", "500Gi", ("nvidia.com/gpu", "4")),
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
        },
    }


def test_dev_mig_server_advertises_its_slices(dev):
    """Mixed strategy: 4 A100 80GB x 7 slices of 1g.10gb, and no whole GPUs."""
    node = _by_name(dev)["gpu-node-03"]
    assert node["status"]["allocatable"] == _resources(
        "128", "1024Gi", "500Gi", ("nvidia.com/mig-1g.10gb", "28")
    )
    assert node["metadata"]["labels"] == {**BARE_A100, "kubernetes.io/hostname": "gpu-node-03"}
    assert node["spec"] == {}


def test_prod_karpenter_node_carries_the_nodepool_template(prod):
    node = _by_name(prod)["h100-training-0"]
    assert node["metadata"]["labels"] == {
        # The NodePool's requirements, one value each ...
        "karpenter.sh/capacity-type": "reserved",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "p5.48xlarge",
        "topology.kubernetes.io/zone": "us-east-1a",
        "karpenter.k8s.aws/instance-gpu-count": "8",
        # ... what Karpenter and the instance add ...
        "topology.kubernetes.io/region": "us-east-1",
        "karpenter.k8s.aws/instance-family": "p5",
        "karpenter.k8s.aws/instance-size": "48xlarge",
        "karpenter.k8s.aws/instance-cpu": "192",
        "karpenter.k8s.aws/instance-memory": "2097152",
        "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
        "karpenter.k8s.aws/instance-gpu-name": "h100",
        "karpenter.k8s.aws/ec2nodeclass": "gpu-training",
        "karpenter.sh/nodepool": "h100-training",
        "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
        # ... the GPU stack's labels, the template's labels and the kubelet's.
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "aiplatform.io/node-pool": "h100-training",
        "nvidia.com/device-plugin.config": "h100-training",
        "kubernetes.io/hostname": "h100-training-0",
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
    }
    assert node["spec"] == {
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    }
    assert node["status"]["allocatable"] == _resources(
        "192", "2048Gi", "500Gi", ("nvidia.com/gpu", "8")
    )


def test_prod_time_sliced_and_spot_pools(prod):
    nodes = _by_name(prod)
    l4 = nodes["l4-inference-0"]
    # A family with one GPU per node: its largest such size; 4 replicas per L4.
    assert l4["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "g6.16xlarge"
    assert l4["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-L4-SHARED"
    # No zones of its own: the zones the stack's other pools name.
    assert l4["metadata"]["labels"]["topology.kubernetes.io/zone"] == "us-east-1a"
    assert l4["status"]["allocatable"] == _resources(
        "64", "256Gi", "200Gi", ("nvidia.com/gpu", "4")
    )
    spot = nodes["spot-batch-0"]
    assert spot["metadata"]["labels"]["karpenter.sh/capacity-type"] == "spot"
    assert spot["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "g6e.24xlarge"
    assert spot["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "aiplatform.io/preemptible", "value": "true", "effect": "NoSchedule"},
    ]
    assert spot["status"]["allocatable"] == _resources(
        "96", "768Gi", "500Gi", ("nvidia.com/gpu", "4")
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_pool_is_there_at_its_size(stack):
    config = _config(stack)
    nodes = fake_nodes(config)
    names = [n["metadata"]["name"] for n in nodes]
    assert len(names) == len(set(names))
    for pool in config.node_pools:
        mine = [
            n for n in nodes if n["metadata"]["annotations"]["e2e.aiplatform.io/pool"] == pool.name
        ]
        if pool.backend == "static":
            assert [n["metadata"]["name"] for n in mine] == pool.nodes
        else:
            assert len(mine) == karpenter_node_count(pool) == pool.max_nodes
    assert all(n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake" for n in nodes)
    assert sum(1 for p in config.node_pools if p.backend == "karpenter") == (
        0 if stack == "dev" else 3
    )


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_pods_of_the_contract_fit_once_the_platform_has_run(stack):
    """With the platform's labels and taints on (Karpenter nodes: already; static ones: what
    NodePatch applies), every node matches its pool's contract: selector, tolerations, and
    ``resourcesPerNode`` units of the contract's resource, the nodes of no other pool do."""
    config = _config(stack)
    nodes = fake_nodes(config)
    for pool in config.node_pools:
        args = _pool_args(pool)
        contract = scheduling_contract(args)
        for node in nodes:
            labels = dict(node["metadata"]["labels"])
            taints = list(node["spec"].get("taints", []))
            ours = node["metadata"]["annotations"]["e2e.aiplatform.io/pool"] == pool.name
            if ours and pool.backend == "static":
                assert taints == [] and "aiplatform.io/node-pool" not in labels
                labels.update(contract.node_selector)
                taints = [t.manifest() for t in contract.taints]
            selected = all(labels.get(k) == v for k, v in contract.node_selector.items())
            assert selected == ours
            if not ours:
                continue
            tolerated = {(t["key"], t.get("value", ""), t["effect"]) for t in contract.tolerations}
            assert {(t["key"], t.get("value", ""), t["effect"]) for t in taints} <= tolerated
            allocatable = node["status"]["allocatable"]
            assert allocatable[contract.gpu_resource] == str(contract.resources_per_node)


def test_karpenter_nodes_meet_every_nodepool_requirement(prod):
    config = _config("prod")
    for pool in config.node_pools:
        args = _pool_args(pool)
        assert isinstance(args.backend, KarpenterBackend)
        template = nodepool_spec(args, args.backend)["template"]
        for node in (n for n in prod if n["metadata"]["name"].startswith(f"{pool.name}-")):
            labels = node["metadata"]["labels"]
            for requirement in template["spec"]["requirements"]:
                assert requirement["operator"] == "In"
                assert labels[requirement["key"]] in requirement["values"], requirement
            assert template["metadata"]["labels"].items() <= labels.items()
            assert node["spec"]["taints"] == template["spec"]["taints"]


def test_fake_nodes_is_pure(dev):
    """Two calls, equal results, and the config is not touched (the runner calls it twice)."""
    config = _config("dev")
    before = config.model_dump()
    assert fake_nodes(config) == fake_nodes(config)
    assert _pool_nodes(fake_nodes(config)) == dev
    assert config.model_dump() == before
