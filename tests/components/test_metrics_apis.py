"""metrics-server and prometheus-adapter: what the HPAs read, installed by the platform.

Rendered under mocks from the checked-in stacks (and variations of them): the releases and their
values, the adapter's rules derived from the workloads' custom metrics, the HPAs' metrics, and
who reaches the two metrics APIs (tools/netpol.py on the rendered prod policies).
"""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import (
    APP_NAME_LABEL,
    METRICS_SERVER_NAMESPACE,
    METRICS_SERVER_PORT,
    METRICS_SERVER_RELEASE,
    MONITORING_NAMESPACE,
    PROMETHEUS_ADAPTER_NAMESPACE,
    PROMETHEUS_ADAPTER_PORT,
    PROMETHEUS_ADAPTER_RELEASE,
)
from components.metrics_server import MetricsServerArgs
from components.metrics_server import chart_values as metrics_server_values
from components.monitoring.constants import (
    COMPONENT_GRAFANA,
    COMPONENT_PROMETHEUS,
    KUBELET_PORT,
    MONITORING_COMPONENT_LABEL,
    NODE_EXPORTER_PORT,
    PROMETHEUS_PORT,
)
from components.prometheus_adapter import METRICS_QUERY, PrometheusAdapterArgs, adapter_rules
from components.prometheus_adapter import chart_values as adapter_values
from tests.harness import run_stack
from tools.mockrun import MockRun
from tools.netpol import Cluster, ContainerPort, Endpoint, kube_dns

RELEASE = "kubernetes:helm.sh/v3:Release"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
API_SERVER = "10.0.12.7"
NODE = "10.0.40.5"
"""Inside prod's apiServerCidrs and nodeCidrs (both 10.0.0.0/16)."""
PROMETHEUS_URL = "http://kps-prometheus.monitoring.svc.cluster.local:9090"


def release(run: MockRun[Any], name: str) -> dict[str, Any]:
    [found] = [r.inputs for r in run.by_type(RELEASE) if r.inputs["name"] == name]
    return found


def releases(run: MockRun[Any]) -> set[str]:
    return {r.inputs["name"] for r in run.by_type(RELEASE)}


# --- metrics-server ------------------------------------------------------------------------------
def test_metrics_server_is_installed_by_default_and_off_only_when_said(dev_config) -> None:
    assert METRICS_SERVER_RELEASE in releases(run_stack(dev_config))
    dev_config["autoscaling"]["metricsServer"] = {"enabled": False}
    run = run_stack(dev_config)
    assert METRICS_SERVER_RELEASE not in releases(run)
    assert not [
        r for r in run.kubernetes_objects() if r.metadata.get("name") == METRICS_SERVER_NAMESPACE
    ]


def test_metrics_server_release_in_its_restricted_namespace(dev_run: MockRun[Any]) -> None:
    inputs = release(dev_run, METRICS_SERVER_RELEASE)
    assert inputs["namespace"] == METRICS_SERVER_NAMESPACE
    labels = dev_run.find("Namespace", METRICS_SERVER_NAMESPACE).metadata["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    values = inputs["values"]
    assert values["replicas"] == 1
    assert "args" not in values
    assert values["podDisruptionBudget"] == {"enabled": False, "maxUnavailable": 1}


def test_two_metrics_servers_get_a_budget_that_lets_one_go(prod_run: MockRun[Any]) -> None:
    values = release(prod_run, METRICS_SERVER_RELEASE)["values"]
    assert values["replicas"] == 2
    # One of the two keys only: the chart renders both when both are set.
    assert values["podDisruptionBudget"] == {"enabled": True, "maxUnavailable": 1}


def test_kubelet_insecure_tls_only_when_asked() -> None:
    assert metrics_server_values(MetricsServerArgs(kubelet_insecure_tls=True))["args"] == [
        "--kubelet-insecure-tls"
    ]
    with pytest.raises(ValueError, match="replicas"):
        MetricsServerArgs(replicas=0)


# --- prometheus-adapter --------------------------------------------------------------------------
def test_adapter_serves_exactly_the_workloads_custom_metrics(dev_run: MockRun[Any]) -> None:
    values = release(dev_run, PROMETHEUS_ADAPTER_RELEASE)["values"]
    assert values["rules"] == {
        "default": False,
        "custom": [
            {
                "seriesQuery": 'vllm_num_requests_waiting{namespace!="",pod!=""}',
                "resources": {
                    "overrides": {
                        "namespace": {"resource": "namespace"},
                        "pod": {"resource": "pod"},
                    }
                },
                "name": {
                    "matches": "^vllm_num_requests_waiting$",
                    "as": "vllm_num_requests_waiting",
                },
                "metricsQuery": METRICS_QUERY,
            }
        ],
    }
    # Neither resource nor external rules: metrics-server and KEDA serve those APIs, and the
    # chart registers an APIService only for the rule kinds it is given.
    assert "resource" not in values["rules"] and "external" not in values["rules"]


def test_adapter_points_at_the_platform_prometheus(dev_run: MockRun[Any]) -> None:
    inputs = release(dev_run, PROMETHEUS_ADAPTER_RELEASE)
    assert inputs["namespace"] == PROMETHEUS_ADAPTER_NAMESPACE
    assert inputs["values"]["prometheus"] == {
        "url": "http://kps-prometheus.monitoring.svc.cluster.local",
        "port": PROMETHEUS_PORT,
        "path": "",
    }


def test_rules_follow_the_metrics_one_each_sorted() -> None:
    rules = adapter_rules(["b_waiting", "a_tokens", "b_waiting"])
    assert [rule["name"]["as"] for rule in rules] == ["a_tokens", "b_waiting"]
    assert adapter_rules([]) == []
    no_metrics = adapter_values(PrometheusAdapterArgs(prometheus_url=PROMETHEUS_URL))
    assert no_metrics["rules"] == {"default": False}


def test_two_adapters_get_the_charts_budget(prod_run: MockRun[Any]) -> None:
    values = release(prod_run, PROMETHEUS_ADAPTER_RELEASE)["values"]
    assert values["replicas"] == 2
    # The chart's own maxUnavailable: 1 applies; setting minAvailable too would render both.
    assert values["podDisruptionBudget"] == {"enabled": True}


def test_adapter_args_are_checked() -> None:
    with pytest.raises(ValueError, match="not an http"):
        PrometheusAdapterArgs(prometheus_url="kps-prometheus:9090")
    with pytest.raises(ValueError, match="replicas"):
        PrometheusAdapterArgs(prometheus_url=PROMETHEUS_URL, replicas=0)
    values = adapter_values(PrometheusAdapterArgs(prometheus_url="https://prom.example/api/"))
    assert values["prometheus"] == {"url": "https://prom.example", "port": 443, "path": "/api"}


def test_adapter_off_renders_nothing_of_it(dev_config) -> None:
    dev_config["autoscaling"]["prometheusAdapter"] = {"enabled": False}
    for workload in dev_config["workloads"]:
        (workload.get("inference") or {}).pop("customMetric", None)
    run = run_stack(dev_config)
    assert PROMETHEUS_ADAPTER_RELEASE not in releases(run)
    prometheus = run.find("NetworkPolicy", "prometheus", MONITORING_NAMESPACE).inputs["spec"]
    [query] = [rule for rule in prometheus["ingress"] if rule["ports"][0]["port"] == 9090]
    assert len(query["from"]) == 2  # Grafana and Prometheus only


# --- the HPAs ------------------------------------------------------------------------------------
def _metrics(run: MockRun[Any], name: str) -> list[dict[str, Any]]:
    [hpa] = [r.inputs for r in run.by_type(HPA) if r.inputs["metadata"]["name"] == name]
    return hpa["spec"]["metrics"]


def test_inference_hpas_scale_on_cpu_and_memory_at_80_percent(dev_run: MockRun[Any]) -> None:
    resources = [m["resource"] for m in _metrics(dev_run, "embeddings")]
    assert resources == [
        {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
        {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 80}},
    ]
    kinds = [m["type"] for m in _metrics(dev_run, "llm-chat")]
    assert kinds == ["Resource", "Resource", "Pods"]


def test_a_memory_target_can_be_dropped(dev_config) -> None:
    dev_config["workloads"][3]["inference"]["targetMemoryUtilization"] = None
    run = run_stack(dev_config)
    assert [m["resource"]["name"] for m in _metrics(run, "embeddings")] == ["cpu"]


# --- who reaches them ----------------------------------------------------------------------------
METRICS_SERVER_POD = Endpoint(
    name="metrics-server",
    namespace=METRICS_SERVER_NAMESPACE,
    labels={APP_NAME_LABEL: "metrics-server"},
    ports=(ContainerPort(METRICS_SERVER_PORT),),
)
ADAPTER_POD = Endpoint(
    name="prometheus-adapter",
    namespace=PROMETHEUS_ADAPTER_NAMESPACE,
    labels={APP_NAME_LABEL: "prometheus-adapter"},
    ports=(ContainerPort(PROMETHEUS_ADAPTER_PORT),),
)
PROMETHEUS = Endpoint(
    name="prometheus",
    namespace=MONITORING_NAMESPACE,
    labels={MONITORING_COMPONENT_LABEL: COMPONENT_PROMETHEUS},
    ports=(ContainerPort(PROMETHEUS_PORT),),
)
GRAFANA = Endpoint(
    name="grafana",
    namespace=MONITORING_NAMESPACE,
    labels={MONITORING_COMPONENT_LABEL: COMPONENT_GRAFANA},
)
INTRUDER = Endpoint(name="intruder", namespace="research", labels={"app": "x"})


@pytest.fixture(scope="module")
def prod(prod_run: MockRun[Any]) -> Cluster:
    endpoints = [
        kube_dns(),
        METRICS_SERVER_POD,
        ADAPTER_POD,
        PROMETHEUS,
        GRAFANA,
        INTRUDER,
        Endpoint.external(API_SERVER, ports=[ContainerPort(443), ContainerPort(6443)]),
        Endpoint.external(
            NODE, ports=[ContainerPort(KUBELET_PORT), ContainerPort(NODE_EXPORTER_PORT)]
        ),
        Endpoint.external("8.8.8.8", ports=[ContainerPort(KUBELET_PORT)]),
    ]
    return Cluster.from_manifests([r.inputs for r in prod_run.kubernetes_objects()], endpoints)


def test_the_api_server_reaches_both_metrics_apis_and_nothing_else_does(prod: Cluster) -> None:
    api_server = prod.endpoint(API_SERVER)
    assert prod.can_connect(api_server, METRICS_SERVER_POD, METRICS_SERVER_PORT).allowed
    assert prod.can_connect(api_server, ADAPTER_POD, PROMETHEUS_ADAPTER_PORT).allowed
    for source in (INTRUDER, PROMETHEUS, GRAFANA):
        assert not prod.can_connect(source, METRICS_SERVER_POD, METRICS_SERVER_PORT).allowed
        assert not prod.can_connect(source, ADAPTER_POD, PROMETHEUS_ADAPTER_PORT).allowed


def test_metrics_server_reaches_the_kubelets_only(prod: Cluster) -> None:
    node = prod.endpoint(NODE)
    assert prod.can_connect(METRICS_SERVER_POD, node, KUBELET_PORT).allowed
    assert not prod.can_connect(METRICS_SERVER_POD, node, NODE_EXPORTER_PORT).allowed
    assert not prod.can_connect(METRICS_SERVER_POD, prod.endpoint("8.8.8.8"), KUBELET_PORT).allowed
    assert not prod.can_connect(METRICS_SERVER_POD, PROMETHEUS, PROMETHEUS_PORT).allowed
    assert prod.can_connect(METRICS_SERVER_POD, prod.endpoint(API_SERVER), 443).allowed


def test_the_adapter_queries_prometheus_and_nothing_else(prod: Cluster) -> None:
    assert prod.can_connect(ADAPTER_POD, PROMETHEUS, PROMETHEUS_PORT).allowed
    assert not prod.can_connect(ADAPTER_POD, prod.endpoint(NODE), KUBELET_PORT).allowed
    assert not prod.can_connect(ADAPTER_POD, GRAFANA, 3000).allowed
    assert not prod.can_connect(INTRUDER, PROMETHEUS, PROMETHEUS_PORT).allowed
    assert prod.can_connect(ADAPTER_POD, prod.endpoint(API_SERVER), 443).allowed
    assert prod.can_connect(ADAPTER_POD, "kube-system/kube-dns", 53, "UDP").allowed
