"""Targets, tables and the plot for the benchmark results (``build/bench/results.json``).

Why separate from the measuring: the targets are the contract of issue 8 and docs/performance.md
quotes the tables, so both are computed from the saved JSON, never from live objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STEPS = ("config", "program", "render", "schema", "policy")

PROGRAM_OVER_FLOOR = 1.25
"""Our program run under mocks costs at most this multiple of the SDK's floor, at every size."""
SCALING = 11.0
"""Time at 1,000 workloads is at most this multiple of the time at 100 (flat per resource)."""
POLICY_PER_SECOND = 1000.0
"""Policy analyzer throughput at ``POLICY_RECORDS`` resources, end to end."""
POLICY_RECORDS = 5000
"""Smaller runs (``--quick``) are reported but not judged: the pack's start dominates them."""
PROD_POLICY_SECONDS = 2.0
"""The prod stack's policy step."""
TEST_SUITE_SECONDS = 180.0
"""The whole test suite on the benchmark machine."""


@dataclass(frozen=True)
class Target:
    """One stated target and whether the measurement met it."""

    name: str
    passed: bool
    measured: str
    limit: str

    def line(self) -> str:
        verdict = "PASS" if self.passed else "MISS"
        return f"{verdict}  {self.name}: {self.measured} (target {self.limit})"


def _sized(results: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every previewed stack with a floor: the checked-in ones, then the synthetic sizes."""
    named = [(name, entry) for name, entry in results["stacks"].items()]
    synthetic = [(f"{entry['workloads']} workloads", entry) for entry in results["scaling"]]
    return named + synthetic


def evaluate(results: dict[str, Any]) -> list[Target]:
    """Every target of issue 8 that this run measured."""
    targets: list[Target] = []
    for label, entry in _sized(results):
        ratio = entry["programOverFloor"]
        targets.append(
            Target(
                f"program under mocks vs SDK floor, {label}",
                ratio <= PROGRAM_OVER_FLOOR,
                f"{ratio:.2f}x ({entry['programCpuSeconds']:.2f} vs "
                f"{entry['floorCpuSeconds']:.2f} CPU-s)",
                f"<= {PROGRAM_OVER_FLOOR}x",
            )
        )
        program = entry["steps"]["program"]
        for step in ("schema", "policy"):
            seconds = entry["steps"].get(step)
            if seconds is None:
                continue
            targets.append(
                Target(
                    f"{step} step below the program run, {label}",
                    seconds < program,
                    f"{seconds:.2f}s vs {program:.2f}s",
                    "< program",
                )
            )
    by_size = {entry["workloads"]: entry for entry in results["scaling"]}
    if 100 in by_size and 1000 in by_size:
        small, large = by_size[100], by_size[1000]
        pairs = [("whole preview", small["wallSeconds"], large["wallSeconds"])]
        pairs += [(f"{step} step", small["steps"][step], large["steps"][step]) for step in STEPS]
        for what, at_100, at_1000 in pairs:
            growth = at_1000 / at_100 if at_100 else float("inf")
            targets.append(
                Target(
                    f"{what} growth from 100 to 1,000 workloads",
                    growth <= SCALING,
                    f"{growth:.2f}x ({at_100:.2f}s -> {at_1000:.2f}s)",
                    f"<= {SCALING:g}x",
                )
            )
    throughput = results.get("policyThroughput")
    if throughput and throughput["resources"] >= POLICY_RECORDS:
        targets.append(
            Target(
                f"policy analyzer throughput at {throughput['resources']:,} resources",
                throughput["perSecond"] >= POLICY_PER_SECOND,
                f"{throughput['perSecond']:,.0f}/s ({throughput['seconds']:.2f}s)",
                f">= {POLICY_PER_SECOND:,.0f}/s",
            )
        )
    prod = results["stacks"].get("prod")
    if prod and prod["steps"].get("policy") is not None:
        seconds = prod["steps"]["policy"]
        targets.append(
            Target(
                "prod stack policy step",
                seconds < PROD_POLICY_SECONDS,
                f"{seconds:.2f}s",
                f"< {PROD_POLICY_SECONDS:g}s",
            )
        )
    tests = results.get("tests")
    if tests:
        targets.append(
            Target(
                "test suite wall time",
                tests["seconds"] < TEST_SUITE_SECONDS and tests["returncode"] == 0,
                f"{tests['seconds']:.0f}s ({tests['summary']})",
                f"< {TEST_SUITE_SECONDS:g}s, passing",
            )
        )
    return targets


def _ms(seconds: float, resources: int) -> str:
    return f"{seconds / resources * 1000:.2f}" if resources else "-"


def _rows(results: dict[str, Any]) -> Iterator[list[str]]:
    for label, entry in _sized(results):
        steps = entry["steps"]
        n = entry["resources"]
        yield [
            label,
            f"{n:,}",
            f"{entry['wallSeconds']:.2f}",
            f"{entry['cpuSeconds']:.2f}",
            f"{entry['maxRssMb']:.0f}",
            *(f"{steps[step]:.2f}" if step in steps else "-" for step in STEPS),
            f"{entry['programCpuSeconds']:.2f}",
            f"{entry['floorCpuSeconds']:.2f}",
            f"{entry['programOverFloor']:.2f}",
            _ms(entry["programCpuSeconds"], n),
            _ms(entry["floorCpuSeconds"], n),
            _ms(entry["wallSeconds"], n),
        ]


HEADER = [
    "stack",
    "resources",
    "wall s",
    "CPU s",
    "peak MB",
    *(f"{step} s" for step in STEPS),
    "program CPU s",
    "floor CPU s",
    "program/floor",
    "program ms/res",
    "floor ms/res",
    "wall ms/res",
]
"""Steps are the preview's own wall-clock timings; program/floor CPU seconds come from the
paired worker runs (``bench.floor``) and their ratio is the median of the per-run ratios."""


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain-text table with right-aligned numbers."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


def markdown_table(rows: list[list[str]], header: list[str]) -> str:
    """A GitHub table: the first column (names) left-aligned, the figures right-aligned."""
    align = [":---", *("---:" for _ in header[1:])]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def summary_text(results: dict[str, Any], targets: list[Target]) -> str:
    """What ``python -m bench`` prints: the figures, then every target with its verdict."""
    parts = [
        "Offline preview, median of runs. wall/CPU/peak: the whole preview process tree; steps: "
        "its report.json timings (wall); program/floor: CPU seconds of our program and of the "
        "same Kubernetes objects registered bare, under the same mocks; ms/res: per resource of "
        "the stack",
        table(list(_rows(results)), HEADER),
    ]
    configmaps = results.get("floorConfigMaps")
    if configmaps:
        parts.append(
            f"SDK floor, metadata-only ConfigMaps: {configmaps['resources']:,} in "
            f"{configmaps['seconds']:.2f}s ({_ms(configmaps['seconds'], configmaps['resources'])}"
            " ms each)"
        )
    throughput = results.get("policyThroughput")
    if throughput:
        parts.append(
            f"Policy pack end to end: {throughput['resources']:,} resources in "
            f"{throughput['seconds']:.2f}s = {throughput['perSecond']:,.0f}/s "
            f"({throughput['violations']} violations)"
        )
    tests = results.get("tests")
    if tests:
        parts.append(f"Test suite: {tests['seconds']:.0f}s, exit {tests['returncode']}")
    load = results["loadAverage"]
    parts.append(f"Load average at start {load['start']}, at end {load['end']}")
    parts.append("Targets:\n" + "\n".join(f"  {t.line()}" for t in targets))
    return "\n\n".join(parts)


def markdown(results: dict[str, Any], targets: list[Target]) -> str:
    """The tables of docs/performance.md, generated from the same results."""
    rows = list(_rows(results))
    verdicts = [[t.name, t.measured, t.limit, "pass" if t.passed else "**MISS**"] for t in targets]
    return "\n\n".join(
        [
            markdown_table(rows, HEADER),
            markdown_table(verdicts, ["check", "measured", "target", "verdict"]),
        ]
    )


def plot(results: dict[str, Any], path: Path) -> None:
    """Time per resource against stack size: our program, the floor and the whole preview."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    entries = sorted(results["scaling"], key=lambda entry: entry["resources"])
    sizes = [entry["resources"] for entry in entries]

    def per_resource(seconds: list[float]) -> list[float]:
        return [s / n * 1000 for s, n in zip(seconds, sizes, strict=True)]

    figure, axes = plt.subplots(figsize=(7, 4.2), dpi=120)
    series = [
        ("whole preview (wall)", [e["wallSeconds"] for e in entries], "o--", "tab:gray"),
        (
            "our program under mocks (CPU)",
            [e["programCpuSeconds"] for e in entries],
            "o-",
            "tab:blue",
        ),
        (
            "SDK floor: same objects, bare (CPU)",
            [e["floorCpuSeconds"] for e in entries],
            "s-",
            "tab:green",
        ),
    ]
    for label, seconds, style, color in series:
        axes.plot(sizes, per_resource(seconds), style, label=label, color=color)
    axes.set_xscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xticks(sizes, [f"{e['resources']:,}\n({e['workloads']:,} workloads)" for e in entries])
    axes.set_ylim(bottom=0)
    axes.set_xlabel("resources in the stack (log scale)")
    axes.set_ylabel("milliseconds per resource of the stack")
    machine = results["machine"]
    axes.set_title(
        f"Offline preview cost per resource ({machine['cpus']} CPUs, Python {machine['python']})",
        fontsize=10,
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def targets_json(targets: list[Target]) -> list[dict[str, Any]]:
    return [asdict(target) for target in targets]
