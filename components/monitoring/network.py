"""NetworkPolicies of the monitoring and logging namespaces: scraping and log shipping, no more.

Both namespaces start from default-deny (ingress and egress) plus DNS. Then, per component,
selected by the ``aiplatform.io/monitoring-component`` pod label the chart values set:

monitoring
  * every pod may reach the API server (operator, kube-state-metrics, Grafana's dashboard
    sidecar, Prometheus service discovery, the chart's admission-webhook jobs all need it);
  * Prometheus may scrape: team namespaces (container ports named ``metrics`` and the configured
    numbers), the DCGM exporter, Kueue, CoreDNS, the monitoring namespace's own exporters, and
    nodes (kubelet, hostNetwork node-exporter) by CIDR;
  * Grafana may query Prometheus, Alertmanager and the Loki gateway, and is reachable only from
    the configured namespaces (and Prometheus, for its metrics);
  * Alertmanager takes alerts from Prometheus, gossips with its peers and sends notifications to
    the configured CIDRs and ports.

logging
  * Fluent Bit may reach the Loki gateway and the API server (pod metadata) and nothing else;
  * the Loki gateway accepts Fluent Bit and Grafana only, and forwards to Loki;
  * Loki talks to itself (ring, queries) and, in scalable mode, its object storage.

Team namespaces are default-deny themselves: scraping a team pod also needs an ingress rule there
(from the monitoring namespace on the metrics port), which the workload components add.
"""

from __future__ import annotations

from typing import Any

from components.constants import (
    KEDA_OPERATOR,
    KEDA_OPERATOR_METRICS_PORT,
    KEDA_POD_LABEL,
    TEAM_LABEL,
)
from components.network_policies import ALLOW_API_SERVER, PolicySpec, api_server_egress, baseline
from components.network_rules import (
    cidr_peers,
    kube_dns_peer,
    labelled_namespaces_peer,
    namespaces_peer,
    pod_selector,
    pods_peer,
    ports,
)

from .constants import (
    ALERTMANAGER_MESH_PORT,
    ALERTMANAGER_PORT,
    COMPONENT_ALERTMANAGER,
    COMPONENT_FLUENT_BIT,
    COMPONENT_GRAFANA,
    COMPONENT_KUBE_STATE_METRICS,
    COMPONENT_LOKI,
    COMPONENT_LOKI_GATEWAY,
    COMPONENT_NODE_EXPORTER,
    COMPONENT_OPERATOR,
    COMPONENT_PROMETHEUS,
    CONFIG_RELOADER_PORT,
    COREDNS_METRICS_PORT,
    DCGM_EXPORTER_PORT,
    DCGM_EXPORTER_SERVICE_LABELS,
    GRAFANA_PORT,
    INFERENCE_METRICS_PORT_NAME,
    KSM_HTTP_PORT,
    KSM_TELEMETRY_PORT,
    KUBELET_PORT,
    KUEUE_METRICS_PORT,
    KUEUE_POD_LABELS,
    LOKI_GATEWAY_PORT,
    LOKI_GRPC_PORT,
    LOKI_HTTP_PORT,
    LOKI_MEMBERLIST_PORT,
    LOKI_MEMCACHED_PORT,
    MONITORING_COMPONENT_LABEL,
    NODE_EXPORTER_PORT,
    OPERATOR_PORT,
    PROMETHEUS_PORT,
)
from .spec import MonitoringStackArgs
from .values import object_storage_port


def _pods(component: str) -> dict[str, Any]:
    return pod_selector({MONITORING_COMPONENT_LABEL: component})


def _peer(component: str, namespace: str | None = None) -> dict[str, Any]:
    """Pods of a component; in another namespace when ``namespace`` is given."""
    return pods_peer({MONITORING_COMPONENT_LABEL: component}, namespace)


def _api_server(args: MonitoringStackArgs) -> dict[str, Any]:
    return api_server_egress(args.network.api_server_cidrs)


_OWN_TARGET_PORTS = sorted(
    {
        PROMETHEUS_PORT,
        CONFIG_RELOADER_PORT,
        ALERTMANAGER_PORT,
        GRAFANA_PORT,
        KSM_HTTP_PORT,
        KSM_TELEMETRY_PORT,
        OPERATOR_PORT,
        NODE_EXPORTER_PORT,
    }
)
"""The monitoring namespace's own targets: exporters, Alertmanager, Grafana, the operator and
the Prometheus replicas themselves (and their config reloaders)."""


def _component_policy(
    name: str,
    namespace: str,
    component: str,
    ingress: list[dict[str, Any]],
    egress: list[dict[str, Any]] | None = None,
) -> PolicySpec:
    """The policy of one component's pods: its ingress, and its egress when given (else egress
    is left to the namespace's other policies)."""
    spec: dict[str, Any] = {
        "podSelector": _pods(component),
        "policyTypes": ["Ingress", "Egress"] if egress is not None else ["Ingress"],
        "ingress": ingress,
    }
    if egress is not None:
        spec["egress"] = egress
    return PolicySpec(name, namespace, spec)


def _mesh_ports() -> list[dict[str, Any]]:
    """Alertmanager's gossip: TCP and UDP."""
    return ports([ALERTMANAGER_MESH_PORT]) + ports([ALERTMANAGER_MESH_PORT], "UDP")


def scrape_targets(args: MonitoringStackArgs) -> list[dict[str, Any]]:
    """Prometheus' egress rules: every target it scrapes."""
    network, scrape = args.network, args.scrape
    targets: list[dict[str, Any]] = [
        {
            # Team workloads: any pod of a namespace carrying the team label.
            "to": [labelled_namespaces_peer(TEAM_LABEL)],
            "ports": ports([INFERENCE_METRICS_PORT_NAME, *network.team_metrics_ports]),
        },
        {"to": [kube_dns_peer()], "ports": ports([COREDNS_METRICS_PORT])},
        {"to": [pods_peer()], "ports": ports(_OWN_TARGET_PORTS)},
        {
            # kubelet/cAdvisor and the hostNetwork node-exporter are node addresses.
            "to": cidr_peers(network.node_cidrs),
            "ports": ports([KUBELET_PORT, NODE_EXPORTER_PORT]),
        },
    ]
    for enabled, labels, namespace, port in (
        (scrape.dcgm, DCGM_EXPORTER_SERVICE_LABELS, scrape.dcgm_namespace, DCGM_EXPORTER_PORT),
        (scrape.kueue, KUEUE_POD_LABELS, scrape.kueue_namespace, KUEUE_METRICS_PORT),
        (
            scrape.keda,
            {KEDA_POD_LABEL: KEDA_OPERATOR},
            scrape.keda_namespace,
            KEDA_OPERATOR_METRICS_PORT,
        ),
    ):
        if enabled:
            targets.append({"to": [pods_peer(labels, namespace)], "ports": ports([port])})
    return targets


def prometheus_policy(args: MonitoringStackArgs) -> PolicySpec:
    """Prometheus: queried by Grafana, its peers and the configured clients (the Prometheus
    adapter), scrapes :func:`scrape_targets`."""
    ingress: list[dict[str, Any]] = [
        {
            "from": [
                _peer(COMPONENT_GRAFANA),
                _peer(COMPONENT_PROMETHEUS),
                *args.network.prometheus_clients,
            ],
            "ports": ports([PROMETHEUS_PORT]),
        },
        {"from": [_peer(COMPONENT_PROMETHEUS)], "ports": ports([CONFIG_RELOADER_PORT])},
    ]
    namespace = args.monitoring_namespace
    return _component_policy(
        "prometheus", namespace, COMPONENT_PROMETHEUS, ingress, scrape_targets(args)
    )


def alertmanager_policy(args: MonitoringStackArgs) -> PolicySpec:
    """Alertmanager: alerts from Prometheus, gossip with its peers, notifications out to the
    configured CIDRs and ports (when it has receivers)."""
    egress: list[dict[str, Any]] = [{"to": [_peer(COMPONENT_ALERTMANAGER)], "ports": _mesh_ports()}]
    if args.alertmanager.receivers:
        egress.append(
            {
                "to": cidr_peers(args.alertmanager.egress_cidrs),
                "ports": ports(args.alertmanager.egress_ports),
            }
        )
    ingress = [
        {
            "from": [_peer(COMPONENT_PROMETHEUS)],
            "ports": ports([ALERTMANAGER_PORT, CONFIG_RELOADER_PORT]),
        },
        {"from": [_peer(COMPONENT_GRAFANA)], "ports": ports([ALERTMANAGER_PORT])},
        {"from": [_peer(COMPONENT_ALERTMANAGER)], "ports": _mesh_ports()},
    ]
    namespace = args.monitoring_namespace
    return _component_policy("alertmanager", namespace, COMPONENT_ALERTMANAGER, ingress, egress)


def grafana_policy(args: MonitoringStackArgs) -> PolicySpec:
    """Grafana: reachable from Prometheus (its metrics) and the configured namespaces; queries
    Prometheus, Alertmanager and the Loki gateway."""
    access: list[dict[str, Any]] = [
        {"from": [_peer(COMPONENT_PROMETHEUS)], "ports": ports([GRAFANA_PORT])}
    ]
    if args.grafana.access_from_namespaces:
        access.append(
            {
                "from": [namespaces_peer(args.grafana.access_from_namespaces)],
                "ports": ports([GRAFANA_PORT]),
            }
        )
    queries = [
        {"to": [_peer(COMPONENT_PROMETHEUS)], "ports": ports([PROMETHEUS_PORT])},
        {"to": [_peer(COMPONENT_ALERTMANAGER)], "ports": ports([ALERTMANAGER_PORT])},
        {
            "to": [_peer(COMPONENT_LOKI_GATEWAY, args.logging_namespace)],
            "ports": ports([LOKI_GATEWAY_PORT]),
        },
    ]
    namespace = args.monitoring_namespace
    return _component_policy("grafana", namespace, COMPONENT_GRAFANA, access, queries)


def _scraped_only(name: str, namespace: str, component: str, scraped: list[int]) -> PolicySpec:
    """A component that only Prometheus reaches, on its ``scraped`` ports."""
    ingress = [{"from": [_peer(COMPONENT_PROMETHEUS)], "ports": ports(scraped)}]
    return _component_policy(name, namespace, component, ingress)


def operator_policy(args: MonitoringStackArgs) -> PolicySpec:
    """The Prometheus operator: its admission webhook (called by the API server) and metrics."""
    ingress = [
        {"from": cidr_peers(args.network.api_server_cidrs), "ports": ports([OPERATOR_PORT])},
        {"from": [_peer(COMPONENT_PROMETHEUS)], "ports": ports([OPERATOR_PORT])},
    ]
    namespace = args.monitoring_namespace
    return _component_policy("prometheus-operator", namespace, COMPONENT_OPERATOR, ingress)


def monitoring_policies(args: MonitoringStackArgs) -> list[PolicySpec]:
    """The policies of the monitoring namespace."""
    ns = args.monitoring_namespace
    api_server = {"podSelector": pod_selector(), "policyTypes": ["Egress"]}
    return [
        *baseline(ns),
        PolicySpec(ALLOW_API_SERVER, ns, {**api_server, "egress": [_api_server(args)]}),
        prometheus_policy(args),
        alertmanager_policy(args),
        grafana_policy(args),
        _scraped_only(
            "kube-state-metrics",
            ns,
            COMPONENT_KUBE_STATE_METRICS,
            [KSM_HTTP_PORT, KSM_TELEMETRY_PORT],
        ),
        _scraped_only("node-exporter", ns, COMPONENT_NODE_EXPORTER, [NODE_EXPORTER_PORT]),
        operator_policy(args),
    ]


def logging_policies(args: MonitoringStackArgs) -> list[PolicySpec]:
    """The policies of the logging namespace."""
    ns = args.logging_namespace
    loki = _peer(COMPONENT_LOKI)
    gateway = _peer(COMPONENT_LOKI_GATEWAY)
    fluent_bit = _peer(COMPONENT_FLUENT_BIT)
    loki_ports = ports([LOKI_HTTP_PORT, LOKI_GRPC_PORT, LOKI_MEMBERLIST_PORT])
    if args.loki.mode == "scalable":
        loki_ports += ports([LOKI_MEMCACHED_PORT])
    loki_egress: list[dict[str, Any]] = [{"to": [loki], "ports": loki_ports}]
    storage = args.loki.object_storage
    if args.loki.mode == "scalable" and storage is not None:
        loki_egress.append(
            {
                "to": cidr_peers(args.network.object_storage_cidrs),
                "ports": ports([object_storage_port(storage.endpoint)]),
            }
        )
    return [
        *baseline(ns),
        PolicySpec(
            "fluent-bit",
            ns,
            {
                "podSelector": _pods(COMPONENT_FLUENT_BIT),
                # No ingress rules: with Ingress in policyTypes, nothing may connect. (An empty
                # list would mean the same, and the provider drops it.)
                "policyTypes": ["Ingress", "Egress"],
                "egress": [
                    {"to": [gateway], "ports": ports([LOKI_GATEWAY_PORT])},
                    # The kubernetes filter reads pod metadata from the API server.
                    _api_server(args),
                ],
            },
        ),
        PolicySpec(
            "loki-gateway",
            ns,
            {
                "podSelector": _pods(COMPONENT_LOKI_GATEWAY),
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [
                    {
                        "from": [fluent_bit, _peer(COMPONENT_GRAFANA, args.monitoring_namespace)],
                        "ports": ports([LOKI_GATEWAY_PORT]),
                    }
                ],
                "egress": [{"to": [loki], "ports": ports([LOKI_HTTP_PORT])}],
            },
        ),
        PolicySpec(
            "loki",
            ns,
            {
                "podSelector": _pods(COMPONENT_LOKI),
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [
                    {"from": [gateway], "ports": ports([LOKI_HTTP_PORT])},
                    {"from": [loki], "ports": loki_ports},
                ],
                "egress": loki_egress,
            },
        ),
    ]
