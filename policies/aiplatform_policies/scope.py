"""Which namespaces are team namespaces, and the namespace knobs policies share.

A per-resource policy cannot see the Namespace objects of the stack, so "team namespace" is
decided by exclusion: every namespace that is not a listed system namespace. That errs on the
side of checking: a new system namespace must be listed explicitly (in the policy config),
which makes every exemption visible in review.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from components.constants import (
    GPU_OPERATOR_NAMESPACE,
    KUBE_SYSTEM_NAMESPACE,
    KUEUE_NAMESPACE,
    LOGGING_NAMESPACE,
    MONITORING_NAMESPACE,
    PRIVILEGED_SYSTEM_NAMESPACES,
)

from .kube import effective_namespace
from .registry import str_list, string_list_schema

PRIVILEGED_NAMESPACES_DEFAULT: Final[tuple[str, ...]] = (
    KUBE_SYSTEM_NAMESPACE,
    *PRIVILEGED_SYSTEM_NAMESPACES,
)
"""Namespaces whose agents need host access: the only exemptions from Pod Security checks."""

SYSTEM_NAMESPACES_DEFAULT: Final[tuple[str, ...]] = (
    KUBE_SYSTEM_NAMESPACE,
    "kube-public",
    "kube-node-lease",
    GPU_OPERATOR_NAMESPACE,
    KUEUE_NAMESPACE,
    MONITORING_NAMESPACE,
    LOGGING_NAMESPACE,
)
"""Platform namespaces that are not team namespaces (team rules such as labels do not apply)."""


def privileged_namespaces_knob() -> dict[str, Any]:
    return string_list_schema(
        "Namespaces exempt from this policy because their agents need host access "
        "(GPU drivers, node exporters, log shippers).",
        PRIVILEGED_NAMESPACES_DEFAULT,
    )


def system_namespaces_knob() -> dict[str, Any]:
    return string_list_schema(
        "Platform namespaces that are not team namespaces; the policy skips them.",
        SYSTEM_NAMESPACES_DEFAULT,
    )


def namespaces(raw: Mapping[str, Any], key: str) -> frozenset[str]:
    """A namespace list knob as a set."""
    return frozenset(str_list(raw.get(key)))


def in_namespaces(props: Mapping[str, Any], names: frozenset[str]) -> bool:
    """True if the object's namespace (``default`` when unset) is one of ``names``."""
    return effective_namespace(props) in names
