"""The KubeRay operator: pinned chart, restricted and default-deny namespace, secure values."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import (
    KUBERAY_CHART,
    KUBERAY_CHART_REPO,
    KUBERAY_CHART_VERSION,
    KUBERAY_NAMESPACE,
    KUBERAY_RELEASE,
    PSA_ENFORCE_LABEL,
    RAY_DASHBOARD_PORT,
    TEAM_LABEL,
)
from components.kuberay import OPERATOR_METRICS_PORT, OPERATOR_POD_LABELS
from components.kueue import KUEUE_FRAMEWORKS
from infra.config import ConfigError, validate_platform_config
from tests.harness import run_stack, stack_config
from tools.mockrun import MockRun

RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture(scope="module")
def dev_run() -> MockRun[Any]:
    return run_stack("dev")


def _release(run: MockRun[Any]) -> Any:
    [release] = [r for r in run.by_type(RELEASE) if r.inputs["name"] == KUBERAY_RELEASE]
    return release


def test_the_operator_is_installed_from_the_pinned_chart(dev_run: MockRun[Any]) -> None:
    inputs = _release(dev_run).inputs
    assert (inputs["chart"], inputs["version"]) == (KUBERAY_CHART, KUBERAY_CHART_VERSION)
    assert inputs["repositoryOpts"]["repo"] == KUBERAY_CHART_REPO
    assert inputs["namespace"] == KUBERAY_NAMESPACE
    assert inputs["skipAwait"] is False
    assert "image" not in inputs["values"]  # the chart's own, v<chart version>


def test_the_operator_pod_is_restricted(dev_run: MockRun[Any]) -> None:
    values = _release(dev_run).inputs["values"]
    pod, container = values["podSecurityContext"], values["securityContext"]
    assert pod == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container["allowPrivilegeEscalation"] is False
    assert container["capabilities"] == {"drop": ["ALL"]}
    assert container["readOnlyRootFilesystem"] is True
    requests, limits = values["resources"]["requests"], values["resources"]["limits"]
    assert requests["memory"] == limits["memory"]
    namespace = dev_run.find("Namespace", KUBERAY_NAMESPACE)
    assert namespace.metadata["labels"][PSA_ENFORCE_LABEL] == "restricted"


def test_the_namespace_denies_by_default_and_opens_by_name(dev_run: MockRun[Any]) -> None:
    policies = {
        p.metadata["name"]: p.inputs["spec"]
        for p in dev_run.by_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if p.metadata.get("namespace") == KUBERAY_NAMESPACE
    }
    assert policies["default-deny-all"] == {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
    }
    assert {"allow-dns-egress", "allow-apiserver-egress"} <= set(policies)
    [rule] = policies["kuberay-operator-egress"]["egress"]
    assert policies["kuberay-operator-egress"]["podSelector"]["matchLabels"] == OPERATOR_POD_LABELS
    assert rule["ports"] == [{"protocol": "TCP", "port": RAY_DASHBOARD_PORT}]
    [peer] = rule["to"]
    assert peer["namespaceSelector"]["matchExpressions"] == [
        {"key": TEAM_LABEL, "operator": "Exists"}
    ]
    [ingress] = policies["kuberay-operator-metrics"]["ingress"]
    assert ingress["ports"] == [{"protocol": "TCP", "port": OPERATOR_METRICS_PORT}]


def test_kueue_manages_ray_clusters_and_ray_jobs() -> None:
    assert {"ray.io/raycluster", "ray.io/rayjob"} <= set(KUEUE_FRAMEWORKS)


def test_off_by_default_installs_nothing() -> None:
    config = stack_config("dev")
    del config["ray"]
    config["workloads"] = [w for w in config["workloads"] if not w["kind"].startswith("ray-")]
    run = run_stack(config)
    assert not [r for r in run.by_type(RELEASE) if r.inputs["name"] == KUBERAY_RELEASE]
    assert not [
        o for o in run.kubernetes_objects() if o.metadata.get("namespace") == KUBERAY_NAMESPACE
    ]


def _errors(**changes: Any) -> list[str]:
    config = stack_config("dev")
    config.update(changes)
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, "Pulumi.dev.yaml")
    return [f"{i.key_path}: {i.message}" for i in caught.value.issues]


def test_the_operator_namespace_is_not_a_team_namespace() -> None:
    assert _errors(ray={"enabled": True, "namespace": "research"}) == [
        "ai-platform:ray.namespace: 'research' is the namespace of team 'research'; the "
        "operator needs a namespace of its own"
    ]


def test_a_team_cannot_take_the_operator_namespace() -> None:
    config = stack_config("dev")
    config["teams"][0]["namespace"] = KUBERAY_NAMESPACE
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, "Pulumi.dev.yaml")
    assert next(i.message for i in caught.value.issues) == (
        f"namespace {KUBERAY_NAMESPACE!r} is reserved for the system or the platform"
    )


def test_the_service_monitor_needs_monitoring() -> None:
    assert _errors(
        ray={"enabled": True, "serviceMonitor": True}, monitoring={"enabled": False}
    ) == [
        # The stack's Prometheus adapter needs monitoring too.
        "ai-platform:autoscaling.prometheusAdapter.enabled: prometheus-adapter answers from the "
        "platform's Prometheus, which ai-platform:monitoring.enabled false does not install: "
        "enable monitoring, or turn the adapter off",
        "ai-platform:ray.serviceMonitor: needs the Prometheus operator's CRDs: turn monitoring "
        "on or serviceMonitor off",
    ]


def test_ray_workloads_need_the_operator() -> None:
    assert _errors(ray={"enabled": False}) == [
        "ai-platform:workloads[ray-lab].kind: a ray-cluster needs the KubeRay operator: set "
        "ai-platform:ray.enabled to true",
        "ai-platform:workloads[ray-sweep].kind: a ray-job needs the KubeRay operator: set "
        "ai-platform:ray.enabled to true",
    ]
