"""Cross-field rules of the KubeRay operator: its namespace is the platform's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..config.errors import ConfigIssue
from ..config.partial import parsed
from ..config.views import HasMonitoring, HasRay, HasTeams


class RayPlatform(HasRay, HasTeams, HasMonitoring, Protocol):
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


RULES = (
    ray_namespace_is_not_a_team,
    ray_service_monitor_needs_monitoring,
)
"""The Ray rules, in the order they report."""
