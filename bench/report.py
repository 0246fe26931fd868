"""Targets, tables and the plot for the benchmark results (``build/bench/results.json``).

Why separate from the measuring: docs/performance.md quotes the tables, so both are computed
from the saved JSON, never from live objects. Every target is a ratio of two figures measured in
the same run on the same machine, so it means the same on a fast idle machine and a slow busy
one; absolute figures are reported beside the calibration loop's, never judged.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STEPS = ("config", "program", "render", "schema", "policy")

PROGRAM_OVER_FLOOR = 1.15
"""Our program run under mocks costs at most this multiple of the SDK's floor, at every size."""
STABILITY = 0.03
"""A median ratio is firm when its 95% interval reaches at most this far from it."""
PER_RESOURCE_GROWTH = 1.25
"""Each step's CPU per resource at 1,000 workloads is at most this multiple of it at 100: linear
with room for a larger heap's cache misses; a quadratic part would show as several times."""
POLICY_OVER_NOOP = 1.5
"""Our pack's CPU over a pack whose policies do nothing, driven the same way, at
``POLICY_RECORDS`` records: our policies cost at most half of what the protocol does."""
POLICY_RECORDS = 5000
"""Smaller runs (``--quick``) are reported but not judged: the packs' start dominates them."""
CHECKOV_OVER_OURS = 1.5
"""checkov alone on prod's rendered manifests takes at least this multiple of our whole
preview of prod (program, schema, policy, reachability), wall clock, side by side."""


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


def _interval(spread: dict[str, Any]) -> str:
    return (
        f"{spread['median']:.3f} [{spread['intervalLow']:.3f}-{spread['intervalHigh']:.3f}], "
        f"{spread['n']} pairs, range {spread['min']:.2f}-{spread['max']:.2f}"
    )


def evaluate(results: dict[str, Any]) -> list[Target]:
    """Every target this run measured."""
    targets: list[Target] = []
    for label, entry in _sized(results):
        ratio = entry["programOverFloor"]
        spread = entry["programOverFloorSpread"]
        targets.append(
            Target(
                f"program under mocks vs SDK floor, {label}",
                ratio <= PROGRAM_OVER_FLOOR,
                f"{ratio:.3f}x ({entry['programCpuSeconds']:.2f} vs "
                f"{entry['floorCpuSeconds']:.2f} CPU-s)",
                f"<= {PROGRAM_OVER_FLOOR}x",
            )
        )
        width = spread["halfWidth"]
        targets.append(
            Target(
                f"program/floor median firm, {label}",
                width is not None and width <= STABILITY,
                f"+-{width:.3f}: {_interval(spread)}"
                if width is not None
                else f"too few pairs for an interval: {_interval(spread)}",
                f"95% interval within +-{STABILITY}",
            )
        )
        counted = entry.get("instructions")
        if counted:
            over = counted["overFloor"]["program"]
            targets.append(
                Target(
                    f"program under mocks vs SDK floor, instructions, {label}",
                    over <= PROGRAM_OVER_FLOOR,
                    f"{over:.3f}x ({counted['instructions']['program'] / 1e9:.3f} vs "
                    f"{counted['instructions']['floor'] / 1e9:.3f} billion; repeatable to 0.05%)",
                    f"<= {PROGRAM_OVER_FLOOR}x",
                )
            )
        program = entry["stepsCpu"]["program"]
        schema = entry["stepsCpu"].get("schema")
        if schema is not None:
            targets.append(
                Target(
                    f"schema step below the program run, {label}",
                    schema < program,
                    f"{schema:.2f} vs {program:.2f} CPU-s",
                    "< program",
                )
            )
    by_size = {entry["workloads"]: entry for entry in results["scaling"]}
    if 100 in by_size and 1000 in by_size:
        small, large = by_size[100], by_size[1000]
        # A step's growth by itself: from the previews without the policy pack when both sizes
        # have them (its thread and processes share the machine with render and schema); the
        # policy step's from the previews with it.
        alone = "stepsCpuAlone" in small and "stepsCpuAlone" in large
        pairs = [("whole preview", small["cpuSeconds"], large["cpuSeconds"], "")]
        for step in STEPS:
            key = "stepsCpuAlone" if alone and step != "policy" else "stepsCpu"
            how = "; without the pack" if key == "stepsCpuAlone" else ""
            pairs.append((f"{step} step", small[key][step], large[key][step], how))
        for what, at_100, at_1000, how in pairs:
            per_small = at_100 / small["resources"]
            per_large = at_1000 / large["resources"]
            growth = per_large / per_small if per_small else float("inf")
            targets.append(
                Target(
                    f"{what}: CPU per resource at 1,000 vs 100 workloads",
                    growth <= PER_RESOURCE_GROWTH,
                    f"{growth:.2f}x ({per_small * 1000:.3f} -> {per_large * 1000:.3f} ms{how})",
                    f"<= {PER_RESOURCE_GROWTH:g}x",
                )
            )
    policy = results.get("policyThroughput")
    if policy and policy["resources"] >= POLICY_RECORDS:
        spread = policy["oursOverNoopSpread"]
        targets.append(
            Target(
                f"policy pack vs no-op pack, {policy['resources']:,} resources",
                policy["oursOverNoop"] <= POLICY_OVER_NOOP,
                f"{policy['oursOverNoop']:.2f}x ({policy['cpuSeconds']:.2f} vs "
                f"{policy['noopCpuSeconds']:.2f} CPU-s; pairs {spread['min']:.2f}-"
                f"{spread['max']:.2f})",
                f"<= {POLICY_OVER_NOOP:g}x",
            )
        )
    checkov = results.get("checkov")
    if checkov:
        spread = checkov["wallSpread"]
        targets.append(
            Target(
                "checkov alone vs our whole preview, prod",
                checkov["checkovOverOursWall"] >= CHECKOV_OVER_OURS,
                f"{checkov['checkovOverOursWall']:.2f}x wall ({checkov['checkovWallSeconds']:.2f}s"
                f" vs {checkov['oursWallSeconds']:.2f}s; pairs {spread['min']:.2f}-"
                f"{spread['max']:.2f}; CPU {checkov['checkovOverOursCpu']:.2f}x)",
                f">= {CHECKOV_OVER_OURS:g}x",
            )
        )
    return targets


def _ms(seconds: float, resources: int) -> str:
    return f"{seconds / resources * 1000:.2f}" if resources else "-"


def _rows(results: dict[str, Any]) -> Iterator[list[str]]:
    for label, entry in _sized(results):
        steps = entry["stepsCpu"]
        spread = entry["programOverFloorSpread"]
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
            f"{entry['programOverFloor']:.3f}",
            f"{spread['intervalLow']:.3f}-{spread['intervalHigh']:.3f}",
            f"{spread['min']:.2f}-{spread['max']:.2f} ({spread['n']})",
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
    *(f"{step} CPU s" for step in STEPS),
    "program CPU s",
    "floor CPU s",
    "program/floor",
    "95% interval",
    "pairs range (n)",
    "program ms/res",
    "floor ms/res",
    "wall ms/res",
]
"""Steps are the CPU seconds of the preview's steps (``bench.steps``); program/floor CPU seconds
come from the paired worker runs (``bench.floor``) and their ratio is the median of the per-pair
ratios, with its 95% interval and the range of the pairs."""


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


def machine_lines(results: dict[str, Any]) -> list[str]:
    """Which machine, how fast (the calibration loop) and how busy it was during the run."""
    machine = results["machine"]
    calibration = results["calibration"]
    load = results["loadAverage"]
    sampled = load.get("sampled", {})
    lines = [
        f"Machine: {machine['cpus']} CPUs, {machine['cpuModel']}, Python {machine['python']}",
        "Calibration loop (CPU s for {:,} iterations, best of 5): {:.3f} at the start, {} at the "
        "end ({:.2f} million iterations/s)".format(
            calibration["start"]["iterations"],
            calibration["start"]["bestSeconds"],
            f"{calibration['end']['bestSeconds']:.3f}" if "end" in calibration else "-",
            calibration["start"]["millionIterationsPerSecond"],
        ),
        f"Load average (1 min): {load['start'][:1]} at the start, {load.get('end', [])[:1]} at "
        f"the end; sampled every 5 s: min {sampled.get('min')}, median {sampled.get('median')}, "
        f"max {sampled.get('max')} ({sampled.get('samples', 0)} samples)",
    ]
    if "elapsedSeconds" in results:
        lines.append(f"Benchmark took {results['elapsedSeconds'] / 60:.1f} minutes")
    return lines


def other_lines(results: dict[str, Any]) -> list[str]:
    """The figures beside the table: the ConfigMap floor, the packs, checkov, the tests."""
    lines = []
    configmaps = results.get("floorConfigMaps")
    if configmaps:
        lines.append(
            f"SDK floor, metadata-only ConfigMaps: {configmaps['resources']:,} in "
            f"{configmaps['cpuSeconds']:.2f} CPU-s "
            f"({_ms(configmaps['cpuSeconds'], configmaps['resources'])} ms each)"
        )
    policy = results.get("policyThroughput")
    if policy:
        lines.append(
            f"Policy pack end to end: {policy['resources']:,} resources in {policy['seconds']:.2f}s"
            f" = {policy['perSecond']:,.0f}/s, {policy['cpuSeconds']:.2f} CPU-s (no-op pack "
            f"{policy['noopCpuSeconds']:.2f} CPU-s: {policy['oursOverNoop']:.2f}x; "
            f"{policy['violations']} violations)"
        )
    checkov = results.get("checkov")
    if checkov:
        lines.append(
            f"checkov {checkov['version']} on prod's {checkov['manifests']} manifests: "
            f"{checkov['checkovWallSeconds']:.2f}s, {checkov['checkovCpuSeconds']:.2f} CPU-s "
            f"(of which starting it: {checkov['startupCpuSeconds']:.2f} CPU-s); our whole preview "
            f"{checkov['oursWallSeconds']:.2f}s, {checkov['oursCpuSeconds']:.2f} CPU-s; "
            f"checks {checkov['checks']}"
        )
    tests = results.get("tests")
    if tests:
        lines.append(
            f"Test suite: {tests['seconds']:.0f}s, {tests['cpuSeconds']:.0f} CPU-s, "
            f"exit {tests['returncode']} ({tests['summary']})"
        )
    return lines


def summary_text(results: dict[str, Any], targets: list[Target]) -> str:
    """What ``python -m bench`` prints: the figures, then every target with its verdict."""
    parts = [
        "\n".join(machine_lines(results)),
        "Offline preview, median of runs. wall/CPU/peak: the whole preview process tree; steps: "
        "CPU seconds of each step; program/floor: CPU seconds of our program and of the same "
        "Kubernetes objects registered bare, under the same mocks, median of pair ratios; "
        "ms/res: per resource of the stack",
        table(list(_rows(results)), HEADER),
        "\n".join(other_lines(results)),
        "Targets:\n" + "\n".join(f"  {t.line()}" for t in targets),
    ]
    return "\n\n".join(parts)


def markdown(results: dict[str, Any], targets: list[Target]) -> str:
    """The tables of docs/performance.md, generated from the same results."""
    rows = list(_rows(results))
    verdicts = [[t.name, t.measured, t.limit, "pass" if t.passed else "**MISS**"] for t in targets]
    return "\n\n".join(
        [
            "\n".join(f"- {line}" for line in machine_lines(results)),
            markdown_table(rows, HEADER),
            "\n".join(f"- {line}" for line in other_lines(results)),
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
        ("whole preview (CPU)", [e["cpuSeconds"] for e in entries], "o--", "tab:gray"),
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
    axes.set_ylabel("CPU milliseconds per resource of the stack")
    machine = results["machine"]
    calibration = results["calibration"]["start"]["bestSeconds"]
    axes.set_title(
        f"Offline preview cost per resource ({machine['cpus']} CPUs, Python {machine['python']}, "
        f"calibration loop {calibration:.3f} s)",
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
