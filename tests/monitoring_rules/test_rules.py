"""The alert rules: promtool-valid, unit-tested both ways, documented, on metrics we really have.

``promtool check rules`` and ``promtool test rules`` run when promtool is installed
(``apt-get install -y prometheus``); without it they skip on a workstation and fail in CI.
"""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.constants import (
    CLUSTER_QUEUE_PREFIX,
    GPU_RESOURCE,
    WORKLOAD_TYPE_EVALUATION,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_LABEL,
    WORKLOAD_TYPE_TRAINING,
)
from components.monitoring import assets
from components.monitoring.known_metrics import (
    ALL_KNOWN_METRICS,
    DCGM_FIELDS,
    KSM_LABELS_ALLOWLIST,
    dcgm_counters_csv,
    ksm_label_name,
    ksm_metric_labels_allowlist,
)
from tests.monitoring_rules.promql import ksm_labels, label_matcher_values, metric_names

ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS_DIR = ROOT / "docs" / "runbooks"
TESTS_DIR = Path(__file__).resolve().parent
RULE_TEST_FILES = sorted(TESTS_DIR.glob("*.test.yaml"))
SEVERITIES = {"critical", "warning", "info"}
REQUIRED_ANNOTATIONS = ("summary", "description", "runbook_url")
CONCERNS = {"nodes", "gpu", "workloads", "redis"}

GROUPS = assets.load_rule_groups()
ALERTS = assets.alert_rules(GROUPS)
ALERT_NAMES = [rule["alert"] for rule in ALERTS]
EXPRESSIONS = {
    rule.get("alert") or rule["record"]: str(rule["expr"]) for g in GROUPS for rule in g["rules"]
}


def run_promtool(promtool: str, *args: str) -> None:
    result = subprocess.run(
        [promtool, *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"promtool {' '.join(args)}:\n{result.stdout}\n{result.stderr}"


# --- promtool -------------------------------------------------------------------------------------
def test_promtool_check_rules(promtool: str) -> None:
    run_promtool(promtool, "check", "rules", *(str(path) for path in assets.rule_files()))


def test_promtool_test_rules(promtool: str) -> None:
    run_promtool(promtool, "test", "rules", *(str(path) for path in RULE_TEST_FILES))


# --- Shape ----------------------------------------------------------------------------------------
def test_one_rule_file_per_concern() -> None:
    assert {path.stem for path in assets.rule_files()} == CONCERNS


def test_alert_names_are_unique_and_camel_case() -> None:
    assert len(ALERT_NAMES) == len(set(ALERT_NAMES)), "duplicate alert names"
    for name in ALERT_NAMES:
        assert name[:1].isupper() and name.isalnum(), f"{name}: use CamelCase alert names"


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_alert_has_severity_and_annotations(rule: dict[str, Any]) -> None:
    assert rule.get("labels", {}).get("severity") in SEVERITIES, rule["alert"]
    annotations = rule.get("annotations", {})
    for key in REQUIRED_ANNOTATIONS:
        assert str(annotations.get(key, "")).strip(), f"{rule['alert']}: no {key} annotation"


@pytest.mark.parametrize("rule", ALERTS, ids=ALERT_NAMES)
def test_runbook_url_points_to_an_existing_runbook(rule: dict[str, Any]) -> None:
    name = rule["alert"]
    assert rule["annotations"]["runbook_url"] == assets.runbook_url(name)
    page = RUNBOOKS_DIR / f"{name}.md"
    assert page.is_file(), f"missing runbook {page.relative_to(ROOT)}"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {name}\n"), f"{page.name} must start with '# {name}'"
    for section in ("## Meaning", "## Confirm", "## Act"):
        assert section in text, f"{page.name} has no '{section}' section"


def test_runbook_index_lists_every_alert_and_nothing_else() -> None:
    index = (RUNBOOKS_DIR / "README.md").read_text(encoding="utf-8")
    pages = {path.stem for path in RUNBOOKS_DIR.glob("*.md")} - {"README"}
    assert pages == set(ALERT_NAMES), "runbook pages and alerts differ"
    for name in ALERT_NAMES:
        assert f"]({name}.md)" in index, f"docs/runbooks/README.md does not link {name}.md"


def test_runbook_base_url_can_be_overridden() -> None:
    base = "https://runbooks.example.internal/ai-platform"
    for rule in assets.alert_rules(assets.load_rule_groups(runbook_base_url=base)):
        assert rule["annotations"]["runbook_url"] == f"{base}/{rule['alert']}.md"
    # ...without touching what the next caller loads.
    assert all(r["annotations"]["runbook_url"].startswith(assets.RUNBOOK_BASE_URL) for r in ALERTS)


# --- Unit-test coverage ---------------------------------------------------------------------------
def _rule_tests() -> list[tuple[Path, dict[str, Any], dict[str, Any]]]:
    cases = []
    for path in RULE_TEST_FILES:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for test in document["tests"]:
            for case in test.get("alert_rule_test", []):
                cases.append((path, test, case))
    return cases


def test_every_rule_file_is_unit_tested() -> None:
    tested = set()
    for path in RULE_TEST_FILES:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        tested |= {(path.parent / rule_file).resolve() for rule_file in document["rule_files"]}
    assert tested == {path.resolve() for path in assets.rule_files()}


def test_every_alert_has_a_firing_and_a_silent_case() -> None:
    firing: dict[str, int] = defaultdict(int)
    silent: dict[str, int] = defaultdict(int)
    for _path, _test, case in _rule_tests():
        expected = case.get("exp_alerts")
        if expected == []:
            silent[case["alertname"]] += 1
        elif expected:
            firing[case["alertname"]] += 1
    missing_firing = [name for name in ALERT_NAMES if not firing[name]]
    missing_silent = [name for name in ALERT_NAMES if not silent[name]]
    assert not missing_firing, f"no promtool case where these fire: {missing_firing}"
    assert not missing_silent, (
        f"no promtool case (exp_alerts: []) where these stay silent: {missing_silent}"
    )
    unknown = (set(firing) | set(silent)) - set(ALERT_NAMES)
    assert not unknown, f"promtool cases for alerts that do not exist: {sorted(unknown)}"


def test_firing_cases_spell_out_labels_and_annotations() -> None:
    for path, test, case in _rule_tests():
        for alert in case.get("exp_alerts") or []:
            where = f"{path.name}: {test['name']}"
            assert "severity" in alert.get("exp_labels", {}), f"{where}: no severity expected"
            assert set(alert.get("exp_annotations", {})) == set(REQUIRED_ANNOTATIONS), where


# --- Metrics and labels ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_rule_reads_only_metrics_our_exporters_emit(name: str) -> None:
    unknown = metric_names(EXPRESSIONS[name]) - ALL_KNOWN_METRICS
    assert not unknown, f"{name} reads metrics missing from known_metrics.py: {sorted(unknown)}"


def test_ksm_labels_are_allowlisted() -> None:
    allowed = {ksm_label_name(key) for keys in KSM_LABELS_ALLOWLIST.values() for key in keys}
    for name, expr in EXPRESSIONS.items():
        assert ksm_labels(expr) <= allowed, f"{name}: {sorted(ksm_labels(expr) - allowed)}"


def test_workload_types_and_gpu_resource_come_from_constants() -> None:
    workload_types = {WORKLOAD_TYPE_TRAINING, WORKLOAD_TYPE_EVALUATION, WORKLOAD_TYPE_INFERENCE}
    resources = {GPU_RESOURCE, ksm_label_name(GPU_RESOURCE).removeprefix("label_")}
    for name, expr in EXPRESSIONS.items():
        used = label_matcher_values(expr, ksm_label_name(WORKLOAD_TYPE_LABEL))
        assert used <= workload_types, f"{name}: unknown workload types {used - workload_types}"
        assert label_matcher_values(expr, "resource") <= resources, name


def test_kueue_alerts_derive_team_from_the_cluster_queue_naming() -> None:
    derivation = re.compile(r'"team",\s*"\$1",\s*"cluster_queue",\s*"([^"]*)\(\.\+\)"')
    for rule in ALERTS:
        if "kueue_" in str(rule["expr"]):
            assert derivation.findall(str(rule["expr"])) == [CLUSTER_QUEUE_PREFIX], rule["alert"]


def test_kube_state_metrics_allowlist_flag() -> None:
    flag = ksm_metric_labels_allowlist()
    assert flag.startswith("pods=[aiplatform.io/team,aiplatform.io/workload-type]")
    assert ksm_label_name("aiplatform.io/team") == "label_aiplatform_io_team"
    assert (
        ksm_label_name("app.kubernetes.io/instanceName") == "label_app_kubernetes_io_instance_name"
    )


def test_dcgm_counters_file_enables_every_dcgm_field_the_rules_read() -> None:
    enabled = {line.split(",")[0] for line in dcgm_counters_csv().splitlines() if line[:1] != "#"}
    used = {m for expr in EXPRESSIONS.values() for m in metric_names(expr) if m.startswith("DCGM_")}
    assert used <= enabled
    assert {f.name for f in DCGM_FIELDS if not f.exporter_default} <= enabled
