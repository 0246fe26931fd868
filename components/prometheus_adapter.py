"""PrometheusAdapter: prometheus-adapter, the custom metrics API (``v1beta1.custom.metrics.k8s.io``)
the HorizontalPodAutoscalers' Pods metrics read, answered by queries to the platform's Prometheus.

Installed from its Helm chart into a namespace of its own that enforces ``restricted`` Pod
Security and starts from default-deny: the adapter queries Prometheus (the monitoring namespace's
Prometheus pods, on their HTTP port) and calls the API server; only the API server calls it.

What it serves is what the workloads ask for: one rule per custom metric a workload's HPA names
(:func:`adapter_rules`), none of the chart's catch-all default rules (they list every series of
every namespace and serve thousands of metrics no HPA reads). It serves neither the resource
metrics API (metrics-server does) nor the external one (KEDA does): the chart registers an
APIService only for the rule kinds it is given, and the API server keeps one service per API.

Why the values below: a PodDisruptionBudget only with more than one replica, with the chart's own
``maxUnavailable: 1`` and no ``minAvailable`` (the chart renders both when both are set, which
the API server refuses); the chart's security context (already ``restricted`` at the container)
plus the pod half; a memory limit; ``system-cluster-critical`` as metrics-server has, since the
autoscalers stop without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import pulumi
import pulumi_kubernetes as k8s

from .charts import PROMETHEUS_ADAPTER, Chart, ChartImage, chart_image_values, merge_values
from .constants import (
    APP_NAME_LABEL,
    PROMETHEUS_ADAPTER_CHART,
    PROMETHEUS_ADAPTER_NAMESPACE,
    PROMETHEUS_ADAPTER_PORT,
    PROMETHEUS_ADAPTER_RELEASE,
)
from .frozen import frozen
from .monitoring.constants import PROMETHEUS_PORT
from .network_policies import (
    PolicySpec,
    SystemNetwork,
    aggregated_api_server,
    controller_namespace,
    prometheus_peer,
)
from .network_rules import pods_peer, ports
from .platform_chart import ChartInstall, PlatformChartArgs

POD_LABELS: Final = {APP_NAME_LABEL: PROMETHEUS_ADAPTER_CHART}
"""What the chart puts on the adapter's pods: the NetworkPolicies select them."""

CHART_IMAGES: tuple[ChartImage, ...] = (
    ChartImage(("image",), "registry.k8s.io/prometheus-adapter/prometheus-adapter", "repository"),
)
"""Every image the prometheus-adapter chart deploys (its values.yaml), for a registry mirror."""

CUSTOM_METRICS_API: Final = "v1beta1.custom.metrics.k8s.io"
"""The APIService the chart registers for custom rules."""

METRICS_QUERY: Final = "max(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)"
"""One value per pod: the pod's series, the highest if Prometheus scrapes it twice (its
Service's ServiceMonitor and the inference Services' shared one)."""


@frozen
class PrometheusAdapterArgs(PlatformChartArgs):
    """Inputs of the PrometheusAdapter component."""

    chart: Chart = PROMETHEUS_ADAPTER
    namespace: str = PROMETHEUS_ADAPTER_NAMESPACE
    prometheus_url: str = ""
    """The platform's Prometheus, scheme, host and port (``MonitoringStack.prometheus_url``)."""
    metrics: Sequence[str] = ()
    """The per-pod metrics to serve, as the HPAs name them and Prometheus stores them."""
    replicas: int = 1
    """Replicas of the adapter; two keep custom-metric HPAs reading through a node drain."""
    relist_interval: str = "1m"
    """How often the adapter lists Prometheus' series to learn new pods (a Go duration)."""

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError("PrometheusAdapterArgs.replicas must be >= 1")
        parts = urlsplit(self.prometheus_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"PrometheusAdapterArgs.prometheus_url {self.prometheus_url!r} is not an "
                "http(s) URL"
            )


def adapter_rules(metrics: Sequence[str]) -> list[dict[str, Any]]:
    """One custom-metrics rule per metric (sorted, once each): the series of that name that
    carry ``namespace`` and ``pod`` labels (what Prometheus adds to every scraped pod), served
    under the same name for the pod and its namespace."""
    return [
        {
            "seriesQuery": f'{metric}{{namespace!="",pod!=""}}',
            "resources": {
                "overrides": {
                    "namespace": {"resource": "namespace"},
                    "pod": {"resource": "pod"},
                }
            },
            "name": {"matches": f"^{metric}$", "as": metric},
            "metricsQuery": METRICS_QUERY,
        }
        for metric in sorted(set(metrics))
    ]


def chart_values(args: PrometheusAdapterArgs) -> dict[str, Any]:
    """Helm values of the prometheus-adapter chart (keys as in its values.yaml)."""
    parts = urlsplit(args.prometheus_url)
    rules = adapter_rules(args.metrics)
    values: dict[str, Any] = {
        "prometheus": {
            "url": f"{parts.scheme}://{parts.hostname}",
            "port": parts.port or (443 if parts.scheme == "https" else 80),
            "path": parts.path.rstrip("/"),
        },
        "replicas": args.replicas,
        "metricsRelistInterval": args.relist_interval,
        # The chart's external rules stay empty (its default): KEDA serves the external metrics
        # API. No empty list of ours either: the provider drops it, and the state would differ.
        "rules": {"default": False, **({"custom": rules} if rules else {})},
        "priorityClassName": "system-cluster-critical",
        "podSecurityContext": {
            "fsGroup": 10001,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"memory": "512Mi"},
        },
        "podDisruptionBudget": {"enabled": args.replicas > 1},
    }
    return merge_values(values, chart_image_values(CHART_IMAGES, args.registry_mirror))


def adapter_peer(namespace: str = PROMETHEUS_ADAPTER_NAMESPACE) -> dict[str, Any]:
    """The adapter's pods, as a peer of another namespace's policies (Prometheus' ingress)."""
    return pods_peer(POD_LABELS, namespace)


def prometheus_adapter_policies(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
    """The adapter queries Prometheus and calls the API server; the API server calls it,
    nothing else does."""
    egress: list[dict[str, Any]] = []
    if network.prometheus_namespace is not None:
        egress.append(
            {
                "to": [prometheus_peer(network.prometheus_namespace)],
                "ports": ports([PROMETHEUS_PORT]),
            }
        )
    return [
        *controller_namespace(namespace, network),
        aggregated_api_server(
            "prometheus-adapter", namespace, network, POD_LABELS, PROMETHEUS_ADAPTER_PORT, egress
        ),
    ]


class PrometheusAdapter(pulumi.ComponentResource):
    """prometheus-adapter and its APIService, in a restricted, default-deny namespace."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace_name: str
        release: k8s.helm.v3.Release
        metrics: list[str]

    def __init__(
        self, name: str, args: PrometheusAdapterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:autoscaling:PrometheusAdapter", name, None, opts)
        install = ChartInstall(self, name, args, prometheus_adapter_policies)
        self.release = install.release(PROMETHEUS_ADAPTER_RELEASE, chart_values(args))
        self.namespace_name = args.namespace
        self.metrics = sorted(set(args.metrics))
        self.register_outputs({"namespace": self.namespace_name, "metrics": self.metrics})
