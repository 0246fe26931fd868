"""``ai-platform:monitoring``: metrics, alerts, dashboards and logs for the whole platform.

Secrets. Receiver credentials (``url``, ``routingKey``, ``authPassword``) are written in the stack
file as Pulumi secrets (``url: {secure: ...}``); ``pulumi up`` hands the program the decrypted
value and the offline preview the placeholder ``offline-preview-secret``. Neither path lets the
model tell a secret from plain text, so the component wraps every credential in
``pulumi.Output.secret`` whatever the file said, and the model never validates their format (a
URL check would reject the offline placeholder). Loki's object-storage credentials are never in
config at all: ``credentialsSecret`` names a Kubernetes Secret that already holds them.

Cross-field rules (storage classes exist, scalable Loki has object storage, durations parse,
receiver names are unique and complete) are in ``rules.py``, the mapping to
``MonitoringStackArgs`` in ``build.py``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, WithJsonSchema

from components.constants import ANYWHERE_CIDRS, LOGGING_NAMESPACE, MONITORING_NAMESPACE

from ..config.base import ConfigModel, DnsLabel, DnsSubdomain, cidr
from ..config.quantity import Quantity

Severity = Literal["critical", "warning", "info"]
ReceiverType = Literal["slack", "pagerduty", "webhook", "email"]
LokiMode = Literal["single-binary", "scalable"]
FluentBitLogLevel = Literal["error", "warn", "info"]
"""Fluent Bit's own log level; ``debug`` and ``trace`` are not offered: they flood node logs."""

_DURATION = re.compile(
    r"^(?:(?P<y>\d+)y)?(?:(?P<w>\d+)w)?(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?"
    r"(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?(?:(?P<ms>\d+)ms)?$"
)
_DURATION_SECONDS = {
    "y": 365 * 86400,
    "w": 7 * 86400,
    "d": 86400,
    "h": 3600,
    "m": 60,
    "s": 1,
}
_BYTE_SIZE = re.compile(r"^(?P<number>\d+(?:\.\d+)?)(?P<unit>[KMGTPE]i?)?B$")
_BYTE_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def parse_duration(text: str) -> Decimal:
    """Seconds in a Prometheus duration (``15d``, ``1w2d``, ``90m``, ``500ms``).

    The grammar of prometheus-operator's ``Duration`` type, which Prometheus retention and Loki
    ``retention_period`` both accept; raises ``ValueError`` naming the input otherwise.
    """
    # Never stripped: the value is rendered as written, and prometheus-operator's CRDs refuse
    # "15d " (the API server would reject the Prometheus object in the middle of a Helm upgrade).
    match = _DURATION.fullmatch(text) if text else None
    if match is None:
        raise ValueError(f"must be a duration such as '15d', '12h' or '1w', got {text!r}")
    seconds = Decimal(0)
    for unit, factor in _DURATION_SECONDS.items():
        if match[unit]:
            seconds += int(match[unit]) * factor
    if match["ms"]:
        seconds += Decimal(int(match["ms"])) / 1000
    return seconds


def parse_byte_size(text: str) -> Decimal:
    """Bytes in a Prometheus ``retentionSize`` (``45GiB``, ``500MB``)."""
    match = _BYTE_SIZE.fullmatch(text)  # as written: rendered as it is, like durations
    if match is None:
        raise ValueError(f"must be a size such as '45GiB' or '500MB', got {text!r}")
    unit = match["unit"] or ""
    if unit.endswith("i"):
        factor = Decimal(1024) ** ("KMGTPE".index(unit[0]) + 1)
    else:
        factor = Decimal(_BYTE_UNITS[unit])
    return Decimal(match["number"]) * factor


SecretValue = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "object",
            "properties": {"secure": {"type": "string"}},
            "required": ["secure"],
            "additionalProperties": False,
            "description": "A Pulumi secret: set it with `pulumi config set --secret --path`.",
        }
    ),
]
"""A credential. The program sees the decrypted string; the stack file (and so its JSON Schema,
which CI checks the checked-in stack files against) only ever holds the ``secure:`` form."""

Cidr = Annotated[str, AfterValidator(cidr("10.0.0.0/16", detail=True))]
Port = Annotated[int, Field(ge=1, le=65535)]


class ResourceRequirementsConfig(ConfigModel):
    """Container requests and limits (Kubernetes quantities)."""

    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class ScrapeLimitsConfig(ConfigModel):
    """Limits Prometheus enforces on every scrape, teams' monitors included: a team's exporter
    cannot flood the TSDB. They bind the platform's own scrapes too (cAdvisor and
    kube-state-metrics are the largest), so size them above those."""

    samples: int = Field(default=500_000, ge=1)
    """Most samples one scrape of one target may return (``enforcedSampleLimit``)."""
    targets: int = Field(default=1_000, ge=1)
    """Most targets one monitor's endpoint may discover (``enforcedTargetLimit``)."""
    labels: int = Field(default=64, ge=1)
    """Most labels one sample may carry (``enforcedLabelLimit``)."""


class PrometheusConfig(ConfigModel):
    """The Prometheus server: how long it keeps data and where."""

    retention: str = "15d"
    """How long samples are kept (Prometheus duration). Checked by the rules, not here."""
    retention_size: str = "45GiB"
    """Oldest blocks go first once the TSDB is this large; keep it below ``storageSize``."""
    storage_size: Quantity = "50Gi"
    """Size of each replica's PersistentVolumeClaim."""
    storage_class_name: str | None = None
    """A class from ``ai-platform:storage.classes``. Default: the cluster's default class."""
    replicas: int = Field(default=1, ge=1, le=5)
    """Identical replicas (each scrapes everything); 2 in prod for availability."""
    scrape_interval: str = "30s"
    """Default scrape interval of every ServiceMonitor without its own."""
    resources: ResourceRequirementsConfig = ResourceRequirementsConfig.model_validate(
        {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "4Gi"}}
    )
    """Prometheus container resources: 500m / 2Gi requested, 4Gi memory limit."""
    scrape_limits: ScrapeLimitsConfig = ScrapeLimitsConfig()
    """Per-scrape limits for every monitor. Default: 500,000 samples, 1,000 targets, 64 labels."""


class AlertReceiverConfig(ConfigModel):
    """Where alerts of some severities (and optionally some teams) are sent."""

    name: DnsLabel
    """Unique receiver name; ``null`` is reserved for the drop-everything receiver."""
    type: ReceiverType
    """``slack``, ``pagerduty``, ``webhook`` or ``email``."""
    severities: list[Severity] = Field(default=["critical", "warning"], min_length=1)
    """Alert ``severity`` values routed here. Every receiver whose route matches gets a copy."""
    teams: list[str] = []
    """Only alerts whose ``team`` label is one of these. Empty: every team and platform alerts."""
    url: SecretValue | None = None
    """Slack incoming-webhook or webhook URL. A secret: write it as ``secure:``."""
    routing_key: SecretValue | None = None
    """PagerDuty Events API v2 routing key. A secret: write it as ``secure:``."""
    channel: str | None = None
    """Slack channel, e.g. ``#gpu-alerts``. Default: the webhook's own channel."""
    to: str | None = None
    """Email: recipient address."""
    from_address: str | None = None
    """Email: sender address."""
    smarthost: str | None = None
    """Email: SMTP server as ``host:port``."""
    auth_username: str | None = None
    """Email: SMTP user."""
    auth_password: SecretValue | None = None
    """Email: SMTP password. A secret: write it as ``secure:``."""


class AlertmanagerConfig(ConfigModel):
    """Alertmanager: receivers and the egress they need."""

    replicas: int = Field(default=1, ge=1, le=5)
    """Replicas gossip to deduplicate notifications; 2 or 3 in prod."""
    receivers: list[AlertReceiverConfig] = []
    """Receivers. Empty: alerts are evaluated and shown but sent nowhere."""
    egress_cidrs: list[Cidr] = list(ANYWHERE_CIDRS)
    """Where notifications may go (Slack, PagerDuty, SMTP): the NetworkPolicy egress allowlist."""
    egress_ports: list[Port] = [443, 587]
    """Ports notifications use: HTTPS and SMTP submission by default."""


class GrafanaConfig(ConfigModel):
    """Grafana. No Ingress is created: reach it by port-forward or through an ingress controller
    whose namespace is in ``accessFromNamespaces``."""

    admin_user: str = Field(default="admin", min_length=1)
    """Admin login. The password is generated (``RandomPassword``) and kept in a Secret."""
    persistence: bool = False
    """Keep Grafana's database (users, UI-made dashboards) on a PVC."""
    storage_class_name: str | None = None
    """Class of the PVC when ``persistence``. Default: the cluster's default class."""
    storage_size: Quantity = "10Gi"
    access_from_namespaces: list[DnsLabel] = []
    """Namespaces whose pods may open Grafana (an ingress controller's). Empty: none."""


class LokiBucketsConfig(ConfigModel):
    chunks: DnsSubdomain
    """Bucket for log chunks and the index."""
    ruler: DnsSubdomain
    """Bucket for ruler state (required by the chart even without rules)."""


class LokiObjectStorageConfig(ConfigModel):
    """S3-compatible object storage for scalable Loki."""

    region: str = Field(min_length=1)
    """Bucket region, e.g. ``eu-central-1``."""
    buckets: LokiBucketsConfig
    endpoint: str | None = None
    """S3 endpoint URL for non-AWS stores (MinIO, Ceph). Default: AWS S3 of ``region``."""
    credentials_secret: DnsSubdomain | None = None
    """Existing Secret in the logging namespace with ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY``. Omit to use the pods' ambient credentials (IRSA, instance role)."""
    force_path_style: bool = False
    """Path-style bucket addressing, which MinIO and most on-prem stores need."""
    insecure: bool = False
    """Plain HTTP to ``endpoint`` (lab stores only)."""
    versioning: bool = False
    """The buckets are expected to have versioning enabled (checked by
    ``tools/object_storage_check.py``, not by Loki)."""
    lifecycle_rule: bool = False
    """The buckets are expected to have an enabled lifecycle rule (same check)."""


class LokiConfig(ConfigModel):
    """Loki: single binary on a PVC (dev) or simple scalable on object storage (prod)."""

    mode: LokiMode = "single-binary"
    """``single-binary`` (filesystem on a PVC) or ``scalable`` (read/write/backend on S3)."""
    retention: str = "7d"
    """Logs older than this are deleted by the compactor; a whole number of days."""
    storage_class_name: str | None = None
    """Class of Loki's PVCs (single binary's data, scalable write/backend WAL)."""
    storage_size: Quantity = "20Gi"
    replicas: int = Field(default=3, ge=1, le=20)
    """Replicas of each of read, write and backend in ``scalable`` mode."""
    object_storage: LokiObjectStorageConfig | None = None
    """Required for ``scalable``; not used by ``single-binary``."""


class FluentBitConfig(ConfigModel):
    """Fluent Bit, one per node, shipping container logs to Loki."""

    log_level: FluentBitLogLevel = "info"
    """Fluent Bit's own log level."""
    drop_debug_logs: bool = True
    """Drop containers' debug-level lines before they leave the node (grep filter)."""
    mem_buf_limit: str = Field(default="50MB", pattern=r"^\d+[KMG]?B?$")
    """In-memory buffer per input; logs are never buffered on the node's disk."""
    exclude_namespaces: list[DnsLabel] = []
    """Namespaces whose container logs are not collected at all."""


class ServiceMonitorsConfig(ConfigModel):
    """Scrape targets beyond the charts' own."""

    dcgm: bool = True
    """The GPU operator's DCGM exporter (``gpu-operator``)."""
    kueue: bool = True
    """Kueue's controller metrics (``kueue-system``)."""
    keda: bool = True
    """KEDA's operator metrics (``keda``): each ScaledObject's trigger values, such as a worker
    pool's queue length (the Celery backlog alert reads them)."""
    inference: bool = True
    """Every team Service labelled ``aiplatform.io/workload-type: inference``."""
    ray: bool = True
    """Every Ray head and worker of the teams (port ``metrics``, 8080), when the stack installs
    the KubeRay operator (``ai-platform:ray``)."""


class MonitoringNetworkConfig(ConfigModel):
    """Addresses NetworkPolicies cannot select by label: they are nodes, not pods."""

    api_server_cidrs: list[Cidr] = list(ANYWHERE_CIDRS)
    """Where the API server's endpoints are (ports 443 and 6443). Narrow this in prod."""
    node_cidrs: list[Cidr] = list(ANYWHERE_CIDRS)
    """Node addresses: the kubelets (10250: Prometheus and metrics-server read them) and the
    hostNetwork node-exporter (9100). Narrow in prod."""
    object_storage_cidrs: list[Cidr] = list(ANYWHERE_CIDRS)
    """Where Loki's object storage is (port 443, or the endpoint's). Narrow in prod."""
    team_metrics_ports: list[Port] = [8000, 8080, 9090]
    """Team ports Prometheus may scrape besides any container port named ``metrics``."""


class MonitoringConfig(ConfigModel):
    """Everything ``ai-platform:monitoring`` says."""

    enabled: bool = True
    """Install the monitoring and logging stack."""
    namespace: DnsLabel = MONITORING_NAMESPACE
    """Namespace of Prometheus, Alertmanager and Grafana."""
    logging_namespace: DnsLabel = LOGGING_NAMESPACE
    """Namespace of Loki and Fluent Bit."""
    prometheus: PrometheusConfig = PrometheusConfig()
    alertmanager: AlertmanagerConfig = AlertmanagerConfig()
    grafana: GrafanaConfig = GrafanaConfig()
    loki: LokiConfig = LokiConfig()
    fluent_bit: FluentBitConfig = FluentBitConfig()
    service_monitors: ServiceMonitorsConfig = ServiceMonitorsConfig()
    network: MonitoringNetworkConfig = MonitoringNetworkConfig()
    runbook_base_url: str | None = None
    """Where the runbooks are served. Default: ``docs/runbooks`` on the project's GitHub."""


# --- Cross-field rules ----------------------------------------------------------------------------
