"""Cross-field rules of monitoring: storage classes exist, scalable Loki has object storage,
durations parse, receivers are unique and complete, namespaces distinct.

Each reads only what ``MonitoredPlatform`` declares.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from ..config.errors import ConfigIssue
from ..config.quantity import parse_quantity
from ..config.views import HasMonitoring, HasStorage
from .config import parse_byte_size, parse_duration


class MonitoredPlatform(HasMonitoring, HasStorage, Protocol):
    """What the monitoring rules read."""


_ROOT = "monitoring"

_CREDENTIAL_FIELD: dict[str, tuple[str, str]] = {
    "slack": ("url", "url"),
    "webhook": ("url", "url"),
    "pagerduty": ("routing_key", "routingKey"),
}
_TYPE_FIELDS: dict[str, frozenset[str]] = {
    "slack": frozenset({"url", "channel"}),
    "webhook": frozenset({"url"}),
    "pagerduty": frozenset({"routing_key"}),
    "email": frozenset({"to", "from_address", "smarthost", "auth_username", "auth_password"}),
}
_OPTIONAL_FIELDS = (
    "url",
    "routing_key",
    "channel",
    "to",
    "from_address",
    "smarthost",
    "auth_username",
    "auth_password",
)


def _alias(field: str) -> str:
    head, *rest = field.split("_")
    return head + "".join(part.title() for part in rest)


def monitoring_storage_classes_exist(config: MonitoredPlatform) -> Iterator[ConfigIssue]:
    """Every PVC of the stack names a class the stack defines (or none: the default)."""
    monitoring = config.monitoring
    if not monitoring.enabled:
        return
    classes = {sc.name for sc in config.storage.classes}
    wanted: list[tuple[tuple[str, ...], str | None]] = [
        (("prometheus", "storageClassName"), monitoring.prometheus.storage_class_name),
        (("loki", "storageClassName"), monitoring.loki.storage_class_name),
    ]
    if monitoring.grafana.persistence:
        wanted.append((("grafana", "storageClassName"), monitoring.grafana.storage_class_name))
    for path, name in wanted:
        if name is not None and name not in classes:
            yield ConfigIssue(
                (_ROOT, *path),
                f"unknown storage class {name!r}; defined: {', '.join(sorted(classes))}",
            )


def loki_storage_matches_mode(config: MonitoredPlatform) -> Iterator[ConfigIssue]:
    """Scalable Loki needs object storage; the single binary keeps logs on its PVC only."""
    loki = config.monitoring.loki
    if not config.monitoring.enabled:
        return
    if loki.mode == "scalable" and loki.object_storage is None:
        yield ConfigIssue(
            (_ROOT, "loki", "objectStorage"),
            "required for mode 'scalable': read, write and backend share chunks only through "
            "object storage (buckets, region, credentialsSecret)",
        )
    if loki.mode == "single-binary" and loki.object_storage is not None:
        yield ConfigIssue(
            (_ROOT, "loki", "objectStorage"),
            "only used by mode 'scalable'; the single binary stores logs on its PVC",
        )
    storage = loki.object_storage
    if storage is not None and storage.buckets.chunks == storage.buckets.ruler:
        yield ConfigIssue(
            (_ROOT, "loki", "objectStorage", "buckets", "ruler"),
            "must differ from the chunks bucket: Loki's compactor would treat ruler objects as "
            "chunks",
        )
    if storage is not None and storage.insecure and not storage.endpoint:
        yield ConfigIssue(
            (_ROOT, "loki", "objectStorage", "insecure"),
            "only for a custom endpoint; AWS S3 is always HTTPS",
        )


def monitoring_retention_parses(config: MonitoredPlatform) -> Iterator[ConfigIssue]:
    """Retentions are durations, the TSDB size cap fits its volume, Loki keeps whole days."""
    monitoring = config.monitoring
    if not monitoring.enabled:
        return
    prometheus = monitoring.prometheus
    for path, text in (
        (("prometheus", "retention"), prometheus.retention),
        (("prometheus", "scrapeInterval"), prometheus.scrape_interval),
        (("loki", "retention"), monitoring.loki.retention),
    ):
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            yield ConfigIssue((_ROOT, *path), str(exc))
            continue
        if seconds <= 0:
            yield ConfigIssue((_ROOT, *path), f"must be longer than zero, got {text!r}")
        elif path[0] == "loki" and seconds % 86400:
            yield ConfigIssue(
                (_ROOT, *path),
                f"must be a whole number of days (Loki's index period is 24h), got {text!r}",
            )
    try:
        size = parse_byte_size(prometheus.retention_size)
    except ValueError as exc:
        yield ConfigIssue((_ROOT, "prometheus", "retentionSize"), str(exc))
    else:
        volume = parse_quantity(prometheus.storage_size)
        if size >= volume * Decimal("0.95"):
            yield ConfigIssue(
                (_ROOT, "prometheus", "retentionSize"),
                f"{prometheus.retention_size} leaves no room for the WAL on a "
                f"{prometheus.storage_size} volume; keep it at most 90% of storageSize",
            )


def alert_receivers_are_consistent(config: MonitoredPlatform) -> Iterator[ConfigIssue]:
    """Unique names, and each receiver has exactly the fields its type uses."""
    receivers = config.monitoring.alertmanager.receivers
    seen: dict[str, int] = {}
    for index, receiver in enumerate(receivers):
        path = (_ROOT, "alertmanager", "receivers", index)
        if receiver.name in seen:
            yield ConfigIssue(
                (*path, "name"),
                f"duplicate receiver name {receiver.name!r} (first used by "
                f"receivers[{seen[receiver.name]}])",
            )
        else:
            seen[receiver.name] = index
        if receiver.name == "null":
            yield ConfigIssue((*path, "name"), "'null' is reserved for the drop-all receiver")
        if len(set(receiver.severities)) != len(receiver.severities):
            yield ConfigIssue((*path, "severities"), "lists a severity twice")
        allowed = _TYPE_FIELDS[receiver.type]
        for field in _OPTIONAL_FIELDS:
            if getattr(receiver, field) is not None and field not in allowed:
                yield ConfigIssue(
                    (*path, _alias(field)), f"not used by a {receiver.type!r} receiver"
                )
        if receiver.type in _CREDENTIAL_FIELD:
            field, alias = _CREDENTIAL_FIELD[receiver.type]
            if not getattr(receiver, field):
                yield ConfigIssue(
                    (*path, alias),
                    f"required for a {receiver.type!r} receiver; write it as a Pulumi secret "
                    f"(pulumi config set --secret --path 'monitoring.alertmanager.receivers"
                    f"[{index}].{alias}' ...)",
                )
        if receiver.type == "email":
            for field in ("to", "from_address", "smarthost"):
                if not getattr(receiver, field):
                    yield ConfigIssue((*path, _alias(field)), "required for an 'email' receiver")
            if receiver.smarthost and not re.fullmatch(r"[^:\s]+:\d{1,5}", receiver.smarthost):
                yield ConfigIssue(
                    (*path, "smarthost"), f"must be host:port, got {receiver.smarthost!r}"
                )


def monitoring_namespaces_are_distinct(config: MonitoredPlatform) -> Iterator[ConfigIssue]:
    """Metrics and logs live in two namespaces, each with its own policies."""
    monitoring = config.monitoring
    if monitoring.enabled and monitoring.namespace == monitoring.logging_namespace:
        yield ConfigIssue(
            (_ROOT, "loggingNamespace"),
            f"must differ from namespace {monitoring.namespace!r}: the logging namespace gets "
            "its own default-deny policies",
        )


RULES = (
    monitoring_storage_classes_exist,
    loki_storage_matches_mode,
    monitoring_retention_parses,
    alert_receivers_are_consistent,
    monitoring_namespaces_are_distinct,
)
"""The monitoring rules, in the order they report."""
