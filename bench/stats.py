"""The spread of repeated measurements and how firm their median is.

Why distribution-free: pair ratios on a shared machine have long tails (a neighbour's burst
lands on one side of one pair), so the confidence interval of the median comes from order
statistics, which assume nothing about the distribution, not from a standard deviation.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

CONFIDENCE = 0.95
MIN_VALUES = 6
"""The fewest values with a 95% interval narrower than their range (k >= 1 below)."""


def _binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """A distribution-free interval holding the true median with at least ``confidence``.

    The ``k``-th smallest and ``k``-th largest values, for the largest ``k`` with
    ``P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2``; the whole range when there are too
    few values for any ``k`` (fewer than 6 at 95%).
    """
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return (math.nan, math.nan)
    tail = (1 - confidence) / 2
    k = 0
    while k + 1 <= n // 2 and _binomial_cdf(k, n) <= tail:
        k += 1
    if k == 0:
        return (ordered[0], ordered[-1])
    return (ordered[k - 1], ordered[n - k])


def half_width(values: Sequence[float], confidence: float = CONFIDENCE) -> float:
    """How far the median's interval reaches from the median, on its wider side; infinite
    when there are too few values for an interval at that confidence."""
    if len(values) < MIN_VALUES:
        return math.inf
    low, high = median_interval(values, confidence)
    middle = statistics.median(values)
    return max(middle - low, high - middle)


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Count, median, its interval, quartiles and range: what a table of figures reports."""
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    low, high = median_interval(ordered)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) >= 2 else [ordered[0]] * 3
    return {
        "n": len(ordered),
        "median": round(statistics.median(ordered), 4),
        "intervalLow": round(low, 4),
        "intervalHigh": round(high, 4),
        "halfWidth": round(width, 4) if math.isfinite(width := half_width(ordered)) else None,
        "q1": round(quartiles[0], 4),
        "q3": round(quartiles[2], 4),
        "min": round(ordered[0], 4),
        "max": round(ordered[-1], 4),
    }
