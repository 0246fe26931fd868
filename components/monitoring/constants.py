"""Names, labels, ports and pinned chart versions of the monitoring and logging stack.

Kept here, beside the component, until the lead moves the shared ones into
``components/constants.py``; the platform-wide ones are imported from there, never retyped.
Every name other code or people rely on (Service names behind the in-cluster URLs, the Secret
and ConfigMap names other components reference) is derived from these, so the URLs the component
exports and the objects the charts create cannot drift apart.
"""

from __future__ import annotations

from typing import Final

from components.constants import LABEL_PREFIX, METRICS_PORT_NAME

# --- Pinned charts (see the module docstring of components/monitoring/stack.py for sources) -------
KPS_CHART: Final = "kube-prometheus-stack"
KPS_CHART_REPO: Final = "https://prometheus-community.github.io/helm-charts"
KPS_CHART_VERSION: Final = "77.14.0"
"""Pinned once. Values keys checked against the chart's values.yaml of this generation
(Prometheus v3.5 LTS, operator >= 0.85); newer majors need their UPGRADE.md notes read first."""
KPS_RELEASE: Final = "kube-prometheus-stack"
KPS_FULLNAME: Final = "kps"
"""``fullnameOverride``: Services are ``kps-prometheus``, ``kps-alertmanager``, ``kps-operator``."""

LOKI_CHART: Final = "loki"
LOKI_CHART_REPO: Final = "https://grafana.github.io/helm-charts"
LOKI_CHART_VERSION: Final = "6.55.0"
"""Pinned once: the last OSS release of grafana/loki, where grafana-community/helm-charts forked
(2026-03-16). Later OSS releases live in grafana-community (major 7+, breaking value changes)."""
LOKI_RELEASE: Final = "loki"
"""Release name containing the chart name: the chart's fullname is ``loki``."""

FLUENT_BIT_CHART: Final = "fluent-bit"
FLUENT_BIT_CHART_REPO: Final = "https://fluent.github.io/helm-charts"
FLUENT_BIT_CHART_VERSION: Final = "0.58.1"
"""Pinned once; Fluent Bit 5.1.1, the newest release the chart mirror holds. Classic-mode
``config.*`` strings as in the chart's README."""
FLUENT_BIT_RELEASE: Final = "fluent-bit"

# --- Objects other components and people reference by name ----------------------------------------
GRAFANA_FULLNAME: Final = "grafana"
"""``grafana.fullnameOverride``: the Grafana Service is ``grafana``."""
GRAFANA_ADMIN_SECRET: Final = "grafana-admin"
"""Secret with the generated admin credentials (``grafana.admin.existingSecret``)."""
GRAFANA_ADMIN_USER_KEY: Final = "admin-user"
GRAFANA_ADMIN_PASSWORD_KEY: Final = "admin-password"
GRAFANA_DASHBOARD_LABEL: Final = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE: Final = "1"
"""The Grafana sidecar loads every ConfigMap carrying ``grafana_dashboard: "1"``."""
ALERTMANAGER_CONFIG_SECRET: Final = "alertmanager-platform-config"
"""Secret holding ``alertmanager.yaml`` (``alertmanager.alertmanagerSpec.configSecret``)."""
ALERTMANAGER_CONFIG_KEY: Final = "alertmanager.yaml"
DCGM_COUNTERS_CONFIGMAP: Final = "dcgm-exporter-counters"
"""ConfigMap with our DCGM counters CSV; the GPU operator's ``dcgmExporter.config.name``."""
DCGM_COUNTERS_KEY: Final = "dcgm-metrics.csv"
NULL_RECEIVER: Final = "null"
"""Alertmanager receiver that drops what no route claims (and the Watchdog)."""

# --- Labels of our own ----------------------------------------------------------------------------
MONITORING_COMPONENT_LABEL: Final = f"{LABEL_PREFIX}/monitoring-component"
"""Set on every monitoring/logging pod through the charts' pod-label values; the NetworkPolicies
select on it, so they do not depend on each chart's own label scheme."""
COMPONENT_PROMETHEUS: Final = "prometheus"
COMPONENT_ALERTMANAGER: Final = "alertmanager"
COMPONENT_GRAFANA: Final = "grafana"
COMPONENT_KUBE_STATE_METRICS: Final = "kube-state-metrics"
COMPONENT_NODE_EXPORTER: Final = "node-exporter"
COMPONENT_OPERATOR: Final = "prometheus-operator"
COMPONENT_LOKI: Final = "loki"
COMPONENT_LOKI_GATEWAY: Final = "loki-gateway"
COMPONENT_FLUENT_BIT: Final = "fluent-bit"
PLATFORM_ALERT_LABEL: Final = "aiplatform_rule_owner"
PLATFORM_ALERT_VALUE: Final = "platform"
"""On every alert of the platform's own rules (and the chart's default rules): only these reach
receivers without ``teams`` (the platform's on-call) and only these may inhibit. A team's rules
cannot set it (the tenant guardrails and the policy pack refuse it)."""
TENANT_NAMESPACE_LABEL: Final = "namespace"
"""``enforcedNamespaceLabel``: Prometheus sets it, to the object's namespace, on every series a
team's monitor scrapes and every alert its rules fire, and confines its rules' queries to it."""
GRAFANA_FOLDER_ANNOTATION: Final = "grafana_folder"
"""On a dashboard ConfigMap: the Grafana folder the sidecar files it under (a team's folder)."""
LOKI_PLATFORM_TENANT: Final = "platform"
"""The Loki tenant of every log line outside the team namespaces (each team's is its namespace)."""
PROMETHEUS_RULE_SELECTOR_LABEL: Final = "release"
"""kube-prometheus-stack's default rule/monitor selector key; our objects carry it too."""

# --- Ports ----------------------------------------------------------------------------------------
PROMETHEUS_PORT: Final = 9090
CONFIG_RELOADER_PORT: Final = 8080
ALERTMANAGER_PORT: Final = 9093
ALERTMANAGER_MESH_PORT: Final = 9094
GRAFANA_PORT: Final = 3000
"""Grafana's container port; its Service listens on 80."""
GRAFANA_SERVICE_PORT: Final = 80
KSM_HTTP_PORT: Final = 8080
KSM_TELEMETRY_PORT: Final = 8081
OPERATOR_PORT: Final = 10250
"""Operator TLS port (admission webhook and metrics); the chart's ``tls.internalPort``."""
NODE_EXPORTER_PORT: Final = 9100
KUBELET_PORT: Final = 10250
COREDNS_METRICS_PORT: Final = 9153
API_SERVER_PORTS: Final = (443, 6443)
LOKI_HTTP_PORT: Final = 3100
LOKI_GRPC_PORT: Final = 9095
LOKI_MEMBERLIST_PORT: Final = 7946
LOKI_MEMCACHED_PORT: Final = 11211
"""Chunks and results caches of scalable Loki."""
LOKI_GATEWAY_PORT: Final = 8080
"""The gateway's (nginx) container port; its Service listens on 80."""
LOKI_GATEWAY_SERVICE_PORT: Final = 80
LOKI_PUSH_PATH: Final = "/loki/api/v1/push"
FLUENT_BIT_METRICS_PORT: Final = 2020
DCGM_EXPORTER_PORT: Final = 9400
KUEUE_METRICS_PORT: Final = 8443

# --- What our ServiceMonitors select (labels the GPU operator and Kueue charts set) ---------------
DCGM_EXPORTER_SERVICE_LABELS: Final = {"app": "nvidia-dcgm-exporter"}
DCGM_EXPORTER_PORT_NAME: Final = "gpu-metrics"
KUEUE_METRICS_SERVICE_LABELS: Final = {
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/component": "metrics-service",
}
KUEUE_POD_LABELS: Final = {"app.kubernetes.io/name": "kueue", "control-plane": "controller-manager"}
KUEUE_METRICS_PORT_NAME: Final = "https"
INFERENCE_METRICS_PORT_NAME: Final = METRICS_PORT_NAME
"""The port InferenceService names for its Prometheus endpoint (defined in components.constants)."""
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
"""Set by the Job controller on a Job's pods; Fluent Bit turns it into the Loki ``job`` label."""
SERVICE_ACCOUNT_TOKEN_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount/token"
