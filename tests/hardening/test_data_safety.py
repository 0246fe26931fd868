"""Prod data survives ``pulumi destroy``: what holds data is protected or retained.

``pulumi destroy`` deletes every resource that is neither ``protect``ed nor ``retainOnDelete``
(and refuses to run at all while protected resources remain, which is the point for PVCs). The
tests compute that set from the captured resource options and assert it holds nothing that holds
data: PVCs, namespaces (deleting one deletes its PVCs), storage classes, StatefulSets whose claims
go with them, Helm releases whose charts persist data. Dev, which protects nothing, shows the
computation finds such resources when they are there.

The engine orders a destroy by dependencies (parents' included) and refuses on a protected
resource only once it reaches it, so the protected claims must not depend on one another, nor on
anything a teardown removes (``pulumi destroy --exclude-protected`` keeps what they depend on).
The e2e (``python -m tools.e2e day2 --stack prod --section destroy``) runs the same on the real
engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tools.mockrun import CapturedResource, MockRun

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def _mappings(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _mappings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _mappings(item)


def release_persists_data(values: Any) -> bool:
    """Chart values that ask for volumes: a ``persistence`` block not disabled, or a
    ``volumeClaimTemplate`` (kube-prometheus-stack's storageSpec, Alertmanager's storage)."""
    for mapping in _mappings(values):
        if "volumeClaimTemplate" in mapping:
            return True
        persistence = mapping.get("persistence")
        if isinstance(persistence, dict) and persistence.get("enabled", True) is not False:
            return True
    return False


def holds_data(resource: CapturedResource) -> str | None:
    """Why deleting the resource loses data, or None."""
    if resource.type == RELEASE_TYPE:
        if release_persists_data(resource.inputs.get("values")):
            return f"Helm release of {resource.inputs.get('chart')} with persistent volumes"
        return None
    if not resource.is_kubernetes_object:
        return None
    kind = resource.kind
    if kind in ("PersistentVolumeClaim", "PersistentVolume"):
        return "a volume"
    if kind == "Namespace":
        return "a namespace: deleting it deletes every PVC in it"
    if kind == "StorageClass":
        return "a storage class: its reclaim policy decides what happens to released volumes"
    if kind == "StatefulSet":
        spec = resource.inputs.get("spec") or {}
        policy = spec.get("persistentVolumeClaimRetentionPolicy") or {}
        if spec.get("volumeClaimTemplates") and policy.get("whenDeleted", "Retain") != "Retain":
            return "a StatefulSet whose claims are deleted with it"
    return None


def kept(resource: CapturedResource) -> bool:
    return bool(resource.options.get("protect") or resource.options.get("retainOnDelete"))


def destroy_deletes(run: MockRun[Any]) -> list[CapturedResource]:
    """What ``pulumi destroy`` would delete: custom resources neither protected nor retained."""
    return [r for r in run.resources if r.custom and not kept(r)]


def data_lost_on_destroy(run: MockRun[Any], *, releases: bool) -> list[str]:
    lost = []
    for resource in destroy_deletes(run):
        if (resource.type == RELEASE_TYPE) != releases:
            continue
        why = holds_data(resource)
        if why is not None:
            lost.append(f"{resource.type} {resource.name}: {why}")
    return lost


def test_destroy_on_prod_deletes_no_volume_namespace_or_storage_class(prod_run) -> None:
    deleted = destroy_deletes(prod_run)
    assert deleted, "nothing to destroy: the computation is broken"
    assert not data_lost_on_destroy(prod_run, releases=False)


def test_destroy_on_prod_keeps_the_monitoring_data(prod_run) -> None:
    assert not data_lost_on_destroy(prod_run, releases=True)


def test_the_computation_finds_data_where_nothing_is_protected(dev_run) -> None:
    """Dev protects nothing: its PVCs, namespaces and storage classes are in the destroy set."""
    lost = data_lost_on_destroy(dev_run, releases=False)
    for kind in ("PersistentVolumeClaim", "Namespace", "StorageClass"):
        assert any(f":{kind}" in line for line in lost), (kind, lost)
    assert data_lost_on_destroy(dev_run, releases=True)


def test_prod_protects_or_retains_every_data_holding_object(prod_run) -> None:
    """Every PVC is protected (destroy and replacement need a deliberate unprotect); every
    namespace and storage class is retained; the program has no PersistentVolumes of its own."""
    seen: set[str] = set()
    for resource in prod_run.kubernetes_objects():
        if resource.kind == "PersistentVolumeClaim":
            assert resource.options["protect"], resource.name
        elif resource.kind in ("Namespace", "StorageClass"):
            assert kept(resource), resource.name
        else:
            continue
        seen.add(resource.kind)
    assert seen == {"PersistentVolumeClaim", "Namespace", "StorageClass"}


def test_prod_storage_classes_retain_released_volumes(prod_run) -> None:
    classes = [r for r in prod_run.kubernetes_objects() if r.kind == "StorageClass"]
    assert classes
    for storage_class in classes:
        assert storage_class.inputs.get("reclaimPolicy") == "Retain", storage_class.name


def test_prod_statefulsets_keep_their_claims(prod_run) -> None:
    """Claims outlive the StatefulSet on delete and on scale-down (whenDeleted/whenScaled)."""
    with_claims = [
        r
        for r in prod_run.kubernetes_objects()
        if r.kind == "StatefulSet" and (r.inputs.get("spec") or {}).get("volumeClaimTemplates")
    ]
    assert with_claims, "prod renders no StatefulSet with claims: nothing proved"
    for statefulset in with_claims:
        policy = statefulset.inputs["spec"].get("persistentVolumeClaimRetentionPolicy")
        assert policy == {"whenDeleted": "Retain", "whenScaled": "Retain"}, statefulset.name


def dependency_closure(run: MockRun[Any], urn: str) -> set[str]:
    """What the engine counts ``urn`` as depending on, transitively: its parent, provider,
    ``dependsOn`` and property dependencies. A destroy deletes a resource only after all that
    depends on it; ``--exclude-protected`` keeps a protected resource with all of this."""
    by_urn = {r.urn: r for r in run.resources}
    closure: set[str] = set()
    pending = [urn]
    while pending:
        resource = by_urn.get(pending.pop())
        if resource is None:
            continue
        provider = (resource.options.get("provider") or "").rsplit("::", 1)[0]
        edges = [resource.parent, provider, *resource.options.get("dependsOn", [])]
        edges += [u for urns in resource.property_dependencies.values() for u in urns]
        for edge in edges:
            if edge and edge not in closure:
                closure.add(edge)
                pending.append(edge)
    return closure


def test_prod_destroy_reaches_every_protected_resource(prod_run) -> None:
    """``pulumi destroy`` names (and refuses on) a protected resource only once it has reached
    it: a protected claim that another protected resource depends on is not named. So none may
    depend on another (a job's own checkpoint claim used to, through its component, on the
    team's dataset claim)."""
    protected = {r.urn for r in prod_run.resources if r.options.get("protect")}
    assert protected
    for urn in protected:
        assert not dependency_closure(prod_run, urn) & protected, urn


def test_prod_data_depends_on_nothing_a_teardown_removes(prod_run) -> None:
    """A protected claim depends on its namespace (retained), components and the provider only:
    ``pulumi destroy --exclude-protected`` then removes everything else, instead of keeping the
    queue, the Kueue release and a team's tenancy because a claim's parent waited for them."""
    by_urn = {r.urn: r for r in prod_run.resources}
    claims = [r for r in prod_run.kubernetes_objects() if r.kind == "PersistentVolumeClaim"]
    for claim in claims:
        needs = [by_urn[u] for u in dependency_closure(prod_run, claim.urn) if u in by_urn]
        removable = [
            r.name
            for r in needs
            if r.custom
            and not r.type.startswith("pulumi:providers:")
            and not r.options.get("retainOnDelete")
        ]
        assert not removable, (claim.name, removable)
        assert any(r.kind == "Namespace" for r in needs), claim.name  # it still waits for it


def test_release_detection() -> None:
    """The values heuristics, on the shapes our charts use."""
    assert release_persists_data({"grafana": {"persistence": {"enabled": True, "type": "pvc"}}})
    assert release_persists_data({"write": {"persistence": {"size": "50Gi"}}})
    assert release_persists_data({"p": {"storageSpec": {"volumeClaimTemplate": {"spec": {}}}}})
    assert not release_persists_data({"grafana": {"persistence": {"enabled": False}}})
    assert not release_persists_data({"driver": {"enabled": False}})
