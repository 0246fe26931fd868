"""What the metrics charts installed for real, against the values the offline preview declared.

metrics-server and prometheus-adapter are Helm releases the real provider installs from the
chart mirror: this reads back what Helm made of our values. Each metrics API is registered as an
APIService pointing at its chart's Service (the resource metrics API at metrics-server, the
custom metrics API at the adapter, and the external metrics API, if any, not at the adapter:
KEDA owns it); their Deployments have the replicas asked for; a PodDisruptionBudget exists
exactly where more than one replica runs (one of ``minAvailable``/``maxUnavailable``, which the
API server would have refused otherwise); the adapter's rules, in the ConfigMap the chart
renders, serve exactly the custom metrics the stack declared, and its ``--prometheus-url`` is
the platform's Prometheus.

What it cannot prove here: their processes run as KWOK pods (nothing listens), so the
APIServices stay ``Available=False`` and no HPA reads a metric (docs/e2e.md says why).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import yaml

from components.constants import (
    METRICS_SERVER_RELEASE,
    PROMETHEUS_ADAPTER_RELEASE,
)
from components.metrics_server import RESOURCE_METRICS_API
from components.prometheus_adapter import CUSTOM_METRICS_API

from .readback import Cluster

RELEASE_TYPE: Final = "kubernetes:helm.sh/v3:Release"
EXTERNAL_METRICS_API: Final = "v1beta1.external.metrics.k8s.io"
ADAPTER_CONFIG_KEY: Final = "config.yaml"
"""The key of the adapter's ConfigMap the chart writes its rules to."""


def _releases(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Helm release name → the inputs the offline preview declared."""
    return {
        r["inputs"]["name"]: r["inputs"]
        for r in report.get("resources", [])
        if r.get("type") == RELEASE_TYPE
    }


def _get(cluster: Cluster, kind: str, *where: str) -> dict[str, Any] | None:
    """One object (``kind``, then ``-n <namespace>`` if namespaced, then its name), or None
    when the API server has none of that name: read from the listing, which a missing name
    does not fail."""
    *scope, name = where
    listing = cluster.get_json(kind, *scope)
    return next(
        (item for item in listing.get("items", []) if item["metadata"]["name"] == name), None
    )


def _available(api_service: dict[str, Any]) -> str:
    for condition in (api_service.get("status") or {}).get("conditions", []):
        if condition.get("type") == "Available":
            return f"Available={condition.get('status')} ({condition.get('reason', '')})"
    return "Available unknown"


def _api_service(
    cluster: Cluster, name: str, namespace: str, service: str, facts: list[str]
) -> Iterator[str]:
    found = _get(cluster, "apiservices", name)
    if found is None:
        yield f"APIService {name}: missing"
        return
    target = (found.get("spec") or {}).get("service") or {}
    wanted = {"namespace": namespace, "name": service}
    if {k: target.get(k) for k in wanted} != wanted:
        yield f"APIService {name}: points at {target}, not at {namespace}/{service}"
        return
    facts.append(f"APIService {name} -> {namespace}/{service}: {_available(found)}")


def _deployment(
    cluster: Cluster, namespace: str, name: str, replicas: int, facts: list[str]
) -> Iterator[str]:
    found = _get(cluster, "deployments", "-n", namespace, name)
    if found is None:
        yield f"Deployment {namespace}/{name}: missing"
        return
    spec, status = found.get("spec") or {}, found.get("status") or {}
    if spec.get("replicas") != replicas:
        yield f"Deployment {namespace}/{name}: {spec.get('replicas')} replicas, not {replicas}"
    facts.append(
        f"Deployment {namespace}/{name}: {status.get('readyReplicas', 0)}/{replicas} ready"
    )
    budget = _get(cluster, "poddisruptionbudgets", "-n", namespace, name)
    if (budget is not None) != (replicas > 1):
        have = "a" if budget is not None else "no"
        yield f"{namespace}/{name}: {have} PodDisruptionBudget at {replicas} replica(s)"
    elif budget is not None:
        keys = sorted(set(budget.get("spec") or {}) & {"minAvailable", "maxUnavailable"})
        if len(keys) != 1:
            yield f"PodDisruptionBudget {namespace}/{name}: sets {keys or 'neither'}"
        else:
            facts.append(f"PodDisruptionBudget {namespace}/{name}: {keys[0]} only")


def _adapter_rules(
    cluster: Cluster, namespace: str, name: str, declared: list[str], facts: list[str]
) -> Iterator[str]:
    config_map = _get(cluster, "configmaps", "-n", namespace, name)
    if config_map is None:
        yield f"ConfigMap {namespace}/{name}: missing"
        return
    config = yaml.safe_load((config_map.get("data") or {}).get(ADAPTER_CONFIG_KEY, "")) or {}
    served = sorted(str((rule.get("name") or {}).get("as")) for rule in config.get("rules") or [])
    if served != sorted(declared):
        yield f"prometheus-adapter serves {served}, the stack declared {sorted(declared)}"
    for kind in ("externalRules", "resourceRules"):
        if config.get(kind):
            yield f"prometheus-adapter has {kind}: metrics-server and KEDA serve those APIs"
    facts.append(f"prometheus-adapter rules: {', '.join(served) or 'none'}")


def _prometheus_url(cluster: Cluster, namespace: str, name: str, url: str) -> Iterator[str]:
    found = _get(cluster, "deployments", "-n", namespace, name)
    if found is None:
        return  # said by _deployment
    containers = found["spec"]["template"]["spec"]["containers"]
    args = [arg for container in containers for arg in container.get("args", [])]
    if f"--prometheus-url={url}" not in args:
        yield f"prometheus-adapter: no --prometheus-url={url} in {args}"


def check_metrics_apis(cluster: Cluster, report: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Problems and facts about the metrics charts of the offline report (none: nothing)."""
    releases = _releases(report)
    problems: list[str] = []
    facts: list[str] = []
    metrics_server = releases.get(METRICS_SERVER_RELEASE)
    if metrics_server is not None:
        namespace = metrics_server["namespace"]
        values = metrics_server["values"]
        problems += _api_service(
            cluster, RESOURCE_METRICS_API, namespace, METRICS_SERVER_RELEASE, facts
        )
        problems += _deployment(
            cluster, namespace, METRICS_SERVER_RELEASE, values["replicas"], facts
        )
    adapter = releases.get(PROMETHEUS_ADAPTER_RELEASE)
    if adapter is not None:
        namespace = adapter["namespace"]
        values = adapter["values"]
        declared = [rule["name"]["as"] for rule in values["rules"].get("custom", [])]
        if declared:
            problems += _api_service(
                cluster, CUSTOM_METRICS_API, namespace, PROMETHEUS_ADAPTER_RELEASE, facts
            )
        external = _get(cluster, "apiservices", EXTERNAL_METRICS_API)
        if external is not None:
            target = (external.get("spec") or {}).get("service") or {}
            if target.get("namespace") == namespace:
                problems.append(f"APIService {EXTERNAL_METRICS_API} points at the adapter")
        problems += _deployment(
            cluster, namespace, PROMETHEUS_ADAPTER_RELEASE, values["replicas"], facts
        )
        problems += _adapter_rules(cluster, namespace, PROMETHEUS_ADAPTER_RELEASE, declared, facts)
        prometheus = values["prometheus"]
        url = f"{prometheus['url']}:{prometheus['port']}{prometheus['path']}"
        problems += _prometheus_url(cluster, namespace, PROMETHEUS_ADAPTER_RELEASE, url)
    if metrics_server is None and adapter is None:
        facts.append("the stack installs no metrics API")
    return problems, facts
