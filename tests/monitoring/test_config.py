"""``ai-platform:monitoring``: defaults, camelCase keys, and the cross-field rules."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from infra.config.errors import ConfigIssue, issues_from_validation_error
from infra.monitoring.config import MonitoringConfig, parse_byte_size, parse_duration
from infra.monitoring.rules import RULES as MONITORING_RULES
from infra.monitoring.rules import (
    alert_receivers_are_consistent,
    loki_storage_matches_mode,
    monitoring_namespaces_are_distinct,
    monitoring_retention_parses,
    monitoring_storage_classes_exist,
)
from infra.storage.config import StorageConfig
from tests.harness import stack_config
from tests.monitoring.stack_blocks import dev_monitoring, prod_monitoring


@dataclass(frozen=True)
class Platform:
    """The two fields the rules read (``PlatformConfig`` once it has ``monitoring``)."""

    monitoring: MonitoringConfig
    storage: StorageConfig


def platform(monitoring: dict[str, Any], stack: str = "dev") -> Platform:
    return Platform(
        MonitoringConfig.model_validate(monitoring),
        StorageConfig.model_validate(stack_config(stack)["storage"]),
    )


def issues(config: Platform) -> list[ConfigIssue]:
    return [issue for rule in MONITORING_RULES for issue in rule(config)]


def keys(found: list[ConfigIssue]) -> list[str]:
    return [issue.key_path for issue in found]


def test_defaults_are_a_small_dev_stack() -> None:
    config = MonitoringConfig()
    assert config.enabled
    assert (config.namespace, config.logging_namespace) == ("monitoring", "logging")
    assert config.prometheus.retention == "15d"
    assert config.loki.mode == "single-binary"
    assert config.fluent_bit.log_level == "info"
    assert config.fluent_bit.drop_debug_logs
    assert config.alertmanager.receivers == []
    assert config.service_monitors.model_dump() == {
        "dcgm": True,
        "kueue": True,
        "keda": True,
        "inference": True,
        "ray": True,
    }


def test_keys_are_camel_case_and_unknown_keys_are_named() -> None:
    with pytest.raises(ValidationError) as caught:
        MonitoringConfig.model_validate({"prometheus": {"retension": "15d"}, "fluentBit": {}})
    [issue] = issues_from_validation_error(caught.value, MonitoringConfig)
    assert issue.path == ("prometheus", "retension")
    assert "did you mean 'retention'" in issue.message
    assert MonitoringConfig.model_validate({"fluentBit": {"dropDebugLogs": False}}).fluent_bit


def test_fluent_bit_may_not_log_at_debug() -> None:
    with pytest.raises(ValidationError):
        MonitoringConfig.model_validate({"fluentBit": {"logLevel": "debug"}})


def test_cidrs_are_validated() -> None:
    with pytest.raises(ValidationError, match="must be a CIDR"):
        MonitoringConfig.model_validate({"network": {"nodeCidrs": ["10.0.0.0/33"]}})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15d", 15 * 86400), ("1w2d", 9 * 86400), ("90m", 5400), ("1h30m", 5400), ("500ms", "0.5")],
)
def test_parse_duration(text: str, seconds: int | str) -> None:
    assert parse_duration(text) == Decimal(seconds)


@pytest.mark.parametrize("text", ["", "15", "15 days", "d", "1.5d", "-1d"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="must be a duration"):
        parse_duration(text)


def test_parse_byte_size() -> None:
    assert parse_byte_size("45GiB") == 45 * 2**30
    assert parse_byte_size("500MB") == 500 * 10**6
    with pytest.raises(ValueError):
        parse_byte_size("45Gi")


def test_stack_file_blocks_validate_and_pass_every_rule() -> None:
    assert issues(platform(dev_monitoring(), "dev")) == []
    assert issues(platform(prod_monitoring(), "prod")) == []


def test_storage_classes_must_exist() -> None:
    config = platform(
        {
            "prometheus": {"storageClassName": "fast-ssd"},
            "grafana": {"persistence": True, "storageClassName": "nope"},
            "loki": {"storageClassName": "checkpoints-local"},
        }
    )
    found = list(monitoring_storage_classes_exist(config))
    assert keys(found) == [
        "ai-platform:monitoring.prometheus.storageClassName",
        "ai-platform:monitoring.grafana.storageClassName",
    ]
    assert "defined: checkpoints-local, datasets-nfs" in found[0].message


def test_scalable_loki_requires_object_storage() -> None:
    [issue] = loki_storage_matches_mode(platform({"loki": {"mode": "scalable"}}))
    assert issue.key_path == "ai-platform:monitoring.loki.objectStorage"
    assert "required for mode 'scalable'" in issue.message


def test_single_binary_rejects_object_storage_and_buckets_must_differ() -> None:
    storage = {"region": "eu-central-1", "buckets": {"chunks": "logs", "ruler": "logs"}}
    found = list(loki_storage_matches_mode(platform({"loki": {"objectStorage": storage}})))
    assert keys(found) == [
        "ai-platform:monitoring.loki.objectStorage",
        "ai-platform:monitoring.loki.objectStorage.buckets.ruler",
    ]


@pytest.mark.parametrize(
    ("monitoring", "key", "message"),
    [
        ({"prometheus": {"retention": "two weeks"}}, "prometheus.retention", "must be a duration"),
        ({"loki": {"retention": "36h"}}, "loki.retention", "whole number of days"),
        ({"prometheus": {"scrapeInterval": "0s"}}, "prometheus.scrapeInterval", "longer than zero"),
        ({"prometheus": {"retentionSize": "45G"}}, "prometheus.retentionSize", "must be a size"),
        (
            {"prometheus": {"retentionSize": "50GiB", "storageSize": "50Gi"}},
            "prometheus.retentionSize",
            "leaves no room for the WAL",
        ),
    ],
)
def test_retentions_must_parse_and_fit(monitoring: dict[str, Any], key: str, message: str) -> None:
    [issue] = monitoring_retention_parses(platform(monitoring))
    assert issue.key_path == f"ai-platform:monitoring.{key}"
    assert message in issue.message


def test_receivers_are_unique_and_complete() -> None:
    receivers = [
        {"name": "oncall", "type": "pagerduty", "routingKey": "k"},
        {"name": "oncall", "type": "slack", "url": "u", "routingKey": "k"},
        {"name": "hook", "type": "webhook"},
        {"name": "mail", "type": "email", "to": "a@example.org", "smarthost": "smtp"},
        {"name": "null", "type": "webhook", "url": "u", "severities": ["info", "info"]},
    ]
    found = list(
        alert_receivers_are_consistent(platform({"alertmanager": {"receivers": receivers}}))
    )
    base = "ai-platform:monitoring.alertmanager.receivers"
    assert keys(found) == [
        f"{base}[1].name",
        f"{base}[1].routingKey",
        f"{base}[2].url",
        f"{base}[3].fromAddress",
        f"{base}[3].smarthost",
        f"{base}[4].name",
        f"{base}[4].severities",
    ]
    assert "duplicate receiver name 'oncall' (first used by receivers[0])" in found[0].message
    assert "Pulumi secret" in found[2].message
    assert "host:port" in found[4].message


def test_monitoring_and_logging_namespaces_differ() -> None:
    [issue] = monitoring_namespaces_are_distinct(platform({"loggingNamespace": "monitoring"}))
    assert issue.key_path == "ai-platform:monitoring.loggingNamespace"


def test_disabled_monitoring_skips_the_rules() -> None:
    config = platform(
        {"enabled": False, "loki": {"mode": "scalable"}, "prometheus": {"retention": "x"}}
    )
    assert issues(config) == []
