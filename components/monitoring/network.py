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


def monitoring_policies(args: MonitoringStackArgs) -> list[PolicySpec]:
    """The policies of the monitoring namespace."""
    ns = args.monitoring_namespace
    logging = args.logging_namespace
    network = args.network
    scrape = args.scrape
    prometheus = _peer(COMPONENT_PROMETHEUS)
    grafana = _peer(COMPONENT_GRAFANA)
    alertmanager = _peer(COMPONENT_ALERTMANAGER)

    targets: list[dict[str, Any]] = [
        {
            # Team workloads: any pod of a namespace carrying the team label.
            "to": [labelled_namespaces_peer(TEAM_LABEL)],
            "ports": ports([INFERENCE_METRICS_PORT_NAME, *network.team_metrics_ports]),
        },
        {
            "to": [kube_dns_peer()],
            "ports": ports([COREDNS_METRICS_PORT]),
        },
        {
            # This namespace's own targets: exporters, Alertmanager, Grafana, the operator and
            # the Prometheus replicas themselves (and their config reloaders).
            "to": [pods_peer()],
            "ports": ports(
                sorted(
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
            ),
        },
        {
            # kubelet/cAdvisor and the hostNetwork node-exporter are node addresses.
            "to": cidr_peers(network.node_cidrs),
            "ports": ports([KUBELET_PORT, NODE_EXPORTER_PORT]),
        },
    ]
    if scrape.dcgm:
        targets.append(
            {
                "to": [pods_peer(DCGM_EXPORTER_SERVICE_LABELS, scrape.dcgm_namespace)],
                "ports": ports([DCGM_EXPORTER_PORT]),
            }
        )
    if scrape.kueue:
        targets.append(
            {
                "to": [pods_peer(KUEUE_POD_LABELS, scrape.kueue_namespace)],
                "ports": ports([KUEUE_METRICS_PORT]),
            }
        )
    if scrape.keda:
        targets.append(
            {
                "to": [pods_peer({KEDA_POD_LABEL: KEDA_OPERATOR}, scrape.keda_namespace)],
                "ports": ports([KEDA_OPERATOR_METRICS_PORT]),
            }
        )
    alertmanager_rules: list[dict[str, Any]] = [
        {
            "to": [alertmanager],
            "ports": ports([ALERTMANAGER_MESH_PORT]) + ports([ALERTMANAGER_MESH_PORT], "UDP"),
        },
    ]
    if args.alertmanager.receivers:
        alertmanager_rules.append(
            {
                "to": cidr_peers(args.alertmanager.egress_cidrs),
                "ports": ports(args.alertmanager.egress_ports),
            }
        )
    access: list[dict[str, Any]] = [
        {"from": [prometheus], "ports": ports([GRAFANA_PORT])},
    ]
    if args.grafana.access_from_namespaces:
        access.append(
            {
                "from": [namespaces_peer(args.grafana.access_from_namespaces)],
                "ports": ports([GRAFANA_PORT]),
            }
        )
    return [
        *baseline(ns),
        PolicySpec(
            ALLOW_API_SERVER,
            ns,
            {
                "podSelector": pod_selector(),
                "policyTypes": ["Egress"],
                "egress": [_api_server(args)],
            },
        ),
        PolicySpec(
            "prometheus",
            ns,
            {
                "podSelector": _pods(COMPONENT_PROMETHEUS),
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [
                    {
                        "from": [grafana, prometheus, *network.prometheus_clients],
                        "ports": ports([PROMETHEUS_PORT]),
                    },
                    {"from": [prometheus], "ports": ports([CONFIG_RELOADER_PORT])},
                ],
                "egress": targets,
            },
        ),
        PolicySpec(
            "alertmanager",
            ns,
            {
                "podSelector": _pods(COMPONENT_ALERTMANAGER),
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [
                    {
                        "from": [prometheus],
                        "ports": ports([ALERTMANAGER_PORT, CONFIG_RELOADER_PORT]),
                    },
                    {"from": [grafana], "ports": ports([ALERTMANAGER_PORT])},
                    {
                        "from": [alertmanager],
                        "ports": ports([ALERTMANAGER_MESH_PORT])
                        + ports([ALERTMANAGER_MESH_PORT], "UDP"),
                    },
                ],
                "egress": alertmanager_rules,
            },
        ),
        PolicySpec(
            "grafana",
            ns,
            {
                "podSelector": _pods(COMPONENT_GRAFANA),
                "policyTypes": ["Ingress", "Egress"],
                "ingress": access,
                "egress": [
                    {"to": [prometheus], "ports": ports([PROMETHEUS_PORT])},
                    {"to": [alertmanager], "ports": ports([ALERTMANAGER_PORT])},
                    {
                        "to": [_peer(COMPONENT_LOKI_GATEWAY, logging)],
                        "ports": ports([LOKI_GATEWAY_PORT]),
                    },
                ],
            },
        ),
        PolicySpec(
            "kube-state-metrics",
            ns,
            {
                "podSelector": _pods(COMPONENT_KUBE_STATE_METRICS),
                "policyTypes": ["Ingress"],
                "ingress": [
                    {"from": [prometheus], "ports": ports([KSM_HTTP_PORT, KSM_TELEMETRY_PORT])}
                ],
            },
        ),
        PolicySpec(
            "node-exporter",
            ns,
            {
                "podSelector": _pods(COMPONENT_NODE_EXPORTER),
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [prometheus], "ports": ports([NODE_EXPORTER_PORT])}],
            },
        ),
        PolicySpec(
            "prometheus-operator",
            ns,
            {
                "podSelector": _pods(COMPONENT_OPERATOR),
                "policyTypes": ["Ingress"],
                "ingress": [
                    # The API server calls the operator's admission webhook.
                    {"from": cidr_peers(network.api_server_cidrs), "ports": ports([OPERATOR_PORT])},
                    {"from": [prometheus], "ports": ports([OPERATOR_PORT])},
                ],
            },
        ),
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
