"""The escape hatch: extraManifests -> RawManifestsArgs -> the RawManifests component."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from components.raw_manifests import RawManifests, RawManifestsArgs

from ..config.root import PlatformConfig
from ..sources import EXTRA_MANIFESTS
from .rules import exception_positions


def extra_manifests(
    config: PlatformConfig, after: Sequence[pulumi.Resource], opts: pulumi.ResourceOptions
) -> RawManifests | None:
    """The stack's extra objects, if any, after ``after`` (the team namespaces)."""
    if not config.extra_manifests:
        return None
    args = RawManifestsArgs(
        manifests=config.extra_manifests,
        depends_on=list(after),
        exceptions=exception_positions(config),
    )
    return RawManifests(EXTRA_MANIFESTS, args, opts)
