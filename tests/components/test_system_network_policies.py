"""The Kueue, KEDA and GPU operator namespaces are default-deny too: who reaches their pods, proved
with tools/netpol.py on the rendered prod policies (the monitoring stack's included)."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import (
    GPU_OPERATOR_NAMESPACE,
    KEDA_METRICS_APISERVER,
    KEDA_METRICS_APISERVER_PORT,
    KEDA_METRICS_SERVICE_PORT,
    KEDA_NAMESPACE,
    KEDA_OPERATOR,
    KEDA_OPERATOR_METRICS_PORT,
    KEDA_POD_LABEL,
    KEDA_WEBHOOK_PORT,
    KEDA_WEBHOOKS,
    KUEUE_NAMESPACE,
    MONITORING_NAMESPACE,
    REDIS_CLIENT_LABEL,
)
from components.monitoring.constants import (
    COMPONENT_PROMETHEUS,
    DCGM_EXPORTER_PORT,
    DCGM_EXPORTER_SERVICE_LABELS,
    KUEUE_METRICS_PORT,
    KUEUE_POD_LABELS,
    MONITORING_COMPONENT_LABEL,
)
from components.network_policies import KUEUE_VISIBILITY_PORT, KUEUE_WEBHOOK_PORT
from components.team_redis import REDIS_PORT, REDIS_SERVICE, redis_server_selector
from tests.harness import run_stack
from tools.mockrun import MockRun
from tools.netpol import Cluster, ContainerPort, Endpoint, kube_dns

API_SERVER = "10.0.12.7"
"""Inside prod's apiServerCidrs (10.0.0.0/16)."""
PROMETHEUS = Endpoint(
    name="prometheus",
    namespace=MONITORING_NAMESPACE,
    labels={MONITORING_COMPONENT_LABEL: COMPONENT_PROMETHEUS},
)
KUEUE = Endpoint(
    name="kueue",
    namespace=KUEUE_NAMESPACE,
    labels=KUEUE_POD_LABELS,
    ports=tuple(
        ContainerPort(p) for p in (KUEUE_WEBHOOK_PORT, KUEUE_VISIBILITY_PORT, KUEUE_METRICS_PORT)
    ),
)
DCGM = Endpoint(
    name="dcgm",
    namespace=GPU_OPERATOR_NAMESPACE,
    labels=DCGM_EXPORTER_SERVICE_LABELS,
    ports=(ContainerPort(DCGM_EXPORTER_PORT),),
)
OPERATOR = Endpoint(
    name="operator", namespace=GPU_OPERATOR_NAMESPACE, labels={"app": "gpu-operator"}
)
INTRUDER = Endpoint(name="intruder", namespace="research", labels={"app": "x"})


def _keda(component: str, port: int) -> Endpoint:
    return Endpoint(
        name=component,
        namespace=KEDA_NAMESPACE,
        labels={KEDA_POD_LABEL: component},
        ports=(ContainerPort(port),),
    )


KEDA_OPERATOR_POD = _keda(KEDA_OPERATOR, KEDA_METRICS_SERVICE_PORT)
KEDA_METRICS_POD = _keda(KEDA_METRICS_APISERVER, KEDA_METRICS_APISERVER_PORT)
KEDA_WEBHOOKS_POD = _keda(KEDA_WEBHOOKS, KEDA_WEBHOOK_PORT)
TEAM_REDIS = Endpoint(
    name=REDIS_SERVICE,
    namespace="research",
    labels=redis_server_selector(),
    ports=(ContainerPort(REDIS_PORT),),
)


def cluster(run: MockRun[Any]) -> Cluster:
    endpoints = [
        kube_dns(),
        PROMETHEUS,
        KUEUE,
        DCGM,
        OPERATOR,
        INTRUDER,
        KEDA_OPERATOR_POD,
        KEDA_METRICS_POD,
        KEDA_WEBHOOKS_POD,
        TEAM_REDIS,
        Endpoint.external(API_SERVER, ports=[ContainerPort(443), ContainerPort(6443)]),
        Endpoint.external("8.8.8.8", ports=[ContainerPort(443)]),
    ]
    return Cluster.from_manifests([r.inputs for r in run.kubernetes_objects()], endpoints)


@pytest.fixture(scope="module")
def prod(prod_run) -> Cluster:
    return cluster(prod_run)


def test_the_api_server_reaches_kueues_webhooks_and_visibility_api(prod: Cluster) -> None:
    """The API server's calls arrive from its addresses: only the ingress side is evaluated."""
    for port in (KUEUE_WEBHOOK_PORT, KUEUE_VISIBILITY_PORT):
        verdict = prod.can_connect(prod.endpoint(API_SERVER), KUEUE, port)
        assert verdict.allowed, str(verdict)


def test_prometheus_scrapes_kueue_and_dcgm_and_nothing_else_does(prod: Cluster) -> None:
    assert prod.can_connect(PROMETHEUS, KUEUE, KUEUE_METRICS_PORT).allowed
    assert prod.can_connect(PROMETHEUS, DCGM, DCGM_EXPORTER_PORT).allowed
    for source in (INTRUDER, DCGM, OPERATOR):
        assert not prod.can_connect(source, KUEUE, KUEUE_METRICS_PORT).allowed, source.name
        assert not prod.can_connect(source, KUEUE, KUEUE_WEBHOOK_PORT).allowed, source.name
    assert not prod.can_connect(INTRUDER, DCGM, DCGM_EXPORTER_PORT).allowed
    assert not prod.can_connect(PROMETHEUS, KUEUE, KUEUE_WEBHOOK_PORT).allowed


def test_platform_pods_reach_dns_and_the_api_server_not_the_internet(prod: Cluster) -> None:
    for pod in (KUEUE, DCGM, OPERATOR):
        assert prod.can_connect(pod, "kube-system/kube-dns", 53, "UDP").allowed, pod.name
        assert prod.can_connect(pod, prod.endpoint(API_SERVER), 443).allowed, pod.name
        assert not prod.can_connect(pod, prod.endpoint("8.8.8.8"), 443).allowed, pod.name
        assert not prod.can_connect(pod, INTRUDER, 8080).allowed, pod.name


def test_without_monitoring_nothing_may_scrape(prod_config) -> None:
    prod_config["monitoring"] = {"enabled": False, "network": prod_config["monitoring"]["network"]}
    prod_config["gpuStack"]["dcgmExporter"] = False
    # The adapter answers from Prometheus: no monitoring, no adapter, no custom metrics.
    prod_config["autoscaling"]["prometheusAdapter"] = {"enabled": False}
    for workload in prod_config["workloads"]:
        (workload.get("inference") or {}).pop("customMetric", None)
    run = run_stack(prod_config, "prod")
    names = {
        (r.metadata["namespace"], r.metadata["name"])
        for r in run.kubernetes_objects()
        if r.kind == "NetworkPolicy" and r.metadata["namespace"] == KUEUE_NAMESPACE
    }
    assert names == {
        (KUEUE_NAMESPACE, "default-deny-all"),
        (KUEUE_NAMESPACE, "allow-dns-egress"),
        (KUEUE_NAMESPACE, "allow-apiserver-egress"),
        (KUEUE_NAMESPACE, "kueue-controller"),
    }
    controller = run.find("NetworkPolicy", "kueue-controller", KUEUE_NAMESPACE).inputs["spec"]
    assert len(controller["ingress"]) == 1  # the API server only


def test_the_api_server_reaches_kedas_metrics_api_and_webhooks_and_nothing_else(
    prod: Cluster,
) -> None:
    api_server = prod.endpoint(API_SERVER)
    assert prod.can_connect(api_server, KEDA_METRICS_POD, KEDA_METRICS_APISERVER_PORT).allowed
    assert prod.can_connect(api_server, KEDA_WEBHOOKS_POD, KEDA_WEBHOOK_PORT).allowed
    assert not prod.can_connect(api_server, KEDA_OPERATOR_POD, KEDA_METRICS_SERVICE_PORT).allowed
    for source in (INTRUDER, PROMETHEUS, KUEUE):
        for target, port in (
            (KEDA_METRICS_POD, KEDA_METRICS_APISERVER_PORT),
            (KEDA_WEBHOOKS_POD, KEDA_WEBHOOK_PORT),
            (KEDA_OPERATOR_POD, KEDA_METRICS_SERVICE_PORT),
        ):
            assert not prod.can_connect(source, target, port).allowed, (source.name, target.name)


def test_kedas_metrics_api_asks_the_operator_which_reads_the_team_redis(prod: Cluster) -> None:
    assert prod.can_connect(KEDA_METRICS_POD, KEDA_OPERATOR_POD, KEDA_METRICS_SERVICE_PORT).allowed
    # Both sides: KEDA's egress, and the team Redis' policy admits the operator (it reads the
    # worker pools' queue lengths), on the Redis port only.
    assert prod.can_connect(KEDA_OPERATOR_POD, TEAM_REDIS, REDIS_PORT).allowed
    assert not prod.can_connect(KEDA_OPERATOR_POD, INTRUDER, REDIS_PORT).egress.allowed
    assert not prod.can_connect(KEDA_WEBHOOKS_POD, TEAM_REDIS, REDIS_PORT).egress.allowed
    assert not prod.can_connect(KEDA_METRICS_POD, TEAM_REDIS, REDIS_PORT).egress.allowed
    # The team Redis admits KEDA's operator, not its other pods.
    assert not prod.can_connect(KEDA_WEBHOOKS_POD, TEAM_REDIS, REDIS_PORT).ingress.allowed
    for pod in (KEDA_OPERATOR_POD, KEDA_METRICS_POD, KEDA_WEBHOOKS_POD):
        assert prod.can_connect(pod, prod.endpoint(API_SERVER), 443).allowed, pod.name
        assert not prod.can_connect(pod, prod.endpoint("8.8.8.8"), 443).allowed, pod.name


def test_prometheus_scrapes_the_keda_operator(prod: Cluster) -> None:
    assert prod.can_connect(PROMETHEUS, KEDA_OPERATOR_POD, KEDA_OPERATOR_METRICS_PORT).allowed
    assert not prod.can_connect(INTRUDER, KEDA_OPERATOR_POD, KEDA_OPERATOR_METRICS_PORT).allowed


def test_the_team_redis_admits_no_keda_operator_without_keda(prod_config) -> None:
    prod_config["autoscaling"]["keda"] = {"enabled": False}
    run = run_stack(prod_config, "prod")
    spec = run.find("NetworkPolicy", f"{REDIS_SERVICE}-network", "research").inputs["spec"]
    assert spec["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {REDIS_CLIENT_LABEL: "true"}}}
    ]
