"""Cross-field rules of the KubeRay operator: its namespace is the platform's own, and Ray
workloads have an operator to run them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..config.errors import ConfigIssue
from ..config.partial import parsed
from ..config.views import HasMonitoring, HasRay, HasTeams, HasWorkloads
from ..workloads.config import RAY_KINDS


class RayPlatform(HasRay, HasTeams, HasWorkloads, HasMonitoring, Protocol):
    """What the Ray rules read."""


def ray_namespace_is_not_a_team(config: RayPlatform) -> Iterator[ConfigIssue]:
    for _, team in parsed(config.teams):
        if team.namespace_name == config.ray.namespace:
            yield ConfigIssue(
                ("ray", "namespace"),
                f"{config.ray.namespace!r} is the namespace of team {team.name!r}; the operator "
                "needs a namespace of its own",
            )


def ray_service_monitor_needs_monitoring(config: RayPlatform) -> Iterator[ConfigIssue]:
    if config.ray.enabled and config.ray.service_monitor and not config.monitoring.enabled:
        yield ConfigIssue(
            ("ray", "serviceMonitor"),
            "needs the Prometheus operator's CRDs: turn monitoring on or serviceMonitor off",
        )


def ray_workloads_need_the_operator(config: RayPlatform) -> Iterator[ConfigIssue]:
    if config.ray.enabled:
        return
    for index, workload in parsed(config.workloads):
        if workload.kind in RAY_KINDS:
            yield ConfigIssue(
                ("workloads", index, "kind"),
                f"a {workload.kind} needs the KubeRay operator: set ai-platform:ray.enabled to "
                "true",
            )


RULES = (
    ray_namespace_is_not_a_team,
    ray_service_monitor_needs_monitoring,
    ray_workloads_need_the_operator,
)
"""The Ray rules, in the order they report."""
