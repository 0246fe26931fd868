"""Instructions, counted: our program against the SDK floor in a figure the host cannot move.

Why: the VM shares a host whose caches and clock nothing inside it can see or steady, and no
hardware counter is exposed (``perf`` lists software events only). Single pairs of the same
program and floor spread by a quarter in CPU time, so a CPU median firm to +-0.03 takes a
hundred pairs. Under valgrind (callgrind, no cache simulation) the same run executes the same
instructions to within 0.05%, at about 50 times the time: one run of each side gives the ratio
of what each *does*, beside the CPU ratio of what it costs on this host.

Only the timed run is counted, as ``bench.floor`` times it: with ``--mark`` it calls
``os.sched_yield()`` right before and right after the run, callgrind dumps its counters before
each of those calls (``--dump-before``), and the second of the three parts is the run.

    python -m bench.instructions --stack-file Pulumi.dev.yaml --stack dev \\
        --report build/dev/report.json          # program, floor and the breakdown between them

Prints one JSON object: each run's instructions and the ratios to the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .measure import BenchError, python_module, run_process

MARK_FUNCTION = "os_sched_yield"
"""CPython's C function behind ``os.sched_yield``: nothing else in a run calls it."""
RUN_PART = 2
"""Callgrind's dumps: 1 up to the first mark, 2 between the marks (the run), 3 after."""
_TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)
_PART = re.compile(r"^part:\s+(\d+)", re.MULTILINE)

BREAKDOWN = {
    "floor": ["--report", "{report}"],
    "floorWithComponents": ["--report", "{report}", "--with-components"],
    "floorWithDependencies": ["--report", "{report}", "--with-components", "--with-dependencies"],
    "programImported": ["--program", "{stack_file}", "--stack", "{stack}", "--imported"],
    "program": ["--program", "{stack_file}", "--stack", "{stack}"],
}
"""``bench.floor`` runs, from the bare floor to our program: what each step up adds."""


def valgrind() -> str | None:
    """The valgrind executable, or None: the counts are then not taken (and not judged)."""
    return shutil.which("valgrind")


def run_part_instructions(dumps: dict[int, str]) -> int:
    """The instructions of the marked run, from callgrind's dump files (part number -> text).

    Exactly three parts are expected: a run that called the mark more or less than twice
    counted something else, and is refused rather than misread.
    """
    if sorted(dumps) != [1, 2, 3]:
        raise BenchError(
            f"callgrind wrote parts {sorted(dumps)}, expected 1-3: the run must call "
            f"{MARK_FUNCTION} exactly twice"
        )
    return part_totals(dumps[RUN_PART])


def part_totals(text: str) -> int:
    """The instructions a callgrind dump counted (its ``totals:`` line)."""
    found = _TOTALS.search(text)
    if found is None:
        raise BenchError("a callgrind dump has no totals line")
    return int(found.group(1))


def read_dumps(prefix: Path) -> dict[int, str]:
    """Callgrind's files for one run (``prefix``, ``prefix.1``...), by the part each says it is."""
    dumps: dict[int, str] = {}
    for path in [prefix, *prefix.parent.glob(f"{prefix.name}.*")]:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        part = _PART.search(text)
        if part is not None:
            dumps[int(part.group(1))] = text
    return dumps


def count(floor_args: list[str], work: Path, name: str) -> int:
    """Instructions of one ``bench.floor`` run's timed part, under callgrind."""
    executable = valgrind()
    if executable is None:
        raise BenchError("valgrind is not installed")
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    prefix = folder / "callgrind.out"
    command = [
        executable,
        "--tool=callgrind",
        f"--dump-before={MARK_FUNCTION}",
        f"--callgrind-out-file={prefix}",
        *python_module("bench.floor", *floor_args, "--mark"),
    ]
    # The same hash seed on every run, so that set and dict layouts, and the work that follows
    # from them, are the same.
    run = run_process(command, env={**os.environ, "PYTHONHASHSEED": "0"})
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-20:])
        raise BenchError(f"callgrind run {name} exited {run.returncode}:\n{tail}")
    return run_part_instructions(read_dumps(prefix))


def measure(
    stack: str,
    stack_file: Path,
    report: Path,
    *,
    runs: tuple[str, ...] = ("floor", "program"),
    parallel: int = 2,
) -> dict[str, object]:
    """Count ``runs`` (names of :data:`BREAKDOWN`) for one stack, ``parallel`` at a time.

    Counting in parallel does not change the counts (each process is counted alone), only how
    long it takes.
    """
    values = {"report": str(report), "stack_file": str(stack_file), "stack": stack}
    with tempfile.TemporaryDirectory(prefix="aiplatform-callgrind-") as tmp:
        work = Path(tmp)
        jobs = {name: [arg.format(**values) for arg in BREAKDOWN[name]] for name in runs}
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            futures = {name: pool.submit(count, args, work, name) for name, args in jobs.items()}
            counted = {name: future.result() for name, future in futures.items()}
    floor = counted.get("floor")
    return {
        "instructions": counted,
        "overFloor": {name: round(value / floor, 4) for name, value in counted.items() if floor},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("--stack-file", required=True, help="the stack file of the program")
    parser.add_argument("--stack", required=True, help="its stack name")
    parser.add_argument("--report", required=True, help="a preview's report.json of that stack")
    parser.add_argument(
        "--runs",
        default=",".join(BREAKDOWN),
        help=f"which runs to count (comma list of {', '.join(BREAKDOWN)})",
    )
    args = parser.parse_args(argv)
    runs = tuple(name for name in args.runs.split(",") if name)
    unknown = sorted(set(runs) - set(BREAKDOWN))
    if unknown:
        parser.error(f"--runs: unknown {', '.join(unknown)}")
    try:
        result = measure(args.stack, Path(args.stack_file), Path(args.report), runs=runs)
    except BenchError as exc:
        print(f"instructions not counted: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
