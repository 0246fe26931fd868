"""``ai-platform:autoscaling``: what the autoscalers read, installed by the platform.

``metricsServer``: metrics-server, the resource metrics API behind every CPU and memory
HorizontalPodAutoscaler (the inference services') and ``kubectl top``. On by default; off only
where the cluster ships its own (the API server serves one resource metrics API).

``prometheusAdapter``: prometheus-adapter, the custom metrics API behind an HPA's per-pod
metric (``workloads[].inference.customMetric``), answered from the platform's Prometheus. It
serves exactly the metrics the workloads' HPAs name; a workload with a custom metric needs it on
(a rule in ``autoscaling/rules.py``), and it needs the monitoring stack.

``keda``: KEDA, which scales worker pools on the length of their queue. Worker pools
(``workloads[].kind: worker-pool``) autoscale through it: each gets a ScaledObject whose Redis
trigger reads its Celery queue, and KEDA keeps the Deployment's HPA. Off, no worker pool may
autoscale (a rule in ``workloads/rules.py`` says so).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config.base import ConfigModel

FailurePolicy = Literal["Fail", "Ignore"]


class KedaConfig(ConfigModel):
    """The KEDA operator, its external metrics API server and its admission webhooks."""

    enabled: bool = False
    """Install KEDA (namespace ``keda``). Off by default: its operator lists and watches Secrets
    cluster-wide (what TriggerAuthentications reference), so a stack asks for it. Off, worker
    pools run at a fixed replica count."""
    operator_replicas: int = Field(default=1, ge=1, le=3)
    """Operator replicas: one leads, the others stand by, so a failover keeps scaling."""
    metrics_server_replicas: int = Field(default=1, ge=1, le=3)
    """Replicas of the external metrics API server every KEDA-made HPA reads."""
    webhook_replicas: int = Field(default=1, ge=1, le=3)
    webhook_failure_policy: FailurePolicy = "Fail"
    """``Fail``: while the webhooks are down, ScaledObjects are refused rather than admitted
    unchecked. ``Ignore`` admits them (KEDA's chart default)."""


class MetricsServerConfig(ConfigModel):
    """metrics-server, the resource metrics API (``v1beta1.metrics.k8s.io``)."""

    enabled: bool = True
    """Install metrics-server (namespace ``metrics-server``). Off only where the cluster already
    runs one (GKE, AKS and most managed offerings but EKS do): the inference services' HPAs
    read CPU and memory from it and stop scaling without one."""
    replicas: int = Field(default=1, ge=1, le=3)
    """Two keep the HPAs reading through a node drain (a PodDisruptionBudget comes with them)."""
    kubelet_insecure_tls: bool = False
    """Skip verifying the kubelets' serving certificates: only for clusters whose kubelets serve
    self-signed ones (kubeadm without ``serverTLSBootstrap``, kind). Off: verified against the
    cluster CA."""


class PrometheusAdapterConfig(ConfigModel):
    """prometheus-adapter, the custom metrics API (``v1beta1.custom.metrics.k8s.io``)."""

    enabled: bool = False
    """Install prometheus-adapter (namespace ``prometheus-adapter``), serving every metric a
    workload's ``customMetric`` names from the platform's Prometheus. Needs
    ``ai-platform:monitoring.enabled``. Off: no workload may scale on a custom metric."""
    replicas: int = Field(default=1, ge=1, le=3)
    """Two keep custom-metric HPAs reading through a node drain (with a PodDisruptionBudget)."""
    relist_interval: str = Field(default="1m", pattern=r"^[0-9]+(s|m|h)$")
    """How often the adapter lists Prometheus' series, so a new pod's metric is served (a
    duration such as ``30s`` or ``1m``)."""


class AutoscalingConfig(ConfigModel):
    """Everything ``ai-platform:autoscaling`` says."""

    keda: KedaConfig = KedaConfig()
    """KEDA (namespace ``keda``), for worker pools. Default: not installed."""
    metrics_server: MetricsServerConfig = MetricsServerConfig()
    """metrics-server (namespace ``metrics-server``), for CPU and memory HPAs. Default:
    installed."""
    prometheus_adapter: PrometheusAdapterConfig = PrometheusAdapterConfig()
    """prometheus-adapter (namespace ``prometheus-adapter``), for custom-metric HPAs. Default:
    not installed."""
