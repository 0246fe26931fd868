"""DataVolume: PVCs that skip the bind wait, follow the namespace, and are protected in prod."""

from __future__ import annotations

from components.constants import SKIP_AWAIT_ANNOTATION, VOLUME_PURPOSE_LABEL


def test_claim_spec_and_labels(dev_run):
    pvc = dev_run.find("PersistentVolumeClaim", "datasets", "research")
    assert pvc.inputs["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "datasets-nfs",
        "resources": {"requests": {"storage": "2Ti"}},
    }
    assert pvc.metadata["labels"][VOLUME_PURPOSE_LABEL] == "datasets"
    # WaitForFirstConsumer leaves a claim Pending until a pod mounts it; pulumi up must not hang.
    assert pvc.metadata["annotations"][SKIP_AWAIT_ANNOTATION] == "true"


def test_claim_depends_on_its_namespace(dev_run):
    pvc = dev_run.find("PersistentVolumeClaim", "checkpoints", "research")
    namespace = dev_run.find("Namespace", "research")
    assert pvc.property_dependencies["metadata"] == [namespace.urn]


def test_claims_are_protected_in_prod_only(dev_run, prod_run):
    assert all(
        not r.options["protect"]
        for r in dev_run.kubernetes_objects()
        if r.kind == "PersistentVolumeClaim"
    )
    prod_claims = [r for r in prod_run.kubernetes_objects() if r.kind == "PersistentVolumeClaim"]
    # The three team volumes, plus the checkpoint claim of the llama-finetune TrainingJob and
    # research's Redis volume.
    team_volumes = [r for r in prod_claims if "aiplatform:storage:DataVolume" in r.parent]
    assert len(team_volumes) == 3
    assert len(prod_claims) == 5
    assert all(r.options["protect"] for r in prod_claims)
