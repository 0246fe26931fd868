"""Cross-field rules: what no single field can check. One function per rule.

Each rule reads a structurally valid ``PlatformConfig`` and yields ``ConfigIssue``s with the exact
key path of the offending value, so users see every problem at once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

from components.constants import (
    GPU_OPERATOR_NAMESPACE,
    KUEUE_NAMESPACE,
    LOGGING_NAMESPACE,
    MONITORING_NAMESPACE,
)

from .errors import ConfigIssue
from .quantity import parse_quantity
from .root import PlatformConfig

Rule = Callable[[PlatformConfig], Iterator[ConfigIssue]]

RESERVED_NAMESPACES = frozenset(
    {
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        GPU_OPERATOR_NAMESPACE,
        KUEUE_NAMESPACE,
        MONITORING_NAMESPACE,
        LOGGING_NAMESPACE,
    }
)
"""Namespaces Kubernetes or the platform itself owns; no team may take them."""

PLATFORM_ENV_KEYS = frozenset({"TRAINING_ENV"})
"""Environment variables the platform sets in every team ConfigMap."""


def _duplicates(names: list[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def _repeats(names: list[str]) -> Iterator[tuple[int, int]]:
    """``(index, first_index)`` for every name seen before: the first use is not an error."""
    first: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in first:
            yield index, first[name]
        else:
            first[name] = index


def unique_team_names(config: PlatformConfig) -> Iterator[ConfigIssue]:
    names = [team.name for team in config.teams]
    for index, first in _repeats(names):
        yield ConfigIssue(
            ("teams", index, "name"),
            f"duplicate team name {names[index]!r} (first used by teams[{first}])",
        )


def unique_team_namespaces(config: PlatformConfig) -> Iterator[ConfigIssue]:
    names = [team.name for team in config.teams]
    namespaces = [team.namespace_name for team in config.teams]
    for index, first in _repeats(namespaces):
        if names[index] != names[first]:  # a duplicate team name is reported once, above
            team = config.teams[index]
            yield ConfigIssue(
                ("teams", index, "namespace" if team.namespace else "name"),
                f"namespace {namespaces[index]!r} is already used by team {names[first]!r}",
            )
    for index, team in enumerate(config.teams):
        key = "namespace" if team.namespace else "name"
        if team.namespace_name in RESERVED_NAMESPACES:
            yield ConfigIssue(
                ("teams", index, key),
                f"namespace {team.namespace_name!r} is reserved for the system or the platform",
            )


def team_priority_classes_exist(config: PlatformConfig) -> Iterator[ConfigIssue]:
    known = {pc.name for pc in config.priority_classes}
    for index, team in enumerate(config.teams):
        for position, name in enumerate(team.priority_classes or []):
            if name not in known:
                yield ConfigIssue(
                    ("teams", index, "priorityClasses", position),
                    f"unknown priority class {name!r}; defined: {', '.join(sorted(known))}",
                )


def container_limits_cover_requests(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in enumerate(config.teams):
        defaults = team.container_defaults
        for resource in ("cpu", "memory"):
            request = getattr(defaults.requests, resource)
            limit = getattr(defaults.limits, resource)
            if parse_quantity(limit) < parse_quantity(request):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "limits", resource),
                    f"default limit {limit} is below the default request {request}",
                )


def container_defaults_fit_quota(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in enumerate(config.teams):
        for resource in ("cpu", "memory"):
            request = getattr(team.container_defaults.requests, resource)
            limit = getattr(team.container_defaults.limits, resource)
            quota = getattr(team.quota, resource)
            if parse_quantity(request) > parse_quantity(quota):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "requests", resource),
                    f"default request {request} exceeds the team's quota of {quota}",
                )
            elif resource == "memory" and parse_quantity(limit) > parse_quantity(quota):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "limits", resource),
                    f"default limit {limit} exceeds the team's memory quota of {quota}",
                )


def team_env_not_reserved(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in enumerate(config.teams):
        for key in team.env:
            if key in PLATFORM_ENV_KEYS:
                yield ConfigIssue(("teams", index, "env", key), "is set by the platform; remove it")


def unique_groups(config: PlatformConfig) -> Iterator[ConfigIssue]:
    for index, team in enumerate(config.teams):
        for field, alias in (("admin_groups", "adminGroups"), ("viewer_groups", "viewerGroups")):
            groups: list[str] = getattr(team, field)
            for position, group in enumerate(groups):
                if not group.strip():
                    yield ConfigIssue(("teams", index, alias, position), "group name is empty")
            for group in sorted(_duplicates(groups)):
                yield ConfigIssue(("teams", index, alias), f"group {group!r} is listed twice")


def volumes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = {sc.name for sc in config.storage.classes}
    for index, team in enumerate(config.teams):
        for position, _ in _repeats([volume.name for volume in team.volumes]):
            yield ConfigIssue(
                ("teams", index, "volumes", position, "name"),
                f"duplicate volume name {team.volumes[position].name!r}",
            )
        total = 0
        for position, volume in enumerate(team.volumes):
            path = ("teams", index, "volumes", position)
            if volume.storage_class not in classes:
                yield ConfigIssue(
                    (*path, "storageClass"),
                    f"unknown storage class {volume.storage_class!r}; defined: "
                    f"{', '.join(sorted(classes))}",
                )
            total += int(parse_quantity(volume.size))
        if total > parse_quantity(team.quota.storage):
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"volumes request {total} bytes in all, above the team's storage quota of "
                f"{team.quota.storage}",
            )
        if len(team.volumes) > team.quota.persistent_volume_claims:
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"{len(team.volumes)} volumes exceed the team's quota of "
                f"{team.quota.persistent_volume_claims} PVCs",
            )


def priority_classes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = config.priority_classes
    for index, _ in _repeats([pc.name for pc in classes]):
        yield ConfigIssue(
            ("priorityClasses", index, "name"), f"duplicate priority class {classes[index].name!r}"
        )
    for index, pc in enumerate(classes):
        if pc.name.startswith("system-"):
            yield ConfigIssue(
                ("priorityClasses", index, "name"),
                f"names starting with 'system-' are reserved by Kubernetes, got {pc.name!r}",
            )
    defaults = [index for index, pc in enumerate(classes) if pc.global_default]
    if len(defaults) != 1:
        found = ", ".join(repr(classes[i].name) for i in defaults) or "none"
        yield ConfigIssue(
            ("priorityClasses",),
            f"exactly one priority class must set globalDefault: true, found {found}",
        )


def storage_classes_are_consistent(config: PlatformConfig) -> Iterator[ConfigIssue]:
    classes = config.storage.classes
    for index, _ in _repeats([sc.name for sc in classes]):
        yield ConfigIssue(
            ("storage", "classes", index, "name"),
            f"duplicate storage class {classes[index].name!r}",
        )
    for index, sc in enumerate(classes):
        if config.cluster.protects_data and sc.reclaim_policy == "Delete":
            yield ConfigIssue(
                ("storage", "classes", index, "reclaimPolicy"),
                "must be Retain when the stack protects data (prod): Delete destroys the volume "
                "with its claim",
            )
    defaults = [index for index, sc in enumerate(classes) if sc.default]
    if len(defaults) != 1:
        found = ", ".join(repr(classes[i].name) for i in defaults) or "none"
        yield ConfigIssue(
            ("storage", "classes"),
            f"exactly one storage class must set default: true, found {found}",
        )


RULES: tuple[Rule, ...] = (
    unique_team_names,
    unique_team_namespaces,
    team_priority_classes_exist,
    container_limits_cover_requests,
    container_defaults_fit_quota,
    team_env_not_reserved,
    unique_groups,
    volumes_are_consistent,
    priority_classes_are_consistent,
    storage_classes_are_consistent,
)
"""Every cross-field rule, run in this order after the models validate."""


def cross_field_issues(config: PlatformConfig) -> list[ConfigIssue]:
    return [issue for rule in RULES for issue in rule(config)]
