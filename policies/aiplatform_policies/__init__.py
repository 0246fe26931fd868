"""The ai-platform CrossGuard policies, importable without starting the policy server.

``POLICIES`` is the pack in a stable order (by concern, then declaration). ``__main__.py`` of the
pack hands it to ``PolicyPack``; tests, the docs generator and the gRPC driver import it directly.
"""

from __future__ import annotations

from pulumi_policy import Policy

from . import gpu, network, queueing, security, stack, storage, workload
from .registry import PACK_NAME, REGISTRY, Category, PolicyMeta

_CATEGORY_ORDER = list(Category)
METAS: list[PolicyMeta] = sorted(REGISTRY.values(), key=lambda m: _CATEGORY_ORDER.index(m.category))
"""Metadata of every policy, by concern (gpu, storage, workload, security, network, tenancy)."""
POLICIES: list[Policy] = [meta.policy for meta in METAS]
"""Every policy of the pack, in the order of :data:`METAS`."""

PACK_DESCRIPTION = (
    "Guardrails for the ai-platform Kubernetes platform: GPU accounting and scheduling, data "
    "on persistent storage, safe workloads, Pod Security Standards, network isolation and "
    "tenancy."
)

__all__ = [
    "METAS",
    "PACK_DESCRIPTION",
    "PACK_NAME",
    "POLICIES",
    "REGISTRY",
    "Category",
    "PolicyMeta",
    "gpu",
    "network",
    "queueing",
    "security",
    "stack",
    "storage",
    "workload",
]
