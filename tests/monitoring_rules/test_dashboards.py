"""The Grafana dashboards: valid dashboard JSON, the panels we promise, metrics we really have."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.constants import (
    GPU_RESOURCE,
    WORKLOAD_TYPE_EVALUATION,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_LABEL,
    WORKLOAD_TYPE_TRAINING,
)
from components.monitoring import assets
from components.monitoring.known_metrics import (
    ALL_KNOWN_METRICS,
    KSM_LABELS_ALLOWLIST,
    ksm_label_name,
)
from tests.monitoring_rules.promql import (
    grafana_variables,
    ksm_labels,
    label_matcher_values,
    metric_names,
)

EXPECTED_PANELS: dict[str, set[str]] = {
    "gpu-showback": {
        "Allocated GPUs",
        "Idle allocated GPUs",
        "GPU utilisation by team",
        "GPU memory used by team",
        "Allocated GPUs by team",
        "GPU hours by team",
        "GPU utilisation by namespace",
        "GPU memory used by namespace",
        "GPU utilisation by pod",
        "GPU memory used by pod",
        "Idle GPUs by pod",
    },
    "training-jobs": {
        "Running training jobs",
        "Queued workloads",
        "Failed training jobs",
        "Running training jobs by team",
        "Queued workloads by ClusterQueue",
        "Failed training jobs by team",
        "GPU hours by team",
        "Training GPU utilisation by team",
    },
    "inference-services": {
        "Replicas",
        "Request rate",
        "Error ratio",
        "p95 latency",
        "Requests per second by service",
        "Error ratio by service",
        "Latency p50 / p95 / p99",
    },
    "team-redis": {
        "Servers up",
        "Highest memory use",
        "Connected clients",
        "Pub/sub channels",
        "Memory used vs maxmemory",
        "Commands per second",
        "Clients by team Redis",
        "Evicted keys per second",
    },
    "kueue-queues": {
        "Pending workloads",
        "Admitted workloads",
        "Pending workloads by ClusterQueue",
        "Admitted workloads by ClusterQueue",
        "Admission wait time p50 / p90",
        "GPU quota usage vs nominal quota",
        "Borrowing by ClusterQueue",
        "ClusterQueue status",
    },
}
PANEL_TYPES = {"timeseries", "stat", "bargauge", "table", "row", "text"}
GRAFANA_BUILTINS = {"__rate_interval", "__interval", "__range", "__range_s", "__interval_ms"}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24

DASHBOARDS: dict[str, dict[str, Any]] = {
    name: json.loads(text) for name, text in assets.load_dashboards().items()
}
NAMES = sorted(DASHBOARDS)


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those collapsed inside rows."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} target {target['refId']}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            yield f"variable ${variable['name']}", variable_promql(variable)


_LABEL_VALUES = re.compile(
    r"^\s*label_values\((?P<selector>.*),\s*(?P<label>[A-Za-z_]\w*)\s*\)\s*$"
)


def variable_promql(variable: dict[str, Any]) -> str:
    """The PromQL inside a query variable: the selector of ``label_values(selector, label)``."""
    query = variable["query"]
    text = query["query"] if isinstance(query, dict) else query
    match = _LABEL_VALUES.match(text)
    assert match, f"${variable['name']}: only label_values(<selector>, <label>) queries are used"
    return match.group("selector")


def all_expressions() -> list[tuple[str, str, str]]:
    return [(name, where, expr) for name in NAMES for where, expr in expressions(DASHBOARDS[name])]


# --- Shape ----------------------------------------------------------------------------------------
def test_the_promised_dashboards_exist() -> None:
    assert set(DASHBOARDS) == set(EXPECTED_PANELS)


def test_uids_are_unique_and_short() -> None:
    uids = [dashboard["uid"] for dashboard in DASHBOARDS.values()]
    assert len(set(uids)) == len(uids)
    assert all(0 < len(uid) <= 40 for uid in uids), "Grafana uids are at most 40 characters"


@pytest.mark.parametrize("name", NAMES)
def test_dashboard_is_valid_grafana_json(name: str) -> None:
    dashboard = DASHBOARDS[name]
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["title"].startswith("AI Platform / ")
    assert "ai-platform" in dashboard["tags"]
    assert dashboard["time"]["from"] and dashboard["time"]["to"]
    variables = dashboard["templating"]["list"]
    datasource = next(v for v in variables if v["name"] == "datasource")
    assert datasource["type"] == "datasource" and datasource["query"] == "prometheus"

    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(dashboard):
        title = panel.get("title", "")
        assert panel["type"] in PANEL_TYPES, title
        grid = panel["gridPos"]
        assert all(isinstance(grid[key], int) for key in ("h", "w", "x", "y")), title
        assert grid["w"] > 0 and grid["x"] + grid["w"] <= GRID_WIDTH, title
        if panel["type"] in ("row", "text"):
            continue
        assert title, "every panel has a title"
        assert panel["datasource"] == DATASOURCE, f"{title}: use the $datasource variable"
        targets = panel["targets"]
        assert targets, f"{title}: no targets"
        ref_ids = [target["refId"] for target in targets]
        assert len(ref_ids) == len(set(ref_ids)), f"{title}: duplicate refIds"
        for target in targets:
            assert target["datasource"] == DATASOURCE, f"{title}: target without $datasource"
            assert target["expr"].strip(), f"{title}: empty expression"


@pytest.mark.parametrize("name", NAMES)
def test_panels_do_not_overlap(name: str) -> None:
    taken: dict[tuple[int, int], str] = {}
    for panel in DASHBOARDS[name]["panels"]:
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']!r} overlaps {taken[(x, y)]!r}"
                taken[(x, y)] = panel["title"]


@pytest.mark.parametrize("name", NAMES)
def test_dashboard_has_the_named_panels(name: str) -> None:
    titles = {panel.get("title") for panel in panels(DASHBOARDS[name])}
    missing = EXPECTED_PANELS[name] - titles
    assert not missing, f"{name} lacks panels {sorted(missing)}"


@pytest.mark.parametrize("name", NAMES)
def test_variables_used_are_defined(name: str) -> None:
    dashboard = DASHBOARDS[name]
    defined = {variable["name"] for variable in dashboard["templating"]["list"]}
    for where, expr in expressions(dashboard):
        undefined = grafana_variables(expr) - defined - GRAFANA_BUILTINS
        assert not undefined, f"{name} {where}: undefined variables {sorted(undefined)}"


def test_load_dashboards_returns_json_text() -> None:
    loaded = assets.load_dashboards()
    assert set(loaded) == set(DASHBOARDS)
    assert all(isinstance(text, str) and text.endswith("\n") for text in loaded.values())


# --- Metrics and labels ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_dashboard_reads_only_metrics_our_exporters_emit(name: str) -> None:
    for where, expr in expressions(DASHBOARDS[name]):
        unknown = metric_names(expr) - ALL_KNOWN_METRICS
        assert not unknown, f"{name} {where}: metrics missing from known_metrics.py {unknown}"


def test_dashboards_use_allowlisted_labels_and_constants() -> None:
    allowed = {ksm_label_name(key) for keys in KSM_LABELS_ALLOWLIST.values() for key in keys}
    workload_types = {WORKLOAD_TYPE_TRAINING, WORKLOAD_TYPE_EVALUATION, WORKLOAD_TYPE_INFERENCE}
    resources = {GPU_RESOURCE, ksm_label_name(GPU_RESOURCE).removeprefix("label_")}
    for name, where, expr in all_expressions():
        assert ksm_labels(expr) <= allowed, f"{name} {where}: {ksm_labels(expr) - allowed}"
        used = label_matcher_values(expr, ksm_label_name(WORKLOAD_TYPE_LABEL))
        assert used <= workload_types, f"{name} {where}: workload types {used}"
        assert label_matcher_values(expr, "resource") <= resources, f"{name} {where}"


_VARIABLE = re.compile(r"\$\{([A-Za-z_]\w*)(?::\w+)?\}|\$([A-Za-z_]\w*)")


def _as_plain_promql(expr: str) -> str:
    """Grafana interpolation replaced by values Prometheus can parse."""

    def value(match: re.Match[str]) -> str:
        variable = match.group(1) or match.group(2)
        return "5m" if variable in GRAFANA_BUILTINS else "x"

    return _VARIABLE.sub(value, expr)


def test_dashboard_promql_parses(promtool: str, tmp_path: Path) -> None:
    """promtool parses every expression (as a recording rule), Grafana variables substituted."""
    rules = [
        {"record": f"dashboard_expression_{index}", "expr": _as_plain_promql(expr)}
        for index, (_name, _where, expr) in enumerate(all_expressions())
    ]
    path = tmp_path / "dashboards.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = subprocess.run(
        [promtool, "check", "rules", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
