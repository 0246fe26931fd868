"""The local cluster's volume provisioner: which claims get a volume, and what it looks like."""

from __future__ import annotations

from typing import Any

from tools.e2e.provisioner import SELECTED_NODE, released, volume_for


def _class(binding: str = "WaitForFirstConsumer", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "checkpoints-local"},
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": binding,
        "reclaimPolicy": "Retain",
        **extra,
    }


def _claim(
    modes: list[str] | None = None, node: str | None = "gpu-node-01", phase: str = "Pending"
) -> dict[str, Any]:
    annotations = {SELECTED_NODE: node} if node else {}
    return {
        "metadata": {"name": "checkpoints", "namespace": "research", "uid": "u-1",
                     "annotations": annotations},
        "spec": {"accessModes": modes or ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Ti"}},
                 "storageClassName": "checkpoints-local"},
        "status": {"phase": phase},
    }  # fmt: skip


def test_a_late_binding_claim_waits_for_the_schedulers_node():
    assert volume_for(_claim(node=None), _class()) is None
    assert volume_for(_claim(node=None), _class(binding="Immediate")) is not None


def test_a_single_writer_volume_is_pinned_to_the_chosen_node_with_the_claims_shape():
    volume = volume_for(_claim(), _class(mountOptions=["nfsvers=4.1"]))
    assert volume is not None
    spec = volume["spec"]
    assert volume["metadata"]["name"] == "pvc-u-1"
    assert spec["capacity"] == {"storage": "1Ti"}
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["storageClassName"] == "checkpoints-local"
    assert spec["mountOptions"] == ["nfsvers=4.1"]
    assert spec["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "research",
        "name": "checkpoints",
        "uid": "u-1",
    }
    term = spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-node-01"]}


def test_a_zonal_drivers_volume_follows_the_chosen_nodes_zone():
    ebs = _class(provisioner="ebs.csi.aws.com")
    volume = volume_for(_claim(), ebs, {"topology.kubernetes.io/zone": "us-east-1a"})
    assert volume is not None
    term = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
    ]
    unzoned = volume_for(_claim(), ebs, {})
    assert unzoned is not None and "nodeAffinity" not in unzoned["spec"]


def test_shared_volumes_follow_no_node_and_bound_claims_get_nothing():
    shared = volume_for(_claim(modes=["ReadWriteMany"]), _class())
    assert shared is not None and "nodeAffinity" not in shared["spec"]
    assert volume_for(_claim(phase="Bound"), _class()) is None
    assert volume_for(_claim(), _class(provisioner="kubernetes.io/no-provisioner")) is None


def test_only_our_released_volumes_with_delete_are_deleted():
    ours = {
        "metadata": {"labels": {"e2e.aiplatform.io/provisioned": "true"}},
        "spec": {"persistentVolumeReclaimPolicy": "Delete"},
        "status": {"phase": "Released"},
    }
    assert released(ours)
    assert not released({**ours, "spec": {"persistentVolumeReclaimPolicy": "Retain"}})
    assert not released({**ours, "metadata": {"labels": {}}})
    assert not released({**ours, "status": {"phase": "Bound"}})
