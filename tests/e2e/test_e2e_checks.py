"""The e2e's verdicts, without a cluster: preview comparison, read-back, refresh drift, and the
derived stack. Each check is shown to pass what it should and to catch what it should."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.constants import TEAM_LABEL
from infra.autoscaling.config import AutoscalingConfig
from infra.config import validate_platform_config
from tests.harness import stack_config
from tools.e2e.compare import PROVIDER_DEFAULTS, RELEASE, compare
from tools.e2e.readback import check_objects, ray_state, subset_problems, workload_state
from tools.e2e.run import cluster_overrides, drift
from tools.e2e.stack import derive
from tools.records import ENGINE_UNKNOWN, SECRET_MARK

URN = "urn:pulumi:dev::ai-platform::aiplatform:x:Y$kubernetes:core/v1:ConfigMap::cm"


def _report(*resources: dict[str, Any]) -> dict[str, Any]:
    return {"resources": list(resources)}


def _resource(urn: str, type_: str, inputs: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {"urn": urn, "type": type_, "parent": "", "inputs": inputs, "options": options,
            "custom": True}  # fmt: skip


def _preview(*states: dict[str, Any]) -> dict[str, Any]:
    return {
        "steps": [
            {"op": "create", "urn": s["urn"], "newState": {**s, "inputs": s["inputs"]}}
            for s in states
        ]
    }


def test_equal_previews_agree_and_a_changed_input_is_named():
    cm = _resource(URN, "kubernetes:core/v1:ConfigMap", {"data": {"a": "1"}})
    assert compare(_preview(cm), _report(cm)).agree
    changed = {**cm, "inputs": {"data": {"a": "2"}}}
    result = compare(_preview(changed), _report(cm))
    assert not result.agree
    assert result.differences == [f'{URN}: data.a: real "2", offline "1"']


def test_missing_resources_and_unknown_values_are_listed_never_equal():
    cm = _resource(URN, "kubernetes:core/v1:ConfigMap", {"data": {"a": "1"}})
    other = {**cm, "urn": URN + "2"}
    unknown = {**cm, "inputs": {"data": {"a": ENGINE_UNKNOWN}}}
    result = compare(_preview(unknown, other), _report(cm))
    assert result.only_real == [URN + "2"]
    assert result.unknown_in_real == [f"{URN}: data.a"]


def test_release_defaults_count_only_at_the_providers_values():
    urn = URN.replace("core/v1:ConfigMap", "helm.sh/v3:Release")
    mine = _resource(urn, RELEASE, {"chart": "kueue", "compat": "true"})
    real = _resource(urn, RELEASE, {"chart": "kueue", **PROVIDER_DEFAULTS[RELEASE]})
    assert compare(_preview(real), _report(mine)).agree
    linted = {**real, "inputs": {**real["inputs"], "lint": True}}
    assert compare(_preview(linted), _report(mine)).differences == [
        f"{urn}: lint: real true, offline false"
    ]


def test_a_secrets_string_data_is_folded_into_data_as_the_provider_does():
    urn = URN.replace("ConfigMap", "Secret")
    mine = _resource(urn, "kubernetes:core/v1:Secret", {"stringData": {"k": "v"}})
    real = _resource(urn, "kubernetes:core/v1:Secret", {"data": {"k": "dg=="}})
    assert compare(_preview(real), _report(mine)).agree
    secret_real = _resource(urn, "kubernetes:core/v1:Secret", {"data": SECRET_MARK})
    secret_mine = _resource(urn, "kubernetes:core/v1:Secret", {"stringData": SECRET_MARK})
    assert compare(_preview(secret_real), _report(secret_mine)).agree


def test_an_assumed_namespace_is_allowed_only_for_kinds_the_cluster_does_not_serve():
    urn = URN.replace("core/v1:ConfigMap", "kueue.x-k8s.io/v1beta2:ClusterQueue")
    inputs = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
              "metadata": {"name": "q"}}  # fmt: skip
    mine = _resource(urn, "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", inputs)
    real = {**mine, "inputs": {**inputs, "metadata": {"name": "q", "namespace": "default"}}}
    assert not compare(_preview(real), _report(mine)).agree
    result = compare(_preview(real), _report(mine), {"kueue.x-k8s.io/v1beta2/ClusterQueue"})
    assert result.agree and result.assumed_namespaced == [urn]


def test_read_back_accepts_server_additions_and_equal_quantities_only():
    declared = {"spec": {"resources": {"requests": {"memory": "1Gi"}}, "ports": [{"port": 80}]}}
    live = {"spec": {"resources": {"requests": {"memory": "1024Mi"}}, "extra": 1,
                     "ports": [{"port": 80, "protocol": "TCP"}]}}  # fmt: skip
    assert list(subset_problems(declared, live)) == []
    changed = {"spec": {"resources": {"requests": {"memory": "2Gi"}}, "ports": []}}
    assert list(subset_problems(declared, changed)) == [
        "spec.resources.requests.memory: declared '1Gi', live '2Gi'",
        "spec.ports: declared 1 items, live 0",
    ]


class _Cluster:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    def get_json(self, *args: str) -> Any:
        return {"items": self.items}


def test_read_back_leaves_what_a_component_says_another_controller_owns():
    inputs = {"apiVersion": "batch/v1", "kind": "Job",
              "metadata": {"name": "j", "namespace": "t"}, "spec": {"suspend": True}}  # fmt: skip
    live = {"kind": "Job", "metadata": {"name": "j", "namespace": "t"}, "spec": {"suspend": False}}
    job = _resource(URN, "kubernetes:batch/v1:Job", inputs)
    problems, checked = check_objects(_Cluster([live]), _report(job))
    assert checked == 1 and problems == [
        "Job.v1.batch t/j: spec.suspend: declared True, live False"
    ]
    owned = _resource(URN, "kubernetes:batch/v1:Job", inputs, ignoreChanges=["spec.suspend"])
    assert check_objects(_Cluster([live]), _report(owned)) == ([], 1)
    assert check_objects(_Cluster([]), _report(owned))[0] == ["Job.v1.batch t/j: not on the server"]


class _Workloads:
    """Nodes, pods and one live object per ``kubectl get`` of a kind."""

    def __init__(self, pods: list[dict[str, Any]], live: dict[str, Any]) -> None:
        self.pods, self.live = pods, live

    def get_json(self, *args: str) -> Any:
        if args[0] == "nodes":
            return {"items": [{"metadata": {"name": "cpu-1", "labels": {}}}]}
        if args[0] == "pods":
            return {"items": self.pods}
        return self.live


def test_a_statefulset_is_placed_and_counted_like_a_deployment():
    labels = {"aiplatform.io/team": "research", "app.kubernetes.io/name": "team-redis"}
    template = {"metadata": {"labels": labels}, "spec": {}}
    inputs = {"apiVersion": "apps/v1", "kind": "StatefulSet",
              "metadata": {"name": "team-redis", "namespace": "research", "labels": labels},
              "spec": {"replicas": 1, "template": template}}  # fmt: skip
    report = _report(_resource(URN, "kubernetes:apps/v1:StatefulSet", inputs))
    pod = {"metadata": {"name": "team-redis-0", "namespace": "research", "labels": labels},
           "spec": {"nodeName": "cpu-1"}, "status": {"phase": "Running"}}  # fmt: skip
    where = "StatefulSet research/team-redis"
    none = workload_state(_Workloads([], {"spec": {"replicas": 1}}), report)
    assert none == ([f"{where}: no pods"], [], False)
    unready = _Workloads([pod], {"spec": {"replicas": 1}, "status": {"readyReplicas": 0}})
    assert workload_state(unready, report) == ([f"{where}: 0/1 replicas ready"], [], False)
    ready = _Workloads([pod], {"spec": {"replicas": 1}, "status": {"readyReplicas": 1}})
    assert workload_state(ready, report) == ([], [f"{where}: 1/1 ready on pool (any)"], True)


def test_refresh_drift_is_allowed_only_under_declared_paths():
    preview = {"steps": [
        {"op": "update", "urn": "a", "detailedDiff": {"spec.suspend": {}}},
        {"op": "update", "urn": "b", "detailedDiff": {"spec.replicas": {}}},
        {"op": "same", "urn": "c"},
    ]}  # fmt: skip
    problems, owned = drift(preview, {"a": ["spec.suspend"], "b": ["spec.template"]})
    assert owned == ["a: spec.suspend (update)"]
    assert problems == ["b: spec.replicas (update)"]


def test_the_e2e_stack_differs_from_its_source_only_as_listed(tmp_path: Path):
    source = tmp_path / "Pulumi.dev.yaml"
    source.write_text(
        (Path(__file__).resolve().parents[2] / "Pulumi.prod.yaml").read_text(encoding="utf-8")
    )
    stack = derive(
        "dev",
        work_dir=tmp_path / "e2e",
        overrides={"charts": ({"source": "directory", "directory": "/m"}, "mirror")},
        source=source,
    )
    written = yaml.safe_load(stack.stack_file.read_text(encoding="utf-8"))["config"]
    original = yaml.safe_load(source.read_text(encoding="utf-8"))["config"]
    secrets = [c.key for c in stack.secrets]
    assert secrets and all(
        k.startswith("ai-platform:monitoring.alertmanager.receivers[") for k in secrets
    )
    assert "secure:" not in stack.stack_file.read_text(encoding="utf-8")
    assert written["ai-platform:charts"] == {"source": "directory", "directory": "/m"}
    untouched = set(original) - {"ai-platform:monitoring", "ai-platform:charts"}
    assert {k: written[k] for k in untouched} == {k: original[k] for k in untouched}
    assert (stack.project_dir / "infra").resolve() == Path(__file__).resolve().parents[2] / "infra"


def test_the_e2e_project_reads_the_same_workload_files_as_the_source(tmp_path: Path):
    """A stack with ``workloadFiles``: the e2e project links their folder from beside the source
    stack file, and the derived stack file passes the same checks with the same workloads."""
    from bench.synthetic import synthetic_config, write_stack_file
    from infra.config import StackFile

    source = write_stack_file(tmp_path / "src", "big", synthetic_config(6), workload_files=True)
    stack = derive("big", work_dir=tmp_path / "e2e", overrides={}, source=source)
    link = stack.project_dir / "workloads"
    assert link.is_symlink() and link.resolve() == (tmp_path / "src" / "workloads").resolve()
    derived = StackFile(stack.stack_file).platform_config().workloads
    assert derived == StackFile(source).platform_config().workloads and len(derived) == 6


def test_a_nested_override_changes_only_its_leaf_and_keda_only_where_installed(tmp_path: Path):
    """KEDA's webhooks are KWOK pods in the e2e: a stack with KEDA gets their failure policy as
    one listed difference, keeping every other KEDA setting; a stack without KEDA gets none."""
    root = Path(__file__).resolve().parents[2]
    prod = validate_platform_config(stack_config("prod"), "Pulumi.prod.yaml")
    overrides = cluster_overrides(Path("/m"), Path("/k"), prod)
    stack = derive("prod", work_dir=tmp_path / "e2e", overrides=overrides)
    written = yaml.safe_load(stack.stack_file.read_text(encoding="utf-8"))["config"]
    original = yaml.safe_load((root / "Pulumi.prod.yaml").read_text(encoding="utf-8"))["config"]
    keda = dict(original["ai-platform:autoscaling"]["keda"], webhookFailurePolicy="Ignore")
    assert written["ai-platform:autoscaling"] == {
        **original["ai-platform:autoscaling"],
        "keda": keda,
    }
    changed = [c.key for c in stack.changes if not c.secret]
    assert changed == [
        "ai-platform:cluster.kubeconfig",
        "ai-platform:charts",
        "ai-platform:autoscaling.keda.webhookFailurePolicy",
    ]
    without = prod.model_copy(update={"autoscaling": AutoscalingConfig()})
    assert "autoscaling" not in cluster_overrides(Path("/m"), Path("/k"), without)


def _ray_cluster_resource() -> dict[str, Any]:
    inputs = {"apiVersion": "ray.io/v1", "kind": "RayCluster",
              "metadata": {"name": "ray-lab", "namespace": "research",
                           "labels": {TEAM_LABEL: "research"}},
              "spec": {}}  # fmt: skip
    return _resource(URN, "kubernetes:ray.io/v1:RayCluster", inputs)


def _kueue_workload(condition: dict[str, Any], admission: dict[str, Any] | None) -> dict[str, Any]:
    status: dict[str, Any] = {"conditions": [condition]}
    if admission:
        status["admission"] = admission
    return {
        "metadata": {
            "name": "raycluster-ray-lab-1a2b3",
            "ownerReferences": [{"kind": "RayCluster", "name": "ray-lab"}],
        },
        "spec": {"podSets": [{"name": "head", "count": 1}, {"name": "workers", "count": 1}]},
        "status": status,
    }


def test_a_ray_cluster_is_read_back_as_its_kueue_workload():
    admitted = _kueue_workload(
        {"type": "Admitted", "status": "True"}, {"clusterQueue": "team-research"}
    )
    problems, facts, settled = ray_state(_Cluster([admitted]), _report(_ray_cluster_resource()))
    assert (problems, settled) == ([], True)
    assert facts == [
        "RayCluster research/ray-lab: Kueue Workload raycluster-ray-lab-1a2b3 (head x 1, "
        "workers x 1) admitted by ClusterQueue team-research; no Ray pods (the KubeRay operator "
        "runs on a fake node)"
    ]
    pending = _kueue_workload(
        {"type": "QuotaReserved", "status": "False", "message": "insufficient quota"}, None
    )
    assert (
        "pending: insufficient quota"
        in ray_state(_Cluster([pending]), _report(_ray_cluster_resource()))[1][0]
    )
    assert ray_state(_Cluster([]), _report(_ray_cluster_resource())) == (
        ["RayCluster research/ray-lab: Kueue has no Workload for it"],
        [],
        False,
    )
