"""The NetworkPolicy vocabulary every component writes its policies in: ports, peers, rules.

One place says what "DNS egress", "default deny", "the pods of a namespace" or "TCP 443" render
as, so that the team namespaces, the workloads, the platform's and monitoring's namespaces agree
on it (and ``tools/netpol.py``, the independent checker, reads one shape). Pure functions, no
resources: a component builds ``spec`` dicts from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .constants import (
    DNS_PORT,
    KUBE_DNS_LABEL,
    KUBE_DNS_LABEL_VALUE,
    KUBE_SYSTEM_NAMESPACE,
    NAMESPACE_NAME_LABEL,
)


# --- ports -----------------------------------------------------------------------------------
def tcp(port: int | str) -> dict[str, Any]:
    """A TCP port, by number or by the container port's name."""
    return {"protocol": "TCP", "port": port}


def udp(port: int | str) -> dict[str, Any]:
    return {"protocol": "UDP", "port": port}


def ports(numbers: Iterable[int | str], protocol: str = "TCP") -> list[dict[str, Any]]:
    """Several ports of one protocol, in the given order."""
    return [{"protocol": protocol, "port": port} for port in numbers]


# --- peers -----------------------------------------------------------------------------------
def pod_selector(labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Pods carrying ``labels``; every pod of the namespace when None."""
    return {"matchLabels": dict(labels)} if labels is not None else {}


def namespace_selector(name: str) -> dict[str, Any]:
    """One namespace, by the name label the API server sets on every namespace."""
    return {"matchLabels": {NAMESPACE_NAME_LABEL: name}}


def pods_peer(
    labels: Mapping[str, str] | None = None, namespace: str | None = None
) -> dict[str, Any]:
    """Pods carrying ``labels`` (every pod when None), of the policy's own namespace or, when
    given, of ``namespace``."""
    peer: dict[str, Any] = {"podSelector": pod_selector(labels)}
    if namespace is not None:
        peer["namespaceSelector"] = namespace_selector(namespace)
    return peer


def namespaces_peer(namespaces: Sequence[str]) -> dict[str, Any]:
    """Every pod of the named namespaces."""
    return {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(namespaces)}
            ]
        }
    }


def labelled_namespaces_peer(key: str) -> dict[str, Any]:
    """Every pod of every namespace that carries the label ``key`` (any value)."""
    return {"namespaceSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]}}


def cidr_peers(blocks: Iterable[str]) -> list[dict[str, Any]]:
    """Addresses outside the pod network (the API server, nodes, object storage), one peer per
    range."""
    return [{"ipBlock": {"cidr": cidr}} for cidr in blocks]


def kube_dns_peer() -> dict[str, Any]:
    """The cluster DNS pods."""
    return pods_peer({KUBE_DNS_LABEL: KUBE_DNS_LABEL_VALUE}, KUBE_SYSTEM_NAMESPACE)


# --- rules and whole specs -------------------------------------------------------------------
def dns_egress() -> dict[str, Any]:
    """Egress to the cluster DNS pods only, UDP and TCP 53."""
    return {"to": [kube_dns_peer()], "ports": [udp(DNS_PORT), tcp(DNS_PORT)]}


def default_deny() -> dict[str, Any]:
    """Nothing in or out for every pod of the namespace: what every other policy opens from."""
    return {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def allow_dns() -> dict[str, Any]:
    """Every pod of the namespace may resolve names (and nothing more)."""
    return {"podSelector": {}, "policyTypes": ["Egress"], "egress": [dns_egress()]}
