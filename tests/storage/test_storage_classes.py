"""StorageClasses: late binding, expansion, one default, prod retains."""

from __future__ import annotations

from components.storage_classes import DEFAULT_CLASS_ANNOTATION


def _classes(run):
    return {r.metadata["name"]: r for r in run.kubernetes_objects() if r.kind == "StorageClass"}


def test_dev_classes_bind_late_expand_and_delete(dev_run):
    classes = _classes(dev_run)
    assert set(classes) == {"checkpoints-local", "datasets-nfs"}
    for sc in classes.values():
        assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
        assert sc.inputs["allowVolumeExpansion"] is True
        assert sc.inputs["reclaimPolicy"] == "Delete"
        assert sc.options["retainOnDelete"] is False
    nfs = classes["datasets-nfs"].inputs
    assert nfs["provisioner"] == "nfs.csi.k8s.io"
    assert nfs["parameters"] == {"server": "nfs.lab.internal", "share": "/exports/datasets"}
    assert nfs["mountOptions"] == ["nfsvers=4.1"]


def test_exactly_one_default_annotation(prod_run):
    defaults = [
        name
        for name, sc in _classes(prod_run).items()
        if sc.metadata["annotations"][DEFAULT_CLASS_ANNOTATION] == "true"
    ]
    assert defaults == ["checkpoints-gp3"]


def test_prod_classes_retain_volumes_and_themselves(prod_run):
    for sc in _classes(prod_run).values():
        assert sc.inputs["reclaimPolicy"] == "Retain"
        assert sc.options["retainOnDelete"] is True
