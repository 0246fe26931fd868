"""Quantity parsing and rendering: specs are copied verbatim from pod resources, so they must
parse exactly as Kubernetes does, and a shortfall must never render as enough."""

from __future__ import annotations

from decimal import Decimal

import pytest

from components.workloads.preflight import start_check
from components.workloads.preflight.start_check import format_bytes, format_cpus, parse_quantity

GI = 2**30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("16Gi", 16 * GI),
        ("1Ki", 1024),
        ("1Mi", 2**20),
        ("2Ti", 2 * 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("1.5Gi", 3 * GI // 2),
        ("500m", Decimal("0.5")),
        ("250u", Decimal("0.00025")),
        ("5n", Decimal("5e-9")),
        ("2", 2),
        ("1.5", Decimal("1.5")),
        (".5", Decimal("0.5")),
        ("5.", 5),
        ("+3", 3),
        (" 4 ", 4),
        ("100k", 100_000),
        ("1M", 10**6),
        ("16G", 16 * 10**9),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1e3", 1000),
        ("1E3", 1000),
        ("12e-1", Decimal("1.2")),
        ("128974848000m", 128974848),
        ("0", 0),
    ],
)
def test_parse_quantity(text: str, expected: Decimal | int) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text", ["", "Gi", "-1", "-1Gi", "1x", "1KI", "1ki", "1 Gi", "0x10", "1e", "1.2.3", "Gi1"]
)
def test_parse_quantity_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "0"),
        (1023, "1023"),
        (1024, "1Ki"),
        (32 * GI, "32Gi"),
        (3 * GI // 2, "1.5Gi"),
        (16 * GI - 1, "15.9Gi"),  # floored: one byte short must not print as 16.0Gi
        (2**60, "1Ei"),
        (5 * 2**40, "5Ti"),
    ],
)
def test_format_bytes(n: int, expected: str) -> None:
    assert format_bytes(n) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal(2), "2"),
        (Decimal("2.000"), "2"),
        (Decimal("0.5"), "0.5"),
        (Decimal(150000) / Decimal(100000), "1.5"),
        (Decimal(199999) / Decimal(100000), "1.999"),
        (Decimal(1) / Decimal(3), "0.333"),
    ],
)
def test_format_cpus(value: Decimal, expected: str) -> None:
    assert format_cpus(value) == expected


@pytest.mark.parametrize(
    "argv",
    [
        [],  # --start-check is the mode switch and is mandatory
        ["--min-memory", "lots"],
        ["--min-memory", "-1Gi"],
        ["--min-cpus", "2 cores"],
        ["--expect-gpus", "-1"],
        ["--expect-gpus", "eight"],
        ["--dataset-path", "/d", "--dataset-min-files", "0"],
        ["--dataset-min-files", "3"],
        ["--checkpoint-min-free", "1Gi"],
        ["--checkpoint-create"],
        ["--no-such-option"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    full = argv if not argv else ["--start-check", *argv]
    assert start_check.main(full, environ={}) == start_check.EXIT_CODES["usage"] == 2
    assert "error:" in capsys.readouterr().err
