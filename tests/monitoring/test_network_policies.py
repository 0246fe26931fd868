"""The monitoring and logging NetworkPolicies allow scraping and log shipping, and nothing more.

Evaluated with tools/netpol.py over the manifests the component renders. Chart pods are not in
those manifests (Helm renders them in the cluster), so they are stood in for by endpoints with
the ``aiplatform.io/monitoring-component`` labels the chart values give them (asserted in
test_stack.py) and the charts' container ports.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.constants import (
    DEFAULT_DENY_POLICY_NAME,
    TEAM_LABEL,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_LABEL,
)
from components.monitoring.constants import (
    DCGM_EXPORTER_SERVICE_LABELS,
    KUEUE_POD_LABELS,
    MONITORING_COMPONENT_LABEL,
)
from tests.monitoring.conftest import prod_with_known_secrets, release_values, render_monitoring
from tools.mockrun import MockRun
from tools.netpol import Cluster, ContainerPort, Endpoint, kube_dns

API_SERVER = "10.0.0.1"
OBJECT_STORE = "52.219.170.10"
INTERNET = "203.0.113.10"


def pod(namespace: str, name: str, labels: dict[str, str], *ports: tuple[int, str]) -> Endpoint:
    return Endpoint(
        name=name,
        namespace=namespace,
        labels=labels,
        ports=tuple(ContainerPort(port, "TCP", port_name) for port, port_name in ports),
    )


def component(namespace: str, name: str, *ports: tuple[int, str]) -> Endpoint:
    return pod(namespace, name, {MONITORING_COMPONENT_LABEL: name}, *ports)


ENDPOINTS = (
    component("monitoring", "prometheus", (9090, "http-web"), (8080, "reloader-web")),
    component("monitoring", "grafana", (3000, "grafana")),
    component("monitoring", "alertmanager", (9093, "http-web"), (9094, "mesh-tcp")),
    component("monitoring", "kube-state-metrics", (8080, "http")),
    component("logging", "fluent-bit", (2020, "http")),
    component("logging", "loki-gateway", (8080, "http-metrics")),
    component("logging", "loki", (3100, "http-metrics"), (9095, "grpc"), (7946, "http-memberlist")),
    pod("logging", "loki-chunks-cache", {MONITORING_COMPONENT_LABEL: "loki"}, (11211, "client")),
    pod(
        "research",
        "vllm",
        {TEAM_LABEL: "research", WORKLOAD_TYPE_LABEL: WORKLOAD_TYPE_INFERENCE},
        (8000, "metrics"),
        (5432, "postgres"),
    ),
    pod("gpu-operator", "dcgm-exporter", dict(DCGM_EXPORTER_SERVICE_LABELS), (9400, "metrics")),
    pod("kueue-system", "kueue", dict(KUEUE_POD_LABELS), (8443, "https")),
    pod("ingress-nginx", "controller", {"app.kubernetes.io/name": "ingress-nginx"}),
    kube_dns(),
    Endpoint.external(API_SERVER, "api-server"),
    Endpoint.external(OBJECT_STORE, "object-store"),
    Endpoint.external(INTERNET, "internet"),
)

TEAM_MANIFESTS: list[dict[str, Any]] = [
    {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "research", "labels": {TEAM_LABEL: "research"}},
    },
    {
        # What TeamNamespace renders: default deny both ways.
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": DEFAULT_DENY_POLICY_NAME, "namespace": "research"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    },
]


def narrowed() -> dict[str, Any]:
    """The prod block with the node-level CIDRs narrowed and Grafana opened to an ingress."""
    monitoring = copy.deepcopy(prod_with_known_secrets())
    monitoring["network"] = {
        "apiServerCidrs": [f"{API_SERVER}/32"],
        "nodeCidrs": ["10.0.16.0/20"],
        "objectStorageCidrs": ["52.219.0.0/16"],
    }
    monitoring["alertmanager"]["egressCidrs"] = ["35.0.0.0/8"]
    monitoring["grafana"]["accessFromNamespaces"] = ["ingress-nginx"]
    return monitoring


def integral(value: Any) -> Any:
    """Pulumi's wire format has only doubles (53 arrives as 53.0); netpol wants integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


@pytest.fixture(scope="module")
def run() -> MockRun[dict[str, Any]]:
    return render_monitoring(narrowed(), stack="prod", cluster_name="gpu-prod")


@pytest.fixture(scope="module")
def cluster(run: MockRun[dict[str, Any]]) -> Cluster:
    manifests = [integral(r.inputs) for r in run.kubernetes_objects()] + TEAM_MANIFESTS
    built = Cluster.from_manifests(manifests, ENDPOINTS)
    assert built.warnings == []
    return built


def test_pod_labels_the_policies_select_are_set_by_the_chart_values(
    run: MockRun[dict[str, Any]],
) -> None:
    kps = release_values(run, "kube-prometheus-stack")
    loki = release_values(run, "loki")
    label = MONITORING_COMPONENT_LABEL
    assert kps["prometheus"]["prometheusSpec"]["podMetadata"]["labels"][label] == "prometheus"
    assert kps["alertmanager"]["alertmanagerSpec"]["podMetadata"]["labels"][label] == (
        "alertmanager"
    )
    assert kps["grafana"]["podLabels"][label] == "grafana"
    assert kps["kube-state-metrics"]["podLabels"][label] == "kube-state-metrics"
    assert loki["gateway"]["podLabels"][label] == "loki-gateway"
    assert {loki[t]["podLabels"][label] for t in ("read", "write", "backend")} == {"loki"}
    assert release_values(run, "fluent-bit")["podLabels"][label] == "fluent-bit"


# --- Log shipping ---------------------------------------------------------------------------------


def test_fluent_bit_ships_to_the_loki_gateway(cluster: Cluster) -> None:
    assert cluster.can_connect("logging/fluent-bit", "logging/loki-gateway", 8080)


def test_fluent_bit_reaches_dns_and_the_api_server_for_metadata(cluster: Cluster) -> None:
    assert cluster.can_connect("logging/fluent-bit", "kube-system/kube-dns", 53, "UDP")
    assert cluster.can_connect("logging/fluent-bit", API_SERVER, 443)


@pytest.mark.parametrize(
    ("destination", "port"),
    [
        ("monitoring/prometheus", 9090),
        ("logging/loki", 3100),
        ("research/vllm", 8000),
        (INTERNET, 443),
        (OBJECT_STORE, 443),
    ],
)
def test_fluent_bit_reaches_nothing_else(cluster: Cluster, destination: str, port: int) -> None:
    verdict = cluster.can_connect("logging/fluent-bit", destination, port)
    assert not verdict.egress.allowed, verdict.reason


def test_loki_gateway_accepts_fluent_bit_and_grafana_only(cluster: Cluster) -> None:
    assert cluster.can_connect("monitoring/grafana", "logging/loki-gateway", 8080)
    for source in ("research/vllm", "monitoring/prometheus", "ingress-nginx/controller"):
        verdict = cluster.can_connect(source, "logging/loki-gateway", 8080)
        assert not verdict.ingress.allowed, verdict.reason


def test_loki_is_reached_only_through_its_gateway(cluster: Cluster) -> None:
    assert cluster.can_connect("logging/loki-gateway", "logging/loki", 3100)
    assert cluster.can_connect("logging/loki", "logging/loki", 7946)
    assert cluster.can_connect("logging/loki", "logging/loki-chunks-cache", 11211)
    assert not cluster.can_connect("monitoring/grafana", "logging/loki", 3100)


def test_scalable_loki_reaches_its_object_storage_only(cluster: Cluster) -> None:
    assert cluster.can_connect("logging/loki", OBJECT_STORE, 443)
    assert not cluster.can_connect("logging/loki", INTERNET, 443)


# --- Scraping -------------------------------------------------------------------------------------


def test_prometheus_may_scrape_a_team_metrics_port(cluster: Cluster) -> None:
    verdict = cluster.can_connect("monitoring/prometheus", "research/vllm", "metrics")
    assert verdict.egress.allowed, verdict.reason
    # The team side is default-deny: the workload's own policy must admit the monitoring
    # namespace on its metrics port (added by the workload components, not here).
    assert not verdict.ingress.allowed


def test_prometheus_may_not_reach_other_team_ports(cluster: Cluster) -> None:
    verdict = cluster.can_connect("monitoring/prometheus", "research/vllm", 5432)
    assert not verdict.egress.allowed, verdict.reason


@pytest.mark.parametrize(
    ("target", "port"),
    [
        ("gpu-operator/dcgm-exporter", 9400),
        ("kueue-system/kueue", 8443),
        ("kube-system/kube-dns", 9153),
        ("monitoring/kube-state-metrics", 8080),
        ("monitoring/alertmanager", 9093),
        ("monitoring/grafana", 3000),
    ],
)
def test_prometheus_scrapes_the_platform_exporters(
    cluster: Cluster, target: str, port: int
) -> None:
    verdict = cluster.can_connect("monitoring/prometheus", target, port)
    assert verdict.egress.allowed, verdict.reason
    if target.startswith("monitoring/"):
        assert verdict.allowed, verdict.reason


def test_prometheus_cannot_reach_the_internet(cluster: Cluster) -> None:
    assert not cluster.can_connect("monitoring/prometheus", INTERNET, 443)


def test_team_pods_cannot_reach_prometheus_or_grafana(cluster: Cluster) -> None:
    for target, port in (("monitoring/prometheus", 9090), ("monitoring/grafana", 3000)):
        verdict = cluster.can_connect("research/vllm", target, port)
        assert not verdict.ingress.allowed, verdict.reason


def test_grafana_is_open_to_the_configured_namespace_only(cluster: Cluster) -> None:
    assert cluster.can_connect("ingress-nginx/controller", "monitoring/grafana", 3000)
    verdict = cluster.can_connect("ingress-nginx/controller", "monitoring/prometheus", 9090)
    assert not verdict.ingress.allowed


def test_grafana_queries_prometheus_and_alertmanager(cluster: Cluster) -> None:
    assert cluster.can_connect("monitoring/grafana", "monitoring/prometheus", 9090)
    assert cluster.can_connect("monitoring/grafana", "monitoring/alertmanager", 9093)
    assert not cluster.can_connect("monitoring/grafana", INTERNET, 443)


def test_alertmanager_notifies_the_configured_cidrs_only(cluster: Cluster) -> None:
    assert cluster.can_connect("monitoring/prometheus", "monitoring/alertmanager", 9093)
    assert not cluster.can_connect("monitoring/alertmanager", INTERNET, 443)
    receivers = Endpoint.external("35.1.2.3", "pagerduty")
    assert cluster.can_connect("monitoring/alertmanager", receivers, 443)
