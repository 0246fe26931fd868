"""Policy metadata and the two constructors every policy module uses.

The SDK's ``Policy`` carries name, description, enforcement level, severity, remediation steps
and a config schema; what it lacks (the concern a policy belongs to, the parsed form of its
config) lives here. Policies are declared with :func:`resource_policy` / :func:`stack_policy`,
which record them in :data:`REGISTRY` and wrap the validation function so that it

- returns before any other work when the resource's kind is not one it checks,
- receives its config already merged with the schema defaults and parsed (once per distinct
  config, not once per resource: the SDK hands over a fresh copy of the same config each time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .kube import parse_type

T = TypeVar("T")

PACK_NAME = "ai-platform-policies"


class Category(StrEnum):
    """The concern a policy belongs to; also the module it lives in and its docs section."""

    GPU = "gpu"
    STORAGE = "storage"
    WORKLOAD = "workload"
    SECURITY = "security"
    NETWORK = "network"
    TENANCY = "tenancy"


@dataclass(frozen=True)
class PolicyMeta:
    """What docs and contract tests need beyond the SDK object."""

    name: str
    category: Category
    severity: Severity
    remediation: str
    default_level: EnforcementLevel
    stack: bool
    kinds: frozenset[str] | None
    """``<group>/<Kind>`` keys the policy looks at; ``None`` for stack policies and catch-alls."""
    policy: ResourceValidationPolicy | StackValidationPolicy


REGISTRY: dict[str, PolicyMeta] = {}
"""Every declared policy by name, in declaration order."""


class Knobs(Generic[T]):
    """A policy's config schema plus a parser from raw config to a settings object.

    ``properties`` are JSON Schemas with a ``default`` each; ``parse`` receives the defaults
    overlaid with whatever the stack's ``--policy-pack-config`` sets, and builds an immutable
    settings object (sets, parsed quantities) so validations do no parsing per resource.
    """

    def __init__(
        self, properties: dict[str, dict[str, Any]], parse: Callable[[Mapping[str, Any]], T]
    ):
        self.properties = properties
        self.defaults = {
            key: spec["default"] for key, spec in properties.items() if "default" in spec
        }
        self._parse = parse
        self.default_settings: T = parse(self.defaults)
        self._last: tuple[dict[str, Any], T] | None = None

    @property
    def schema(self) -> PolicyConfigSchema:
        return PolicyConfigSchema(properties=self.properties)

    def settings(self, raw: Mapping[str, Any] | None) -> T:
        """Parsed settings for a raw config (usually the same as last time: cache one)."""
        if not raw:
            return self.default_settings
        last = self._last
        if last is not None and last[0] == raw:
            return last[1]
        merged = {**self.defaults, **{k: v for k, v in raw.items() if k in self.properties}}
        value = self._parse(merged)
        self._last = (dict(raw), value)
        return value


NO_KNOBS: Knobs[None] = Knobs({}, lambda _raw: None)

ResourceCheck = Callable[[ResourceValidationArgs, ReportViolation, T], None]
StackCheck = Callable[[StackValidationArgs, ReportViolation, T], None]


def _register(meta: PolicyMeta) -> None:
    if meta.name in REGISTRY:
        raise ValueError(f"duplicate policy name {meta.name!r}")
    REGISTRY[meta.name] = meta


def resource_policy(
    *,
    name: str,
    description: str,
    category: Category,
    severity: Severity,
    remediation: str,
    check: ResourceCheck[T],
    knobs: Knobs[T],
    kinds: Iterable[str] | None,
    level: EnforcementLevel = EnforcementLevel.ADVISORY,
) -> ResourceValidationPolicy:
    """Declare a per-resource policy. ``kinds`` (``group/Kind`` keys) gates it before any work."""
    kind_set = frozenset(kinds) if kinds is not None else None

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if kind_set is not None:
            token = parse_type(args.resource_type)
            if token is None or token.group_kind not in kind_set:
                return
        check(args, report, knobs.settings(args.get_config()))

    policy = ResourceValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=knobs.schema if knobs.properties else None,
        severity=severity,
        tags=[category.value],
        remediation_steps=remediation,
    )
    _register(PolicyMeta(name, category, severity, remediation, level, False, kind_set, policy))
    return policy


def stack_policy(
    *,
    name: str,
    description: str,
    category: Category,
    severity: Severity,
    remediation: str,
    check: StackCheck[T],
    knobs: Knobs[T],
    level: EnforcementLevel = EnforcementLevel.ADVISORY,
) -> StackValidationPolicy:
    """Declare a whole-stack policy (cross-resource checks: coverage, existence, consistency)."""

    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        check(args, report, knobs.settings(args.get_config()))

    policy = StackValidationPolicy(
        name=name,
        description=description,
        validate=validate,
        enforcement_level=level,
        config_schema=knobs.schema if knobs.properties else None,
        severity=severity,
        tags=[category.value],
        remediation_steps=remediation,
    )
    _register(PolicyMeta(name, category, severity, remediation, level, True, None, policy))
    return policy


# --- Config coercion: the CLI validates config against the schema, a hand-written driver may
# not; parse leniently and never raise from a validation. Struct numbers arrive as floats. -----
def str_list(value: Any) -> tuple[str, ...]:
    """A list of strings (other items dropped)."""
    if isinstance(value, list | tuple):
        return tuple(item for item in value if isinstance(item, str))
    return ()


def int_value(value: Any, default: int) -> int:
    """An integer knob; integral floats accepted (protobuf Structs carry only doubles)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return default


def bool_value(value: Any, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def str_map(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items() if isinstance(v, str)}
    return {}


def string_list_schema(description: str, default: Iterable[str]) -> dict[str, Any]:
    """JSON Schema of a knob holding a list of unique strings."""
    return {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "uniqueItems": True,
        "default": list(default),
        "description": description,
    }
