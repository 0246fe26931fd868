"""MonitoringStack under mocks: charts wired as rules and dashboards need, secrets kept secret."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from components.constants import (
    PSA_AUDIT_LABEL,
    PSA_ENFORCE_LABEL,
    PSA_WARN_LABEL,
    SYSTEM_NAMESPACE_LABEL,
    TEAM_LABEL,
    WORKLOAD_TYPE_LABEL,
)
from components.monitoring import assets
from components.monitoring.alerting import alertmanager_config
from components.monitoring.constants import (
    ALERTMANAGER_CONFIG_SECRET,
    DCGM_COUNTERS_CONFIGMAP,
    DCGM_COUNTERS_KEY,
    FLUENT_BIT_CHART_VERSION,
    GRAFANA_ADMIN_SECRET,
    KPS_CHART_VERSION,
    LOKI_CHART_VERSION,
    MONITORING_COMPONENT_LABEL,
)
from components.monitoring.known_metrics import dcgm_counters_csv, ksm_metric_labels_allowlist
from components.monitoring.spec import MIN_PASSWORD_LENGTH, AlertReceiver, GrafanaSpec
from components.monitoring.values import DEBUG_LEVEL_PATTERN, DEBUG_LINE_PATTERN
from tests.monitoring.conftest import (
    KNOWN_PASSWORD,
    PAGERDUTY_KEY,
    RANDOM_PASSWORD_TYPE,
    SLACK_URL,
    kinds,
    release_values,
)
from tools.mockrun import SECRET_MARK, MockRun
from tools.schema_validation import ManifestValidator, default_crd_location

Run = MockRun[dict[str, Any]]


def all_inputs(run: Run) -> str:
    return json.dumps([r.inputs for r in run.resources])


# --- Namespaces -----------------------------------------------------------------------------------


@pytest.mark.parametrize("namespace", ["monitoring", "logging"])
def test_system_namespaces_are_the_documented_privileged_exception(
    dev_monitoring_run: Run, namespace: str
) -> None:
    labels = dev_monitoring_run.find("Namespace", namespace).metadata["labels"]
    assert labels[SYSTEM_NAMESPACE_LABEL] == "true"
    assert labels[PSA_ENFORCE_LABEL] == "privileged"
    assert labels[PSA_AUDIT_LABEL] == labels[PSA_WARN_LABEL] == "baseline"


# --- Prometheus -----------------------------------------------------------------------------------


def test_prometheus_keeps_data_on_the_configured_class_and_retention(
    dev_monitoring_run: Run, prod_monitoring_run: Run
) -> None:
    dev = release_values(dev_monitoring_run, "kube-prometheus-stack")["prometheus"]
    spec = dev["prometheusSpec"]
    assert (spec["retention"], spec["retentionSize"]) == ("7d", "18GiB")
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "checkpoints-local"
    assert claim["resources"]["requests"]["storage"] == "20Gi"
    assert claim["accessModes"] == ["ReadWriteOnce"]
    prod = release_values(prod_monitoring_run, "kube-prometheus-stack")["prometheus"]
    assert prod["prometheusSpec"]["replicas"] == 2
    assert prod["prometheusSpec"]["externalLabels"] == {"cluster": "gpu-prod"}
    prod_claim = prod["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert prod_claim["storageClassName"] == "checkpoints-gp3"
    assert prod["prometheusSpec"]["resources"]["limits"] == {"memory": "24Gi"}


def test_prometheus_selects_every_rule_and_monitor_explicitly(dev_monitoring_run: Run) -> None:
    spec = release_values(dev_monitoring_run, "kube-prometheus-stack")["prometheus"][
        "prometheusSpec"
    ]
    for kind in ("rule", "serviceMonitor", "podMonitor"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
        assert spec[f"{kind}Selector"] == {}
        assert spec[f"{kind}NamespaceSelector"] == {}


def test_charts_are_pinned_once(dev_monitoring_run: Run) -> None:
    versions = {
        r.inputs["chart"]: r.inputs["version"]
        for r in dev_monitoring_run.by_type("kubernetes:helm.sh/v3:Release")
    }
    assert versions == {
        "kube-prometheus-stack": KPS_CHART_VERSION,
        "loki": LOKI_CHART_VERSION,
        "fluent-bit": FLUENT_BIT_CHART_VERSION,
    }


def test_exporters_honour_the_rules_scrape_contract(dev_monitoring_run: Run) -> None:
    values = release_values(dev_monitoring_run, "kube-prometheus-stack")
    allowlist = values["kube-state-metrics"]["metricLabelsAllowlist"]
    # The chart joins the list with "," into --metric-labels-allowlist.
    assert ",".join(allowlist) == ksm_metric_labels_allowlist()
    relabelings = values["prometheus-node-exporter"]["prometheus"]["monitor"]["relabelings"]
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "node",
        "action": "replace",
    } in relabelings


def test_dcgm_counters_config_map_holds_our_counters(dev_monitoring_run: Run) -> None:
    config_map = dev_monitoring_run.find("ConfigMap", DCGM_COUNTERS_CONFIGMAP, "gpu-operator")
    assert config_map.inputs["data"] == {DCGM_COUNTERS_KEY: dcgm_counters_csv()}
    assert dev_monitoring_run.value["dcgm_counters_config_map_name"] == DCGM_COUNTERS_CONFIGMAP


# --- Rules, monitors, dashboards ------------------------------------------------------------------


def test_one_prometheus_rule_per_rule_file(dev_monitoring_run: Run) -> None:
    rules = {r.metadata["name"]: r for r in kinds(dev_monitoring_run, "PrometheusRule")}
    files = assets.rule_files()
    assert sorted(rules) == sorted(f"aiplatform-{path.stem}" for path in files)
    in_file_order = []
    for path in files:
        rule = rules[f"aiplatform-{path.stem}"]
        groups = rule.inputs["spec"]["groups"]
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert [g["name"] for g in groups] == [g["name"] for g in document["groups"]]
        assert rule.metadata["namespace"] == "monitoring"
        assert rule.metadata["labels"]["release"] == "kube-prometheus-stack"
        in_file_order.extend(groups)
    assert in_file_order == assets.load_rule_groups()


def test_dcgm_service_monitor_keeps_pod_labels_and_adds_node(dev_monitoring_run: Run) -> None:
    monitor = dev_monitoring_run.find("ServiceMonitor", "dcgm-exporter", "monitoring")
    spec = monitor.inputs["spec"]
    assert spec["namespaceSelector"] == {"matchNames": ["gpu-operator"]}
    [endpoint] = spec["endpoints"]
    assert endpoint["honorLabels"] is True
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "node",
        "action": "replace",
    } in endpoint["relabelings"]
    # The job label is the selected Service's name, which the rules match with .*dcgm.*.
    assert "dcgm" in spec["selector"]["matchLabels"]["app"]


def test_kueue_and_inference_service_monitors(dev_monitoring_run: Run) -> None:
    kueue = dev_monitoring_run.find("ServiceMonitor", "kueue-controller", "monitoring")
    assert kueue.inputs["spec"]["namespaceSelector"] == {"matchNames": ["kueue-system"]}
    assert kueue.inputs["spec"]["endpoints"][0]["scheme"] == "https"
    inference = dev_monitoring_run.find("ServiceMonitor", "inference-services", "monitoring")
    selector = inference.inputs["spec"]["selector"]
    assert selector["matchLabels"] == {WORKLOAD_TYPE_LABEL: "inference"}
    assert selector["matchExpressions"] == [{"key": TEAM_LABEL, "operator": "Exists"}]


def test_service_monitors_follow_the_config() -> None:
    from tests.monitoring.conftest import render_monitoring

    run = render_monitoring({"serviceMonitors": {"kueue": False, "inference": False}})
    assert [m.metadata["name"] for m in kinds(run, "ServiceMonitor")] == ["dcgm-exporter"]


def test_without_gpu_operator_or_kueue_nothing_targets_them() -> None:
    from tests.monitoring.conftest import render_monitoring

    run = render_monitoring({}, gpu_stack_enabled=False, queueing_enabled=False)
    assert [m.metadata["name"] for m in kinds(run, "ServiceMonitor")] == ["inference-services"]
    assert not [
        r for r in run.kubernetes_objects() if r.metadata.get("namespace") == "gpu-operator"
    ]
    prometheus = run.find("NetworkPolicy", "prometheus", "monitoring").inputs["spec"]
    assert "gpu-operator" not in json.dumps(prometheus)
    assert "kueue" not in json.dumps(prometheus)


def test_dashboards_are_sidecar_config_maps(dev_monitoring_run: Run) -> None:
    maps = {
        m.metadata["name"]: m
        for m in kinds(dev_monitoring_run, "ConfigMap")
        if m.metadata["name"].startswith("dashboard-")
    }
    dashboards = assets.load_dashboards()
    assert sorted(maps) == sorted(f"dashboard-{stem}" for stem in dashboards)
    for stem, text in dashboards.items():
        config_map = maps[f"dashboard-{stem}"]
        assert config_map.metadata["labels"]["grafana_dashboard"] == "1"
        assert config_map.inputs["data"] == {f"{stem}.json": text}
    sidecar = release_values(dev_monitoring_run, "kube-prometheus-stack")["grafana"]["sidecar"]
    assert sidecar["dashboards"]["label"] == "grafana_dashboard"
    assert sidecar["dashboards"]["labelValue"] == "1"


def test_custom_resources_and_built_in_kinds_validate(
    dev_monitoring_run: Run, prod_monitoring_run: Run
) -> None:
    validator = ManifestValidator("1.33", default_crd_location())
    for run in (dev_monitoring_run, prod_monitoring_run):
        report = validator.validate_all(r.inputs for r in run.kubernetes_objects())
        problems = [
            f"{r.kind} {r.namespace}/{r.name}: {r.status} {[e.to_dict() for e in r.errors]}"
            for r in report.results
            if r.status != "valid"
        ]
        assert problems == []
        custom = {r.kind for r in report.results if r.source and r.source.endswith(".json")}
        assert custom == {"PrometheusRule", "ServiceMonitor"}


# --- Alertmanager ---------------------------------------------------------------------------------


def test_alertmanager_config_comes_from_a_secret_the_chart_only_names(
    prod_monitoring_run: Run,
) -> None:
    spec = release_values(prod_monitoring_run, "kube-prometheus-stack")["alertmanager"][
        "alertmanagerSpec"
    ]
    assert spec["useExistingSecret"] is True
    assert spec["configSecret"] == ALERTMANAGER_CONFIG_SECRET
    assert spec["replicas"] == 3
    secret = prod_monitoring_run.find("Secret", ALERTMANAGER_CONFIG_SECRET, "monitoring")
    assert secret.inputs["stringData"] == SECRET_MARK
    assert "stringData" in secret.options["additionalSecretOutputs"]


def test_receiver_credentials_appear_nowhere_in_plaintext(prod_monitoring_run: Run) -> None:
    captured = all_inputs(prod_monitoring_run)
    assert SLACK_URL not in captured
    assert PAGERDUTY_KEY not in captured
    assert "known-slack-secret" not in captured


def test_receivers_get_their_credentials() -> None:
    receivers = [
        AlertReceiver("pager", "pagerduty", severities=("critical",)),
        AlertReceiver("research", "slack", severities=("warning",), teams=("research",)),
        AlertReceiver(
            "mail", "email", email_to="a@x.org", email_from="am@x.org", smarthost="smtp:587"
        ),
    ]
    config = alertmanager_config(receivers, ["pd-key", "https://hooks/x", None])
    assert config["route"]["receiver"] == "null"
    by_name = {r["name"]: r for r in config["receivers"]}
    assert by_name["pager"]["pagerduty_configs"][0]["routing_key"] == "pd-key"
    assert by_name["research"]["slack_configs"][0]["api_url"] == "https://hooks/x"
    assert "auth_password" not in by_name["mail"]["email_configs"][0]
    assert yaml.safe_load(yaml.safe_dump(config)) == config


# --- Grafana --------------------------------------------------------------------------------------


def test_grafana_password_is_generated_and_never_in_plaintext(prod_monitoring_run: Run) -> None:
    [password] = prod_monitoring_run.by_type(RANDOM_PASSWORD_TYPE)
    assert password.inputs["length"] >= 32
    assert password.inputs["special"] is True
    assert KNOWN_PASSWORD not in all_inputs(prod_monitoring_run)
    secret = prod_monitoring_run.find("Secret", GRAFANA_ADMIN_SECRET, "monitoring")
    assert secret.inputs["stringData"] == SECRET_MARK
    grafana = release_values(prod_monitoring_run, "kube-prometheus-stack")["grafana"]
    assert grafana["admin"] == {
        "existingSecret": GRAFANA_ADMIN_SECRET,
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    assert "adminPassword" not in grafana
    assert grafana["ingress"] == {"enabled": False}
    assert grafana["persistence"]["storageClassName"] == "checkpoints-gp3"


def test_outputs_are_in_cluster_urls_and_names(dev_monitoring_run: Run) -> None:
    assert dev_monitoring_run.value == {
        "monitoring_namespace": "monitoring",
        "logging_namespace": "logging",
        "grafana_url": "http://grafana.monitoring.svc.cluster.local",
        "grafana_admin_secret_name": GRAFANA_ADMIN_SECRET,
        "prometheus_url": "http://kps-prometheus.monitoring.svc.cluster.local:9090",
        "alertmanager_url": "http://kps-alertmanager.monitoring.svc.cluster.local:9093",
        "loki_push_url": "http://loki-gateway.logging.svc.cluster.local/loki/api/v1/push",
        "dcgm_counters_config_map_name": DCGM_COUNTERS_CONFIGMAP,
    }


# --- Loki -----------------------------------------------------------------------------------------


def test_dev_loki_is_a_single_binary_on_a_pvc(dev_monitoring_run: Run) -> None:
    values = release_values(dev_monitoring_run, "loki")
    assert values["deploymentMode"] == "SingleBinary"
    assert values["loki"]["storage"] == {"type": "filesystem"}
    assert values["loki"]["commonConfig"] == {"replication_factor": 1}
    assert values["loki"]["limits_config"]["retention_period"] == "72h"
    assert values["loki"]["compactor"]["retention_enabled"] is True
    single = values["singleBinary"]
    assert single["replicas"] == 1
    assert single["persistence"] == {
        "enabled": True,
        "size": "20Gi",
        "storageClass": "checkpoints-local",
    }
    assert [values[t]["replicas"] for t in ("read", "write", "backend")] == [0, 0, 0]
    [schema] = values["loki"]["schemaConfig"]["configs"]
    assert (schema["store"], schema["object_store"], schema["schema"]) == (
        "tsdb",
        "filesystem",
        "v13",
    )


def test_prod_loki_is_scalable_on_s3_with_credentials_by_reference(
    prod_monitoring_run: Run,
) -> None:
    values = release_values(prod_monitoring_run, "loki")
    assert values["deploymentMode"] == "SimpleScalable"
    storage = values["loki"]["storage"]
    assert storage["type"] == "s3"
    assert storage["bucketNames"] == {
        "chunks": "gpu-prod-loki-chunks",
        "ruler": "gpu-prod-loki-ruler",
    }
    assert storage["s3"]["region"] == "us-east-1"
    assert "accessKeyId" not in storage["s3"] and "secretAccessKey" not in storage["s3"]
    assert values["loki"]["limits_config"]["retention_period"] == "720h"
    assert values["singleBinary"]["replicas"] == 0
    for target in ("read", "write", "backend"):
        assert values[target]["replicas"] == 3
        assert values[target]["extraEnvFrom"] == [{"secretRef": {"name": "loki-s3-credentials"}}]
    assert values["write"]["persistence"]["storageClass"] == "checkpoints-gp3"
    assert values["lokiCanary"] == {"enabled": False}
    for cache in ("chunksCache", "resultsCache"):
        assert values[cache]["enabled"] is True
        assert values[cache]["podLabels"] == {MONITORING_COMPONENT_LABEL: "loki"}


# --- Fluent Bit -----------------------------------------------------------------------------------


def _section_lines(text: str) -> list[tuple[str, str]]:
    pairs = []
    for line in text.splitlines():
        if line.startswith("    "):
            key, _, value = line.strip().partition(" ")
            pairs.append((key, value.strip()))
    return pairs


def test_fluent_bit_logs_at_info_buffers_in_memory_and_drops_debug(
    dev_monitoring_run: Run,
) -> None:
    values = release_values(dev_monitoring_run, "fluent-bit")
    config = values["config"]
    assert values["logLevel"] == "info"
    assert values["kind"] == "DaemonSet"
    service = dict(_section_lines(config["service"]))
    assert service["Log_Level"] == "info"
    assert "storage.path" not in config["service"]
    tail = dict(_section_lines(config["inputs"]))
    assert (tail["storage.type"], tail["Mem_Buf_Limit"]) == ("memory", "50MB")
    filters = _section_lines(config["filters"])
    assert ("Name", "kubernetes") in filters
    assert ("Name", "grep") in filters
    assert ("Exclude", f"log {DEBUG_LINE_PATTERN}") in filters
    assert values["podLabels"][MONITORING_COMPONENT_LABEL] == "fluent-bit"


def test_fluent_bit_ships_to_the_loki_gateway_with_our_labels(dev_monitoring_run: Run) -> None:
    output = dict(
        _section_lines(release_values(dev_monitoring_run, "fluent-bit")["config"]["outputs"])
    )
    assert output["Name"] == "loki"
    assert output["Host"] == "loki-gateway.logging.svc.cluster.local"
    assert (output["Port"], output["Uri"]) == ("80", "/loki/api/v1/push")
    labels = dict(item.split("=", 1) for item in output["Labels"].split(", "))
    assert labels == {
        "namespace": "$kubernetes['namespace_name']",
        "pod": "$kubernetes['pod_name']",
        "container": "$kubernetes['container_name']",
        "team": "$kubernetes['labels']['aiplatform.io/team']",
        "job": "$kubernetes['labels']['batch.kubernetes.io/job-name']",
    }


def test_fluent_bit_excludes_namespaces_and_can_keep_debug() -> None:
    from tests.monitoring.conftest import render_monitoring

    run = render_monitoring(
        {"fluentBit": {"dropDebugLogs": False, "excludeNamespaces": ["kube-system", "noisy"]}}
    )
    config = release_values(run, "fluent-bit")["config"]
    assert "grep" not in config["filters"]
    tail = dict(_section_lines(config["inputs"]))
    assert tail["Exclude_Path"] == (
        "/var/log/containers/*_kube-system_*.log,/var/log/containers/*_noisy_*.log"
    )


@pytest.mark.parametrize(
    "line",
    [
        'time=2026-01-01T00:00:00Z level=debug msg="cache miss"',
        '{"level": "debug", "msg": "step 10"}',
        "DEBUG:torch.distributed:rank 3 joined",
        "2026-01-01 12:00:00,000 [DEBUG] loader: prefetch",
        "I0101 12:00:00 DEBUG grpc: keepalive",
    ],
)
def test_debug_lines_are_dropped(line: str) -> None:
    assert re.search(DEBUG_LINE_PATTERN, line)


@pytest.mark.parametrize(
    "line",
    [
        'level=info msg="debugging tips in the README"',
        '{"level": "info", "msg": "debug=false"}',
        "epoch 3 loss 0.12 (set DEBUGGER=1 to attach)",
        "WARNING: pass --debug to see more",
    ],
)
def test_other_lines_are_kept(line: str) -> None:
    assert not re.search(DEBUG_LINE_PATTERN, line)


def test_merged_json_level_debug_is_dropped() -> None:
    assert re.search(DEBUG_LEVEL_PATTERN, "DEBUG")
    assert not re.search(DEBUG_LEVEL_PATTERN, "debugging")


def test_password_output_and_mapped_credentials_are_secrets() -> None:
    """Whatever consumes them (a stack export, another resource) sees secrets, not text."""
    from tests.monitoring.conftest import prod_with_known_secrets, run_args_program

    monitoring = prod_with_known_secrets()

    def program() -> None:
        import pulumi_kubernetes as k8s

        from components.monitoring.stack import MonitoringStack
        from infra.monitoring.build import monitoring_stack_args
        from infra.monitoring.config import MonitoringConfig

        args = monitoring_stack_args(MonitoringConfig.model_validate(monitoring))
        component = MonitoringStack("monitoring", args)
        values: dict[str, Any] = {"password": component.grafana_admin_password}
        values.update({r.name: r.credential for r in args.alertmanager.receivers})
        for key, value in values.items():
            # One probe per value: a single secret value marks a whole map secret.
            k8s.core.v1.ConfigMap(
                f"probe-{key}",
                metadata={"name": f"probe-{key}", "namespace": "default"},
                data={"value": value},
            )

    run = run_args_program(program)
    probes = {r.metadata["name"]: r.inputs["data"] for r in kinds(run, "ConfigMap")}
    probes = {name: data for name, data in probes.items() if name.startswith("probe-")}
    assert sorted(probes) == ["probe-password", "probe-platform-pager", "probe-platform-slack"]
    assert set(probes.values()) == {SECRET_MARK}
    assert KNOWN_PASSWORD not in all_inputs(run)


def test_a_short_grafana_password_is_refused_when_the_args_are_built() -> None:
    """Library users learn it from GrafanaSpec itself, before any resource exists."""
    assert GrafanaSpec(password_length=MIN_PASSWORD_LENGTH).password_length == 32
    with pytest.raises(ValueError, match=r"grafana.password_length must be >= 32, got 31"):
        GrafanaSpec(password_length=MIN_PASSWORD_LENGTH - 1)
