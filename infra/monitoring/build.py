"""``MonitoringConfig`` → ``MonitoringStackArgs``: the only place config meets the component.

Every receiver credential
leaves here as ``pulumi.Output.secret``: the stack file marks them ``secure:``, but the loaded
config cannot tell, so this layer (and the component again) treats them as secrets regardless.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from components.charts import PUBLIC_REPOSITORIES, ChartSource
from components.monitoring.spec import (
    AlertmanagerSpec,
    AlertReceiver,
    DcgmCountersSpec,
    FluentBitSpec,
    GrafanaSpec,
    LokiObjectStorage,
    LokiSpec,
    MonitoringStackArgs,
    NetworkSpec,
    PrometheusSpec,
    ScrapeSpec,
)
from components.monitoring.stack import MonitoringStack
from components.prometheus_adapter import adapter_peer

from ..config.root import PlatformConfig
from ..outputs import MonitoringOutputs
from ..sources import MONITORING
from .config import AlertReceiverConfig, MonitoringConfig

_CREDENTIAL = {
    "slack": "url",
    "webhook": "url",
    "pagerduty": "routing_key",
    "email": "auth_password",
}
"""The receiver field holding each type's secret."""


def _receiver(receiver: AlertReceiverConfig) -> AlertReceiver:
    credential = getattr(receiver, _CREDENTIAL[receiver.type])
    return AlertReceiver(
        name=receiver.name,
        type=receiver.type,
        severities=tuple(receiver.severities),
        teams=tuple(receiver.teams),
        credential=None if credential is None else pulumi.Output.secret(credential),
        channel=receiver.channel,
        email_to=receiver.to,
        email_from=receiver.from_address,
        smarthost=receiver.smarthost,
        auth_username=receiver.auth_username,
    )


def monitoring_stack_args(
    config: MonitoringConfig,
    *,
    cluster_name: str = "",
    retain_on_delete: bool = False,
    gpu_stack_enabled: bool = True,
    queueing_enabled: bool = True,
    keda_enabled: bool = False,
    ray_enabled: bool = False,
    dcgm_namespace_ready: Sequence[pulumi.Resource] = (),
    chart_source: ChartSource = PUBLIC_REPOSITORIES,
    registry_mirror: str | None = None,
    team_namespaces: Mapping[str, str] | None = None,
    prometheus_clients: Sequence[Mapping[str, Any]] = (),
) -> MonitoringStackArgs:
    """The component's args.

    Without the GPU operator there is no DCGM exporter to scrape and no namespace for its
    counters ConfigMap; without Kueue (or KEDA) no controller to scrape.
    ``dcgm_namespace_ready`` orders the ConfigMap after the GPU operator (which creates the
    namespace). ``prometheus_clients``: pods of other namespaces that query Prometheus.
    """
    prometheus = config.prometheus
    loki = config.loki
    storage = loki.object_storage
    return MonitoringStackArgs(
        cluster_name=cluster_name,
        monitoring_namespace=config.namespace,
        logging_namespace=config.logging_namespace,
        prometheus=PrometheusSpec(
            retention=prometheus.retention,
            retention_size=prometheus.retention_size,
            storage_size=prometheus.storage_size,
            storage_class=prometheus.storage_class_name,
            replicas=prometheus.replicas,
            scrape_interval=prometheus.scrape_interval,
            resources={
                "requests": dict(prometheus.resources.requests),
                "limits": dict(prometheus.resources.limits),
            },
            sample_limit=prometheus.scrape_limits.samples,
            target_limit=prometheus.scrape_limits.targets,
            label_limit=prometheus.scrape_limits.labels,
        ),
        alertmanager=AlertmanagerSpec(
            receivers=tuple(_receiver(r) for r in config.alertmanager.receivers),
            replicas=config.alertmanager.replicas,
            egress_cidrs=tuple(config.alertmanager.egress_cidrs),
            egress_ports=tuple(config.alertmanager.egress_ports),
        ),
        grafana=GrafanaSpec(
            admin_user=config.grafana.admin_user,
            persistence=config.grafana.persistence,
            storage_class=config.grafana.storage_class_name,
            storage_size=config.grafana.storage_size,
            access_from_namespaces=tuple(config.grafana.access_from_namespaces),
        ),
        loki=LokiSpec(
            mode=loki.mode,
            retention=loki.retention,
            storage_class=loki.storage_class_name,
            storage_size=loki.storage_size,
            replicas=loki.replicas,
            object_storage=None
            if storage is None
            else LokiObjectStorage(
                chunks_bucket=storage.buckets.chunks,
                ruler_bucket=storage.buckets.ruler,
                region=storage.region,
                endpoint=storage.endpoint,
                credentials_secret=storage.credentials_secret,
                force_path_style=storage.force_path_style,
                insecure=storage.insecure,
            ),
        ),
        fluent_bit=FluentBitSpec(
            log_level=config.fluent_bit.log_level,
            drop_debug_logs=config.fluent_bit.drop_debug_logs,
            mem_buf_limit=config.fluent_bit.mem_buf_limit,
            exclude_namespaces=tuple(config.fluent_bit.exclude_namespaces),
        ),
        scrape=ScrapeSpec(
            dcgm=config.service_monitors.dcgm and gpu_stack_enabled,
            kueue=config.service_monitors.kueue and queueing_enabled,
            keda=config.service_monitors.keda and keda_enabled,
            inference=config.service_monitors.inference,
            ray=config.service_monitors.ray and ray_enabled,
        ),
        network=NetworkSpec(
            api_server_cidrs=tuple(config.network.api_server_cidrs),
            node_cidrs=tuple(config.network.node_cidrs),
            object_storage_cidrs=tuple(config.network.object_storage_cidrs),
            team_metrics_ports=tuple(config.network.team_metrics_ports),
            prometheus_clients=tuple(prometheus_clients),
        ),
        dcgm_counters=DcgmCountersSpec(
            create=gpu_stack_enabled, depends_on=tuple(dcgm_namespace_ready)
        ),
        team_namespaces=dict(team_namespaces or {}),
        runbook_base_url=config.runbook_base_url,
        retain_on_delete=retain_on_delete,
        chart_source=chart_source,
        registry_mirror=registry_mirror,
    )


def monitoring_stack(
    config: PlatformConfig, gpu_operator: pulumi.Resource | None, opts: pulumi.ResourceOptions
) -> MonitoringStack | None:
    """The monitoring stack, if enabled; its DCGM objects wait for the GPU operator."""
    if not config.monitoring.enabled:
        return None
    args = monitoring_stack_args(
        config.monitoring,
        cluster_name=config.cluster.name,
        retain_on_delete=config.cluster.protects_data,
        gpu_stack_enabled=config.gpu_stack.enabled,
        queueing_enabled=config.queueing.enabled,
        keda_enabled=config.autoscaling.keda.enabled,
        ray_enabled=config.ray.enabled,
        dcgm_namespace_ready=[gpu_operator] if gpu_operator else [],
        chart_source=config.charts.chart_source,
        registry_mirror=config.images.registry_mirror,
        team_namespaces={team.name: team.namespace_name for team in config.teams},
        prometheus_clients=[adapter_peer()]
        if config.autoscaling.prometheus_adapter.enabled
        else [],
    )
    return MonitoringStack(MONITORING, args, opts)


def monitoring_outputs(stack: MonitoringStack | None) -> MonitoringOutputs | None:
    """Addresses and names only; the Grafana password stays in its Secret."""
    if stack is None:
        return None
    return MonitoringOutputs(
        namespace=stack.monitoring_namespace,
        logging_namespace=stack.logging_namespace,
        grafana_url=stack.grafana_url,
        grafana_admin_secret=stack.grafana_admin_secret_name,
        prometheus_url=stack.prometheus_url,
        alertmanager_url=stack.alertmanager_url,
        loki_push_url=stack.loki_push_url,
    )
