"""Labels every object the platform creates carries, built in one place."""

from __future__ import annotations

from .constants import (
    APP_MANAGED_BY_LABEL,
    APP_PART_OF_LABEL,
    MANAGED_BY,
    PROJECT,
    PSA_AUDIT_LABEL,
    PSA_ENFORCE_LABEL,
    PSA_WARN_LABEL,
    SYSTEM_NAMESPACE_LABEL,
    TEAM_LABEL,
)


def platform_labels(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Labels that say "this belongs to the platform and Pulumi manages it"."""
    return {APP_PART_OF_LABEL: PROJECT, APP_MANAGED_BY_LABEL: MANAGED_BY, **(extra or {})}


def team_labels(team: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Platform labels plus the team label that quota, showback and isolation key on."""
    return platform_labels({TEAM_LABEL: team, **(extra or {})})


def system_namespace_labels(pod_security: str) -> dict[str, str]:
    """A platform namespace that is no team's, enforcing, auditing and warning at one Pod
    Security level (``restricted`` unless its components need the host)."""
    return {
        **platform_labels({SYSTEM_NAMESPACE_LABEL: "true"}),
        PSA_ENFORCE_LABEL: pod_security,
        PSA_AUDIT_LABEL: pod_security,
        PSA_WARN_LABEL: pod_security,
    }
