"""Kubernetes quantities in the stack config: the pydantic types and the messages.

Quotas, limits and volume sizes are compared across layers (namespace quota vs. queue quota,
default limit vs. default request), so they are parsed to exact decimals, never floats, by the
parser the policy pack shares (``quantity_core.py``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from .quantity_core import MAX_QUANTITY, binary_spelling, in_range, quantity_amount


def parse_quantity(value: str | int | float) -> Decimal:
    """Return the quantity's value in base units; raise ``ValueError`` naming the bad input."""
    amount = None if isinstance(value, bool) else quantity_amount(str(value).strip())
    if amount is None:
        raise ValueError(
            f"must be a Kubernetes quantity such as '4', '500m' or '16Gi', got {value!r}"
        )
    if not in_range(amount):
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
    return binary_spelling(amount) or str(amount)


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
