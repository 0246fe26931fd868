"""``python -m bench`` (``make bench``): how preview cost grows with the platform.

Measures the offline preview of the dev and prod stacks and of synthetic stacks of 10, 100 and
1,000 workloads as whole processes, the SDK's floor for the same objects, the policy analyzer's
throughput at 5,000 resources and, with ``--with-tests``, the test suite. Prints a table,
writes ``build/bench/results.json`` and ``docs/performance.png``, and exits 1 when a target of
docs/performance.md is missed (2 when a measurement could not be taken).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from .measure import (
    PROJECT_ROOT,
    BenchError,
    compile_sources,
    load_average,
    machine,
    median,
    python_module,
    run_process,
)
from .report import POLICY_RECORDS, evaluate, markdown, plot, summary_text, targets_json
from .synthetic import synthetic_config, team_count, write_stack_file

EXIT_MISSED, EXIT_ERROR = 1, 2


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _timing(module_args: list[str], what: str) -> dict[str, float]:
    """Run a ``bench.floor`` worker; its JSON line (wall and CPU seconds, resources)."""
    run = run_process(python_module("bench.floor", *module_args))
    if run.returncode != 0:
        raise BenchError(f"{what} exited {run.returncode}:\n{_tail(run.stderr)}")
    result: dict[str, float] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def measure_pairs(
    stack: str, pairs: int, *, stack_file: Path, report_path: Path, progress: bool = True
) -> list[dict[str, Any]]:
    """Time our program and the floor ``pairs`` times, back to back, in identical workers.

    Each pair runs its two workers right after one another, so its ratio compares like with
    like even when the machine's load changes between pairs; the order alternates (program
    first, then floor first) so that whatever the second process of a pair gains or loses
    (a warm page cache, a neighbour's burst) falls on both sides alike.
    """
    program_args = ["--program", str(stack_file), "--stack", stack]
    floor_args = ["--report", str(report_path)]
    results: list[dict[str, Any]] = []
    for index in range(pairs):
        if index % 2 == 0:
            program = _timing(program_args, f"program of {stack}")
            floor = _timing(floor_args, f"floor of {stack}")
        else:
            floor = _timing(floor_args, f"floor of {stack}")
            program = _timing(program_args, f"program of {stack}")
        results.append({"program": program, "floor": floor, "programFirst": index % 2 == 0})
        if progress:
            print(
                f"  {stack} pair {index + 1}/{pairs}: program {program['cpuSeconds']:.2f} "
                f"CPU-s, floor {floor['cpuSeconds']:.2f} CPU-s",
                file=sys.stderr,
                flush=True,
            )
    return results


def measure_stack(
    stack: str,
    runs: int,
    work: Path,
    *,
    stack_file: Path,
    pairs: int,
    crd_schemas: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Preview ``stack`` ``runs`` times, then time our program against the floor ``pairs`` times.

    The preview gives the user's figures (wall time, peak memory, its own step timings); the
    pairs give the program/floor ratio (``measure_pairs``).
    """
    previews: list[dict[str, Any]] = []
    report: dict[str, Any] = {}
    report_path = work
    for index in range(runs):
        out = work / f"{stack}-{index}"
        args = ["--stack", stack, "--out", str(out), "--quiet", "--stack-file", str(stack_file)]
        if crd_schemas:
            args += ["--crd-schemas", crd_schemas]
        run = run_process(python_module("tools.preview", *args))
        if run.returncode != 0:
            raise BenchError(
                f"preview of {stack} exited {run.returncode}:\n{_tail(run.stdout + run.stderr)}"
            )
        report_path = out / stack / "report.json"
        report = json.loads(report_path.read_text(encoding="utf-8"))
        previews.append(
            {
                "wallSeconds": run.seconds,
                "cpuSeconds": run.cpu_seconds,
                "maxRssMb": run.max_rss_mb,
                "steps": report["timings"],
            }
        )
        if progress:
            print(
                f"  {stack} preview {index + 1}/{runs}: {run.seconds:.2f}s",
                file=sys.stderr,
                flush=True,
            )
    paired = measure_pairs(
        stack, pairs, stack_file=stack_file, report_path=report_path, progress=progress
    )
    resources = report["resources"]
    steps = {step: median([p["steps"][step] for p in previews]) for step in previews[0]["steps"]}
    return {
        "resources": len(resources),
        "kubernetesObjects": sum(1 for r in resources if r.get("manifest")),
        "floorResources": int(paired[-1]["floor"]["resources"]),
        "wallSeconds": median([p["wallSeconds"] for p in previews]),
        "cpuSeconds": median([p["cpuSeconds"] for p in previews]),
        "maxRssMb": median([p["maxRssMb"] for p in previews]),
        "steps": steps,
        "programCpuSeconds": median([p["program"]["cpuSeconds"] for p in paired]),
        "floorCpuSeconds": median([p["floor"]["cpuSeconds"] for p in paired]),
        "floorSeconds": median([p["floor"]["seconds"] for p in paired]),
        "programOverFloor": median(
            [p["program"]["cpuSeconds"] / p["floor"]["cpuSeconds"] for p in paired]
        ),
        "runs": previews,
        "pairs": paired,
    }


def measure_configmaps(count: int, runs: int) -> dict[str, Any]:
    """The SDK's bare per-registration cost, for scale: ``count`` metadata-only ConfigMaps."""
    timings = [_timing(["--configmaps", str(count)], "ConfigMap floor") for _ in range(runs)]
    return {
        "resources": count,
        "seconds": median([t["seconds"] for t in timings]),
        "cpuSeconds": median([t["cpuSeconds"] for t in timings]),
    }


def measure_policy(prod_report: Path, count: int, runs: int) -> dict[str, Any]:
    """``run_policy_pack`` end to end over ``count`` records made from the prod stack's."""
    from .policy_load import repeat_records, run_policy_load

    records = json.loads(prod_report.read_text(encoding="utf-8"))["resources"]
    synthesized = repeat_records(records, count)
    config = PROJECT_ROOT / "policies" / "config" / "prod.json"
    results = [run_policy_load(PROJECT_ROOT, synthesized, config, "prod") for _ in range(runs)]
    seconds = median([r.seconds for r in results])
    return {
        "resources": count,
        "seconds": seconds,
        "perSecond": count / seconds,
        "violations": results[-1].violations,
        "runs": [r.seconds for r in results],
    }


def measure_tests() -> dict[str, Any]:
    """The whole suite once, as a subprocess, the way ``make test`` runs it."""
    run = run_process(python_module("pytest", "-q", "-x", "-p", "no:cacheprovider"))
    counts = re.findall(r"\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed)", run.stdout)
    summary = ", ".join(counts[-6:]) if counts else ("passed" if run.returncode == 0 else "failed")
    return {
        "seconds": run.seconds,
        "returncode": run.returncode,
        "summary": summary,
        "maxRssMb": run.max_rss_mb,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument(
        "--large-runs", type=int, default=3, help="runs at 1,000+ workloads (default 3)"
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=15,
        help="program/floor pairs per stack below 1,000 workloads (median of ratios; default 15)",
    )
    parser.add_argument(
        "--large-pairs", type=int, default=5, help="pairs at 1,000+ workloads (default 5)"
    )
    parser.add_argument(
        "--sizes", default="10,100,1000", help="synthetic stack sizes in workloads (comma list)"
    )
    parser.add_argument(
        "--policy-records",
        type=int,
        default=POLICY_RECORDS,
        help="records for the policy throughput",
    )
    parser.add_argument("--with-tests", action="store_true", help="also time the test suite")
    parser.add_argument("--crd-schemas", help="passed on to tools.preview")
    parser.add_argument("--out", default=str(PROJECT_ROOT / "build" / "bench"))
    parser.add_argument(
        "--plot", help="plot file (default: docs/performance.png; with --quick: in --out)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="one run, sizes 10 and 100, 1,000 policy records"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.large_runs, args.sizes, args.policy_records = 1, 1, "10,100", 1000
        args.pairs = args.large_pairs = 1
    if args.plot is None:
        folder = Path(args.out) if args.quick else PROJECT_ROOT / "docs"
        args.plot = str(folder / "performance.png")
    return args


def run_benchmarks(args: argparse.Namespace) -> dict[str, Any]:
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    results: dict[str, Any] = {
        "machine": machine(),
        "loadAverage": {"start": load_average()},
        "settings": {
            "runs": args.runs,
            "largeRuns": args.large_runs,
            "pairs": args.pairs,
            "largePairs": args.large_pairs,
            "sizes": sizes,
            "policyRecords": args.policy_records,
        },
        "stacks": {},
        "scaling": [],
    }
    with tempfile.TemporaryDirectory(prefix="aiplatform-bench-") as tmp:
        work = Path(tmp)
        for stack in ("dev", "prod"):
            print(f"stack {stack}", file=sys.stderr, flush=True)
            results["stacks"][stack] = measure_stack(
                stack,
                args.runs,
                work,
                stack_file=PROJECT_ROOT / f"Pulumi.{stack}.yaml",
                pairs=args.pairs,
                crd_schemas=args.crd_schemas,
            )
        for size in sizes:
            name = f"bench{size}"
            stack_file = write_stack_file(work / "stacks", name, synthetic_config(size))
            large = size >= 1000
            print(f"synthetic stack: {size} workloads", file=sys.stderr, flush=True)
            entry = measure_stack(
                name,
                args.large_runs if large else args.runs,
                work,
                stack_file=stack_file,
                pairs=args.large_pairs if large else args.pairs,
                crd_schemas=args.crd_schemas,
            )
            results["scaling"].append({"workloads": size, "teams": team_count(size), **entry})
        print("SDK floor: bare ConfigMaps", file=sys.stderr, flush=True)
        results["floorConfigMaps"] = measure_configmaps(1000, args.runs)
        print(f"policy pack: {args.policy_records} records", file=sys.stderr, flush=True)
        results["policyThroughput"] = measure_policy(
            work / "prod-0" / "prod" / "report.json", args.policy_records, args.runs
        )
    if args.with_tests:
        print("test suite", file=sys.stderr, flush=True)
        results["tests"] = measure_tests()
    results["loadAverage"]["end"] = load_average()
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        compile_sources()
        results = run_benchmarks(args)
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return EXIT_ERROR
    targets = evaluate(results)
    results["targets"] = targets_json(targets)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    (out / "results.md").write_text(markdown(results, targets) + "\n", encoding="utf-8")
    if results["scaling"]:
        plot(results, Path(args.plot))
    print(summary_text(results, targets))
    print(f"\nresults in {out / 'results.json'}, plot in {args.plot}")
    missed = [target for target in targets if not target.passed]
    if missed:
        print(f"\n{len(missed)} target(s) missed:", file=sys.stderr)
        for target in missed:
            print(f"  {target.line()}", file=sys.stderr)
        return EXIT_MISSED
    return 0


if __name__ == "__main__":
    sys.exit(main())
