"""Load the monitoring stack's data: Prometheus alert rule groups and Grafana dashboards.

The rules (``rules/*.yaml``, Prometheus ``groups:`` format, one file per concern) and the
dashboards (``dashboards/*.json``) are plain data files next to this module, tested with promtool
and pytest in ``tests/monitoring_rules``. The MonitoringStack component wraps the groups in a
PrometheusRule and the dashboards in Grafana sidecar ConfigMaps.

Every alert's ``runbook_url`` annotation is :func:`runbook_url` of its name under
:data:`RUNBOOK_BASE_URL`, the only place the base is defined (the tests hold the YAML to it); a
deployment that serves the runbooks elsewhere passes ``runbook_base_url`` to
:func:`load_rule_files`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Final

from ..yaml_text import load_yaml
from .constants import PLATFORM_ALERT_LABEL, PLATFORM_ALERT_VALUE

RUNBOOK_BASE_URL: Final = "https://github.com/ai-platform/ai-platform/blob/main/docs/runbooks"
"""Where ``docs/runbooks/<AlertName>.md`` is browsable; the rule files spell it out in full."""

MONITORING_DIR: Final = Path(__file__).resolve().parent
RULES_DIR: Final = MONITORING_DIR / "rules"
DASHBOARDS_DIR: Final = MONITORING_DIR / "dashboards"


def runbook_url(alert: str, base_url: str = RUNBOOK_BASE_URL) -> str:
    """The runbook page of ``alert``: ``<base_url>/<alert>.md``."""
    return f"{base_url.rstrip('/')}/{alert}.md"


def rule_files() -> list[Path]:
    """The rule files, one per concern, in a stable order."""
    return sorted(RULES_DIR.glob("*.yaml"))


def dashboard_files() -> list[Path]:
    """The Grafana dashboard JSON files, in a stable order."""
    return sorted(DASHBOARDS_DIR.glob("*.json"))


def load_rule_files(runbook_base_url: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Rule file stem → its groups, each file read once, every alert labelled as the platform's.

    With ``runbook_base_url``, each alert's ``runbook_url`` points under that base instead of
    :data:`RUNBOOK_BASE_URL`.
    """
    files = {
        path.stem: load_yaml(path.read_text(encoding="utf-8"))["groups"] for path in rule_files()
    }
    for rule in alert_rules([group for groups in files.values() for group in groups]):
        # The platform's alerts: they may page the on-call (alerting.alertmanager_config).
        rule.setdefault("labels", {})[PLATFORM_ALERT_LABEL] = PLATFORM_ALERT_VALUE
        if runbook_base_url is not None:
            rule["annotations"]["runbook_url"] = runbook_url(rule["alert"], runbook_base_url)
    return files


def load_rule_groups(runbook_base_url: str | None = None) -> list[dict[str, Any]]:
    """Every rule group of every rule file, in file order, as :func:`load_rule_files` renders
    them: the ``spec.groups`` of one PrometheusRule."""
    return [group for groups in load_rule_files(runbook_base_url).values() for group in groups]


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
    text = _team_dashboard_template()
    for placeholder, value in (
        (_UID, f"team-{team}"[:40]),
        (_TITLE, f"{team} / GPU showback"),
        (_TEAM, team),
    ):
        text = text.replace(json.dumps(placeholder), json.dumps(value))
    return text


_UID, _TITLE, _TEAM = "\x00uid\x00", "\x00title\x00", "\x00team\x00"
"""Stand-ins no dashboard contains, replaced in the dumped text by each team's values."""


@functools.cache
def _team_dashboard_template() -> str:
    """The team dashboard with stand-ins for the team's values, dumped once per process: the
    dump (indented, so by the pure-Python encoder) is most of its cost, and there is one
    dashboard per team."""
    dashboard = json.loads((DASHBOARDS_DIR / f"{TEAM_DASHBOARD}.json").read_text(encoding="utf-8"))
    dashboard["uid"] = _UID
    dashboard["title"] = _TITLE
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("name") == "team":
            variable.clear()
            variable.update(
                {"name": "team", "type": "constant", "query": _TEAM, "hide": 2, "label": "team"}
            )
    return json.dumps(dashboard, indent=2, sort_keys=True)
