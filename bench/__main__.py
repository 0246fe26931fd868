"""``python -m bench`` (``make bench``): what the offline preview costs, as ratios that hold
anywhere.

Measures, in one run: the offline preview of the dev and prod stacks and of synthetic stacks of
10, 100 and 1,000 workloads as whole processes (each step's CPU time too); our program against
the SDK's floor for the same objects, in pairs until the median is firm; the policy pack against
a no-op pack driven the same way; the whole prod preview against checkov on the same manifests;
and a fixed calibration loop, so that absolute figures can be compared between machines. Prints
a table, writes ``build/bench/results.json``, ``build/bench/results.md`` and
``docs/performance.png``, and exits 1 when a target of docs/performance.md is missed (2 when a
measurement could not be taken).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import instructions
from .checkov import CHECKOV_VENV, checkov_startup, ensure_checkov, installed_version, run_checkov
from .measure import (
    PROJECT_ROOT,
    BenchError,
    LoadSampler,
    calibrate,
    compile_sources,
    filesystem_of,
    load_average,
    machine,
    median,
    python_module,
    ram_folder,
    run_process,
)
from .report import (
    POLICY_RECORDS,
    STABILITY,
    evaluate,
    markdown,
    plot,
    summary_text,
    targets_json,
)
from .stats import half_width, spread
from .synthetic import synthetic_config, team_count, write_stack_file

EXIT_MISSED, EXIT_ERROR = 1, 2


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _timing(module: str, module_args: list[str], what: str) -> dict[str, Any]:
    """Run a worker module; its last stdout line is a JSON object (seconds, CPU seconds...)."""
    run = run_process(python_module(module, *module_args))
    if run.returncode != 0:
        raise BenchError(f"{what} exited {run.returncode}:\n{_tail(run.stderr)}")
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def run_preview(
    stack: str, out: Path, *, stack_file: Path, crd_schemas: str | None, policies: bool = True
) -> dict[str, Any]:
    """One ``tools.preview`` process (through ``bench.steps``, which adds each step's CPU);
    ``policies=False``: without the policy pack (``--no-policies``)."""
    cpu_file = out / "steps-cpu.json"
    out.mkdir(parents=True, exist_ok=True)
    # The synthetic stacks go past what one engine run can take (docs/performance.md): the
    # benchmark measures the program's scaling, not a deployable stack.
    args = ["--stack", stack, "--out", str(out), "--quiet", "--stack-file", str(stack_file),
            "--ignore-engine-limits"]  # fmt: skip
    if crd_schemas:
        args += ["--crd-schemas", crd_schemas]
    if not policies:
        args.append("--no-policies")
    run = run_process(python_module("bench.steps", str(cpu_file), "--", *args))
    if run.returncode != 0:
        raise BenchError(
            f"preview of {stack} exited {run.returncode}:\n{_tail(run.stdout + run.stderr)}"
        )
    report_path = out / stack / "report.json"
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return {
        "wallSeconds": run.seconds,
        "cpuSeconds": run.cpu_seconds,
        "maxRssMb": run.max_rss_mb,
        "steps": report["timings"],
        "stepsCpu": json.loads(cpu_file.read_text(encoding="utf-8"))["cpuSeconds"],
        "report": str(report_path),
        "resources": len(report["resources"]),
        "kubernetesObjects": sum(1 for r in report["resources"] if r.get("manifest")),
    }


def measure_pairs(
    stack: str,
    *,
    stack_file: Path,
    report_path: Path,
    min_pairs: int,
    max_pairs: int,
    deadline: float = float("inf"),
) -> list[dict[str, Any]]:
    """Time our program and the floor in pairs until the median ratio is firm (or ``max_pairs``,
    or ``min_pairs`` once ``time.monotonic()`` has passed ``deadline``).

    Each pair runs its two workers right after one another, so its ratio compares like with
    like even when the machine's load changes between pairs; the order alternates (program
    first, then floor first) so that whatever the second process of a pair gains or loses
    (a warm page cache, a neighbour's burst) falls on both sides alike. Firm: the median's 95%
    interval (order statistics) reaches at most ``STABILITY`` from it.
    """
    program_args = ["--program", str(stack_file), "--stack", stack]
    floor_args = ["--report", str(report_path)]
    results: list[dict[str, Any]] = []
    ratios: list[float] = []
    while len(results) < max_pairs:
        index = len(results)
        if index % 2 == 0:
            program = _timing("bench.floor", program_args, f"program of {stack}")
            floor = _timing("bench.floor", floor_args, f"floor of {stack}")
        else:
            floor = _timing("bench.floor", floor_args, f"floor of {stack}")
            program = _timing("bench.floor", program_args, f"program of {stack}")
        ratio = program["cpuSeconds"] / floor["cpuSeconds"]
        ratios.append(ratio)
        results.append(
            {"program": program, "floor": floor, "programFirst": index % 2 == 0, "ratio": ratio}
        )
        firm = half_width(ratios)
        _progress(
            f"  {stack} pair {index + 1}: program {program['cpuSeconds']:.2f} CPU-s, floor "
            f"{floor['cpuSeconds']:.2f} CPU-s, ratio {ratio:.3f}; median {median(ratios):.3f} "
            f"+-{firm:.3f}"
        )
        if len(results) >= min_pairs and (firm <= STABILITY or time.monotonic() > deadline):
            break
    return results


def _previews(
    stack: str,
    work: Path,
    runs: int,
    *,
    stack_file: Path,
    crd_schemas: str | None,
    policies: bool = True,
) -> list[dict[str, Any]]:
    """``runs`` previews of ``stack``, each in a folder of its own under ``work``."""
    how, suffix = ("", "") if policies else (" without the pack", "-alone")
    previews = []
    for index in range(runs):
        preview = run_preview(
            stack,
            work / f"{stack}{suffix}-{index}",
            stack_file=stack_file,
            crd_schemas=crd_schemas,
            policies=policies,
        )
        previews.append(preview)
        _progress(
            f"  {stack} preview{how} {index + 1}/{runs}: {preview['wallSeconds']:.2f}s, "
            f"{preview['cpuSeconds']:.2f} CPU-s"
        )
    return previews


def measure_stack(
    stack: str,
    work: Path,
    *,
    stack_file: Path,
    runs: int,
    min_pairs: int,
    max_pairs: int,
    crd_schemas: str | None = None,
    deadline: float = float("inf"),
    alone: bool = False,
) -> dict[str, Any]:
    """Preview ``stack`` ``runs`` times, then time our program against the floor in pairs.

    The previews give the user's figures (wall time, peak memory, each step's wall and CPU
    time); the pairs give the program/floor ratio (``measure_pairs``). ``alone``: ``runs``
    previews more without the policy pack, whose thread, gRPC calls and processes share the
    machine with render and schema (``stepsCpuAlone``: what each step costs by itself).
    """
    previews = _previews(stack, work, runs, stack_file=stack_file, crd_schemas=crd_schemas)
    by_themselves = _previews(
        stack, work, runs if alone else 0, stack_file=stack_file, crd_schemas=crd_schemas,
        policies=False,
    )  # fmt: skip
    last = previews[-1]
    paired = measure_pairs(
        stack,
        stack_file=stack_file,
        report_path=Path(last["report"]),
        min_pairs=min_pairs,
        max_pairs=max_pairs,
        deadline=deadline,
    )
    ratios = [p["ratio"] for p in paired]
    return {
        "resources": last["resources"],
        "kubernetesObjects": last["kubernetesObjects"],
        "floorResources": int(paired[-1]["floor"]["resources"]),
        "wallSeconds": median([p["wallSeconds"] for p in previews]),
        "cpuSeconds": median([p["cpuSeconds"] for p in previews]),
        "maxRssMb": median([p["maxRssMb"] for p in previews]),
        "steps": {s: median([p["steps"][s] for p in previews]) for s in last["steps"]},
        "stepsCpu": {s: median([p["stepsCpu"][s] for p in previews]) for s in last["stepsCpu"]},
        **(
            {
                "stepsCpuAlone": {
                    s: median([p["stepsCpu"][s] for p in by_themselves])
                    for s in by_themselves[-1]["stepsCpu"]
                },
                "runsAlone": by_themselves,
            }
            if by_themselves
            else {}
        ),
        "programCpuSeconds": median([p["program"]["cpuSeconds"] for p in paired]),
        "floorCpuSeconds": median([p["floor"]["cpuSeconds"] for p in paired]),
        "programOverFloor": median(ratios),
        "programOverFloorSpread": spread(ratios),
        "report": last["report"],
        "runs": previews,
        "pairs": paired,
    }


def measure_configmaps(count: int, runs: int) -> dict[str, Any]:
    """The SDK's bare per-registration cost, for scale: ``count`` metadata-only ConfigMaps."""
    timings = [
        _timing("bench.floor", ["--configmaps", str(count)], "ConfigMap floor") for _ in range(runs)
    ]
    return {
        "resources": count,
        "seconds": median([t["seconds"] for t in timings]),
        "cpuSeconds": median([t["cpuSeconds"] for t in timings]),
    }


def measure_policy(prod_report: Path, count: int, pairs: int) -> dict[str, Any]:
    """Our pack and the no-op pack over ``count`` records made from prod's, in pairs."""
    args = ["--report", str(prod_report), "--records", str(count)]
    results = []
    for index in range(pairs):
        order = [False, True] if index % 2 == 0 else [True, False]
        runs = {
            noop: _timing("bench.policy_load", args + (["--noop"] if noop else []), "policy load")
            for noop in order
        }
        ours, noop = runs[False], runs[True]
        ratio = ours["cpuSeconds"] / noop["cpuSeconds"]
        results.append({"ours": ours, "noop": noop, "ratio": ratio})
        _progress(
            f"  policy pair {index + 1}/{pairs}: ours {ours['cpuSeconds']:.2f} CPU-s "
            f"({ours['seconds']:.2f}s), no-op {noop['cpuSeconds']:.2f} CPU-s, ratio {ratio:.3f}"
        )
    ours_cpu = median([r["ours"]["cpuSeconds"] for r in results])
    ours_wall = median([r["ours"]["seconds"] for r in results])
    return {
        "resources": count,
        "cpuSeconds": ours_cpu,
        "seconds": ours_wall,
        "perSecond": count / ours_wall,
        "noopCpuSeconds": median([r["noop"]["cpuSeconds"] for r in results]),
        "oursOverNoop": median([r["ratio"] for r in results]),
        "oursOverNoopSpread": spread([r["ratio"] for r in results]),
        "violations": results[-1]["ours"]["violations"],
        "pairs": results,
    }


def measure_checkov(
    work: Path, pairs: int, crd_schemas: str | None, venv: Path = CHECKOV_VENV
) -> dict[str, Any]:
    """The whole prod preview and checkov on the manifests it rendered, in alternating pairs."""
    command = ensure_checkov(venv)
    stack_file = PROJECT_ROOT / "Pulumi.prod.yaml"
    results = []
    summary: dict[str, Any] = {}
    for index in range(pairs):
        out = work / f"checkov-prod-{index}"
        manifests = out / "prod" / "manifests"
        if index % 2 == 0:
            ours = run_preview("prod", out, stack_file=stack_file, crd_schemas=crd_schemas)
            theirs, summary = run_checkov(command, manifests)
        else:
            # checkov first: on the manifests of the previous pair's preview (the same files).
            previous = work / f"checkov-prod-{index - 1}" / "prod" / "manifests"
            theirs, summary = run_checkov(command, previous)
            ours = run_preview("prod", out, stack_file=stack_file, crd_schemas=crd_schemas)
        wall = theirs.seconds / ours["wallSeconds"]
        cpu = theirs.cpu_seconds / ours["cpuSeconds"]
        results.append(
            {
                "ours": {k: ours[k] for k in ("wallSeconds", "cpuSeconds", "maxRssMb", "stepsCpu")},
                "checkov": {
                    "wallSeconds": theirs.seconds,
                    "cpuSeconds": theirs.cpu_seconds,
                    "maxRssMb": theirs.max_rss_mb,
                },
                "checkovOverOursWall": wall,
                "checkovOverOursCpu": cpu,
            }
        )
        _progress(
            f"  checkov pair {index + 1}/{pairs}: ours {ours['wallSeconds']:.2f}s "
            f"({ours['cpuSeconds']:.2f} CPU-s), checkov {theirs.seconds:.2f}s "
            f"({theirs.cpu_seconds:.2f} CPU-s): {wall:.2f}x wall, {cpu:.2f}x CPU"
        )
    startup = checkov_startup(command)
    return {
        "version": installed_version(venv),
        "manifests": summary.get("resource_count"),
        "checks": {k: summary.get(k) for k in ("passed", "failed", "skipped", "parsing_errors")},
        "oursWallSeconds": median([r["ours"]["wallSeconds"] for r in results]),
        "oursCpuSeconds": median([r["ours"]["cpuSeconds"] for r in results]),
        "checkovWallSeconds": median([r["checkov"]["wallSeconds"] for r in results]),
        "checkovCpuSeconds": median([r["checkov"]["cpuSeconds"] for r in results]),
        "checkovOverOursWall": median([r["checkovOverOursWall"] for r in results]),
        "checkovOverOursCpu": median([r["checkovOverOursCpu"] for r in results]),
        "wallSpread": spread([r["checkovOverOursWall"] for r in results]),
        "cpuSpread": spread([r["checkovOverOursCpu"] for r in results]),
        "startupCpuSeconds": startup.cpu_seconds,
        "startupWallSeconds": startup.seconds,
        "pairs": results,
    }


def measure_tests() -> dict[str, Any]:
    """The whole suite once, as a subprocess, the way ``make test`` runs it."""
    run = run_process(
        python_module("pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", "not real")
    )
    counts = re.findall(r"\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed)", run.stdout)
    summary = ", ".join(counts[-6:]) if counts else ("passed" if run.returncode == 0 else "failed")
    return {
        "seconds": run.seconds,
        "cpuSeconds": run.cpu_seconds,
        "returncode": run.returncode,
        "summary": summary,
        "maxRssMb": run.max_rss_mb,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    counts = [
        ("--runs", 3, "previews per stack"),
        ("--large-runs", 2, "previews at 1,000+ workloads"),
        ("--min-pairs", 10, "program/floor pairs at least, below 1,000 workloads"),
        ("--max-pairs", 30, f"pairs at most: more run until the median is firm to +-{STABILITY}"),
        ("--large-min-pairs", 4, "pairs at least at 1,000+ workloads"),
        ("--large-max-pairs", 8, "pairs at most at 1,000+ workloads"),
        ("--policy-records", POLICY_RECORDS, "records driven through each pack"),
        ("--policy-pairs", 3, "ours/no-op pack pairs (0 skips them)"),
        ("--checkov-pairs", 5, "preview/checkov pairs"),
        ("--budget", 40, "minutes: past them, stacks still to come run their least pairs only"),
    ]
    for flag, default, text in counts:
        parser.add_argument(flag, type=int, default=default, help=f"{text} (default {default})")
    parser.add_argument(
        "--stacks",
        default="dev,prod",
        help="checked-in stacks to measure (comma list; the policy packs need prod)",
    )
    parser.add_argument(
        "--sizes", default="10,100,1000", help="synthetic stack sizes in workloads (comma list)"
    )
    parser.add_argument(
        "--no-checkov", action="store_true", help="skip checkov (its target is then not judged)"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count the program's and the floor's instructions under valgrind (callgrind), "
        "after every timing, for the stacks of at most --instructions-max-workloads",
    )
    parser.add_argument(
        "--instructions-max-workloads",
        type=int,
        default=100,
        help="largest synthetic stack counted (about 50x its program's time; default 100)",
    )
    parser.add_argument("--with-tests", action="store_true", help="also time the test suite")
    parser.add_argument("--crd-schemas", help="passed on to tools.preview")
    parser.add_argument("--out", default=str(PROJECT_ROOT / "build" / "bench"))
    parser.add_argument(
        "--work",
        help="folder for the previews' output and the synthetic stacks (default: a RAM-backed "
        "one, /dev/shm, when the machine has one: the disk's cost is the machine's, not ours)",
    )
    parser.add_argument(
        "--plot", help="plot file (default: docs/performance.png; with --quick: in --out)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: 1 preview, sizes 10 and 100, 2 pairs, 1,000 policy records",
    )
    args = parser.parse_args(argv)
    args.stacks = [stack for stack in args.stacks.split(",") if stack.strip()]
    if args.quick:
        args.runs, args.large_runs, args.sizes, args.policy_records = 1, 1, "10,100", 1000
        args.min_pairs = args.max_pairs = args.large_min_pairs = args.large_max_pairs = 2
        args.policy_pairs, args.checkov_pairs = 1, 1
    if args.plot is None:
        folder = Path(args.out) if args.quick else PROJECT_ROOT / "docs"
        args.plot = str(folder / "performance.png")
    return args


def run_benchmarks(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    deadline = time.monotonic() + args.budget * 60
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    _progress("calibration loop")
    results: dict[str, Any] = {
        "machine": machine(),
        "calibration": {"start": calibrate()},
        "loadAverage": {"start": load_average()},
        "settings": {
            "runs": args.runs,
            "largeRuns": args.large_runs,
            "minPairs": args.min_pairs,
            "maxPairs": args.max_pairs,
            "largeMinPairs": args.large_min_pairs,
            "largeMaxPairs": args.large_max_pairs,
            "stacks": args.stacks,
            "sizes": sizes,
            "policyRecords": args.policy_records,
            "policyPairs": args.policy_pairs,
            "checkovPairs": 0 if args.no_checkov else args.checkov_pairs,
            "budgetMinutes": args.budget,
        },
        "stacks": {},
        "scaling": [],
    }
    scratch = Path(args.work) if args.work else ram_folder()
    folder = scratch or Path(tempfile.gettempdir())
    results["settings"]["workFolder"] = {"path": str(folder), "filesystem": filesystem_of(folder)}
    with (
        tempfile.TemporaryDirectory(prefix="aiplatform-bench-", dir=scratch) as tmp,
        LoadSampler() as load,
    ):
        work = Path(tmp)
        for stack in args.stacks:
            _progress(f"stack {stack}")
            results["stacks"][stack] = measure_stack(
                stack,
                work,
                stack_file=PROJECT_ROOT / f"Pulumi.{stack}.yaml",
                runs=args.runs,
                min_pairs=args.min_pairs,
                max_pairs=args.max_pairs,
                crd_schemas=args.crd_schemas,
                deadline=deadline,
            )
        for size in sizes:
            name = f"bench{size}"
            stack_file = write_stack_file(work / "stacks", name, synthetic_config(size))
            large = size >= 1000
            _progress(f"synthetic stack: {size} workloads")
            entry = measure_stack(
                name,
                work,
                stack_file=stack_file,
                runs=args.large_runs if large else args.runs,
                min_pairs=args.large_min_pairs if large else args.min_pairs,
                max_pairs=args.large_max_pairs if large else args.max_pairs,
                crd_schemas=args.crd_schemas,
                deadline=deadline,
                alone=True,
            )
            results["scaling"].append({"workloads": size, "teams": team_count(size), **entry})
        _progress("SDK floor: bare ConfigMaps")
        results["floorConfigMaps"] = measure_configmaps(1000, 3)
        if args.policy_pairs and "prod" in results["stacks"]:
            _progress(f"policy pack against the no-op pack: {args.policy_records:,} records")
            results["policyThroughput"] = measure_policy(
                Path(results["stacks"]["prod"]["report"]), args.policy_records, args.policy_pairs
            )
        if not args.no_checkov:
            _progress("the whole prod preview against checkov")
            results["checkov"] = measure_checkov(work, args.checkov_pairs, args.crd_schemas)
        if args.instructions:
            count_instructions(results, args.instructions_max_workloads, work)
    results["loadAverage"]["sampled"] = load.summary()
    if args.with_tests:
        _progress("test suite")
        results["tests"] = measure_tests()
    results["loadAverage"]["end"] = load_average()
    _progress("calibration loop")
    results["calibration"]["end"] = calibrate()
    results["elapsedSeconds"] = round(time.perf_counter() - started, 1)
    return results


def count_instructions(results: dict[str, Any], max_workloads: int, work: Path) -> None:
    """Each measured stack's program and floor, counted in instructions (``bench.instructions``),
    once the timings are done: valgrind's two processes would crowd them."""
    if instructions.valgrind() is None:
        raise BenchError("--instructions: valgrind is not installed")
    entries = [
        (stack, PROJECT_ROOT / f"Pulumi.{stack}.yaml", e) for stack, e in results["stacks"].items()
    ]
    entries += [
        (f"bench{e['workloads']}", work / "stacks" / f"Pulumi.bench{e['workloads']}.yaml", e)
        for e in results["scaling"]
        if e["workloads"] <= max_workloads
    ]
    for stack, stack_file, entry in entries:
        _progress(f"instructions: {stack} (callgrind)")
        entry["instructions"] = instructions.measure(stack, stack_file, Path(entry["report"]))
        _progress(f"  program/floor {entry['instructions']['overFloor']['program']:.3f}")


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
