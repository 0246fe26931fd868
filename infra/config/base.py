"""The base of every stack config model: camelCase keys, unknown keys rejected, immutable."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

Check = Callable[[str], str]
"""A field validator: the value as it is, or ``ValueError`` saying what it must be."""


class ConfigModel(BaseModel):
    """Stack config is read from YAML written by people: be strict and speak camelCase."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        frozen=True,
        # Attribute docstrings become schema descriptions in infra/schema_docs.py, not here.
        str_strip_whitespace=False,
    )


def matching(pattern: re.Pattern[str], must_be: str, max_length: int | None = None) -> Check:
    """A validator: ``value`` matches ``pattern`` (in at most ``max_length`` characters), else
    the error says it ``must be`` so, and what it got."""

    def check(value: str) -> str:
        if (max_length is not None and len(value) > max_length) or not pattern.match(value):
            raise ValueError(f"must be {must_be}, got {value!r}")
        return value

    return check


def cidr(example: str, detail: bool = False) -> Check:
    """A validator: ``value`` is an IP network in CIDR notation (host bits clear), else the error
    shows ``example`` (and, with ``detail``, why the address module refused it)."""

    def check(value: str) -> str:
        try:
            ipaddress.ip_network(value, strict=True)
        except ValueError as exc:
            why = f" ({exc})" if detail else ""
            raise ValueError(f"must be a CIDR such as {example!r}, got {value!r}{why}") from None
        return value

    return check


_dns1123_label = matching(
    _DNS1123_LABEL,
    "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or "
    "digit, at most 63 characters)",
    63,
)
_dns1123_subdomain = matching(
    _DNS1123_SUBDOMAIN,
    "a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)",
    253,
)


def validate_label_key(key: str) -> str:
    """Check a Kubernetes label or annotation key: optional DNS prefix, '/', a name."""
    prefix, _, name = key.rpartition("/")
    if prefix:
        _dns1123_subdomain(prefix)
    if len(name) > 63 or not _LABEL_NAME.match(name):
        raise ValueError(f"must be a valid Kubernetes label key, got {key!r}")
    return key


def is_label_value(value: str) -> bool:
    """Whether Kubernetes accepts ``value`` as a label value (empty included)."""
    return len(value) <= 63 and _LABEL_VALUE.match(value) is not None


def _label_value(value: str) -> str:
    if not is_label_value(value):
        raise ValueError(f"must be a valid Kubernetes label value, got {value!r}")
    return value


def _label_map(value: dict[str, str]) -> dict[str, str]:
    for key, item in value.items():
        validate_label_key(key)
        if not is_label_value(item):
            raise ValueError(f"label {key!r} has an invalid value {item!r}")
    return value


DnsLabel = Annotated[str, AfterValidator(_dns1123_label)]
"""A name Kubernetes accepts for namespaces, services and most objects (DNS-1123 label)."""
DnsSubdomain = Annotated[str, AfterValidator(_dns1123_subdomain)]
"""A name Kubernetes accepts for cluster-scoped objects such as StorageClasses."""
LabelMap = Annotated[dict[str, str], AfterValidator(_label_map)]
"""Kubernetes labels: valid keys and values."""
LabelValue = Annotated[str, AfterValidator(_label_value)]
"""A Kubernetes label value."""
LabelKey = Annotated[str, AfterValidator(validate_label_key)]
"""A Kubernetes label (or annotation, or taint) key."""
