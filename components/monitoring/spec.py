"""The inputs of MonitoringStack: frozen dataclasses, one per concern, with the platform's defaults.

Re-exported by :mod:`components.monitoring.stack`; kept apart so the pure builders (chart values,
Alertmanager config, NetworkPolicies) can import them without importing the component.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any, Literal

import pulumi

from components.charts import PUBLIC_REPOSITORIES, ChartSource
from components.constants import (
    ANYWHERE_CIDRS,
    GPU_OPERATOR_NAMESPACE,
    KEDA_NAMESPACE,
    KUEUE_NAMESPACE,
    LOGGING_NAMESPACE,
    MONITORING_NAMESPACE,
)

from ..frozen import frozen

ReceiverType = Literal["slack", "pagerduty", "webhook", "email"]
LokiMode = Literal["single-binary", "scalable"]


@frozen
class PrometheusSpec:
    """The Prometheus server (``prometheus.prometheusSpec``)."""

    retention: str = "15d"
    """Prometheus duration samples are kept for."""
    retention_size: str = "45GiB"
    """TSDB size cap; keep below ``storage_size`` (the WAL lives on the same volume)."""
    storage_size: str = "50Gi"
    """PVC size per replica (``storageSpec.volumeClaimTemplate``)."""
    storage_class: str | None = None
    """StorageClass of the PVC; None: the cluster default."""
    replicas: int = 1
    scrape_interval: str = "30s"
    """Default scrape and rule evaluation interval."""
    resources: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: {
            "requests": {"cpu": "500m", "memory": "2Gi"},
            "limits": {"memory": "4Gi"},
        }
    )
    """Container resources of Prometheus."""
    sample_limit: int = 500_000
    """``enforcedSampleLimit``: most samples per scrape of a target, for every monitor."""
    target_limit: int = 1_000
    """``enforcedTargetLimit``: most targets per monitor endpoint."""
    label_limit: int = 64
    """``enforcedLabelLimit``: most labels per sample."""


@frozen
class AlertReceiver:
    """One Alertmanager receiver and the route to it. ``credential`` is always a secret."""

    name: str
    type: ReceiverType
    severities: Sequence[str] = ("critical", "warning")
    """``severity`` label values routed here."""
    teams: Sequence[str] = ()
    """Restrict to alerts whose ``team`` label is one of these; empty: all."""
    credential: pulumi.Input[str] | None = None
    """Slack/webhook URL, PagerDuty routing key or SMTP password: wrapped in
    ``pulumi.Output.secret`` by the component whatever the caller passes."""
    channel: str | None = None
    """Slack channel."""
    email_to: str | None = None
    email_from: str | None = None
    smarthost: str | None = None
    """SMTP ``host:port``."""
    auth_username: str | None = None


@frozen
class AlertmanagerSpec:
    """Alertmanager: where alerts go."""

    receivers: Sequence[AlertReceiver] = ()
    replicas: int = 1
    storage_size: str = "2Gi"
    """PVC for silences and the notification log (same class as Prometheus)."""
    egress_cidrs: Sequence[str] = ANYWHERE_CIDRS
    """Where notifications may be sent (NetworkPolicy ipBlocks)."""
    egress_ports: Sequence[int] = (443, 587)


MIN_PASSWORD_LENGTH = 32
"""The shortest generated Grafana admin password."""


@frozen
class GrafanaSpec:
    """Grafana. The admin password is generated; only the Secret's name leaves the component."""

    admin_user: str = "admin"
    persistence: bool = False
    storage_class: str | None = None
    storage_size: str = "10Gi"
    access_from_namespaces: Sequence[str] = ()
    """Namespaces allowed to open Grafana (an ingress controller's); no Ingress is created."""
    password_length: int = 40
    """Length of the generated admin password (>= 32)."""

    def __post_init__(self) -> None:
        if self.password_length < MIN_PASSWORD_LENGTH:
            raise ValueError(
                f"grafana.password_length must be >= {MIN_PASSWORD_LENGTH}, "
                f"got {self.password_length}"
            )


@frozen
class LokiObjectStorage:
    """S3-compatible storage of scalable Loki. Credentials only by Secret reference."""

    chunks_bucket: str
    ruler_bucket: str
    region: str
    endpoint: str | None = None
    """Custom S3 endpoint URL (MinIO, Ceph); None: AWS S3."""
    credentials_secret: str | None = None
    """Secret in the logging namespace with ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
    injected with ``envFrom``; None: ambient credentials (IRSA, instance role)."""
    force_path_style: bool = False
    insecure: bool = False


@frozen
class LokiSpec:
    """Loki: ``single-binary`` on a PVC, or ``scalable`` (read/write/backend) on S3."""

    mode: LokiMode = "single-binary"
    retention: str = "7d"
    """Whole days; the compactor deletes older chunks."""
    storage_class: str | None = None
    storage_size: str = "20Gi"
    replicas: int = 3
    """Replicas of each of read, write and backend in scalable mode."""
    object_storage: LokiObjectStorage | None = None
    """Required for ``scalable``."""


@frozen
class FluentBitSpec:
    """Fluent Bit DaemonSet shipping container logs to Loki."""

    log_level: str = "info"
    """Fluent Bit's own log level."""
    drop_debug_logs: bool = True
    """Drop containers' debug lines with a grep filter before they are shipped."""
    mem_buf_limit: str = "50MB"
    """Memory buffer of the tail input; nothing is buffered on the node's disk."""
    exclude_namespaces: Sequence[str] = ()


@frozen
class ScrapeSpec:
    """ServiceMonitors this component adds to the charts' own."""

    dcgm: bool = True
    dcgm_namespace: str = GPU_OPERATOR_NAMESPACE
    kueue: bool = True
    kueue_namespace: str = KUEUE_NAMESPACE
    keda: bool = True
    keda_namespace: str = KEDA_NAMESPACE
    inference: bool = True
    ray: bool = False
    """A PodMonitor for every Ray head and worker of the teams (needs the KubeRay operator)."""


@frozen
class NetworkSpec:
    """Node-level addresses the NetworkPolicies need as ipBlocks: nodes have no pod labels."""

    api_server_cidrs: Sequence[str] = ANYWHERE_CIDRS
    node_cidrs: Sequence[str] = ANYWHERE_CIDRS
    """kubelet and hostNetwork node-exporter addresses."""
    object_storage_cidrs: Sequence[str] = ANYWHERE_CIDRS
    team_metrics_ports: Sequence[int] = (8000, 8080, 9090)
    """Numbered team ports Prometheus may reach besides container ports named ``metrics``."""
    prometheus_clients: Sequence[Mapping[str, Any]] = ()
    """Pods of other namespaces that may query Prometheus (``network_rules`` peers): the
    Prometheus adapter, which answers the custom metrics API from it."""


@frozen
class DcgmCountersSpec:
    """Where the DCGM counters ConfigMap goes: the GPU operator's namespace."""

    create: bool = True
    """False when the stack installs no GPU operator: its namespace does not exist."""
    namespace: str = GPU_OPERATOR_NAMESPACE
    depends_on: Sequence[pulumi.Resource] = ()
    """Resources that must exist first (the GPU operator's Namespace)."""


@frozen
class MonitoringStackArgs:
    """Inputs of a MonitoringStack. Defaults are a small single-replica dev stack."""

    cluster_name: str = ""
    """Added to every series and alert as the ``cluster`` external label when set."""
    monitoring_namespace: str = MONITORING_NAMESPACE
    logging_namespace: str = LOGGING_NAMESPACE
    prometheus: PrometheusSpec = PrometheusSpec()
    alertmanager: AlertmanagerSpec = AlertmanagerSpec()
    grafana: GrafanaSpec = GrafanaSpec()
    loki: LokiSpec = LokiSpec()
    fluent_bit: FluentBitSpec = FluentBitSpec()
    scrape: ScrapeSpec = ScrapeSpec()
    network: NetworkSpec = NetworkSpec()
    dcgm_counters: DcgmCountersSpec = DcgmCountersSpec()
    team_namespaces: Mapping[str, str] = field(default_factory=dict)
    """Team → its namespace: the Loki tenant of its logs, where its alerts route, its Grafana
    folder."""
    runbook_base_url: str | None = None
    """Base of the alerts' ``runbook_url``; None: ``assets.RUNBOOK_BASE_URL``."""
    retain_on_delete: bool = False
    """Keep the namespaces (and Prometheus/Loki data) when the stack drops them (prod)."""
    timeout_seconds: int = 900
    """How long each Helm release may take to become ready."""
    chart_source: ChartSource = PUBLIC_REPOSITORIES
    """The charts' public repositories, or a mirror directory."""
    registry_mirror: str | None = None
    """Pull every image of the three charts through this mirror (``components.images``); None:
    as pinned."""
