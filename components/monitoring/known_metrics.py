"""The metric names our exporters emit: the allowlist rules and dashboards are checked against.

Every metric a PromQL expression in ``rules/*.yaml`` or ``dashboards/*.json`` references must be
in :data:`ALL_KNOWN_METRICS` (``tests/monitoring_rules`` enforce it), so a typo or a metric that
no exporter of ours emits fails in CI instead of silently never alerting. To use a new metric, add
it to the group of the exporter that emits it, with the source it comes from.

The rules and dashboards also rely on a scrape contract the MonitoringStack component must honour:

* node-exporter and DCGM exporter targets carry a ``node`` label with the Kubernetes node name
  (a ServiceMonitor/PodMonitor relabeling of ``__meta_kubernetes_pod_node_name`` to ``node``), so
  they join kube-state-metrics' ``node`` label;
* the DCGM exporter ServiceMonitor uses ``honorLabels: true`` so the exporter's own ``namespace``,
  ``pod`` and ``container`` labels (the pod a GPU is allocated to, from the kubelet pod-resources
  API when the exporter runs with ``DCGM_EXPORTER_KUBERNETES=true``) are kept instead of being
  renamed ``exported_*``; the scrape job name contains ``dcgm``;
* the DCGM exporter runs with :func:`dcgm_counters_csv` as its counters file: the ECC and
  violation counters our GPU alerts use are commented out of the exporter's default list;
* kube-state-metrics runs with ``--metric-labels-allowlist`` = :func:`ksm_metric_labels_allowlist`
  so ``kube_*_labels`` carry our team and workload-type labels;
* Kueue runs with ``metrics.enableClusterQueueResources: true`` (quota, usage and borrowing);
* inference services follow :data:`INFERENCE_HTTP_METRICS`' convention and are scraped through a
  ServiceMonitor (so their series carry ``namespace``, ``service`` and ``pod``);
* a team Redis' exporter is scraped through its ``team-redis`` ServiceMonitor (``service`` is
  ``team-redis``).
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from components.constants import (
    TEAM_LABEL,
    VOLUME_PURPOSE_LABEL,
    WORKLOAD_TYPE_LABEL,
)


def _histogram(name: str) -> tuple[str, str, str]:
    """The three series a Prometheus histogram ``name`` is exposed as."""
    return (f"{name}_bucket", f"{name}_sum", f"{name}_count")


def _summary(name: str) -> tuple[str, str, str]:
    """The series a Prometheus summary ``name`` is exposed as (quantiles share the base name)."""
    return (name, f"{name}_sum", f"{name}_count")


# --- Prometheus itself --------------------------------------------------------------------------
# Synthetic series Prometheus records for every target and alert, not scraped from an exporter:
# prometheus.io/docs/concepts/jobs_instances ("Automatically generated labels and time series")
# and prometheus.io/docs/prometheus/latest/configuration/alerting_rules ("ALERTS").
PROMETHEUS_METRICS: Final = frozenset(
    {
        "up",
        "scrape_duration_seconds",
        "scrape_samples_scraped",
        "scrape_samples_post_metric_relabeling",
        "scrape_series_added",
        "ALERTS",
        "ALERTS_FOR_STATE",
    }
)


# --- NVIDIA DCGM exporter ---------------------------------------------------------------------
class DcgmField(NamedTuple):
    """One line of the DCGM exporter's counters CSV: ``field, prometheus type, help``."""

    name: str
    kind: str
    help: str
    exporter_default: bool
    """Enabled in the exporter's stock ``etc/default-counters.csv``; False means we enable it."""


# NVIDIA/dcgm-exporter etc/default-counters.csv and etc/dcp-metrics-included.csv. The
# ``exporter_default=False`` fields are commented out there and switched on by our counters file.
DCGM_FIELDS: Final[tuple[DcgmField, ...]] = (
    # Clocks
    DcgmField("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", True),
    DcgmField("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", True),
    # Temperature
    DcgmField("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", True),
    DcgmField("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", True),
    # Power
    DcgmField("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", True),
    DcgmField(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Total energy consumption since boot (in mJ).",
        True,
    ),
    # PCIe
    DcgmField("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", True),
    # Utilisation
    DcgmField("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", True),
    DcgmField("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", True),
    DcgmField("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", True),
    DcgmField("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", True),
    # Errors and violations
    DcgmField("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", True),
    DcgmField(
        "DCGM_FI_DEV_POWER_VIOLATION",
        "counter",
        "Throttling duration due to power constraints (in us).",
        False,
    ),
    DcgmField(
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "counter",
        "Throttling duration due to thermal constraints (in us).",
        False,
    ),
    # Framebuffer memory
    DcgmField("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", True),
    DcgmField("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", True),
    # ECC
    DcgmField(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "counter",
        "Total number of single-bit volatile ECC errors.",
        False,
    ),
    DcgmField(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "counter",
        "Total number of double-bit volatile ECC errors.",
        False,
    ),
    # NVLink
    DcgmField(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        "Total number of NVLink bandwidth counters for all lanes.",
        True,
    ),
    # Remapped rows
    DcgmField(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for uncorrectable errors.",
        True,
    ),
    DcgmField(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "counter",
        "Number of remapped rows for correctable errors.",
        True,
    ),
    DcgmField(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed.", True
    ),
    # Profiling (DCP) fields: data-centre GPUs only; the exporter skips them where unsupported.
    DcgmField(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gauge",
        "Ratio of time the graphics engine is active.",
        True,
    ),
    DcgmField(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "gauge",
        "Ratio of cycles the tensor (HMMA) pipe is active.",
        True,
    ),
    DcgmField(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        True,
    ),
)

DCGM_METRICS: Final = frozenset(field.name for field in DCGM_FIELDS)


def dcgm_counters_csv() -> str:
    """The DCGM exporter counters file (``-f``/``DCGM_EXPORTER_COLLECTORS``) our rules need."""
    lines = ["# Format: DCGM FIELD, Prometheus metric type, help message"]
    lines += [f"{f.name}, {f.kind}, {f.help}" for f in DCGM_FIELDS]
    return "\n".join(lines) + "\n"


# --- kube-state-metrics ---------------------------------------------------------------------------
# kubernetes/kube-state-metrics docs/metrics/{cluster/node,workload/pod,workload/job,
# workload/horizontalpodautoscaler,storage/persistentvolumeclaim}-metrics.md (v2.x).
# Extended resources appear with the resource name sanitised: ``nvidia.com/gpu`` -> nvidia_com_gpu.
KUBE_STATE_METRICS: Final = frozenset(
    {
        # Nodes
        "kube_node_info",
        "kube_node_labels",
        "kube_node_status_capacity",
        "kube_node_status_allocatable",
        "kube_node_status_condition",
        "kube_node_spec_unschedulable",
        # Pods
        "kube_pod_info",
        "kube_pod_labels",
        "kube_pod_owner",
        "kube_pod_status_phase",
        "kube_pod_container_resource_requests",
        "kube_pod_container_resource_limits",
        "kube_pod_container_status_waiting_reason",
        "kube_pod_container_status_restarts_total",
        # Jobs
        "kube_job_labels",
        "kube_job_owner",
        "kube_job_status_active",
        "kube_job_status_succeeded",
        "kube_job_status_failed",
        "kube_job_status_start_time",
        "kube_job_status_completion_time",
        "kube_job_complete",
        "kube_job_failed",
        "kube_job_spec_active_deadline_seconds",
        # Deployments (inference servers)
        "kube_deployment_status_replicas",
        "kube_deployment_status_replicas_available",
        # StatefulSets (the team Redis)
        "kube_statefulset_replicas",
        "kube_statefulset_status_replicas_ready",
        # Horizontal pod autoscalers
        "kube_horizontalpodautoscaler_labels",
        "kube_horizontalpodautoscaler_spec_max_replicas",
        "kube_horizontalpodautoscaler_spec_min_replicas",
        "kube_horizontalpodautoscaler_status_current_replicas",
        "kube_horizontalpodautoscaler_status_desired_replicas",
        "kube_horizontalpodautoscaler_status_condition",
        # Persistent volume claims
        "kube_persistentvolumeclaim_labels",
        "kube_persistentvolumeclaim_access_mode",
        "kube_persistentvolumeclaim_info",
        "kube_persistentvolumeclaim_resource_requests_storage_bytes",
        # Namespaces
        "kube_namespace_labels",
    }
)

KSM_LABELS_ALLOWLIST: Final[dict[str, tuple[str, ...]]] = {
    "pods": (TEAM_LABEL, WORKLOAD_TYPE_LABEL),
    "jobs": (TEAM_LABEL, WORKLOAD_TYPE_LABEL),
    "horizontalpodautoscalers": (TEAM_LABEL, WORKLOAD_TYPE_LABEL),
    "persistentvolumeclaims": (TEAM_LABEL, VOLUME_PURPOSE_LABEL),
    "namespaces": (TEAM_LABEL,),
}
"""Kubernetes labels kube-state-metrics must export as ``label_*`` on ``kube_<resource>_labels``."""


def ksm_metric_labels_allowlist() -> str:
    """The value of kube-state-metrics' ``--metric-labels-allowlist`` flag our rules depend on."""
    return ",".join(
        f"{resource}=[{','.join(keys)}]" for resource, keys in KSM_LABELS_ALLOWLIST.items()
    )


_INVALID_LABEL_CHARS = re.compile(r"[^a-zA-Z0-9_]")
_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")


def ksm_label_name(kubernetes_label: str) -> str:
    """The Prometheus label kube-state-metrics turns a Kubernetes label key into.

    Invalid characters become ``_``, camelCase becomes snake_case, the result is lower-cased and
    prefixed ``label_``: ``aiplatform.io/team`` -> ``label_aiplatform_io_team``.
    """
    sanitized = _INVALID_LABEL_CHARS.sub("_", kubernetes_label)
    return "label_" + _LOWER_UPPER.sub(r"\1_\2", sanitized).lower()


# --- node-exporter --------------------------------------------------------------------------------
# prometheus/node_exporter collectors: cpu, meminfo, filesystem, loadavg, netdev, diskstats.
NODE_EXPORTER_METRICS: Final = frozenset(
    {
        "node_cpu_seconds_total",
        "node_memory_MemAvailable_bytes",
        "node_memory_MemTotal_bytes",
        "node_filesystem_avail_bytes",
        "node_filesystem_size_bytes",
        "node_load1",
        "node_load5",
        "node_load15",
        "node_network_receive_bytes_total",
        "node_network_transmit_bytes_total",
        "node_disk_io_time_seconds_total",
    }
)


# --- kubelet (and its embedded cAdvisor) -------------------------------------------------------
# kubernetes.io/docs/reference/instrumentation/metrics (kubelet volume stats, labelled
# ``namespace`` and ``persistentvolumeclaim``) and google/cadvisor docs/storage/prometheus.md.
KUBELET_METRICS: Final = frozenset(
    {
        "kubelet_volume_stats_used_bytes",
        "kubelet_volume_stats_capacity_bytes",
        "kubelet_volume_stats_available_bytes",
        "kubelet_volume_stats_inodes",
        "kubelet_volume_stats_inodes_used",
        "container_cpu_usage_seconds_total",
        "container_memory_working_set_bytes",
    }
)


# --- Kueue ----------------------------------------------------------------------------------------
# kubernetes-sigs/kueue pkg/metrics/metrics.go and site/content/en/docs/reference/metrics.md.
# The cluster_queue_{resource_usage,nominal_quota,borrowing_limit,...} gauges need
# ``metrics.enableClusterQueueResources``; LocalQueue metrics need a feature gate: we avoid them.
KUEUE_METRICS: Final = frozenset(
    {
        "kueue_admission_attempts_total",
        *_histogram("kueue_admission_attempt_duration_seconds"),
        "kueue_pending_workloads",
        "kueue_reserving_active_workloads",
        "kueue_admitted_active_workloads",
        "kueue_quota_reserved_workloads_total",
        *_histogram("kueue_quota_reserved_wait_time_seconds"),
        "kueue_admitted_workloads_total",
        *_histogram("kueue_admission_wait_time_seconds"),
        *_histogram("kueue_admission_checks_wait_time_seconds"),
        "kueue_evicted_workloads_total",
        "kueue_preempted_workloads_total",
        "kueue_cluster_queue_status",
        "kueue_cluster_queue_resource_usage",
        "kueue_cluster_queue_resource_reservation",
        "kueue_cluster_queue_nominal_quota",
        "kueue_cluster_queue_borrowing_limit",
        "kueue_cluster_queue_lending_limit",
        "kueue_cluster_queue_weighted_share",
    }
)


# --- KEDA -----------------------------------------------------------------------------------------
# kedacore/keda v2.20 pkg/metricscollector/prommetrics.go: the operator's metrics, labelled
# namespace, scaledObject, scaler (the trigger's name), triggerIndex, metric and type.
KEDA_METRICS: Final = frozenset(
    {
        "keda_scaler_metrics_value",
        "keda_scaler_active",
        "keda_scaler_detail_errors_total",
        "keda_scaler_metrics_latency_seconds",
    }
)


# --- Our inference services ---------------------------------------------------------------------
# Convention: every inference server exposes the default metrics of
# prometheus-fastapi-instrumentator (which vLLM's OpenAI-compatible server also uses):
#   http_requests_total{handler, method, status}   status grouped as "2xx", "4xx", "5xx"
#   http_request_duration_seconds{handler, method} histogram, few buckets
#   http_request_duration_highr_seconds            histogram, many buckets, no labels
#   http_request_size_bytes / http_response_size_bytes{handler} summaries
# Servers in other frameworks must expose the same names and labels.
INFERENCE_HTTP_METRICS: Final = frozenset(
    {
        "http_requests_total",
        *_histogram("http_request_duration_seconds"),
        *_histogram("http_request_duration_highr_seconds"),
        *_summary("http_request_size_bytes"),
        *_summary("http_response_size_bytes"),
    }
)


# --- redis_exporter (the team Redis' sidecar) -----------------------------------------------------
# oliver006/redis_exporter: redis_up from its own connection, the rest from INFO (gauges and
# counters of the server's memory, clients, stats and pub/sub sections).
REDIS_EXPORTER_METRICS: Final = frozenset(
    {
        "redis_up",
        "redis_memory_used_bytes",
        "redis_memory_max_bytes",
        "redis_connected_clients",
        "redis_commands_processed_total",
        "redis_evicted_keys_total",
        "redis_pubsub_channels",
    }
)


KNOWN_METRICS: Final[dict[str, frozenset[str]]] = {
    "prometheus": PROMETHEUS_METRICS,
    "dcgm-exporter": DCGM_METRICS,
    "kube-state-metrics": KUBE_STATE_METRICS,
    "node-exporter": NODE_EXPORTER_METRICS,
    "kubelet": KUBELET_METRICS,
    "kueue": KUEUE_METRICS,
    "keda": KEDA_METRICS,
    "inference-http": INFERENCE_HTTP_METRICS,
    "redis-exporter": REDIS_EXPORTER_METRICS,
}
"""The allowlist, grouped by the exporter that emits each metric."""

ALL_KNOWN_METRICS: Final = frozenset().union(*KNOWN_METRICS.values())


def exporter_of(metric: str) -> str | None:
    """The exporter group a metric name belongs to, or None when no exporter of ours emits it."""
    return next((group for group, names in KNOWN_METRICS.items() if metric in names), None)
