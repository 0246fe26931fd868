"""``ai-platform:escapeHatch``: what ``ai-platform:extraManifests`` may apply.

The escape hatch applies objects as written, so it is fenced: an object must be of a kind, and in
a namespace, that an entry of ``allow`` names (by default: any namespaced kind in any team
namespace). Anything else (cluster-scoped kinds: RBAC, webhooks, CRDs; anything in a system or
platform namespace) needs an exception that names the object and says why; in prod the policy
pack refuses an exception its config does not approve (``escape-hatch-exceptions``), so it takes
two reviewed changes, the stack file's and the policy config's. The checks are in
``rules.py``.
"""

from __future__ import annotations

from pydantic import Field

from ..config.base import ConfigModel, DnsLabel


class ManifestAllowance(ConfigModel):
    """Kinds that may go into some namespaces without an exception."""

    kinds: list[str] = Field(default=["*"], min_length=1)
    """``Kind`` (core group) or ``group/Kind``, e.g. ``ConfigMap``, ``apps/Deployment``; ``*``:
    every namespaced kind. Cluster-scoped kinds need an exception."""
    namespaces: list[DnsLabel] | None = None
    """Default: every team namespace. System and platform namespaces need an exception."""


class ManifestRef(ConfigModel):
    """One object of ``extraManifests``, by kind, namespace and name."""

    kind: str = Field(min_length=1)
    """As in ``allow``: ``Kind`` or ``group/Kind``."""
    name: str = Field(min_length=1)
    namespace: str | None = None
    """Omit for cluster-scoped kinds."""


class ManifestException(ConfigModel):
    """Objects admitted past the allow-list, by name, with the reason; each carries the
    exception's name as an annotation, and the prod policy config must approve it."""

    name: DnsLabel
    """Unique; what the policy config approves."""
    reason: str = Field(min_length=1)
    """Why the platform cannot do without it; reviewers read this."""
    objects: list[ManifestRef] = Field(min_length=1)
    """Exactly the objects it admits."""


class EscapeHatchConfig(ConfigModel):
    """The fence around ``ai-platform:extraManifests``."""

    allow: list[ManifestAllowance] = [ManifestAllowance()]
    """What needs no exception. Default: every namespaced kind in every team namespace."""
    exceptions: list[ManifestException] = []
    """Named exceptions for the rest. Default: none."""
