"""Kubernetes quantities in the stack config: parsed by the parser the policy pack shares, every
bad spelling a clear message (never an overflow or a digit-limit error from deep inside)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from infra.config.quantity import parse_quantity
from infra.config.quantity_core import MAX_QUANTITY, TOO_LARGE, quantity_amount


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 2**30)),
        ("1e3", Decimal(1000)),
        ("1E-3", Decimal("0.001")),
        ("1e-0003", Decimal("0.001")),
        ("+2", Decimal(2)),
        ("7Ei", Decimal(7 * 2**60)),
        ("1e40", Decimal(10) ** 40),
        ("2 TB", None),
        ("", None),
        ("12x", None),
    ],
)
def test_quantity_amount(text: str, amount: Decimal | None) -> None:
    assert quantity_amount(text) == amount


@pytest.mark.parametrize("text", ["1e41", "1e9999999", "1E-9999999", "1e" + "9" * 5000])
def test_an_exponent_too_far_out_to_compute_is_too_large(text: str) -> None:
    assert quantity_amount(text) == TOO_LARGE > MAX_QUANTITY


@pytest.mark.parametrize("text", ["1e9999999", "1e" + "9" * 5000, "8Ei", "1e19"])
def test_past_int64_is_a_clear_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"^is larger than Kubernetes allows \(at most 2\^63-1"):
        parse_quantity(text)


@pytest.mark.parametrize("value", ["2 TB", True, "Gi"])
def test_not_a_quantity_is_a_clear_error(value: object) -> None:
    with pytest.raises(ValueError, match=r"^must be a Kubernetes quantity such as '4', '500m'"):
        parse_quantity(value)  # type: ignore[arg-type]
