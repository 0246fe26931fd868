"""What the workloads' NetworkPolicies allow, proved with tools/netpol.py on the prod stack.

The team namespaces' default-deny and DNS policies take part too: a flow is allowed only if the
source's egress and the destination's ingress both allow it.
"""

from __future__ import annotations

import pytest

from components.monitoring.constants import COMPONENT_PROMETHEUS, MONITORING_COMPONENT_LABEL
from tools.netpol import Cluster, ContainerPort, Endpoint, kube_dns

NCCL_PORT = 43017
"""NCCL picks ephemeral ports; any one stands for all of them."""
S3_IP = "52.216.8.13"
"""Inside 52.216.0.0/15, the object-storage range the prod fine-tune may reach."""

JOB = "research/llama-finetune"
CHAT = "search-serving/llm-chat"
REDIS = "search-serving/llm-chat-redis"
EMBEDDINGS = "search-serving/embeddings"
GATEWAY = "ingress-nginx/controller"
PROMETHEUS = "monitoring/prometheus"
STRANGER = "other-team/client"
GOOGLE_DNS = "8.8.8.8"
S3 = "s3"


@pytest.fixture(scope="module")
def cluster(prod_run) -> Cluster:
    extra = [
        kube_dns(),
        Endpoint(name="controller", namespace="ingress-nginx"),
        # Labelled as the monitoring stack labels Prometheus' pods (podMetadata).
        Endpoint(
            name="prometheus",
            namespace="monitoring",
            labels={MONITORING_COMPONENT_LABEL: COMPONENT_PROMETHEUS},
        ),
        Endpoint(name="client", namespace="other-team"),
        Endpoint.external(S3_IP, name=S3, ports=[ContainerPort(443)]),
        Endpoint.external(GOOGLE_DNS, ports=[ContainerPort(53, "UDP"), ContainerPort(443)]),
    ]
    return Cluster.from_manifests([r.inputs for r in prod_run.kubernetes_objects()], extra)


def allowed(cluster: Cluster, src: str, dst: str, port: int, protocol: str = "TCP") -> bool:
    return cluster.can_connect(src, dst, port, protocol).allowed


# --- Training -------------------------------------------------------------------------------------
@pytest.mark.parametrize("port", [29500, NCCL_PORT])
def test_workers_reach_each_other_on_rendezvous_and_nccl_ports(cluster, port):
    verdict = cluster.can_connect(JOB, JOB, port)
    assert verdict.allowed, verdict.reason


@pytest.mark.parametrize("protocol", ["UDP", "TCP"])
def test_workers_resolve_names(cluster, protocol):
    assert allowed(cluster, JOB, "kube-system/kube-dns", 53, protocol)


def test_workers_reach_object_storage_on_https_only(cluster):
    assert allowed(cluster, JOB, S3, 443)
    assert not allowed(cluster, JOB, S3, 80)


def test_workers_reach_nothing_else(cluster):
    assert not allowed(cluster, JOB, GOOGLE_DNS, 443)
    assert not allowed(cluster, JOB, GOOGLE_DNS, 53, "UDP")
    assert not allowed(cluster, JOB, CHAT, 8000)
    assert not allowed(cluster, JOB, EMBEDDINGS, 8080)
    assert not allowed(cluster, JOB, "research/llama-eval", 29500)


def test_nobody_else_reaches_the_workers(cluster):
    for source in (EMBEDDINGS, STRANGER, GATEWAY, PROMETHEUS, "research/llama-eval"):
        assert not allowed(cluster, source, JOB, 29500), source
        assert not allowed(cluster, source, JOB, NCCL_PORT), source


def test_single_node_evaluation_reaches_dns_but_not_the_internet(cluster):
    assert allowed(cluster, "research/llama-eval", "kube-system/kube-dns", 53, "UDP")
    assert not allowed(cluster, "research/llama-eval", S3, 443)


# --- Inference ------------------------------------------------------------------------------------
def test_gateway_reaches_the_serving_port_only(cluster):
    verdict = cluster.can_connect(GATEWAY, CHAT, 8000)
    assert verdict.allowed, verdict.reason
    assert not allowed(cluster, GATEWAY, CHAT, 9090)
    assert allowed(cluster, GATEWAY, EMBEDDINGS, 8080)


def test_replicas_of_the_same_app_reach_each_other(cluster):
    assert allowed(cluster, CHAT, CHAT, 8000)


def test_other_teams_cannot_call_the_service(cluster):
    for source in (STRANGER, JOB, EMBEDDINGS):
        assert not allowed(cluster, source, CHAT, 8000), source
        assert not allowed(cluster, source, CHAT, 9090), source


def test_monitoring_reaches_the_metrics_port_only(cluster):
    assert allowed(cluster, PROMETHEUS, CHAT, 9090)
    assert not allowed(cluster, PROMETHEUS, CHAT, 8000)
    assert allowed(cluster, PROMETHEUS, EMBEDDINGS, 9090)


def test_server_egress_is_dns_and_its_dependency(cluster):
    assert allowed(cluster, CHAT, "kube-system/kube-dns", 53, "UDP")
    assert allowed(cluster, CHAT, REDIS, 6379)
    assert not allowed(cluster, CHAT, GOOGLE_DNS, 443)
    assert not allowed(cluster, CHAT, S3, 443)
    assert not allowed(cluster, CHAT, EMBEDDINGS, 8080)


def test_dependency_accepts_only_its_server(cluster):
    for source in (EMBEDDINGS, PROMETHEUS, GATEWAY, STRANGER, JOB):
        assert not allowed(cluster, source, REDIS, 6379), source
    assert not allowed(cluster, REDIS, GOOGLE_DNS, 443)


# --- The team Redis -------------------------------------------------------------------------------
TEAM_REDIS = "research/team-redis"


def test_the_teams_workloads_reach_its_redis(cluster):
    verdict = cluster.can_connect(JOB, TEAM_REDIS, 6379)
    assert verdict.allowed, verdict.reason
    assert allowed(cluster, "research/llama-eval", TEAM_REDIS, 6379)


def test_no_one_else_reaches_the_team_redis(cluster):
    for source in (CHAT, EMBEDDINGS, GATEWAY, STRANGER, PROMETHEUS):
        assert not allowed(cluster, source, TEAM_REDIS, 6379), source
    # Nor the Redis port on the exporter's, nor the exporter's on the Redis port's terms.
    assert not allowed(cluster, JOB, TEAM_REDIS, 9121)


def test_monitoring_scrapes_the_team_redis_exporter_only(cluster):
    assert allowed(cluster, PROMETHEUS, TEAM_REDIS, 9121)
    assert not allowed(cluster, PROMETHEUS, TEAM_REDIS, 6379)


def test_the_team_redis_opens_no_connection_but_dns(cluster):
    """Its own policy allows no egress; the namespace's DNS policy still lets it resolve."""
    for destination in (JOB, CHAT, GOOGLE_DNS, S3):
        assert not allowed(cluster, TEAM_REDIS, destination, 443), destination
    assert not allowed(cluster, TEAM_REDIS, JOB, 29500)
    assert allowed(cluster, TEAM_REDIS, "kube-system/kube-dns", 53, "UDP")
