"""The destroy section's verdicts, without a cluster: what a refused destroy names, what stays
protected, what ``--exclude-protected`` keeps, what counts as lost data, and how each object the
stack made is judged after a teardown."""

from __future__ import annotations

from typing import Any

from tools.e2e.day2_destroy import (
    PVC_TYPE,
    DataSnapshot,
    data_losses,
    import_file,
    kept_by_exclude_protected,
    kubectl_resource,
    protected_claims,
    refused_urns,
    state_resources,
    still_protected,
    teardown,
    unmanaged_data,
    unprotect_targets,
    wait_for,
)

P = "urn:pulumi:prod::ai-platform::"
STACK = f"{P}pulumi:pulumi:Stack::ai-platform-prod"
PROVIDER = f"{P}pulumi:providers:kubernetes::gpu-prod-cluster"
TEAM = f"{P}aiplatform:tenancy:TeamNamespace::research"
NAMESPACE = f"{P}aiplatform:tenancy:TeamNamespace$kubernetes:core/v1:Namespace::research-namespace"
QUOTA = f"{P}aiplatform:tenancy:TeamNamespace$kubernetes:core/v1:ResourceQuota::research-quota"
QUEUE = f"{P}aiplatform:queueing:TeamQueue$kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue::research-q"
JOB_COMPONENT = f"{P}aiplatform:workloads:TrainingJob::research-llama"
CLAIM = f"{P}aiplatform:workloads:TrainingJob$kubernetes:core/v1:PersistentVolumeClaim::research-ck"
JOB = f"{P}aiplatform:workloads:TrainingJob$kubernetes:batch/v1:Job::research-llama-job"
RELEASE = f"{P}aiplatform:monitoring:Loki$kubernetes:helm.sh/v3:Release::monitoring-loki"
PASSWORD = f"{P}random:index/randomPassword:RandomPassword::grafana-admin"


def _raw(urn: str, type_: str, *, custom: bool = True, **fields: Any) -> dict[str, Any]:
    return {"urn": urn, "type": type_, "custom": custom, "parent": STACK, **fields}


def _obj(api_version: str, kind: str, name: str, uid: str, namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, "uid": uid, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def _export(*resources: dict[str, Any]) -> dict[str, Any]:
    return {"version": 3, "deployment": {"resources": list(resources)}}


def _prod_like() -> dict[str, Any]:
    """The shape of the prod state that matters: a training job's checkpoint claim is a child
    of the job component, which depends on the team's queue."""
    provider_ref = f"{PROVIDER}::0b7e"
    k8s: dict[str, Any] = {"provider": provider_ref}
    return _export(
        {"urn": STACK, "type": "pulumi:pulumi:Stack", "custom": False},
        _raw(PROVIDER, "pulumi:providers:kubernetes"),
        _raw(TEAM, "aiplatform:tenancy:TeamNamespace", custom=False),
        _raw(
            NAMESPACE,
            "kubernetes:core/v1:Namespace",
            parent=TEAM,
            retainOnDelete=True,
            outputs=_obj("v1", "Namespace", "research", "ns-1"),
            **k8s,
        ),
        _raw(
            QUOTA,
            "kubernetes:core/v1:ResourceQuota",
            parent=TEAM,
            dependencies=[NAMESPACE],
            outputs=_obj("v1", "ResourceQuota", "quota", "q-1", "research"),
            **k8s,
        ),
        _raw(
            QUEUE,
            "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
            dependencies=[QUOTA],
            outputs=_obj("kueue.x-k8s.io/v1beta2", "LocalQueue", "q", "lq-1", "research"),
            **k8s,
        ),
        _raw(JOB_COMPONENT, "aiplatform:workloads:TrainingJob", custom=False, dependencies=[QUEUE]),
        _raw(
            CLAIM,
            PVC_TYPE,
            parent=JOB_COMPONENT,
            protect=True,
            id="research/ck",
            outputs=_obj("v1", "PersistentVolumeClaim", "ck", "pvc-1", "research"),
            **k8s,
        ),
        _raw(
            JOB,
            "kubernetes:batch/v1:Job",
            parent=JOB_COMPONENT,
            dependencies=[CLAIM],
            outputs=_obj("batch/v1", "Job", "llama", "job-1", "research"),
            **k8s,
        ),
        _raw(
            RELEASE,
            "kubernetes:helm.sh/v3:Release",
            retainOnDelete=True,
            id="logging/loki",
            outputs={"name": "loki"},
            **k8s,
        ),
        _raw(PASSWORD, "random:index/randomPassword:RandomPassword", protect=True),
    )


def test_a_refused_destroy_names_each_protected_urn_as_the_engine_prints_it():
    printed = (
        "Diagnostics:\n"
        "  kubernetes:core/v1:PersistentVolumeClaim (research-ck):\n"
        f'    error: resource "{CLAIM}" cannot be deleted\n'
        "    because it is protected. To unprotect the resource, either remove the `protect` flag"
        " from the resource in your Pulumi program and run `pulumi up`, or use the command:\n"
        f"    `pulumi state unprotect '{CLAIM}'`\n"
        f"  pulumi:pulumi:Stack (ai-platform-prod):\n    error: update failed {STACK}\n"
    )
    assert refused_urns(printed) == {CLAIM}
    assert refused_urns("error: the stack is locked") == set()


def test_the_count_exclude_protected_prints():
    assert (
        still_protected(
            "All unprotected resources were destroyed. There are still 39 "
            "protected resources associated with this stack.\n"
        )
        == 39
    )
    assert still_protected("The resources in the stack have been deleted") is None


def test_the_claims_to_name_are_the_offline_reports_protected_claims():
    report = {
        "resources": [
            {"urn": CLAIM, "type": PVC_TYPE, "options": {"protect": True}},
            {"urn": CLAIM + "2", "type": PVC_TYPE, "options": {"protect": False}},
            {
                "urn": PASSWORD,
                "type": "random:index/randomPassword:RandomPassword",
                "options": {"protect": True},
            },
        ]
    }
    assert protected_claims(report) == {CLAIM}


def test_everything_protected_but_the_claims_is_unprotected():
    resources = state_resources(_prod_like())
    assert unprotect_targets(resources) == [PASSWORD]
    assert unprotect_targets([r for r in resources if r.urn != PASSWORD]) == []


def test_exclude_protected_keeps_the_claim_and_what_it_depends_on_through_its_parent():
    """The engine's rule: protected resources and their transitive dependencies (parent,
    provider, dependsOn, property dependencies); a dependent (the Job) is destroyed."""
    resources = [r for r in state_resources(_prod_like()) if r.urn != PASSWORD]
    kept = kept_by_exclude_protected(resources)
    assert kept == {CLAIM, JOB_COMPONENT, QUEUE, QUOTA, NAMESPACE, TEAM, PROVIDER, STACK}


def test_property_dependencies_and_deleted_with_count_as_dependencies():
    export = _export(
        {"urn": STACK, "type": "pulumi:pulumi:Stack", "custom": False},
        _raw(NAMESPACE, "kubernetes:core/v1:Namespace"),
        _raw(RELEASE, "kubernetes:helm.sh/v3:Release"),
        _raw(
            CLAIM,
            PVC_TYPE,
            protect=True,
            deletedWith=RELEASE,
            propertyDependencies={"metadata": [NAMESPACE], "spec": []},
        ),
    )
    assert kept_by_exclude_protected(state_resources(export)) == {CLAIM, NAMESPACE, RELEASE, STACK}


def test_objects_of_the_state():
    by_urn = {r.urn: r for r in state_resources(_prod_like())}
    claim = by_urn[CLAIM].object
    assert claim is not None and claim.describe() == "PersistentVolumeClaim research/ck"
    assert (claim.uid, claim.type_key) == ("pvc-1", ("v1", "PersistentVolumeClaim"))
    release = by_urn[RELEASE].object
    assert release is not None and release.key == ("logging", "loki")
    assert by_urn[PASSWORD].object is None and by_urn[JOB_COMPONENT].object is None
    assert by_urn[CLAIM].provider == PROVIDER
    assert (
        kubectl_resource("kueue.x-k8s.io/v1beta2", "LocalQueue")
        == "LocalQueue.v1beta2.kueue.x-k8s.io"
    )
    assert kubectl_resource("v1", "ConfigMap") == "ConfigMap"


def _claim(
    namespace: str,
    name: str,
    uid: str,
    phase: str = "Bound",
    volume: str = "",
    storage_class: str = "gp3",
    node: str = "",
) -> dict[str, Any]:
    annotations = {"volume.kubernetes.io/selected-node": node} if node else {}
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "resourceVersion": "1",
            "annotations": annotations,
        },
        "spec": {"volumeName": volume, "storageClassName": storage_class},
        "status": {"phase": phase},
    }


def _volume(
    name: str,
    uid: str,
    claim: str,
    reclaim: str = "Retain",
    phase: str = "Bound",
    storage_class: str = "gp3",
) -> dict[str, Any]:
    namespace, _, claim_name = claim.partition("/")
    return {
        "metadata": {"name": name, "uid": uid},
        "spec": {
            "persistentVolumeReclaimPolicy": reclaim,
            "storageClassName": storage_class,
            "claimRef": {"namespace": namespace, "name": claim_name},
        },
        "status": {"phase": phase},
    }


def _items(*items: dict[str, Any]) -> dict[str, Any]:
    return {"items": list(items)}


def _namespace(name: str, uid: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid}}


def _snapshot(
    claims: list[dict[str, Any]],
    volumes: list[dict[str, Any]],
    namespaces: list[dict[str, Any]],
    reclaim: str = "Retain",
) -> DataSnapshot:
    classes = _items({"metadata": {"name": "gp3"}, "reclaimPolicy": reclaim})
    return DataSnapshot.from_lists(_items(*claims), _items(*volumes), _items(*namespaces), classes)


def test_intact_data_is_no_loss_and_each_kind_of_loss_is_named():
    before = _snapshot(
        [_claim("research", "ck", "pvc-1", volume="pv-1"), _claim("logging", "loki-0", "pvc-2")],
        [_volume("pv-1", "v-1", "research/ck")],
        [_namespace("research", "ns-1"), _namespace("logging", "ns-2"), _namespace("x", "ns-3")],
    )
    assert before.holding_namespaces == {"research", "logging"}
    same = _snapshot(
        [_claim("research", "ck", "pvc-1", volume="pv-1"), _claim("logging", "loki-0", "pvc-2")],
        [_volume("pv-1", "v-1", "research/ck")],
        [_namespace("research", "ns-1"), _namespace("logging", "ns-2")],  # "x" held no claim
    )
    assert data_losses(before, same) == []
    lost = _snapshot(
        [_claim("research", "ck", "pvc-9", volume="pv-1")],
        [_volume("pv-1", "v-1", "research/ck", reclaim="Delete", phase="Released")],
        [_namespace("research", "ns-1")],
    )
    assert data_losses(before, lost) == [
        "PersistentVolumeClaim logging/loki-0: deleted",
        "PersistentVolumeClaim research/ck: recreated (another uid)",
        "PersistentVolume pv-1: reclaim policy Delete, its class gp3 says Retain",
        "PersistentVolume pv-1: Released, was Bound to research/ck",
        "Namespace logging (holds claims): deleted",
    ]


def test_a_claim_is_owed_a_volume_only_when_a_provisioner_would_make_one():
    snapshot = DataSnapshot.from_lists(
        _items(
            _claim("a", "immediate", "1", phase="Pending", storage_class="efs"),
            _claim("a", "late-unused", "2", phase="Pending"),
            _claim("a", "late-chosen", "3", phase="Pending", node="node-1"),
            _claim("a", "static", "4", phase="Pending", storage_class="local"),
            _claim("a", "bound", "5", volume="pv"),
        ),
        _items(),
        _items(),
        _items(),
    )
    provisioners = {
        "efs": "efs.csi.aws.com",
        "gp3": "ebs.csi.aws.com",
        "local": "kubernetes.io/no-provisioner",
    }
    assert snapshot.unsettled(provisioners, late={"gp3"}) == [
        "a/immediate (Pending)",
        "a/late-chosen (Pending)",
    ]


def test_each_object_the_stack_made_is_judged_by_why_it_should_or_should_not_be_there():
    before = state_resources(_prod_like())
    live = {
        ("v1", "Namespace"): {("", "research"): "ns-1"},
        ("v1", "PersistentVolumeClaim"): {("research", "ck"): "pvc-1"},
        ("v1", "ResourceQuota"): {("research", "quota"): "q-other"},  # recreated by someone
        ("batch/v1", "Job"): {},
        ("kueue.x-k8s.io/v1beta2", "LocalQueue"): None,  # its CRD went with Kueue
    }
    result = teardown(
        before,
        in_state={STACK, PROVIDER},
        released=set(),
        live=live,
        releases={("logging", "loki")},
    )
    assert result.problems == ["PersistentVolumeClaim research/ck: still there after destroy"]
    assert result.survivors == [
        "Namespace research: retained (retainOnDelete)",
        "Release logging/loki: retained (retainOnDelete)",
    ]
    assert result.removed == [
        "Job research/llama",
        "LocalQueue research/q",
        "ResourceQuota research/quota",
    ]
    kept = teardown(before, in_state={CLAIM, QUOTA}, released=set(), live=live, releases=set())
    assert "ResourceQuota research/quota (kept in the stack: protected data needs it): gone" in (
        kept.problems
    )
    assert "Release logging/loki (retained (retainOnDelete)): gone" in kept.problems
    assert "PersistentVolumeClaim research/ck: protected" in kept.survivors
    released = teardown(before, in_state=set(), released={CLAIM}, live=live, releases=set())
    assert "PersistentVolumeClaim research/ck: released from the stack (pulumi state delete)" in (
        released.survivors
    )


def test_the_import_file_adopts_each_claim_by_namespace_and_name():
    document = import_file({("search-serving", "models"), ("research", "datasets")})
    assert [r["id"] for r in document["resources"]] == [
        "research/datasets",
        "search-serving/models",
    ]
    assert document["resources"][0]["name"] == "research-datasets"
    assert {r["type"] for r in document["resources"]} == {PVC_TYPE}


def test_waits_are_bounded():
    calls: list[int] = []

    def never_done() -> list[str]:
        calls.append(1)
        return ["still there"]

    assert wait_for(never_done, timeout_s=0.05, poll_s=0.01) == ["still there"]
    assert 1 < len(calls) < 50
    assert wait_for(lambda: [], timeout_s=60) == []


def test_every_claim_and_volume_is_listed_with_whose_it_is():
    data = _snapshot(
        [_claim("research", "ck", "pvc-1", volume="pv-1"), _claim("logging", "loki-0", "pvc-2")],
        [_volume("pv-1", "v-1", "research/ck")],
        [],
    )
    assert unmanaged_data(data, {("research", "ck")}) == [
        "PersistentVolumeClaim logging/loki-0: not the stack's, Bound",
        "PersistentVolumeClaim research/ck: the stack's, Bound to pv-1 (Retain)",
        "PersistentVolume pv-1: Bound to research/ck, Retain, class gp3",
    ]
