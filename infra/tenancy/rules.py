"""Cross-field rules of teams: names and namespaces, classes, container defaults, environment,
groups and volumes; and what the in-cluster guardrails (``components/guardrails.py``) will
refuse, refused at config time: a stack that passes the preview must not have its own workloads
refused by the cluster.

Each reads only what ``TenancyPlatform`` or ``GuardedPlatform`` declares.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from typing import Protocol

from components.constants import (
    DEFAULT_QUEUE_FLAVOR,
    PLATFORM_NAMESPACES,
    SYSTEM_NAMESPACES,
    TRAINING_ENV_VAR,
)

from ..config.errors import ConfigIssue
from ..config.partial import ByName, by_name, parsed, repeats
from ..config.quantity import parse_quantity, show_amount
from ..config.views import (
    HasCluster,
    HasNodePools,
    HasPriorityClasses,
    HasQueueing,
    HasStorage,
    HasTeams,
    HasWorkloads,
)

RESERVED_NAMESPACES = SYSTEM_NAMESPACES | PLATFORM_NAMESPACES
"""Namespaces Kubernetes or the platform itself owns; no team may take them."""

PLATFORM_ENV_KEYS = frozenset({TRAINING_ENV_VAR})
"""Environment variables the platform sets in every team ConfigMap."""


class TenancyPlatform(HasTeams, HasPriorityClasses, HasStorage, Protocol):
    """What the team rules read."""


class GuardedPlatform(HasCluster, HasTeams, HasNodePools, HasQueueing, HasWorkloads, Protocol):
    """What the guardrail rules read."""


def duplicates(names: list[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def unique_team_names(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    teams = list(parsed(config.teams))
    for index, first in repeats([(index, team.name) for index, team in teams]):
        yield ConfigIssue(
            ("teams", index, "name"),
            f"duplicate team name {config.teams[index].name!r} (first used by teams[{first}])",
        )


def unique_team_namespaces(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    teams = list(parsed(config.teams))
    for index, first in repeats([(index, team.namespace_name) for index, team in teams]):
        team, other = config.teams[index], config.teams[first]
        if team.name != other.name:  # a duplicate team name is reported once, above
            yield ConfigIssue(
                ("teams", index, "namespace" if team.namespace else "name"),
                f"namespace {team.namespace_name!r} is already used by team {other.name!r}",
            )
    for index, team in teams:
        key = "namespace" if team.namespace else "name"
        if team.namespace_name in RESERVED_NAMESPACES:
            yield ConfigIssue(
                ("teams", index, key),
                f"namespace {team.namespace_name!r} is reserved for the system or the platform",
            )


def team_priority_classes_exist(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    known = by_name(config.priority_classes)
    for index, team in parsed(config.teams):
        for position, name in enumerate(team.priority_classes or []):
            if name not in known:
                yield ConfigIssue(
                    ("teams", index, "priorityClasses", position),
                    f"unknown priority class {name!r}; defined: {', '.join(known.names())}",
                )


def container_limits_cover_requests(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        defaults = team.container_defaults
        for resource in ("cpu", "memory"):
            request = getattr(defaults.requests, resource)
            limit = getattr(defaults.limits, resource)
            if parse_quantity(limit) < parse_quantity(request):
                yield ConfigIssue(
                    ("teams", index, "containerDefaults", "limits", resource),
                    f"default limit {limit} is below the default request {request}",
                )


def container_defaults_fit_quota(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
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


def team_env_not_reserved(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        for key in team.env:
            if key in PLATFORM_ENV_KEYS:
                yield ConfigIssue(("teams", index, "env", key), "is set by the platform; remove it")


def unique_groups(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    for index, team in parsed(config.teams):
        for field, alias in (("admin_groups", "adminGroups"), ("viewer_groups", "viewerGroups")):
            groups: list[str] = getattr(team, field)
            for position, group in enumerate(groups):
                if not group.strip():
                    yield ConfigIssue(("teams", index, alias, position), "group name is empty")
                elif group.startswith("system:"):
                    yield ConfigIssue(
                        ("teams", index, alias, position),
                        f"{group!r} is a Kubernetes system group (it may contain every user); "
                        "name a group of your identity provider",
                    )
            for group in sorted(duplicates(groups)):
                yield ConfigIssue(("teams", index, alias), f"group {group!r} is listed twice")


def volumes_are_consistent(config: TenancyPlatform) -> Iterator[ConfigIssue]:
    classes = {sc.name for sc in config.storage.classes}
    for index, team in parsed(config.teams):
        for position, _ in repeats([volume.name for volume in team.volumes]):
            yield ConfigIssue(
                ("teams", index, "volumes", position, "name"),
                f"duplicate volume name {team.volumes[position].name!r}",
            )
        for position, volume in enumerate(team.volumes):
            path = ("teams", index, "volumes", position)
            if volume.storage_class not in classes:
                yield ConfigIssue(
                    (*path, "storageClass"),
                    f"unknown storage class {volume.storage_class!r}; defined: "
                    f"{', '.join(sorted(classes))}",
                )
        total = sum((parse_quantity(volume.size) for volume in team.volumes), Decimal(0))
        if total > parse_quantity(team.quota.storage):
            parts = " + ".join(f"{volume.name} {volume.size}" for volume in team.volumes)
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"the team's volumes add up to {show_amount('memory', total)} ({parts}), above "
                f"its storage quota of {team.quota.storage}",
            )
        if len(team.volumes) > team.quota.persistent_volume_claims:
            yield ConfigIssue(
                ("teams", index, "volumes"),
                f"{len(team.volumes)} volumes exceed the team's quota of "
                f"{team.quota.persistent_volume_claims} PVCs",
            )


RULES = (
    unique_team_names,
    unique_team_namespaces,
    team_priority_classes_exist,
    container_limits_cover_requests,
    container_defaults_fit_quota,
    team_env_not_reserved,
    unique_groups,
    volumes_are_consistent,
)
"""The team rules, in the order they report (first of all rules)."""


MIN_KUBERNETES_MINOR = 30
"""ValidatingAdmissionPolicy is GA (``admissionregistration.k8s.io/v1``) from Kubernetes 1.30."""


def guardrails_need_kubernetes_1_30(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    minor = int(config.cluster.kubernetes_version.split(".")[1])
    if minor < MIN_KUBERNETES_MINOR:
        yield ConfigIssue(
            ("cluster", "kubernetesVersion"),
            f"must be 1.{MIN_KUBERNETES_MINOR} or later: the tenant guardrails are "
            "ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1), got "
            f"{config.cluster.kubernetes_version!r}",
        )


def gpu_workloads_are_queued(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    """With Kueue on, the cluster refuses a GPU workload that does not name its team's GPU
    queue; a workload the platform would render unqueued is a config error instead."""
    if not config.queueing.enabled:
        return
    teams = ByName(config.teams, lambda team: team.name)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if workload.gpus is None or found is None:
            continue
        team = found[1]
        inference = workload.kind == "inference"
        if inference and workload.inference_settings.queued:
            continue  # a queued service of a team without a queue is reported by its own rule
        if team.queue is None:
            yield ConfigIssue(
                ("workloads", index, "gpus"),
                f"team {team.name!r} has no GPU queue: with Kueue on, the cluster refuses GPU "
                "workloads outside the team's GPU queue; give the team one "
                "(ai-platform:teams[].queue)",
            )
        elif inference:
            yield ConfigIssue(
                ("workloads", index, "inference", "queued"),
                "must be true for a GPU service: with Kueue on, the cluster refuses GPU pods "
                "outside the team's GPU queue",
            )


def default_queue_flavor_is_reserved(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    if not config.queueing.enabled:
        return
    for index, pool in parsed(config.node_pools):
        if pool.name == DEFAULT_QUEUE_FLAVOR:
            yield ConfigIssue(
                ("nodePools", index, "name"),
                f"{DEFAULT_QUEUE_FLAVOR!r} is reserved: it names the Kueue flavor of the "
                "teams' default queues",
            )


def team_pairs_are_declared(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    """``reachableFrom`` names other teams; a service opened to another team's namespace needs
    that team in its own team's ``reachableFrom`` (the pack refuses undeclared pairs)."""
    teams = ByName(config.teams, lambda team: team.name)
    owners = {team.namespace_name: team.name for _, team in parsed(config.teams)}
    for index, team in parsed(config.teams):
        for position, name in enumerate(team.reachable_from):
            if name == team.name:
                yield ConfigIssue(
                    ("teams", index, "reachableFrom", position), "a team always reaches itself"
                )
            elif name not in teams:
                yield ConfigIssue(
                    ("teams", index, "reachableFrom", position),
                    f"unknown team {name!r}; defined: {', '.join(teams.names())}",
                )
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if workload.kind != "inference" or found is None:
            continue
        team = found[1]
        allowed = workload.inference_settings.allow_from_namespaces
        for position, namespace in enumerate(allowed):
            caller = owners.get(namespace)
            if caller is not None and caller != team.name and caller not in team.reachable_from:
                yield ConfigIssue(
                    ("workloads", index, "inference", "allowFromNamespaces", position),
                    f"namespace {namespace!r} belongs to team {caller!r}, which may reach team "
                    f"{team.name!r} only if its reachableFrom lists {caller!r}",
                )


GUARDRAIL_RULES = (
    guardrails_need_kubernetes_1_30,
    gpu_workloads_are_queued,
    default_queue_flavor_is_reserved,
    team_pairs_are_declared,
)
"""The guardrail rules, in the order they report (last of all rules)."""
