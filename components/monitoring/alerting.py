"""The Alertmanager configuration file, built from receivers and their (secret) credentials.

Pure: takes the receivers and the resolved credential strings, returns the config as a dict. The
component calls it inside an ``apply`` over secret Outputs, so the rendered file is itself a
secret and only ever reaches the cluster as a Secret's ``stringData`` (never Helm values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .constants import (
    NULL_RECEIVER,
    PLATFORM_ALERT_LABEL,
    PLATFORM_ALERT_VALUE,
    TENANT_NAMESPACE_LABEL,
)
from .spec import AlertReceiver

TEAM_ALERT_LABEL = "team"
"""The alert label our rules set from ``label_aiplatform_io_team`` (see the rules' README)."""

_SLACK_TITLE = (
    "[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }} ({{ .CommonLabels.severity }})"
)
_SLACK_TEXT = (
    "{{ range .Alerts }}*{{ .Annotations.summary }}*\n{{ .Annotations.description }}\n"
    "Runbook: {{ .Annotations.runbook_url }}\n{{ end }}"
)


def _regex(values: Sequence[str]) -> str:
    return "|".join(values)


def _receiver(receiver: AlertReceiver, credential: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": receiver.name}
    if receiver.type == "slack":
        slack: dict[str, Any] = {
            "api_url": credential,
            "send_resolved": True,
            "title": _SLACK_TITLE,
            "text": _SLACK_TEXT,
        }
        if receiver.channel:
            slack["channel"] = receiver.channel
        entry["slack_configs"] = [slack]
    elif receiver.type == "pagerduty":
        entry["pagerduty_configs"] = [{"routing_key": credential, "send_resolved": True}]
    elif receiver.type == "webhook":
        entry["webhook_configs"] = [{"url": credential, "send_resolved": True}]
    else:
        email: dict[str, Any] = {
            "to": receiver.email_to,
            "from": receiver.email_from,
            "smarthost": receiver.smarthost,
            "require_tls": True,
            "send_resolved": True,
        }
        if receiver.auth_username:
            email["auth_username"] = receiver.auth_username
        if credential:
            email["auth_password"] = credential
        entry["email_configs"] = [email]
    return entry


def alertmanager_config(
    receivers: Sequence[AlertReceiver],
    credentials: Sequence[str | None],
    team_namespaces: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``alertmanager.yaml``: the platform's alerts and the teams' alerts routed apart.

    The platform's alerts (its rules and the chart's carry ``PLATFORM_ALERT_LABEL``) go to every
    receiver whose severities (and teams, when given) match, so the on-call pager and a team
    channel can both get a critical alert. Alerts of a team's own rules (Prometheus sets their
    namespace; they cannot carry the label) go to that team's receivers only, never to a
    receiver without ``teams``, and never inhibit anything. The kube-prometheus-stack
    ``Watchdog`` and ``InfoInhibitor`` heartbeats go to the drop-all ``null`` receiver.
    """
    if len(credentials) != len(receivers):
        raise ValueError("one credential (or None) per receiver")
    namespaces = dict(team_namespaces or {})
    platform: list[dict[str, Any]] = []
    teams: list[dict[str, Any]] = []
    for receiver in receivers:
        severity = f'severity =~ "{_regex(receiver.severities)}"'
        if receiver.teams:
            platform.append(
                {
                    "receiver": receiver.name,
                    "matchers": [severity, f'{TEAM_ALERT_LABEL} =~ "{_regex(receiver.teams)}"'],
                    "continue": True,
                }
            )
            own = [namespaces[t] for t in receiver.teams if t in namespaces]
            if own:
                teams.append(
                    {
                        "receiver": receiver.name,
                        "matchers": [severity, f'{TENANT_NAMESPACE_LABEL} =~ "{_regex(own)}"'],
                        "continue": True,
                    }
                )
        else:
            platform.append({"receiver": receiver.name, "matchers": [severity], "continue": True})
    owned = f'{PLATFORM_ALERT_LABEL} = "{PLATFORM_ALERT_VALUE}"'
    routes: list[dict[str, Any]] = [
        {"receiver": NULL_RECEIVER, "matchers": ['alertname =~ "Watchdog|InfoInhibitor"']},
        {"receiver": NULL_RECEIVER, "matchers": [owned], "routes": platform},
        {
            "receiver": NULL_RECEIVER,
            "matchers": [f'{PLATFORM_ALERT_LABEL} != "{PLATFORM_ALERT_VALUE}"'],
            "routes": teams,
        },
    ]
    return {
        "global": {"resolve_timeout": "5m"},
        "route": {
            "receiver": NULL_RECEIVER,
            "group_by": ["alertname", "namespace", "node"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": routes,
        },
        "inhibit_rules": [
            {
                # A critical alert silences the warning/info alerts of the same thing; only the
                # platform's alerts silence anything.
                "source_matchers": ['severity = "critical"', owned],
                "target_matchers": ['severity =~ "warning|info"'],
                "equal": ["alertname", "namespace", "node"],
            },
            {
                "source_matchers": ['severity = "warning"', owned],
                "target_matchers": ['severity = "info"'],
                "equal": ["alertname", "namespace", "node"],
            },
        ],
        "receivers": [
            {"name": NULL_RECEIVER},
            *(_receiver(r, c) for r, c in zip(receivers, credentials, strict=True)),
        ],
    }
