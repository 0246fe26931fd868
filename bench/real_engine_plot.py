"""The plot of docs/performance.md's "The real engine": per stack, the wall time of the offline
preview, the real preview, ``pulumi up`` and the kubectl floor, and ``pulumi up`` over the floor
in the machine's CPU (client and cluster: the ratio that holds when the load changes between the
two)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

STEPS = (
    ("offlinePreview", "offline preview"),
    ("preview", "pulumi preview"),
    ("up", "pulumi up"),
    ("floor", "kubectl apply (floor)"),
)


def series(
    results: Mapping[str, Any],
) -> tuple[list[str], dict[str, list[float]], list[float]]:
    """``(stack labels, wall seconds per step, up/floor ratios of the machine's CPU)`` of the
    stacks with a ``pulumi up``; what was not measured is NaN (no bar)."""
    labels: list[str] = []
    walls: dict[str, list[float]] = {key: [] for key, _ in STEPS}
    ratios: list[float] = []
    for name, entry in results.get("stacks", {}).items():
        if not (entry.get("up") or {}).get("wallSeconds"):
            continue
        labels.append(f"{name}\n{entry.get('objects', '?')} objects")
        for key, _ in STEPS:
            walls[key].append(float((entry.get(key) or {}).get("wallSeconds") or math.nan))
        ratios.append(float((entry.get("ratios") or {}).get("upOverFloorMachineCpu") or math.nan))
    return labels, walls, ratios


def plot(results: Mapping[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, walls, ratios = series(results)
    if not labels:
        return
    figure, (times, over) = plt.subplots(
        1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 1.4]}
    )
    width = 0.8 / len(STEPS)
    for index, (key, title) in enumerate(STEPS):
        xs = [i + (index - (len(STEPS) - 1) / 2) * width for i in range(len(labels))]
        bars = times.bar(xs, walls[key], width, label=title)
        times.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    times.set_yscale("log")
    times.set_xticks(range(len(labels)), labels, fontsize=8)
    times.set_ylabel("wall seconds (log scale)")
    times.set_title("The real engine on a local cluster")
    times.legend(fontsize=8, loc="upper left")
    bars = over.bar(range(len(labels)), ratios, 0.6, color="tab:green")
    over.bar_label(bars, fmt="%.2f", fontsize=8, padding=1)
    measured = [r for r in ratios if not math.isnan(r)]
    over.set_ylim(0, max([*measured, 2.5]) * 1.2)
    over.axhline(2.0, color="tab:red", linestyle="--", linewidth=1, label="target: 2x")
    over.set_xticks(
        range(len(labels)), [label.split("\n")[0] for label in labels], fontsize=8, rotation=20
    )
    over.set_title("pulumi up / kubectl floor\n(CPU: client and cluster)", fontsize=10)
    over.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format=path.suffix.lstrip(".") or "svg", metadata={"Date": None})
    plt.close(figure)
