"""Tenant-safe monitoring as the prod stack renders it: teams' monitors and rules confined to
their namespace by Prometheus, scrape limits, the platform's alerts marked, Grafana reading the
platform's namespace only with a folder per team, and Loki with one tenant per team that Fluent
Bit sets from the log's namespace."""

from __future__ import annotations

import json
from typing import Any

from components.monitoring.constants import (
    GRAFANA_FOLDER_ANNOTATION,
    LOKI_PLATFORM_TENANT,
    PLATFORM_ALERT_LABEL,
    PLATFORM_ALERT_VALUE,
    TENANT_NAMESPACE_LABEL,
)
from components.monitoring.values import TENANT_KEY
from infra.field_ownership import PATCH_FORCE_ANNOTATION
from tools.mockrun import MockRun

TEAMS = {"research": "research", "search-serving": "search-serving", "platform": "platform"}
PLATFORM_NAMESPACES = {"monitoring", "logging", "gpu-operator", "kueue-system", "keda"}


def values(run: MockRun[Any], release: str) -> dict[str, Any]:
    found = next(
        r
        for r in run.resources
        if r.type == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == release
    )
    return dict(found.inputs["values"])


def test_prometheus_confines_teams_objects_and_exempts_the_platforms(prod_run) -> None:
    spec = values(prod_run, "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    assert spec["enforcedNamespaceLabel"] == TENANT_NAMESPACE_LABEL
    excluded = {(e["namespace"], e["resource"]) for e in spec["excludedFromEnforcement"]}
    resources = {"servicemonitors", "podmonitors", "probes", "prometheusrules"}
    assert excluded == {(ns, r) for ns in PLATFORM_NAMESPACES for r in resources}
    assert not excluded & {(ns, r) for ns in TEAMS.values() for r in resources}
    assert all("name" not in e for e in spec["excludedFromEnforcement"])
    # Teams' monitors are selected (and confined), not ignored.
    assert spec["serviceMonitorNamespaceSelector"] == {}


def test_scrape_limits_come_from_the_config(prod_config) -> None:
    from tests.harness import run_stack

    prod_config["monitoring"]["prometheus"]["scrapeLimits"] = {"samples": 1000, "targets": 5}
    spec = values(run_stack(prod_config, "prod"), "kube-prometheus-stack")["prometheus"][
        "prometheusSpec"
    ]
    assert (spec["enforcedSampleLimit"], spec["enforcedTargetLimit"]) == (1000, 5)
    assert spec["enforcedLabelLimit"] == 64  # the documented default


def test_every_platform_alert_is_marked_and_so_are_the_charts(prod_run) -> None:
    kps = values(prod_run, "kube-prometheus-stack")
    assert kps["defaultRules"]["additionalRuleLabels"] == {
        PLATFORM_ALERT_LABEL: PLATFORM_ALERT_VALUE
    }
    rules = [
        rule
        for r in prod_run.kubernetes_objects()
        if r.kind == "PrometheusRule"
        for group in r.inputs["spec"]["groups"]
        for rule in group["rules"]
    ]
    alerts = [rule for rule in rules if "alert" in rule]
    assert alerts
    assert all(rule["labels"][PLATFORM_ALERT_LABEL] == PLATFORM_ALERT_VALUE for rule in alerts)


def test_grafana_reads_the_platforms_namespace_and_gives_each_team_a_folder(prod_run) -> None:
    grafana = values(prod_run, "kube-prometheus-stack")["grafana"]["sidecar"]["dashboards"]
    assert grafana["searchNamespace"] == ["monitoring"]
    assert grafana["folderAnnotation"] == GRAFANA_FOLDER_ANNOTATION
    assert grafana["provider"]["foldersFromFilesStructure"] is True
    for team in TEAMS:
        config_map = prod_run.find("ConfigMap", f"dashboard-team-{team}", "monitoring")
        assert config_map.metadata["annotations"] == {
            PATCH_FORCE_ANNOTATION: "true",
            GRAFANA_FOLDER_ANNOTATION: team,
        }
        (text,) = config_map.inputs["data"].values()
        dashboard = json.loads(text)
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        assert variables["team"] == {
            "name": "team",
            "type": "constant",
            "query": team,
            "hide": 2,
            "label": "team",
        }
        assert team in dashboard["title"]


def test_loki_has_a_tenant_per_team_and_grafana_a_source_per_team(prod_run) -> None:
    loki = values(prod_run, "loki")["loki"]
    assert loki["auth_enabled"] is True
    assert loki["querier"] == {"multi_tenant_queries_enabled": True}
    sources = {
        s["name"]: s["secureJsonData"]["httpHeaderValue1"]
        for s in values(prod_run, "kube-prometheus-stack")["grafana"]["additionalDataSources"]
    }
    assert sources["Loki"].split("|") == [LOKI_PLATFORM_TENANT, *TEAMS.values()]
    for team, namespace in TEAMS.items():
        assert sources[f"Loki ({team})"] == namespace


def test_fluent_bit_sends_each_namespace_to_its_tenant(prod_run) -> None:
    config = values(prod_run, "fluent-bit")["config"]
    lua = next(line for line in config["filters"].splitlines() if line.strip().startswith("code"))
    for namespace in TEAMS.values():
        assert f'["{namespace}"]=true' in lua
    assert f'record["{TENANT_KEY}"] = ns' in lua and f'"{LOKI_PLATFORM_TENANT}"' in lua
    assert "namespace_name" in lua and "labels" not in lua  # never a label the pod chose
    output = config["outputs"]
    assert f"Tenant_ID_Key {TENANT_KEY}" in " ".join(output.split())
    assert f"Remove_Keys {TENANT_KEY}" in " ".join(output.split())
