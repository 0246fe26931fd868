"""NetworkPolicies of the platform's own namespaces: the pieces every one of them shares, and the
policies of the Kueue, KEDA and GPU operator namespaces (monitoring's are in
``monitoring/network.py``), written in the vocabulary of ``network_rules``.

Every platform namespace starts from default-deny in both directions plus DNS, then opens what
its components need by name: the API server (its addresses, as NetworkPolicies cannot select
it), Prometheus (by namespace and the component label our chart values give its pods), peers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from . import kube
from .constants import (
    ALLOW_DNS_POLICY_NAME,
    ANYWHERE_CIDRS,
    DEFAULT_DENY_POLICY_NAME,
    KEDA_METRICS_APISERVER,
    KEDA_METRICS_APISERVER_PORT,
    KEDA_METRICS_SERVICE_PORT,
    KEDA_OPERATOR,
    KEDA_OPERATOR_METRICS_PORT,
    KEDA_POD_LABEL,
    KEDA_WEBHOOK_PORT,
    KEDA_WEBHOOKS,
    TEAM_LABEL,
)
from .frozen import frozen
from .labels import platform_labels
from .monitoring.constants import (
    API_SERVER_PORTS,
    COMPONENT_PROMETHEUS,
    DCGM_EXPORTER_PORT,
    DCGM_EXPORTER_SERVICE_LABELS,
    KUEUE_METRICS_PORT,
    KUEUE_POD_LABELS,
    MONITORING_COMPONENT_LABEL,
)
from .network_rules import (
    allow_dns,
    cidr_peers,
    default_deny,
    labelled_namespaces_peer,
    pod_selector,
    pods_peer,
    ports,
)
from .team_redis import REDIS_PORT, redis_server_selector

ALLOW_API_SERVER = "allow-apiserver-egress"
KUEUE_WEBHOOK_PORT = 9443
KUEUE_VISIBILITY_PORT = 8082
"""Ports of the Kueue controller the API server calls: admission webhooks, the visibility API
(the pinned chart's manager Deployment)."""


@frozen
class PolicySpec:
    """One NetworkPolicy: its name, namespace and ``spec``."""

    name: str
    namespace: str
    spec: dict[str, Any]


@frozen
class SystemNetwork:
    """What a platform namespace's policies need from the stack."""

    api_server_cidrs: Sequence[str] = ANYWHERE_CIDRS
    """Where the API server's endpoints are: it calls webhooks from there, and is called there."""
    node_cidrs: Sequence[str] = ANYWHERE_CIDRS
    """Node addresses: where the kubelets are (metrics-server reads them)."""
    prometheus_namespace: str | None = None
    """Where Prometheus runs; None: no monitoring, nothing scrapes."""


def prometheus_peer(namespace: str) -> dict[str, Any]:
    return pods_peer({MONITORING_COMPONENT_LABEL: COMPONENT_PROMETHEUS}, namespace)


def baseline(namespace: str) -> list[PolicySpec]:
    """Default deny both ways, and DNS to kube-dns, for every pod of the namespace."""
    return [
        PolicySpec(DEFAULT_DENY_POLICY_NAME, namespace, default_deny()),
        PolicySpec(ALLOW_DNS_POLICY_NAME, namespace, allow_dns()),
    ]


def api_server_egress(api_server_cidrs: Sequence[str]) -> dict[str, Any]:
    return {"to": cidr_peers(api_server_cidrs), "ports": ports(API_SERVER_PORTS)}


def controller_namespace(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
    """A namespace of controllers: the baseline, and every pod may call the API server."""
    return [
        *baseline(namespace),
        PolicySpec(
            ALLOW_API_SERVER,
            namespace,
            {
                "podSelector": pod_selector(),
                "policyTypes": ["Egress"],
                "egress": [api_server_egress(network.api_server_cidrs)],
            },
        ),
    ]


def aggregated_api_server(
    name: str,
    namespace: str,
    network: SystemNetwork,
    pods: Mapping[str, str],
    port: int,
    egress: Sequence[Mapping[str, Any]],
) -> PolicySpec:
    """The pods behind an APIService (a metrics API): the API server calls them on ``port``,
    nothing else does; they reach ``egress`` (the API server and DNS come with the namespace)."""
    return PolicySpec(
        name,
        namespace,
        {
            "podSelector": pod_selector(pods),
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": cidr_peers(network.api_server_cidrs), "ports": ports([port])}],
            "egress": [dict(rule) for rule in egress],
        },
    )


def kueue_policies(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
    """Kueue's controller takes webhook and visibility calls from the API server, and metrics
    scrapes from Prometheus; nothing else reaches it."""
    ingress: list[dict[str, Any]] = [
        {
            "from": cidr_peers(network.api_server_cidrs),
            "ports": ports([KUEUE_WEBHOOK_PORT, KUEUE_VISIBILITY_PORT]),
        }
    ]
    if network.prometheus_namespace is not None:
        ingress.append(
            {
                "from": [prometheus_peer(network.prometheus_namespace)],
                "ports": ports([KUEUE_METRICS_PORT]),
            }
        )
    return [
        *controller_namespace(namespace, network),
        PolicySpec(
            "kueue-controller",
            namespace,
            {
                "podSelector": pod_selector(KUEUE_POD_LABELS),
                "policyTypes": ["Ingress"],
                "ingress": ingress,
            },
        ),
    ]


def keda_pod(component: str) -> dict[str, Any]:
    """The pods of one KEDA component (the chart labels each ``app: <component>``)."""
    return pod_selector({KEDA_POD_LABEL: component})


def keda_operator_peer(namespace: str) -> dict[str, Any]:
    """KEDA's operator pods in ``namespace``, as a peer of another namespace's policy (the
    team Redis admits it: the operator reads the worker pools' queue lengths)."""
    return pods_peer({KEDA_POD_LABEL: KEDA_OPERATOR}, namespace)


def keda_policies(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
    """KEDA: the API server calls the metrics API server (the HPAs' external metrics) and the
    admission webhooks; the metrics API server asks the operator for scaler values; the operator
    reads the queue lengths from the team Redis of every team namespace, and Prometheus scrapes
    it. Nothing else reaches them, and they reach nothing else but the API server and DNS."""
    operator_ingress: list[dict[str, Any]] = [
        {
            "from": [{"podSelector": keda_pod(KEDA_METRICS_APISERVER)}],
            "ports": ports([KEDA_METRICS_SERVICE_PORT]),
        }
    ]
    if network.prometheus_namespace is not None:
        operator_ingress.append(
            {
                "from": [prometheus_peer(network.prometheus_namespace)],
                "ports": ports([KEDA_OPERATOR_METRICS_PORT]),
            }
        )
    team_redis = {
        **labelled_namespaces_peer(TEAM_LABEL),
        "podSelector": pod_selector(redis_server_selector()),
    }
    return [
        *controller_namespace(namespace, network),
        PolicySpec(
            "keda-operator",
            namespace,
            {
                "podSelector": keda_pod(KEDA_OPERATOR),
                "policyTypes": ["Ingress", "Egress"],
                "ingress": operator_ingress,
                "egress": [{"to": [team_redis], "ports": ports([REDIS_PORT])}],
            },
        ),
        aggregated_api_server(
            "keda-metrics-apiserver",
            namespace,
            network,
            {KEDA_POD_LABEL: KEDA_METRICS_APISERVER},
            KEDA_METRICS_APISERVER_PORT,
            [
                {
                    "to": [{"podSelector": keda_pod(KEDA_OPERATOR)}],
                    "ports": ports([KEDA_METRICS_SERVICE_PORT]),
                }
            ],
        ),
        PolicySpec(
            "keda-admission-webhooks",
            namespace,
            {
                "podSelector": keda_pod(KEDA_WEBHOOKS),
                "policyTypes": ["Ingress"],
                "ingress": [
                    {
                        "from": cidr_peers(network.api_server_cidrs),
                        "ports": ports([KEDA_WEBHOOK_PORT]),
                    }
                ],
            },
        ),
    ]


def gpu_operator_policies(
    namespace: str, network: SystemNetwork, dcgm_exporter: bool
) -> list[PolicySpec]:
    """The GPU operator and its operands talk to the API server only (device plugin, feature
    discovery and validator work through the node); Prometheus scrapes the DCGM exporter."""
    found = controller_namespace(namespace, network)
    if dcgm_exporter and network.prometheus_namespace is not None:
        found.append(
            PolicySpec(
                "dcgm-exporter",
                namespace,
                {
                    "podSelector": pod_selector(DCGM_EXPORTER_SERVICE_LABELS),
                    "policyTypes": ["Ingress"],
                    "ingress": [
                        {
                            "from": [prometheus_peer(network.prometheus_namespace)],
                            "ports": ports([DCGM_EXPORTER_PORT]),
                        }
                    ],
                },
            )
        )
    return found


def create_policies(
    name: str,
    policies: Sequence[PolicySpec],
    opts: pulumi.ResourceOptions,
    labels: Mapping[str, str] | None = None,
) -> list[kube.NetworkPolicy]:
    """The policies as resources named ``<name>-netpol-<policy>``."""
    return [
        kube.NetworkPolicy(
            f"{name}-netpol-{policy.name}",
            metadata={
                "name": policy.name,
                "namespace": policy.namespace,
                "labels": dict(labels or platform_labels()),
            },
            spec=policy.spec,
            opts=opts,
        )
        for policy in policies
    ]
