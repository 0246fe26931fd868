"""Tenant isolation, proved from the rendered manifests with tools/netpol.py.

For dev and prod (monitoring stack included), every team workload is evaluated against every other
endpoint on its declared ports and a set of common ones:

* no team workload reaches another team's workloads, on any probed port;
* every workload reaches cluster DNS (UDP and TCP 53);
* pods of the monitoring namespace reach team workloads on metrics ports only, and Prometheus
  does reach every inference metrics port;
* a workload accepts traffic only from its own app (replicas, its server), its gateway namespaces
  on the serving port, and monitoring on metrics ports;
* training workers reach each other on the rendezvous port;
* cluster-external addresses are reachable only as each workload's ``egress`` config says.

The assertions loop over what the manifests contain; ``test_prod_is_not_vacuous`` fails if prod
ever renders no training job or inference service, so the proofs cannot pass on nothing.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from components.constants import (
    APP_COMPONENT_LABEL,
    APP_INSTANCE_LABEL,
    APP_NAME_LABEL,
    METRICS_PORT_NAME,
    MONITORING_NAMESPACE,
    REDIS_CLIENT_LABEL,
    TEAM_LABEL,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_LABEL,
)
from components.monitoring.constants import (
    COMPONENT_GRAFANA,
    COMPONENT_PROMETHEUS,
    MONITORING_COMPONENT_LABEL,
)
from components.team_redis import REDIS_PORT, REDIS_SERVICE
from tests.harness import stack_config
from tools.mockrun import MockRun
from tools.netpol import Cluster, ContainerPort, Endpoint, Matrix, kube_dns, reachability_matrix

NCCL_PORT = 43017
"""NCCL picks ephemeral ports; one stands for all of them."""
PROBES: tuple[int | tuple[int, str], ...] = (
    (53, "UDP"),
    53,
    80,
    443,
    6379,
    8000,
    8080,
    9090,
    29500,
    NCCL_PORT,
)
"""Probed on every destination besides its declared container ports."""
INTERNET = "8.8.8.8"
DNS = "kube-system/kube-dns"
SERVING_PORT_NAME = "http"


def prometheus() -> Endpoint:
    """Prometheus as kube-prometheus-stack runs it, with the pod labels our values add."""
    return Endpoint(
        name="prometheus",
        namespace=MONITORING_NAMESPACE,
        labels={
            APP_NAME_LABEL: "prometheus",
            APP_INSTANCE_LABEL: "kube-prometheus-stack-prometheus",
            MONITORING_COMPONENT_LABEL: COMPONENT_PROMETHEUS,
        },
        ports=(ContainerPort(9090, "TCP", "http-web"), ContainerPort(8080, "TCP", "reloader-web")),
    )


def grafana() -> Endpoint:
    """Another monitoring pod: the metrics exception is for the namespace, so test more pods."""
    return Endpoint(
        name="grafana",
        namespace=MONITORING_NAMESPACE,
        labels={APP_NAME_LABEL: "grafana", MONITORING_COMPONENT_LABEL: COMPONENT_GRAFANA},
        ports=(ContainerPort(3000, "TCP", "grafana"),),
    )


def _first_host(cidr: str) -> str:
    network = ipaddress.ip_network(cidr)
    return str(next(iter(network.hosts()), network.network_address))


@dataclass
class Proof:
    """One stack's endpoints, verdicts and the config they came from."""

    stack: str
    cluster: Cluster
    matrix: Matrix
    config: dict[str, Any]
    team_namespaces: frozenset[str]
    workloads: tuple[Endpoint, ...]
    gateways: dict[str, frozenset[str]]
    """Workload name → ``allowFromNamespaces`` (inference only)."""
    egress: dict[tuple[str, str], tuple[frozenset[str], frozenset[int]]]
    """(namespace, workload) → configured egress CIDRs and ports."""
    externals: tuple[Endpoint, ...]

    def id(self, endpoint: Endpoint) -> str:
        return self.cluster.id_of(endpoint)

    def allowed_ports(self, src: Endpoint, dst: Endpoint) -> set[tuple[int, str]]:
        return {
            (v.port, v.protocol) for v in self.matrix.flows(self.id(src), self.id(dst)) if v.allowed
        }

    def allowed(self, src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP") -> bool:
        return self.cluster.can_connect(src, dst, port, protocol).allowed


def _team_namespaces(manifests: Iterable[dict[str, Any]]) -> frozenset[str]:
    return frozenset(
        m["metadata"]["name"]
        for m in manifests
        if m.get("kind") == "Namespace" and TEAM_LABEL in (m["metadata"].get("labels") or {})
    )


def build_proof(
    stack: str, run: MockRun[Any], extra: Iterable[dict[str, Any]] = (), pod_ips: bool = False
) -> Proof:
    config = stack_config(stack)
    manifests = [r.inputs for r in run.kubernetes_objects()] + list(extra)
    namespaces = {t["name"]: t.get("namespace") or t["name"] for t in config["teams"]}
    gateways: dict[str, frozenset[str]] = {}
    egress: dict[tuple[str, str], tuple[frozenset[str], frozenset[int]]] = {}
    cidrs: set[str] = set()
    storage = ((config.get("monitoring") or {}).get("network") or {}).get("objectStorageCidrs", [])
    for workload in config.get("workloads", []):
        key = (namespaces[workload["team"]], workload["name"])
        spec = workload.get("egress") or {}
        egress[key] = (frozenset(spec.get("cidrs", [])), frozenset(spec.get("ports", [443])))
        cidrs.update(spec.get("cidrs", []))
        if workload["kind"] == "inference":
            allow = (workload.get("inference") or {}).get("allowFromNamespaces", [])
            gateways[workload["name"]] = frozenset(allow)
    externals = (
        *(
            Endpoint.external(_first_host(c), name=f"storage-{c}", ports=[ContainerPort(443)])
            for c in sorted(cidrs | set(storage))
        ),
        Endpoint.external(INTERNET, ports=[ContainerPort(53, "UDP"), ContainerPort(443)]),
    )
    gateway_pods = tuple(
        Endpoint(name="gateway", namespace=ns, labels={APP_NAME_LABEL: ns})
        for ns in sorted({ns for allow in gateways.values() for ns in allow})
    )
    strangers = (
        Endpoint(name="intruder", namespace="default", labels={APP_NAME_LABEL: "intruder"}),
        Endpoint(name="some-addon", namespace="kube-system", labels={APP_NAME_LABEL: "addon"}),
    )
    extras = (kube_dns(), prometheus(), grafana(), *gateway_pods, *strangers, *externals)
    cluster = Cluster.from_manifests(manifests, extras)
    teams = _team_namespaces(manifests)
    if pod_ips:
        # Some CNIs let ipBlocks match pod IPs: put every pod inside the configured egress
        # ranges, so isolation may not rest on the model's "ipBlock is external only" choice.
        pool = sorted(cidrs)[0] if cidrs else "10.244.0.0/16"
        hosts = iter(ipaddress.ip_network(pool).hosts())
        endpoints = tuple(
            e if e.is_external else dataclasses.replace(e, ip=str(next(hosts)))
            for e in cluster.endpoints
        )
        cluster = Cluster(
            cluster.namespaces.values(),
            endpoints,
            cluster.policies,
            ipblock_matches_pod_ips=True,
            warnings=cluster.warnings,
        )
    workloads = tuple(e for e in cluster.endpoints if e.namespace in teams)
    return Proof(
        stack=stack,
        cluster=cluster,
        matrix=reachability_matrix(cluster, ports=PROBES),
        config=config,
        team_namespaces=teams,
        workloads=workloads,
        gateways=gateways,
        egress=egress,
        externals=externals,
    )


VARIANTS = ("dev", "prod", "prod+pod-ips")


@pytest.fixture(scope="module", params=VARIANTS)
def proof(request: pytest.FixtureRequest, dev_run, prod_run) -> Proof:
    variant: str = request.param
    if variant == "dev":
        return build_proof("dev", dev_run)
    return build_proof("prod", prod_run, pod_ips=variant == "prod+pod-ips")


def _instance(endpoint: Endpoint) -> str | None:
    return endpoint.labels.get(APP_INSTANCE_LABEL)


def _ports_named(endpoint: Endpoint, name: str) -> set[tuple[int, str]]:
    return {(p.port, p.protocol) for p in endpoint.ports if p.name == name}


def _is_inference_server(endpoint: Endpoint) -> bool:
    return (
        endpoint.labels.get(WORKLOAD_TYPE_LABEL) == WORKLOAD_TYPE_INFERENCE
        and endpoint.labels.get(APP_COMPONENT_LABEL) == "server"
    )


# --- guards ---------------------------------------------------------------------------------------


def test_prod_is_not_vacuous(prod_run) -> None:
    """The proofs loop over workloads: prod must render at least one of each kind."""
    proof = build_proof("prod", prod_run)
    kinds = {(e.kind, e.labels.get(WORKLOAD_TYPE_LABEL)) for e in proof.workloads}
    assert ("Job", "training") in kinds, kinds
    assert ("Deployment", WORKLOAD_TYPE_INFERENCE) in kinds, kinds
    assert len(proof.team_namespaces) >= 2
    assert {e.namespace for e in proof.workloads} >= {"research", "search-serving"}


def test_every_variant_has_workloads_in_two_teams(proof: Proof) -> None:
    assert len({e.namespace for e in proof.workloads}) >= 2, proof.workloads


# --- the proofs -----------------------------------------------------------------------------------


def test_no_workload_reaches_another_team(proof: Proof) -> None:
    leaks = [
        f"{proof.id(src)} -> {proof.id(dst)} {sorted(ports)}"
        for src in proof.workloads
        for dst in proof.workloads
        if src.namespace != dst.namespace and (ports := proof.allowed_ports(src, dst))
    ]
    assert not leaks, "\n".join(leaks)


def test_no_outsider_reaches_a_team_workload(proof: Proof) -> None:
    """Pods of non-team namespaces other than gateways and monitoring reach nothing."""
    outsiders = [
        e
        for e in proof.cluster.endpoints
        if not e.is_external
        and e.namespace not in proof.team_namespaces
        and e.namespace != MONITORING_NAMESPACE
        and not any(e.namespace in allow for allow in proof.gateways.values())
    ]
    assert outsiders
    leaks = [
        f"{proof.id(src)} -> {proof.id(dst)} {sorted(ports)}"
        for src in outsiders
        for dst in proof.workloads
        if (ports := proof.allowed_ports(src, dst))
    ]
    assert not leaks, "\n".join(leaks)


@pytest.mark.parametrize("protocol", ["UDP", "TCP"])
def test_every_workload_reaches_dns(proof: Proof, protocol: str) -> None:
    for workload in proof.workloads:
        verdict = proof.cluster.can_connect(workload, DNS, 53, protocol)
        assert verdict.allowed, str(verdict)


def test_monitoring_reaches_metrics_ports_only(proof: Proof) -> None:
    monitors = [e for e in proof.cluster.endpoints if e.namespace == MONITORING_NAMESPACE]
    for source in monitors:
        for workload in proof.workloads:
            metrics = _ports_named(workload, METRICS_PORT_NAME)
            extra = proof.allowed_ports(source, workload) - metrics
            assert not extra, f"{proof.id(source)} -> {proof.id(workload)} {sorted(extra)}"
    scraped = [w for w in proof.workloads if _ports_named(w, METRICS_PORT_NAME)]
    assert scraped, "no workload exposes a metrics port"
    for workload in scraped:
        for port, protocol in _ports_named(workload, METRICS_PORT_NAME):
            verdict = proof.cluster.can_connect(prometheus(), workload, port, protocol)
            assert verdict.allowed, str(verdict)
        for port, protocol in _ports_named(workload, SERVING_PORT_NAME):
            assert not proof.allowed(prometheus(), workload, port, protocol)


def _is_team_redis(endpoint: Endpoint) -> bool:
    return endpoint.labels.get(APP_NAME_LABEL) == REDIS_SERVICE


def test_workloads_accept_only_their_app_gateways_and_monitoring(proof: Proof) -> None:
    """Every allowed inbound flow to a team workload is one of four kinds, and no other: its
    own app, its gateways, monitoring's scrapes, and (the team Redis) its team's clients."""
    unexpected = []
    for dst in proof.workloads:
        serving = _ports_named(dst, SERVING_PORT_NAME) if _is_inference_server(dst) else set()
        metrics = _ports_named(dst, METRICS_PORT_NAME)
        gateways = proof.gateways.get(_instance(dst) or "", frozenset())
        for src in proof.cluster.endpoints:
            if src.is_external:
                continue
            for flow in proof.allowed_ports(src, dst):
                same_app = src.namespace == dst.namespace and _instance(src) == _instance(dst)
                via_gateway = src.namespace in gateways and flow in serving
                scraped = src.namespace == MONITORING_NAMESPACE and flow in metrics
                redis_client = (
                    _is_team_redis(dst)
                    and src.namespace == dst.namespace
                    and src.labels.get(REDIS_CLIENT_LABEL) == "true"
                    and flow == (REDIS_PORT, "TCP")
                )
                if not (same_app or via_gateway or scraped or redis_client):
                    unexpected.append(f"{proof.id(src)} -> {proof.id(dst)} {flow}")
    assert not unexpected, "\n".join(unexpected)


def test_inference_servers_are_reachable_from_their_gateways(proof: Proof) -> None:
    servers = [w for w in proof.workloads if _is_inference_server(w)]
    assert servers
    for server in servers:
        gateways = proof.gateways[_instance(server) or ""]
        assert gateways, f"{proof.id(server)} has no gateway namespace configured"
        for namespace in gateways:
            gateway = proof.cluster.endpoint(f"{namespace}/gateway")
            for port, protocol in _ports_named(server, SERVING_PORT_NAME):
                verdict = proof.cluster.can_connect(gateway, server, port, protocol)
                assert verdict.allowed, str(verdict)
            for port, protocol in _ports_named(server, METRICS_PORT_NAME):
                assert not proof.allowed(gateway, server, port, protocol)


def test_training_workers_reach_each_other(proof: Proof) -> None:
    jobs = [w for w in proof.workloads if w.kind == "Job"]
    assert jobs
    for job in jobs:
        rendezvous = [p for p in job.ports if p.name == "rendezvous"]
        assert rendezvous, f"{proof.id(job)} declares no rendezvous port"
        for port in (*(p.port for p in rendezvous), NCCL_PORT):
            verdict = proof.cluster.can_connect(job, job, port)
            assert verdict.allowed, str(verdict)


def test_external_egress_is_exactly_the_configured_egress(proof: Proof) -> None:
    for workload in proof.workloads:
        cidrs, ports = proof.egress.get(
            (workload.namespace or "", _instance(workload) or ""), (frozenset(), frozenset())
        )
        if workload.labels.get(APP_COMPONENT_LABEL) not in ("server", "trainer"):
            cidrs = frozenset()  # stateful dependencies get no egress of their own
        for external in proof.externals:
            assert external.ip is not None
            inside = any(
                ipaddress.ip_address(external.ip) in ipaddress.ip_network(c) for c in cidrs
            )
            for port, protocol in ((53, "UDP"), (53, "TCP"), (80, "TCP"), (443, "TCP")):
                expected = inside and protocol == "TCP" and port in ports
                verdict = proof.cluster.can_connect(workload, external, port, protocol)
                assert verdict.allowed == expected, str(verdict)


def test_matrix_counts_are_stable_across_runs(proof: Proof) -> None:
    """Two evaluations of the same manifests agree: the proof is deterministic."""
    again = reachability_matrix(proof.cluster, ports=PROBES)
    assert again.to_json() == proof.matrix.to_json()


def test_prod_monitoring_policies_select_the_chart_pods(prod_run) -> None:
    """The monitoring stack's own policies take part: Prometheus and Grafana are isolated by
    them (so the synthetic endpoints carry the labels the chart values give the pods)."""
    proof = build_proof("prod", prod_run)
    assert proof.cluster.policies_selecting(prometheus(), "Egress")
    assert proof.cluster.policies_selecting(grafana(), "Egress")
    for workload in proof.workloads:
        assert not proof.allowed_ports(grafana(), workload), proof.id(workload)


def test_prod_monitoring_pods_do_not_reach_the_internet(prod_run) -> None:
    """Prod pins the monitoring egress CIDRs (the defaults are 0.0.0.0/0)."""
    proof = build_proof("prod", prod_run)
    internet = proof.cluster.endpoint(INTERNET)
    for source in (prometheus(), grafana()):
        assert not proof.allowed(source, internet, 443), proof.id(source)


def test_the_proof_sees_a_leak(prod_run) -> None:
    """Not vacuous: allow-all policies in two team namespaces are caught."""
    leaks = [
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "allow-all", "namespace": namespace},
            "spec": {"podSelector": {}, "ingress": [{}], "egress": [{}]},
        }
        for namespace in ("research", "search-serving")
    ]
    proof = build_proof("prod", prod_run, leaks)
    with pytest.raises(AssertionError, match="research/llama-finetune -> search-serving"):
        test_no_workload_reaches_another_team(proof)
    with pytest.raises(AssertionError):
        test_workloads_accept_only_their_app_gateways_and_monitoring(proof)
