"""Where alerts go, evaluated on the rendered ``alertmanager.yaml`` as Alertmanager routes them
(matchers, depth-first, ``continue``) and inhibits (source, target, equal labels).

The platform's alerts reach the on-call and team channels by severity and team; a team's own
rules (Prometheus enforces their ``namespace``) reach that team's receivers only, never the
platform's, and cannot silence anything.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from components.monitoring.alerting import alertmanager_config
from components.monitoring.constants import PLATFORM_ALERT_LABEL, PLATFORM_ALERT_VALUE
from components.monitoring.spec import AlertReceiver

MATCHER = re.compile(r'^\s*(?P<label>\w+)\s*(?P<op>=~|!~|!=|=)\s*"(?P<value>.*)"\s*$')
PLATFORM = {PLATFORM_ALERT_LABEL: PLATFORM_ALERT_VALUE}


def matches(matcher: str, labels: dict[str, str]) -> bool:
    found = MATCHER.match(matcher)
    assert found, matcher
    value = labels.get(found["label"], "")
    op, want = found["op"], found["value"]
    if op == "=":
        return value == want
    if op == "!=":
        return value != want
    hit = re.fullmatch(want, value) is not None
    return hit if op == "=~" else not hit


def route(node: dict[str, Any], labels: dict[str, str]) -> list[str]:
    """Alertmanager's routing: the first matching children (each ``continue`` goes on), else
    the node's own receiver."""
    found: list[str] = []
    for child in node.get("routes", []):
        if all(matches(m, labels) for m in child.get("matchers", [])):
            found += route(child, labels)
            if not child.get("continue"):
                break
    return found or [node["receiver"]]


def inhibited(config: dict[str, Any], target: dict[str, str], source: dict[str, str]) -> bool:
    return any(
        all(matches(m, source) for m in rule["source_matchers"])
        and all(matches(m, target) for m in rule["target_matchers"])
        and all(source.get(label) == target.get(label) for label in rule["equal"])
        for rule in config["inhibit_rules"]
    )


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    receivers = [
        AlertReceiver("pager", "pagerduty", severities=("critical",)),
        AlertReceiver("chat", "slack", severities=("critical", "warning")),
        AlertReceiver(
            "research-chat", "slack", severities=("critical", "warning"), teams=("research",)
        ),
    ]
    return alertmanager_config(
        receivers, ["pd", "https://hooks/a", "https://hooks/b"], {"research": "research-ns"}
    )


def receivers(config: dict[str, Any], **labels: str) -> set[str]:
    return set(route(config["route"], labels)) - {"null"}


def test_the_platforms_alerts_page_the_on_call_and_reach_team_channels(config) -> None:
    assert receivers(config, alertname="GPUXidErrorFatal", severity="critical", **PLATFORM) == {
        "pager",
        "chat",
    }
    about_research = {"severity": "critical", "team": "research", **PLATFORM}
    assert receivers(config, alertname="TrainingJobFailed", **about_research) == {
        "pager",
        "chat",
        "research-chat",
    }
    assert receivers(config, alertname="Watchdog", severity="none", **PLATFORM) == set()


def test_a_teams_own_alerts_reach_that_team_only(config) -> None:
    """A rule in research's namespace firing critical: Prometheus set its namespace; the pager
    and the platform's channel never see it, whatever its other labels say."""
    own = {"alertname": "MyModelIsSlow", "severity": "critical", "namespace": "research-ns"}
    assert receivers(config, **own) == {"research-chat"}
    assert receivers(config, **{**own, "team": "research"}) == {"research-chat"}
    other = {**own, "namespace": "search-ns"}
    assert receivers(config, **other) == set()


def test_only_the_platforms_alerts_inhibit(config) -> None:
    target = {
        "alertname": "GPUTemperatureHigh",
        "severity": "warning",
        "node": "n1",
        "namespace": "research-ns",
        **PLATFORM,
    }
    platform = {**target, "severity": "critical"}
    assert inhibited(config, target, platform)
    team = {k: v for k, v in platform.items() if k != PLATFORM_ALERT_LABEL}
    assert not inhibited(config, target, team)


def test_the_evaluator_is_not_vacuous() -> None:
    assert matches('severity =~ "critical|warning"', {"severity": "warning"})
    assert not matches('severity =~ "critical"', {"severity": "critical-ish"})
    assert matches('x != "y"', {})
