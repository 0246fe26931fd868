"""Autoscaling: config -> ``KedaArgs``, ``MetricsServerArgs``, ``PrometheusAdapterArgs`` -> the
KEDA, metrics-server and prometheus-adapter components."""

from __future__ import annotations

import pulumi

from components.keda import Keda, KedaArgs
from components.metrics_server import MetricsServer, MetricsServerArgs
from components.network_policies import SystemNetwork
from components.prometheus_adapter import PrometheusAdapter, PrometheusAdapterArgs

from ..chart_fields import chart_fields
from ..config.root import PlatformConfig
from ..sources import KEDA, METRICS_SERVER, PROMETHEUS_ADAPTER


def keda(
    config: PlatformConfig, network: SystemNetwork, opts: pulumi.ResourceOptions
) -> Keda | None:
    """KEDA in its own namespace, if enabled."""
    settings = config.autoscaling.keda
    if not settings.enabled:
        return None
    args = KedaArgs(
        **chart_fields(config, network),
        operator_replicas=settings.operator_replicas,
        metrics_server_replicas=settings.metrics_server_replicas,
        webhook_replicas=settings.webhook_replicas,
        webhook_failure_policy=settings.webhook_failure_policy,
    )
    return Keda(KEDA, args, opts)


def metrics_server(
    config: PlatformConfig, network: SystemNetwork, opts: pulumi.ResourceOptions
) -> MetricsServer | None:
    """metrics-server in its own namespace, if enabled."""
    settings = config.autoscaling.metrics_server
    if not settings.enabled:
        return None
    args = MetricsServerArgs(
        **chart_fields(config, network),
        replicas=settings.replicas,
        kubelet_insecure_tls=settings.kubelet_insecure_tls,
    )
    return MetricsServer(METRICS_SERVER, args, opts)


def custom_metrics(config: PlatformConfig) -> list[str]:
    """Every per-pod metric the workloads' HPAs name, once each, in order."""
    names = []
    for workload in config.workloads:
        if workload.kind != "inference":
            continue
        metric = workload.inference_settings.custom_metric
        if metric is not None and metric.name not in names:
            names.append(metric.name)
    return names


def prometheus_adapter(
    config: PlatformConfig,
    network: SystemNetwork,
    prometheus_url: str | None,
    opts: pulumi.ResourceOptions,
) -> PrometheusAdapter | None:
    """prometheus-adapter in its own namespace, if enabled, serving the workloads' custom
    metrics from the platform's Prometheus (``prometheus_url``; the rules made sure there is
    one)."""
    settings = config.autoscaling.prometheus_adapter
    if not settings.enabled or prometheus_url is None:
        return None
    args = PrometheusAdapterArgs(
        **chart_fields(config, network),
        prometheus_url=prometheus_url,
        metrics=custom_metrics(config),
        replicas=settings.replicas,
        relist_interval=settings.relist_interval,
    )
    return PrometheusAdapter(PROMETHEUS_ADAPTER, args, opts)
