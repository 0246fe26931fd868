"""Load the monitoring stack's data: Prometheus alert rule groups and Grafana dashboards.

The rules (``rules/*.yaml``, Prometheus ``groups:`` format, one file per concern) and the
dashboards (``dashboards/*.json``) are plain data files next to this module, tested with promtool
and pytest in ``tests/monitoring_rules``. The MonitoringStack component wraps the groups in a
PrometheusRule and the dashboards in Grafana sidecar ConfigMaps.

Every alert's ``runbook_url`` annotation is :func:`runbook_url` of its name under
:data:`RUNBOOK_BASE_URL`, the only place the base is defined (the tests hold the YAML to it); a
deployment that serves the runbooks elsewhere passes ``runbook_base_url`` to
:func:`load_rule_groups`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import yaml

from .constants import PLATFORM_ALERT_LABEL, PLATFORM_ALERT_VALUE

RUNBOOK_BASE_URL: Final = "https://github.com/ai-platform/ai-platform/blob/main/docs/runbooks"
"""Where ``docs/runbooks/<AlertName>.md`` is browsable; the rule files spell it out in full."""

MONITORING_DIR: Final = Path(__file__).resolve().parent
RULES_DIR: Final = MONITORING_DIR / "rules"
DASHBOARDS_DIR: Final = MONITORING_DIR / "dashboards"


FAST_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where installed: the pure-Python one costs ~40 ms per run on the rules."""


def runbook_url(alert: str, base_url: str = RUNBOOK_BASE_URL) -> str:
    """The runbook page of ``alert``: ``<base_url>/<alert>.md``."""
    return f"{base_url.rstrip('/')}/{alert}.md"


def rule_files() -> list[Path]:
    """The rule files, one per concern, in a stable order."""
    return sorted(RULES_DIR.glob("*.yaml"))


def dashboard_files() -> list[Path]:
    """The Grafana dashboard JSON files, in a stable order."""
    return sorted(DASHBOARDS_DIR.glob("*.json"))


def load_rule_groups(runbook_base_url: str | None = None) -> list[dict[str, Any]]:
    """Every rule group of every rule file, as the ``spec.groups`` of a PrometheusRule.

    With ``runbook_base_url``, each alert's ``runbook_url`` points under that base instead of
    :data:`RUNBOOK_BASE_URL`.
    """
    groups: list[dict[str, Any]] = []
    for path in rule_files():
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=FAST_SAFE_LOADER)
        groups.extend(document["groups"])
    for rule in alert_rules(groups):
        # The platform's alerts: they may page the on-call (alerting.alertmanager_config).
        rule.setdefault("labels", {})[PLATFORM_ALERT_LABEL] = PLATFORM_ALERT_VALUE
        if runbook_base_url is not None:
            rule["annotations"]["runbook_url"] = runbook_url(rule["alert"], runbook_base_url)
    return groups


def alert_rules(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The alerting rules (not the recording rules) of ``groups``, in file order."""
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def load_dashboards() -> dict[str, str]:
    """Dashboard name (the file stem) to the dashboard's JSON text, ready for a ConfigMap."""
    return {path.stem: path.read_text(encoding="utf-8") for path in dashboard_files()}


TEAM_DASHBOARD = "gpu-showback"
"""What a team finds in its Grafana folder: the GPU showback, of its own team only."""


def team_dashboard(team: str) -> str:
    """The showback dashboard pinned to one team: the team variable is a hidden constant."""
    dashboard = json.loads((DASHBOARDS_DIR / f"{TEAM_DASHBOARD}.json").read_text(encoding="utf-8"))
    dashboard["uid"] = f"team-{team}"[:40]
    dashboard["title"] = f"{team} / GPU showback"
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("name") == "team":
            variable.clear()
            variable.update(
                {"name": "team", "type": "constant", "query": team, "hide": 2, "label": "team"}
            )
    return json.dumps(dashboard, indent=2, sort_keys=True)
