"""MonitoringStack: metrics, alerts, dashboards and logs for the whole platform.

What it installs, each from a chart pinned in ``constants.py``:

* kube-prometheus-stack (prometheus-community, checked against the chart's values.yaml):
  Prometheus on a PVC with retention and a size cap, Alertmanager, Grafana with the dashboard
  sidecar, kube-state-metrics with our label allowlist, node-exporter with the ``node`` label;
* grafana/loki 6.55.0 (the last OSS release before the chart moved to grafana-community):
  single binary on a PVC, or simple scalable on S3-compatible storage;
* fluent/fluent-bit: a DaemonSet shipping container logs to Loki's gateway.

Around the charts it creates what the charts cannot be trusted with or do not know about: the
``monitoring`` and ``logging`` namespaces (PSA ``privileged``, the documented exception for node
agents that read host files and metrics), the Alertmanager config and Grafana admin Secrets, one
PrometheusRule per rule file, ServiceMonitors for the DCGM exporter, Kueue and inference
services, the dashboards as sidecar ConfigMaps, the DCGM counters ConfigMap, and the
NetworkPolicies of ``network.py``.

Secrets. Neither Helm values nor any plain input carries a secret:

* Alertmanager: the whole ``alertmanager.yaml`` (receivers with their URLs/keys) is rendered
  inside an ``apply`` over ``pulumi.Output.secret`` credentials into a Secret's ``stringData``;
  the chart only gets its name (``alertmanagerSpec.useExistingSecret`` + ``configSecret``). We
  chose this over ``alertmanager.config`` in Helm values because a single secret value would make
  the whole ``values`` input secret, hiding every other value from previews and diffs, and the
  chart would then hold the credentials in its release history.
* Grafana: the admin password is a ``RandomPassword`` (>= 32 characters, special characters)
  stored in a Secret that ``grafana.admin.existingSecret`` names. The component exports the
  Secret's name; the password itself only as a secret Output.
* Loki: S3 credentials stay in an existing Secret, injected with ``extraEnvFrom``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from components.charts import FLUENT_BIT, KUBE_PROMETHEUS_STACK, LOKI
from components.constants import (
    APP_NAME_LABEL,
    KEDA_OPERATOR,
    METRICS_PORT_NAME,
    PSA_AUDIT_LABEL,
    PSA_BASELINE,
    PSA_ENFORCE_LABEL,
    PSA_PRIVILEGED,
    PSA_WARN_LABEL,
    RAY_CLUSTER_LABEL,
    RAY_NODE_LABEL,
    RAY_NODE_TYPE_LABEL,
    SYSTEM_NAMESPACE_LABEL,
    TEAM_LABEL,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_LABEL,
)
from components.labels import platform_labels

from .. import kube
from ..yaml_text import dump_yaml
from . import assets
from .alerting import alertmanager_config
from .constants import (
    ALERTMANAGER_CONFIG_KEY,
    ALERTMANAGER_CONFIG_SECRET,
    ALERTMANAGER_PORT,
    DCGM_COUNTERS_CONFIGMAP,
    DCGM_COUNTERS_KEY,
    DCGM_EXPORTER_PORT_NAME,
    DCGM_EXPORTER_SERVICE_LABELS,
    FLUENT_BIT_RELEASE,
    GRAFANA_ADMIN_PASSWORD_KEY,
    GRAFANA_ADMIN_SECRET,
    GRAFANA_ADMIN_USER_KEY,
    GRAFANA_DASHBOARD_LABEL,
    GRAFANA_DASHBOARD_LABEL_VALUE,
    GRAFANA_FOLDER_ANNOTATION,
    GRAFANA_FULLNAME,
    INFERENCE_METRICS_PORT_NAME,
    KPS_FULLNAME,
    KPS_RELEASE,
    KUEUE_METRICS_PORT_NAME,
    KUEUE_METRICS_SERVICE_LABELS,
    LOKI_RELEASE,
    PROMETHEUS_PORT,
    PROMETHEUS_RULE_SELECTOR_LABEL,
    SERVICE_ACCOUNT_TOKEN_PATH,
)
from .known_metrics import dcgm_counters_csv
from .network import PolicySpec, logging_policies, monitoring_policies
from .spec import (
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
from .values import (
    NODE_RELABELING,
    fluent_bit_values,
    kube_prometheus_stack_values,
    loki_base_url,
    loki_push_url,
    loki_values,
    service_host,
)

__all__ = [
    "AlertReceiver",
    "AlertmanagerSpec",
    "DcgmCountersSpec",
    "FluentBitSpec",
    "GrafanaSpec",
    "LokiObjectStorage",
    "LokiSpec",
    "MonitoringStack",
    "MonitoringStackArgs",
    "NetworkSpec",
    "PrometheusSpec",
    "ScrapeSpec",
    "pod_monitor_specs",
    "service_monitor_specs",
]

MONITORING_API_VERSION = "monitoring.coreos.com/v1"
PASSWORD_SPECIALS = "!#%*-_=+:?"
"""Special characters of the Grafana password: none that YAML, env files or shells mangle."""


def service_monitor_specs(scrape: ScrapeSpec) -> dict[str, dict[str, Any]]:
    """ServiceMonitor name → spec, for the targets the charts do not scrape themselves."""
    specs: dict[str, dict[str, Any]] = {}
    if scrape.dcgm:
        specs["dcgm-exporter"] = {
            # The job label is the Service name, nvidia-dcgm-exporter: it contains "dcgm".
            "namespaceSelector": {"matchNames": [scrape.dcgm_namespace]},
            "selector": {"matchLabels": dict(DCGM_EXPORTER_SERVICE_LABELS)},
            "endpoints": [
                {
                    "port": DCGM_EXPORTER_PORT_NAME,
                    "path": "/metrics",
                    # Keep the exporter's namespace/pod/container (the GPU's pod), not ours.
                    "honorLabels": True,
                    "relabelings": [dict(NODE_RELABELING)],
                }
            ],
        }
    if scrape.kueue:
        specs["kueue-controller"] = {
            "namespaceSelector": {"matchNames": [scrape.kueue_namespace]},
            "selector": {"matchLabels": dict(KUEUE_METRICS_SERVICE_LABELS)},
            "endpoints": [
                {
                    # controller-runtime's secure metrics: HTTPS, authorized by Prometheus's token.
                    "port": KUEUE_METRICS_PORT_NAME,
                    "path": "/metrics",
                    "scheme": "https",
                    "bearerTokenFile": SERVICE_ACCOUNT_TOKEN_PATH,
                    "tlsConfig": {"insecureSkipVerify": True},
                }
            ],
        }
    if scrape.keda:
        specs["keda-operator"] = {
            "namespaceSelector": {"matchNames": [scrape.keda_namespace]},
            "selector": {"matchLabels": {APP_NAME_LABEL: KEDA_OPERATOR}},
            "endpoints": [
                {
                    "port": METRICS_PORT_NAME,
                    "path": "/metrics",
                    # Keep each scaler's namespace (the ScaledObject's, a team's), not KEDA's.
                    "honorLabels": True,
                }
            ],
        }
    if scrape.inference:
        specs["inference-services"] = {
            # ServiceMonitors cannot select namespaces by label; every team object carries the
            # team label, so "a team's inference Service" is selected on the Service itself.
            "namespaceSelector": {"any": True},
            "selector": {
                "matchLabels": {WORKLOAD_TYPE_LABEL: WORKLOAD_TYPE_INFERENCE},
                "matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}],
            },
            "endpoints": [{"port": INFERENCE_METRICS_PORT_NAME, "path": "/metrics"}],
        }
    return specs


def _meta(label: str) -> str:
    """A pod label as Prometheus's Kubernetes discovery names it (``a.b/c-d`` → ``a_b_c_d``)."""
    return "".join(c if c.isalnum() else "_" for c in label)


def pod_monitor_specs(scrape: ScrapeSpec) -> dict[str, dict[str, Any]]:
    """PodMonitor name → spec, for team pods no Service fronts: every Ray head and worker (the
    team label tells them from anything else KubeRay labels), on Ray's ``metrics`` port."""
    specs: dict[str, dict[str, Any]] = {}
    if scrape.ray:
        specs["ray-nodes"] = {
            "namespaceSelector": {"any": True},
            "selector": {
                "matchLabels": {RAY_NODE_LABEL: "yes"},
                "matchExpressions": [{"key": TEAM_LABEL, "operator": "Exists"}],
            },
            "podMetricsEndpoints": [
                {
                    "port": METRICS_PORT_NAME,
                    "path": "/metrics",
                    # What the Ray alerts group by: the cluster, head or worker, the team.
                    "relabelings": [
                        {
                            "sourceLabels": [f"__meta_kubernetes_pod_label_{_meta(key)}"],
                            "targetLabel": target,
                        }
                        for key, target in (
                            (RAY_CLUSTER_LABEL, "ray_cluster"),
                            (RAY_NODE_TYPE_LABEL, "ray_node_type"),
                            (TEAM_LABEL, "team"),
                        )
                    ],
                }
            ],
        }
    return specs


def _system_namespace_labels() -> dict[str, str]:
    """Platform system namespace; ``privileged`` enforced (node agents), baseline audited/warned."""
    return {
        **platform_labels({SYSTEM_NAMESPACE_LABEL: "true"}),
        PSA_ENFORCE_LABEL: PSA_PRIVILEGED,
        PSA_AUDIT_LABEL: PSA_BASELINE,
        PSA_WARN_LABEL: PSA_BASELINE,
    }


def _secret_credentials(receivers: Sequence[AlertReceiver]) -> list[pulumi.Output[str | None]]:
    """Every receiver credential as a secret Output, whatever the caller passed."""
    return [
        pulumi.Output.secret(receiver.credential)
        if receiver.credential is not None
        else pulumi.Output.from_input(None)
        for receiver in receivers
    ]


def namespace_specs(args: MonitoringStackArgs) -> dict[str, dict[str, Any]]:
    """``monitoring`` and ``logging`` → the metadata of that namespace."""
    return {
        part: {"name": namespace, "labels": _system_namespace_labels()}
        for part, namespace in (
            ("monitoring", args.monitoring_namespace),
            ("logging", args.logging_namespace),
        )
    }


def grafana_password_spec(args: MonitoringStackArgs) -> dict[str, Any]:
    """The RandomPassword of Grafana's admin: long, with every class of character."""
    return {
        "length": args.grafana.password_length,
        "special": True,
        "override_special": PASSWORD_SPECIALS,
        "min_special": 2,
        "min_upper": 2,
        "min_lower": 2,
        "min_numeric": 2,
    }


def secret_metadata(args: MonitoringStackArgs, secret: str) -> dict[str, Any]:
    """A Secret of the monitoring namespace that a chart references by name."""
    return {"name": secret, "namespace": args.monitoring_namespace, "labels": platform_labels()}


def alertmanager_yaml(args: MonitoringStackArgs) -> pulumi.Output[str]:
    """``alertmanager.yaml``, rendered over the receivers' credentials as secrets."""
    receivers = list(args.alertmanager.receivers)
    return pulumi.Output.all(*_secret_credentials(receivers)).apply(
        lambda creds: dump_yaml(alertmanager_config(receivers, list(creds), args.team_namespaces))
    )


def dashboard_specs(args: MonitoringStackArgs) -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
    """Part of the ConfigMap's resource name → its metadata and data: the platform dashboards
    and one per team (in the team's Grafana folder), loaded by Grafana's sidecar."""
    mon = args.monitoring_namespace

    def labels() -> dict[str, str]:
        return {**platform_labels(), GRAFANA_DASHBOARD_LABEL: GRAFANA_DASHBOARD_LABEL_VALUE}

    specs = {
        f"dashboard-{stem}": (
            {"name": f"dashboard-{stem}", "namespace": mon, "labels": labels()},
            {f"{stem}.json": dashboard},
        )
        for stem, dashboard in assets.load_dashboards().items()
    }
    for team in sorted(args.team_namespaces):
        specs[f"team-dashboard-{team}"] = (
            {
                "name": f"dashboard-team-{team}",
                "namespace": mon,
                "labels": labels(),
                "annotations": {GRAFANA_FOLDER_ANNOTATION: team},
            },
            {f"team-{team}.json": assets.team_dashboard(team)},
        )
    return specs


def dcgm_counters_spec(args: MonitoringStackArgs) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The DCGM exporter's counters file (metadata, data), or ``None`` when not created."""
    dcgm: DcgmCountersSpec = args.dcgm_counters
    if not dcgm.create:
        return None
    metadata = {"name": DCGM_COUNTERS_CONFIGMAP, "namespace": dcgm.namespace}
    return {**metadata, "labels": platform_labels()}, {DCGM_COUNTERS_KEY: dcgm_counters_csv()}


def release_specs(args: MonitoringStackArgs) -> dict[str, dict[str, Any]]:
    """Part of the Release's resource name → its arguments: kube-prometheus-stack, Loki and
    Fluent Bit, each awaited (a broken install fails the update) and rolled back on failure."""
    settings: dict[str, Any] = {
        "create_namespace": False,
        "skip_await": False,
        "atomic": True,
        "cleanup_on_fail": True,
        "timeout": args.timeout_seconds,
        "max_history": 10,
    }
    charts = (
        ("kube-prometheus-stack", KPS_RELEASE, KUBE_PROMETHEUS_STACK, args.monitoring_namespace),
        ("loki", LOKI_RELEASE, LOKI, args.logging_namespace),
        ("fluent-bit", FLUENT_BIT_RELEASE, FLUENT_BIT, args.logging_namespace),
    )
    values = {
        "kube-prometheus-stack": kube_prometheus_stack_values,
        "loki": loki_values,
        "fluent-bit": fluent_bit_values,
    }
    return {
        part: {
            "name": release,
            **args.chart_source.release_args(chart),
            "namespace": namespace,
            "values": values[part](args),
            **settings,
        }
        for part, release, chart, namespace in charts
    }


def custom_resource_specs(
    args: MonitoringStackArgs,
) -> dict[str, tuple[str, dict[str, Any], dict[str, Any]]]:
    """Part of the resource name → kind, metadata and spec of every PrometheusRule,
    ServiceMonitor and PodMonitor (their CRDs come with kube-prometheus-stack)."""
    mon = args.monitoring_namespace

    def selected() -> dict[str, str]:
        return {**platform_labels(), PROMETHEUS_RULE_SELECTOR_LABEL: KPS_RELEASE}

    specs: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
        f"rules-{stem}": (
            "PrometheusRule",
            {"name": f"aiplatform-{stem}", "namespace": mon, "labels": selected()},
            {"groups": groups},
        )
        for stem, groups in assets.load_rule_files(args.runbook_base_url).items()
    }
    for kind, monitors in (
        ("ServiceMonitor", service_monitor_specs(args.scrape)),
        ("PodMonitor", pod_monitor_specs(args.scrape)),
    ):
        for monitor, spec in monitors.items():
            metadata = {"name": monitor, "namespace": mon, "labels": selected()}
            specs[f"{kind.lower()}-{monitor}"] = (kind, metadata, spec)
    return specs


def network_policy_specs(args: MonitoringStackArgs) -> list[tuple[str, PolicySpec]]:
    """Every NetworkPolicy, with the namespace part it lives in (``network.py``)."""
    return [
        *(("monitoring", p) for p in monitoring_policies(args)),
        *(("logging", p) for p in logging_policies(args)),
    ]


class MonitoringUrls(NamedTuple):
    """In-cluster addresses of what the stack serves (the component's outputs)."""

    grafana: str
    prometheus: str
    alertmanager: str
    loki_push: str
    loki: str


def urls(args: MonitoringStackArgs) -> MonitoringUrls:
    mon, log = args.monitoring_namespace, args.logging_namespace
    return MonitoringUrls(
        grafana=f"http://{service_host(GRAFANA_FULLNAME, mon)}",
        prometheus=f"http://{service_host(f'{KPS_FULLNAME}-prometheus', mon)}:{PROMETHEUS_PORT}",
        alertmanager=(
            f"http://{service_host(f'{KPS_FULLNAME}-alertmanager', mon)}:{ALERTMANAGER_PORT}"
        ),
        loki_push=loki_push_url(log),
        loki=loki_base_url(log),
    )


class MonitoringStack(pulumi.ComponentResource):
    """Prometheus, Alertmanager, Grafana, Loki and Fluent Bit, wired for the platform."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        monitoring_namespace: str
        logging_namespace: str
        grafana_url: str
        grafana_admin_secret_name: str
        grafana_admin_password: pulumi.Output[str]
        prometheus_url: str
        alertmanager_url: str
        loki_push_url: str
        loki_url: str
        dcgm_counters_config_map_name: str
        dcgm_counters_config_map: kube.ConfigMap | None

    def __init__(
        self, name: str, args: MonitoringStackArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:monitoring:MonitoringStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # The namespaces, and the releases owning PVCs (Prometheus TSDB, Grafana, Loki): a
        # destroy or an accidental removal from config would take the data along.
        keep = pulumi.ResourceOptions(retain_on_delete=args.retain_on_delete)
        namespaces = {
            part: kube.Namespace(
                f"{name}-{part}-namespace",
                metadata=metadata,
                opts=pulumi.ResourceOptions.merge(child, keep),
            )
            for part, metadata in namespace_specs(args).items()
        }

        def inside(part: str, *extra: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(depends_on=[namespaces[part], *extra])
            )

        def secret(part: str, secret_name: str, data: dict[str, Any]) -> kube.Secret:
            return kube.Secret(
                f"{name}-{part}",
                metadata=secret_metadata(args, secret_name),
                type="Opaque",
                string_data=data,
                opts=pulumi.ResourceOptions.merge(
                    inside("monitoring"),
                    pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"]),
                ),
            )

        password = random.RandomPassword(
            f"{name}-grafana-admin-password", **grafana_password_spec(args), opts=child
        )
        self.grafana_admin_password = pulumi.Output.secret(password.result)
        grafana_admin = {
            GRAFANA_ADMIN_USER_KEY: args.grafana.admin_user,
            GRAFANA_ADMIN_PASSWORD_KEY: self.grafana_admin_password,
        }
        secrets = [
            secret("grafana-admin", GRAFANA_ADMIN_SECRET, grafana_admin),
            secret(
                "alertmanager-config",
                ALERTMANAGER_CONFIG_SECRET,
                {ALERTMANAGER_CONFIG_KEY: alertmanager_yaml(args).apply(pulumi.Output.secret)},
            ),
        ]
        for part, (metadata, data) in dashboard_specs(args).items():
            kube.ConfigMap(
                f"{name}-{part}", metadata=metadata, data=data, opts=inside("monitoring")
            )
        self.dcgm_counters_config_map = None
        if (dcgm := dcgm_counters_spec(args)) is not None:
            self.dcgm_counters_config_map = kube.ConfigMap(
                f"{name}-dcgm-counters",
                metadata=dcgm[0],
                data=dcgm[1],
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(depends_on=list(args.dcgm_counters.depends_on))
                ),
            )

        releases = release_specs(args)
        kps = k8s.helm.v3.Release(
            f"{name}-kube-prometheus-stack",
            **releases["kube-prometheus-stack"],
            opts=pulumi.ResourceOptions.merge(inside("monitoring", *secrets), keep),
        )
        loki = k8s.helm.v3.Release(
            f"{name}-loki",
            **releases["loki"],
            opts=pulumi.ResourceOptions.merge(inside("logging"), keep),
        )
        k8s.helm.v3.Release(
            f"{name}-fluent-bit", **releases["fluent-bit"], opts=inside("logging", loki)
        )
        after_crds = inside("monitoring", kps)
        for part, (kind, metadata, spec) in custom_resource_specs(args).items():
            k8s.apiextensions.CustomResource(
                f"{name}-{part}",
                api_version=MONITORING_API_VERSION,
                kind=kind,
                metadata=metadata,
                spec=spec,
                opts=after_crds,
            )
        for part, policy in network_policy_specs(args):
            kube.NetworkPolicy(
                f"{name}-{part}-netpol-{policy.name}",
                metadata={
                    "name": policy.name,
                    "namespace": policy.namespace,
                    "labels": platform_labels(),
                },
                spec=policy.spec,
                opts=inside(part),
            )

        addresses = urls(args)
        self.monitoring_namespace = args.monitoring_namespace
        self.logging_namespace = args.logging_namespace
        self.grafana_url = addresses.grafana
        self.grafana_admin_secret_name = GRAFANA_ADMIN_SECRET
        self.prometheus_url = addresses.prometheus
        self.alertmanager_url = addresses.alertmanager
        self.loki_push_url = addresses.loki_push
        self.loki_url = addresses.loki
        self.dcgm_counters_config_map_name = DCGM_COUNTERS_CONFIGMAP
        self.register_outputs(
            {
                "monitoringNamespace": self.monitoring_namespace,
                "loggingNamespace": self.logging_namespace,
                "grafanaUrl": self.grafana_url,
                "grafanaAdminSecretName": self.grafana_admin_secret_name,
                "grafanaAdminPassword": self.grafana_admin_password,
                "prometheusUrl": self.prometheus_url,
                "alertmanagerUrl": self.alertmanager_url,
                "lokiPushUrl": self.loki_push_url,
                "lokiUrl": self.loki_url,
                "dcgmCountersConfigMapName": self.dcgm_counters_config_map_name,
            }
        )
