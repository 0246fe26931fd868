"""Helm values of the three charts, as pure functions of the component's args.

Keys follow each pinned chart's values.yaml (see constants.py for versions). What must never be
in here: a password, a receiver credential or object-storage keys. Secrets reach the charts only
as the *names* of Kubernetes Secrets (``grafana.admin.existingSecret``,
``alertmanagerSpec.configSecret``, Loki's ``extraEnvFrom``), so the values stay plain data that
previews, diffs and tests can show in full.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from components.charts import ChartImage, chart_image_values, merge_values
from components.constants import CLUSTER_DOMAIN, TEAM_LABEL
from components.monitoring.known_metrics import ksm_metric_labels_allowlist

from .constants import (
    ALERTMANAGER_CONFIG_SECRET,
    COMPONENT_ALERTMANAGER,
    COMPONENT_FLUENT_BIT,
    COMPONENT_GRAFANA,
    COMPONENT_KUBE_STATE_METRICS,
    COMPONENT_LOKI,
    COMPONENT_LOKI_GATEWAY,
    COMPONENT_NODE_EXPORTER,
    COMPONENT_OPERATOR,
    COMPONENT_PROMETHEUS,
    FLUENT_BIT_METRICS_PORT,
    GRAFANA_ADMIN_PASSWORD_KEY,
    GRAFANA_ADMIN_SECRET,
    GRAFANA_ADMIN_USER_KEY,
    GRAFANA_DASHBOARD_LABEL,
    GRAFANA_DASHBOARD_LABEL_VALUE,
    GRAFANA_FOLDER_ANNOTATION,
    GRAFANA_FULLNAME,
    JOB_NAME_LABEL,
    KPS_FULLNAME,
    LOKI_GATEWAY_SERVICE_PORT,
    LOKI_PLATFORM_TENANT,
    LOKI_PUSH_PATH,
    LOKI_RELEASE,
    MONITORING_COMPONENT_LABEL,
    PLATFORM_ALERT_LABEL,
    PLATFORM_ALERT_VALUE,
    TENANT_NAMESPACE_LABEL,
)
from .spec import FluentBitSpec, LokiSpec, MonitoringStackArgs

NODE_RELABELING: dict[str, Any] = {
    "sourceLabels": ["__meta_kubernetes_pod_node_name"],
    "targetLabel": "node",
    "action": "replace",
}
"""The scrape contract of the rules: node-exporter and DCGM series carry the node's name."""

LOKI_SCHEMA_FROM = "2024-04-01"
"""First day of the TSDB/v13 schema; never change it for a running Loki (add a new entry)."""


def _component(name: str) -> dict[str, str]:
    return {MONITORING_COMPONENT_LABEL: name}


def _pvc_template(size: str, storage_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"volumeClaimTemplate": {"spec": spec}}


def service_host(service: str, namespace: str) -> str:
    """In-cluster DNS name of a Service."""
    return f"{service}.{namespace}.svc.{CLUSTER_DOMAIN}"


def loki_gateway_host(logging_namespace: str) -> str:
    """The Loki gateway Service (``<fullname>-gateway``; fullname is the release name)."""
    return service_host(f"{LOKI_RELEASE}-gateway", logging_namespace)


def loki_base_url(logging_namespace: str) -> str:
    """Where Grafana queries Loki (the gateway routes reads and writes)."""
    return f"http://{loki_gateway_host(logging_namespace)}"


def loki_push_url(logging_namespace: str) -> str:
    return f"{loki_base_url(logging_namespace)}{LOKI_PUSH_PATH}"


def platform_monitor_namespaces(args: MonitoringStackArgs) -> list[str]:
    """Where the platform's own monitors and rules live (and its charts put theirs): exempt
    from the namespace label Prometheus enforces on teams' ones."""
    return list(
        dict.fromkeys(
            [
                args.monitoring_namespace,
                args.logging_namespace,
                args.scrape.dcgm_namespace,
                args.scrape.kueue_namespace,
                args.scrape.keda_namespace,
            ]
        )
    )


def loki_tenants(args: MonitoringStackArgs) -> list[str]:
    """Loki's tenants: the platform's, and one per team (its namespace)."""
    return [LOKI_PLATFORM_TENANT, *dict.fromkeys(args.team_namespaces.values())]


def _loki_datasource(name: str, uid: str, tenants: list[str], url: str) -> dict[str, Any]:
    return {
        "name": name,
        "type": "loki",
        "uid": uid,
        "access": "proxy",
        "url": url,
        "jsonData": {"httpHeaderName1": "X-Scope-OrgID"},
        # Several tenants at once are a multi-tenant query ("a|b"), which Loki allows here.
        "secureJsonData": {"httpHeaderValue1": "|".join(tenants)},
    }


def loki_datasources(args: MonitoringStackArgs) -> list[dict[str, Any]]:
    """Grafana's Loki data sources: every tenant (the platform's view), and one per team that
    reads its tenant only (give a team's Grafana users that one)."""
    url = loki_base_url(args.logging_namespace)
    return [
        _loki_datasource("Loki", "loki", loki_tenants(args), url),
        *(
            _loki_datasource(f"Loki ({team})", f"loki-{team}", [namespace], url)
            for team, namespace in sorted(args.team_namespaces.items())
        ),
    ]


# --- kube-prometheus-stack -----------------------------------------------------------------------

KPS_IMAGES: tuple[ChartImage, ...] = tuple(
    ChartImage(path, default)
    for path, default in (
        (("crds", "upgradeJob", "image", "busybox"), "docker.io/library/busybox"),
        (("crds", "upgradeJob", "image", "kubectl"), "registry.k8s.io/kubectl"),
        (("alertmanager", "alertmanagerSpec", "image"), "quay.io/prometheus/alertmanager"),
        (
            ("prometheusOperator", "admissionWebhooks", "deployment", "image"),
            "quay.io/prometheus-operator/admission-webhook",
        ),
        (
            ("prometheusOperator", "admissionWebhooks", "patch", "image"),
            "registry.k8s.io/ingress-nginx/kube-webhook-certgen",
        ),
        (("prometheusOperator", "image"), "quay.io/prometheus-operator/prometheus-operator"),
        (
            ("prometheusOperator", "prometheusConfigReloader", "image"),
            "quay.io/prometheus-operator/prometheus-config-reloader",
        ),
        (("prometheusOperator", "thanosImage"), "quay.io/thanos/thanos"),
        (("prometheus", "prometheusSpec", "image"), "quay.io/prometheus/prometheus"),
        (("thanosRuler", "thanosRulerSpec", "image"), "quay.io/thanos/thanos"),
        (("grafana", "image"), "docker.io/grafana/grafana"),
        (("grafana", "testFramework", "image"), "docker.io/bats/bats"),
        (("grafana", "downloadDashboardsImage"), "docker.io/curlimages/curl"),
        (("grafana", "initChownData", "image"), "docker.io/library/busybox"),
        (("grafana", "sidecar", "image"), "quay.io/kiwigrid/k8s-sidecar"),
        (("grafana", "imageRenderer", "image"), "docker.io/grafana/grafana-image-renderer"),
        (("kube-state-metrics", "image"), "registry.k8s.io/kube-state-metrics/kube-state-metrics"),
        (("kube-state-metrics", "kubeRBACProxy", "image"), "quay.io/brancz/kube-rbac-proxy"),
        (("prometheus-node-exporter", "image"), "quay.io/prometheus/node-exporter"),
        (("prometheus-node-exporter", "kubeRBACProxy", "image"), "quay.io/brancz/kube-rbac-proxy"),
        (("prometheus-windows-exporter", "image"), "ghcr.io/prometheus-community/windows-exporter"),
    )
)
"""Every image kube-prometheus-stack and its subcharts can deploy, for a registry mirror: each
image's own ``registry``, not ``global.imageRegistry``, which would drop the original registry
from the path (the mirror convention of ``components.images`` keeps it)."""


def kube_prometheus_stack_values(args: MonitoringStackArgs) -> dict[str, Any]:
    """Values of kube-prometheus-stack: Prometheus, Alertmanager, Grafana, exporters, operator."""
    prometheus = args.prometheus
    grafana = args.grafana
    selectors: dict[str, Any] = {}
    # Be explicit: select every rule and monitor in every namespace, ours and the teams'
    # (team admins may create ServiceMonitors/PrometheusRules), instead of the chart's default
    # of "objects labelled release=<this release>" only.
    for kind in ("rule", "serviceMonitor", "podMonitor", "probe", "scrapeConfig"):
        selectors[f"{kind}SelectorNilUsesHelmValues"] = False
        selectors[f"{kind}Selector"] = {}
        selectors[f"{kind}NamespaceSelector"] = {}
    # Teams' monitors and rules are confined to their namespace: everything they scrape and
    # every alert they fire carries it, their queries see nothing else; the platform's own
    # objects (in its namespaces) are exempt. Scrape limits bound every monitor.
    excluded = [
        {"group": "monitoring.coreos.com", "resource": resource, "namespace": namespace}
        for namespace in platform_monitor_namespaces(args)
        for resource in ("servicemonitors", "podmonitors", "probes", "prometheusrules")
    ]
    prometheus_spec: dict[str, Any] = {
        "enforcedNamespaceLabel": TENANT_NAMESPACE_LABEL,
        "excludedFromEnforcement": excluded,
        "enforcedSampleLimit": prometheus.sample_limit,
        "enforcedTargetLimit": prometheus.target_limit,
        "enforcedLabelLimit": prometheus.label_limit,
        "retention": prometheus.retention,
        "retentionSize": prometheus.retention_size,
        "replicas": prometheus.replicas,
        "scrapeInterval": prometheus.scrape_interval,
        "evaluationInterval": prometheus.scrape_interval,
        "resources": {k: dict(v) for k, v in prometheus.resources.items()},
        "storageSpec": _pvc_template(prometheus.storage_size, prometheus.storage_class),
        "podMetadata": {"labels": _component(COMPONENT_PROMETHEUS)},
        **selectors,
    }
    if args.cluster_name:
        prometheus_spec["externalLabels"] = {"cluster": args.cluster_name}
    grafana_values: dict[str, Any] = {
        "fullnameOverride": GRAFANA_FULLNAME,
        # The admin credentials come from a Secret the component creates from a generated
        # password; the chart then renders no password of its own anywhere.
        "admin": {
            "existingSecret": GRAFANA_ADMIN_SECRET,
            "userKey": GRAFANA_ADMIN_USER_KEY,
            "passwordKey": GRAFANA_ADMIN_PASSWORD_KEY,
        },
        "podLabels": _component(COMPONENT_GRAFANA),
        "ingress": {"enabled": False},
        "persistence": {"enabled": grafana.persistence},
        "sidecar": {
            "dashboards": {
                "enabled": True,
                "label": GRAFANA_DASHBOARD_LABEL,
                "labelValue": GRAFANA_DASHBOARD_LABEL_VALUE,
                # Dashboards come from the platform's namespace only (a team's ConfigMap would
                # put any query in front of everyone); each team gets a folder of its own.
                "searchNamespace": [args.monitoring_namespace],
                "folderAnnotation": GRAFANA_FOLDER_ANNOTATION,
                "provider": {"foldersFromFilesStructure": True},
            }
        },
        "additionalDataSources": loki_datasources(args),
    }
    if grafana.persistence:
        grafana_values["persistence"].update({"type": "pvc", "size": grafana.storage_size})
        if grafana.storage_class:
            grafana_values["persistence"]["storageClassName"] = grafana.storage_class
    alertmanager = args.alertmanager
    values = {
        "fullnameOverride": KPS_FULLNAME,
        "crds": {"enabled": True},
        # Managed control planes hide these; on-prem they run on the host network.
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        "kubeProxy": {"enabled": False},
        "windowsMonitoring": {"enabled": False},
        "defaultRules": {
            "create": True,
            # The chart's rules are the platform's: they may page the on-call and inhibit.
            "additionalRuleLabels": {PLATFORM_ALERT_LABEL: PLATFORM_ALERT_VALUE},
            "rules": {
                "etcd": False,
                "kubeControllerManager": False,
                "kubeSchedulerAlerting": False,
                "kubeSchedulerRecording": False,
                "kubeProxy": False,
                "windows": False,
            },
        },
        "prometheusOperator": {"podLabels": _component(COMPONENT_OPERATOR)},
        "prometheus": {"prometheusSpec": prometheus_spec},
        "alertmanager": {
            "alertmanagerSpec": {
                "replicas": alertmanager.replicas,
                # The config (with receiver credentials) is a Secret the component writes from
                # Pulumi secrets; the chart must neither render its own nor see ours.
                "useExistingSecret": True,
                "configSecret": ALERTMANAGER_CONFIG_SECRET,
                "podMetadata": {"labels": _component(COMPONENT_ALERTMANAGER)},
                "storage": _pvc_template(alertmanager.storage_size, prometheus.storage_class),
            }
        },
        "grafana": grafana_values,
        "kube-state-metrics": {
            "fullnameOverride": "kube-state-metrics",
            # The chart joins the list with "," into --metric-labels-allowlist.
            "metricLabelsAllowlist": [ksm_metric_labels_allowlist()],
            "podLabels": _component(COMPONENT_KUBE_STATE_METRICS),
        },
        "prometheus-node-exporter": {
            "fullnameOverride": "node-exporter",
            "podLabels": {"jobLabel": "node-exporter", **_component(COMPONENT_NODE_EXPORTER)},
            "prometheus": {"monitor": {"relabelings": [dict(NODE_RELABELING)]}},
        },
    }
    return merge_values(values, chart_image_values(KPS_IMAGES, args.registry_mirror))


# --- Loki ----------------------------------------------------------------------------------------

LOKI_IMAGES: tuple[ChartImage, ...] = (
    *(
        ChartImage(path, default)
        for path, default in (
            (("loki", "image"), "docker.io/grafana/loki"),
            (("enterprise", "image"), "docker.io/grafana/enterprise-logs"),
            (
                ("enterprise", "provisioner", "image"),
                "us-docker.pkg.dev/grafanalabs-global/docker-enterprise-provisioner-prod/"
                "enterprise-provisioner",
            ),
            (("test", "image"), "docker.io/grafana/loki-helm-test"),
            (("lokiCanary", "image"), "docker.io/grafana/loki-canary"),
            (("gateway", "image"), "docker.io/nginxinc/nginx-unprivileged"),
            (("sidecar", "image"), "docker.io/kiwigrid/k8s-sidecar"),
            (("grafana-agent-operator", "image"), "docker.io/grafana/agent-operator"),
            (("grafana-agent-operator", "test", "image"), "docker.io/library/busybox"),
            (("rollout_operator", "image"), "docker.io/grafana/rollout-operator"),
        )
    ),
    *(
        ChartImage(path, default, "repository")
        for path, default in (
            (("memcached", "image"), "docker.io/library/memcached"),
            (("memcachedExporter", "image"), "docker.io/prom/memcached-exporter"),
            (("minio", "image"), "quay.io/minio/minio"),
            (("minio", "mcImage"), "quay.io/minio/mc"),
        )
    ),
)
"""Every image the Loki chart and its subcharts can deploy, for a registry mirror. Not the
StatefulSet-recreation job's kubectl (off: ``enableStatefulSetRecreationForSizeChange``), which
only follows ``global.imageRegistry``."""


def _days_to_hours(retention: str) -> str:
    """Loki accepts ``7d`` too, but hours are what every Loki version documents."""
    units = {"y": 365 * 24, "w": 7 * 24, "d": 24, "h": 1}
    total = 0
    number = ""
    for char in retention:
        if char.isdigit():
            number += char
        elif char in units and number:
            total += int(number) * units[char]
            number = ""
        else:
            raise ValueError(f"Loki retention must be whole days or hours, got {retention!r}")
    if number:
        raise ValueError(f"Loki retention needs a unit, got {retention!r}")
    return f"{total}h"


def loki_values(args: MonitoringStackArgs) -> dict[str, Any]:
    """Values of grafana/loki: single binary on a PVC, or simple scalable on object storage."""
    return merge_values(
        _loki_mode_values(args), chart_image_values(LOKI_IMAGES, args.registry_mirror)
    )


def _loki_mode_values(args: MonitoringStackArgs) -> dict[str, Any]:
    loki: LokiSpec = args.loki
    scalable = loki.mode == "scalable"
    store = "s3" if scalable else "filesystem"
    values: dict[str, Any] = {
        "deploymentMode": "SimpleScalable" if scalable else "SingleBinary",
        "loki": {
            # One tenant per team (its namespace; Fluent Bit sets it) and one for the platform:
            # a query sees only the tenants it names (X-Scope-OrgID).
            "auth_enabled": True,
            "querier": {"multi_tenant_queries_enabled": True},
            "commonConfig": {"replication_factor": 3 if scalable else 1},
            "schemaConfig": {
                "configs": [
                    {
                        "from": LOKI_SCHEMA_FROM,
                        "store": "tsdb",
                        "object_store": store,
                        "schema": "v13",
                        "index": {"prefix": "loki_index_", "period": "24h"},
                    }
                ]
            },
            "compactor": {"retention_enabled": True, "delete_request_store": store},
            "limits_config": {"retention_period": _days_to_hours(loki.retention)},
        },
        "gateway": {"enabled": True, "podLabels": _component(COMPONENT_LOKI_GATEWAY)},
        # No canary, no Helm test pods, no rules sidecar: nothing talks to Loki but Fluent Bit
        # and Grafana, which is what the NetworkPolicies allow.
        "lokiCanary": {"enabled": False},
        "test": {"enabled": False},
        "sidecar": {"rules": {"enabled": False}},
        "minio": {"enabled": False},
        # Memcached caches only in scalable mode; their pods count as Loki for the policies.
        "chunksCache": {"enabled": scalable},
        "resultsCache": {"enabled": scalable},
    }
    persistence = {"size": loki.storage_size}
    if loki.storage_class:
        persistence["storageClass"] = loki.storage_class
    pod_labels = {"podLabels": _component(COMPONENT_LOKI)}
    if not scalable:
        values["loki"]["storage"] = {"type": "filesystem"}
        values["singleBinary"] = {
            "replicas": 1,
            "persistence": {"enabled": True, **persistence},
            **pod_labels,
        }
        for target in ("read", "write", "backend"):
            values[target] = {"replicas": 0}
        return values
    storage = loki.object_storage
    if storage is None:
        raise ValueError("scalable Loki needs object_storage")
    s3: dict[str, Any] = {
        "region": storage.region,
        "s3ForcePathStyle": storage.force_path_style,
        "insecure": storage.insecure,
    }
    if storage.endpoint:
        s3["endpoint"] = storage.endpoint
    values["loki"]["storage"] = {
        "type": "s3",
        "bucketNames": {"chunks": storage.chunks_bucket, "ruler": storage.ruler_bucket},
        # No accessKeyId/secretAccessKey: the SDK reads AWS_* from the Secret below, or IRSA.
        "s3": s3,
    }
    env_from = (
        [{"secretRef": {"name": storage.credentials_secret}}] if storage.credentials_secret else []
    )
    values["singleBinary"] = {"replicas": 0}
    values["chunksCache"].update({"allocatedMemory": 2048, **pod_labels})
    values["resultsCache"].update(pod_labels)
    for target in ("read", "write", "backend"):
        values[target] = {"replicas": loki.replicas, "extraEnvFrom": env_from, **pod_labels}
    for target in ("write", "backend"):
        values[target]["persistence"] = dict(persistence)
    return values


def object_storage_port(endpoint: str | None) -> int:
    """The TCP port Loki reaches its object storage on (443 for AWS S3)."""
    if not endpoint:
        return 443
    parsed = urlparse(endpoint)
    if parsed.port:
        return parsed.port
    return 80 if parsed.scheme == "http" else 443


# --- Fluent Bit ----------------------------------------------------------------------------------

FLUENT_BIT_IMAGES: tuple[ChartImage, ...] = tuple(
    ChartImage(path, default, "repository")
    for path, default in (
        (("image",), "cr.fluentbit.io/fluent/fluent-bit"),
        (("testFramework", "image"), "docker.io/library/busybox"),
        (("hotReload", "image"), "ghcr.io/jimmidyson/configmap-reload"),
    )
)
"""Every image the Fluent Bit chart can deploy, for a registry mirror."""

DEBUG_LINE_PATTERN = (
    r'(?i:\blevel=debug\b|"(level|severity|lvl)"\s*:\s*"debug")|(^|[\s\[])DEBUG([\]:\s]|$)'
)
"""Debug lines as logfmt, JSON-in-text or a level token (``DEBUG:root:``, ``[DEBUG]``)."""
DEBUG_LEVEL_PATTERN = r"(?i)^debug$"
"""The ``level`` key of JSON logs once the kubernetes filter merged them into the record."""


def _section(kind: str, entries: list[tuple[str, str]]) -> str:
    width = max(len(key) for key, _ in entries)
    lines = [f"[{kind}]"] + [f"    {key.ljust(width)} {value}" for key, value in entries]
    return "\n".join(lines) + "\n"


TENANT_KEY = "aiplatform_tenant"
"""The record key the Lua filter writes the Loki tenant to; the output sends it as the tenant
(``Tenant_ID_Key``) and drops it from the line."""


def fluent_bit_config(
    fluent_bit: FluentBitSpec, logging_namespace: str, team_namespaces: Sequence[str] = ()
) -> dict[str, str]:
    """The chart's classic-mode ``config`` sections: tail → kubernetes → grep → tenant → loki."""
    service = _section(
        "SERVICE",
        [
            ("Daemon", "Off"),
            ("Flush", "1"),
            ("Log_Level", fluent_bit.log_level),
            ("Parsers_File", "/fluent-bit/etc/parsers.conf"),
            ("Parsers_File", "/fluent-bit/etc/conf/custom_parsers.conf"),
            ("HTTP_Server", "On"),
            ("HTTP_Listen", "0.0.0.0"),
            ("HTTP_Port", str(FLUENT_BIT_METRICS_PORT)),
            ("Health_Check", "On"),
            # No storage.path: chunks never go to the node's disk, whatever their level.
        ],
    )
    tail: list[tuple[str, str]] = [
        ("Name", "tail"),
        ("Tag", "kube.*"),
        ("Path", "/var/log/containers/*.log"),
        ("multiline.parser", "docker, cri"),
        ("storage.type", "memory"),
        ("Mem_Buf_Limit", fluent_bit.mem_buf_limit),
        ("Skip_Long_Lines", "On"),
        ("Refresh_Interval", "10"),
        # File offsets only (no log content), so a restart resumes where it stopped.
        ("DB", "/var/log/fluent-bit-kube.db"),
    ]
    if fluent_bit.exclude_namespaces:
        # Container log files are <pod>_<namespace>_<container>-<id>.log.
        paths = ",".join(
            f"/var/log/containers/*_{ns}_*.log" for ns in fluent_bit.exclude_namespaces
        )
        tail.append(("Exclude_Path", paths))
    filters = _section(
        "FILTER",
        [
            ("Name", "kubernetes"),
            ("Match", "kube.*"),
            ("Merge_Log", "On"),
            ("Keep_Log", "Off"),
            ("K8S-Logging.Parser", "On"),
            ("K8S-Logging.Exclude", "On"),
            ("Labels", "On"),
            ("Annotations", "Off"),
        ],
    )
    if fluent_bit.drop_debug_logs:
        filters += "\n" + _section(
            "FILTER",
            [
                ("Name", "grep"),
                ("Match", "kube.*"),
                ("Logical_Op", "or"),
                ("Exclude", f"log {DEBUG_LINE_PATTERN}"),
                ("Exclude", f"level {DEBUG_LEVEL_PATTERN}"),
                ("Exclude", f"severity {DEBUG_LEVEL_PATTERN}"),
            ],
        )
    teams = ", ".join(f'["{ns}"]=true' for ns in sorted(set(team_namespaces)))
    filters += "\n" + _section(
        "FILTER",
        [
            ("Name", "lua"),
            ("Match", "kube.*"),
            ("call", "aiplatform_tenant"),
            # The tenant is the team's namespace, read from the log file's path: a pod cannot
            # choose it. Everything else is the platform's.
            (
                "code",
                f"local teams = {{{teams}}} function aiplatform_tenant(tag, ts, record) "
                'local k = record["kubernetes"] or {} local ns = k["namespace_name"] '
                f'if teams[ns] then record["{TENANT_KEY}"] = ns else record["{TENANT_KEY}"] = '
                f'"{LOKI_PLATFORM_TENANT}" end return 2, ts, record end',
            ),
        ],
    )
    labels = ", ".join(
        [
            "namespace=$kubernetes['namespace_name']",
            "pod=$kubernetes['pod_name']",
            "container=$kubernetes['container_name']",
            f"team=$kubernetes['labels']['{TEAM_LABEL}']",
            f"job=$kubernetes['labels']['{JOB_NAME_LABEL}']",
        ]
    )
    outputs = _section(
        "OUTPUT",
        [
            ("Name", "loki"),
            ("Match", "kube.*"),
            ("Host", loki_gateway_host(logging_namespace)),
            ("Port", str(LOKI_GATEWAY_SERVICE_PORT)),
            ("Uri", LOKI_PUSH_PATH),
            ("Labels", labels),
            ("Tenant_ID_Key", TENANT_KEY),
            ("Remove_Keys", TENANT_KEY),
            ("Line_Format", "json"),
            ("Retry_Limit", "5"),
        ],
    )
    return {
        "service": service,
        "inputs": _section("INPUT", tail),
        "filters": filters,
        "outputs": outputs,
    }


def fluent_bit_values(args: MonitoringStackArgs) -> dict[str, Any]:
    """Values of fluent/fluent-bit: a DaemonSet on every node, GPU nodes included."""
    values = {
        "kind": "DaemonSet",
        "logLevel": args.fluent_bit.log_level,
        "podLabels": _component(COMPONENT_FLUENT_BIT),
        # Logs of GPU and other tainted nodes matter most; tolerate every taint.
        "tolerations": [{"operator": "Exists"}],
        "testFramework": {"enabled": False},
        "serviceMonitor": {"enabled": False},
        "config": fluent_bit_config(
            args.fluent_bit, args.logging_namespace, list(args.team_namespaces.values())
        ),
    }
    return merge_values(values, chart_image_values(FLUENT_BIT_IMAGES, args.registry_mirror))
