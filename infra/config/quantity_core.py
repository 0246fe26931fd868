"""Kubernetes quantities (``500m``, ``16Gi``, ``1e3``) read as the API server spells them.

The one parser of the platform's config (``quantity.py`` adds the messages and the pydantic
types) and of the policy pack, which runs from its own folder: tools/gen_policy_constants.py
copies this file into the pack, so it imports nothing but the standard library.

Exact decimals, never floats: quotas, limits and sizes are compared across layers.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Final

BINARY_SUFFIXES: Final = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
DECIMAL_SUFFIXES: Final = {
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
MAX_QUANTITY: Final = Decimal(2**63 - 1)
"""The API server stores quantities as int64 (milli-units aside): anything larger is a typo."""
TOO_LARGE: Final = MAX_QUANTITY + 1
"""The amount of a quantity whose exponent is past what the API server could store."""
MAX_EXPONENT: Final = 40
"""A decimal exponent (``1e40``) beyond this is past int64 in any unit: never computed, so
``1e9999999`` cannot overflow the decimal context."""

QUANTITY: Final = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


def quantity_amount(text: str) -> Decimal | None:
    """``text``'s value in base units, or ``None`` when it is not spelled as a quantity.

    An amount past the API server's range is returned as is, or as :data:`TOO_LARGE` when its
    exponent is too far out to compute: callers compare it with :data:`MAX_QUANTITY`.
    """
    match = QUANTITY.match(text)
    if not match:
        return None
    number = Decimal(match["number"])
    suffix = match["suffix"] or ""
    try:
        if suffix in BINARY_SUFFIXES:
            return number * BINARY_SUFFIXES[suffix]
        if suffix in DECIMAL_SUFFIXES:
            return number * DECIMAL_SUFFIXES[suffix]
        # Read the exponent's digits before converting them: ``int`` refuses more than a few
        # thousand, and a huge power of ten overflows the decimal context.
        digits = suffix[1:].lstrip("+-").lstrip("0") or "0"
        if len(digits) > len(str(MAX_EXPONENT)) or int(digits) > MAX_EXPONENT:
            return TOO_LARGE
        exponent = -int(digits) if suffix[1] == "-" else int(digits)
        return number * Decimal(10) ** exponent
    except ArithmeticError:
        return TOO_LARGE


def in_range(amount: Decimal) -> bool:
    """Whether the API server can store ``amount`` (at most 2^63-1 in magnitude)."""
    return abs(amount) <= MAX_QUANTITY


def binary_spelling(amount: Decimal) -> str | None:
    """``amount`` with the largest binary suffix that divides it (``16Gi``), or ``None``: how
    people write a byte count."""
    for suffix, factor in sorted(BINARY_SUFFIXES.items(), key=lambda item: -item[1]):
        if amount >= factor and amount % factor == 0:
            return f"{amount // factor}{suffix}"
    return None
