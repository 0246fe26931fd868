"""Kubernetes quantities (``500m``, ``16Gi``, ``1e3``), parsed exactly as the API server does.

Quotas, limits and volume sizes are compared across layers (namespace quota vs. queue quota,
default limit vs. default request), so they are parsed to exact decimals, never floats.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
MAX_QUANTITY = Decimal(2**63 - 1)
"""The API server stores quantities as int64 (milli-units aside): anything larger is a typo."""
_TOO_LARGE = MAX_QUANTITY + 1
_MAX_EXPONENT = 40

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


def parse_quantity(value: str | int | float) -> Decimal:
    """Return the quantity's value in base units; raise ``ValueError`` naming the bad input."""
    if isinstance(value, bool):
        raise ValueError(
            f"must be a Kubernetes quantity such as '4', '500m' or '16Gi', got {value!r}"
        )
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(
            f"must be a Kubernetes quantity such as '4', '500m' or '16Gi', got {value!r}"
        )
    try:
        number = Decimal(match["number"])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"not a number: {value!r}") from exc
    suffix = match["suffix"] or ""
    try:
        if suffix in _BINARY:
            amount = number * _BINARY[suffix]
        elif suffix in _DECIMAL:
            amount = number * _DECIMAL[suffix]
        else:
            exponent = int(suffix[1:])
            if abs(exponent) > _MAX_EXPONENT:
                raise ArithmeticError
            amount = number * Decimal(10) ** exponent
    except ArithmeticError:
        amount = _TOO_LARGE
    if abs(amount) > MAX_QUANTITY:
        raise ValueError(
            f"is larger than Kubernetes allows (at most 2^63-1 in base units), got {value!r}"
        )
    return amount


def _validate_quantity(value: str) -> str:
    if value != value.strip():
        # parse_quantity reads the API server's output too and strips; config is rendered as
        # written, and the API server refuses " 20Gi" in a claim or a chart's values.
        raise ValueError(f"must not start or end with a space, got {value!r}")
    amount = parse_quantity(value)
    if amount < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    return value


def _coerce_to_text(value: object) -> object:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


Quantity = Annotated[str, BeforeValidator(_coerce_to_text), AfterValidator(_validate_quantity)]
"""A non-negative Kubernetes quantity kept as written (``"16Gi"``), validated on load."""

Count = Annotated[int, Field(ge=0, le=int(MAX_QUANTITY))]
"""A whole number of things (GPUs, pods, claims) in a quota: bounded like a quantity, since the
API server stores it as one; ``10**30`` GPUs is a typo, not a quota."""


def format_bytes(amount: Decimal) -> str:
    """Render a byte count with the largest exact binary suffix (for error messages)."""
    for suffix, factor in sorted(_BINARY.items(), key=lambda item: -item[1]):
        if amount >= factor and amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return str(amount)


def show_amount(resource: str, amount: Decimal) -> str:
    """``16Gi`` for memory, ``48`` or ``0.5`` otherwise (for error messages); absurd magnitudes
    (a typo'd exponent) exceed the decimal context's precision and are shown as written instead
    of crashing."""
    try:
        if resource == "memory":
            return format_bytes(amount)
        return str(int(amount)) if amount == amount.to_integral_value() else str(amount.normalize())
    except ArithmeticError:
        return str(amount)
