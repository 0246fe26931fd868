"""Small, fast readers for Kubernetes manifests as the policy SDK hands them over.

Props arrive wrapped in the SDK's unknown-value proxy: mappings and sequences that are *not*
``dict``/``list`` and raise ``UnknownValueError`` when an unknown value is read. Every reader here
therefore tests for ``Mapping``/``Sequence`` (never ``dict``/``list``), never swallows exceptions
(so unknowns reach the SDK, which reports "can't run during preview"), and tolerates the wrong
type silently: schema validation is another tool's job, a policy must not crash on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any, Final, NamedTuple

from .quantity_core import binary_spelling, in_range, quantity_amount

EMPTY_MAP: Final[Mapping[str, Any]] = {}
EMPTY_SEQ: Final[Sequence[Any]] = ()
DEFAULT_NAMESPACE: Final = "default"


class TypeToken(NamedTuple):
    """A parsed ``kubernetes:<group>/<version>:<Kind>`` Pulumi type token."""

    group: str
    """API group; ``core`` for the legacy group, as Pulumi spells it."""
    version: str
    kind: str

    @property
    def group_kind(self) -> str:
        """``<group>/<Kind>``: version-independent key for kind registries."""
        return f"{self.group}/{self.kind}"


NON_MANIFEST_MODULES: Final = frozenset({"helm.sh", "yaml", "kustomize"})
"""Pulumi Kubernetes types that are not Kubernetes objects (Helm releases and charts, YAML and
kustomize groups): their inputs are not a manifest, so no policy reads them."""


@lru_cache(maxsize=1024)
def parse_type(resource_type: str) -> TypeToken | None:
    """Parse a Kubernetes object's type token; ``None`` for anything else (our components,
    providers, Helm releases, YAML/kustomize groups).

    Cached: a stack has a few dozen distinct types and every policy asks for every resource.
    """
    if not resource_type.startswith("kubernetes:"):
        return None
    parts = resource_type.split(":")
    if len(parts) != 3:
        return None
    group, _, version = parts[1].rpartition("/")
    if not group or not version or not parts[2] or group in NON_MANIFEST_MODULES:
        return None
    return TypeToken(group, version, parts[2])


def is_kind(resource_type: str, group_kind: str) -> bool:
    """True if the token is ``kubernetes:<group>/<any version>:<Kind>`` for ``group/Kind``."""
    token = parse_type(resource_type)
    return token is not None and token.group_kind == group_kind


def as_map(value: Any) -> Mapping[str, Any]:
    """The value if it is a mapping (dict or SDK proxy), else an empty mapping."""
    return value if isinstance(value, Mapping) else EMPTY_MAP


def as_seq(value: Any) -> Sequence[Any]:
    """The value if it is a list-like (list or SDK proxy, never a string), else empty."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return value
    return EMPTY_SEQ


def as_str(value: Any) -> str | None:
    """The value if it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    """Integers arrive as floats through protobuf Structs: accept integral numbers only."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def dig(obj: Any, *path: str) -> Any:
    """Follow ``path`` through nested mappings; ``None`` as soon as a step is missing."""
    current = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def metadata(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """``metadata`` of a manifest, or an empty mapping."""
    return as_map(props.get("metadata"))


def name_of(props: Mapping[str, Any]) -> str:
    """``metadata.name`` or ``""`` (under mocks there is no autonaming)."""
    return as_str(metadata(props).get("name")) or ""


def namespace_of(props: Mapping[str, Any]) -> str | None:
    """``metadata.namespace`` as written, or ``None`` when unset."""
    return as_str(metadata(props).get("namespace")) or None


def effective_namespace(props: Mapping[str, Any]) -> str:
    """The namespace the object lands in when the provider has no default namespace."""
    return namespace_of(props) or DEFAULT_NAMESPACE


def labels_of(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """``labels`` of a metadata mapping."""
    return as_map(meta.get("labels"))


def fmt_num(value: Any) -> str:
    """Render numbers the way people wrote them: ``2`` not ``2.0`` (Structs carry floats)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Decimal):
        normal = value.normalize()
        return f"{normal:f}" if normal == normal.to_integral() else str(normal)
    return str(value)


# --- Quantities ---------------------------------------------------------------------------------
@lru_cache(maxsize=4096)
def _parse_quantity_text(text: str) -> Decimal | None:
    amount = quantity_amount(text.strip())
    return amount if amount is not None and in_range(amount) else None


def parse_quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (``500m``, ``16Gi``, ``1e3``) in base units; ``None`` if invalid,
    or past what the API server stores (2^63-1 in magnitude), as the platform's config says.

    Exact decimals, never floats: sizes and GPU counts are compared for equality.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        amount = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        amount = Decimal(repr(value))
    elif isinstance(value, str):
        return _parse_quantity_text(value)
    else:
        return None
    return amount if in_range(amount) else None


def format_bytes(amount: Decimal) -> str:
    """Render a byte count with the largest exact binary suffix, as people write sizes."""
    return binary_spelling(amount) or fmt_num(amount)


# --- Selectors ----------------------------------------------------------------------------------
class LabelSelector:
    """A ``LabelSelector`` read once into plain Python, evaluated many times.

    An empty selector matches everything; a missing (``None``) one matches nothing, as the
    PodDisruptionBudget and NetworkPolicy APIs define. Unknown operators match nothing.
    """

    __slots__ = ("expressions", "labels", "valid")

    def __init__(self, selector: Any) -> None:
        self.valid = isinstance(selector, Mapping)
        self.labels: tuple[tuple[str, Any], ...] = ()
        self.expressions: tuple[tuple[str, Any, frozenset[str]], ...] = ()
        if not isinstance(selector, Mapping):
            return
        self.labels = tuple(as_map(selector.get("matchLabels")).items())
        expressions = []
        for expr in as_seq(selector.get("matchExpressions")):
            expr = as_map(expr)
            values = frozenset(v for v in as_seq(expr.get("values")) if isinstance(v, str))
            expressions.append((as_str(expr.get("key")) or "", expr.get("operator"), values))
        self.expressions = tuple(expressions)

    def matches(self, labels: Mapping[str, Any]) -> bool:
        if not self.valid:
            return False
        for key, value in self.labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.expressions:
            current = labels.get(key)
            member = isinstance(current, str) and current in values
            if operator == "In":
                ok = member
            elif operator == "NotIn":
                ok = not member
            elif operator == "Exists":
                ok = current is not None
            elif operator == "DoesNotExist":
                ok = current is None
            else:
                ok = False
            if not ok:
                return False
        return True


def selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """Evaluate a ``LabelSelector`` (matchLabels AND matchExpressions) against ``labels``."""
    return LabelSelector(selector).matches(labels)


def iter_strings(value: Any) -> Iterator[str]:
    """The string items of a list-like value."""
    for item in as_seq(value):
        if isinstance(item, str):
            yield item
