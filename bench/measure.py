"""Whole-process measurements: wall time and peak memory of a child, plus the machine they ran on.

Why whole processes: what a user waits for is ``python -m tools.preview`` from start to exit,
imports and policy-pack start included, and the only honest peak memory is the kernel's own
count for the process tree (``wait4``: the child and every descendant it reaped, such as the
policy packs).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
VERSIONS = (
    "pulumi",
    "pulumi_kubernetes",
    "pulumi_policy",
    "pydantic",
    "grpcio",
    "protobuf",
    "PyYAML",
    "jsonschema",
    "kubernetes-validate",
)
"""Packages whose versions decide the figures; recorded with every result."""
COMPILED_SOURCES = ("__main__.py", "infra", "components", "tools", "policies", "bench")
"""What the measured processes import from this tree, compiled ahead (the Makefile's BYTECODE)."""


class BenchError(Exception):
    """A measurement could not be taken (a child failed): not a missed target."""


def compile_sources(root: Path = PROJECT_ROOT) -> None:
    """Compile our modules ahead, as pip does for the packages it installs.

    Why: with PYTHONDONTWRITEBYTECODE set (as on our CI machines) no process writes bytecode, so
    every preview would compile our ~70 modules from source while the SDK's modules load
    precompiled: 3% of the program step at 10 workloads, charged to our side of the ratio only.
    """
    import compileall

    for name in COMPILED_SOURCES:
        path = root / name
        compiled = (
            compileall.compile_dir(path, quiet=1)
            if path.is_dir()
            else compileall.compile_file(path, quiet=1)
        )
        if not compiled:
            raise BenchError(f"could not compile {path}")


@dataclass(frozen=True)
class ProcessRun:
    """One child process: how long it took, how much memory its tree peaked at, what it said."""

    seconds: float
    cpu_seconds: float
    """User + system time of the child and the descendants it reaped (the policy packs)."""
    max_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_process(
    command: Sequence[str], *, cwd: Path = PROJECT_ROOT, env: dict[str, str] | None = None
) -> ProcessRun:
    """Run ``command`` to completion; wall time from spawn to reap, ``ru_maxrss`` from ``wait4``.

    Output goes to temporary files rather than pipes, so a chatty child never blocks while
    this process sits in ``wait4``.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(
            list(command), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return ProcessRun(
            seconds=seconds,
            cpu_seconds=usage.ru_utime + usage.ru_stime,
            max_rss_mb=usage.ru_maxrss / 1024,  # kilobytes on Linux
            returncode=process.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
        )


def python_module(module: str, *args: str) -> list[str]:
    """``python -m module args`` with this interpreter (the project's venv)."""
    return [sys.executable, "-m", module, *args]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def load_average() -> list[float]:
    """1, 5 and 15 minute load: figures taken on a busy machine are not comparable."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "cpuModel": _cpu_model(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": {package: _version(package) for package in VERSIONS},
    }


RAM_FOLDER = Path("/dev/shm")
RAM_FOLDER_FREE_BYTES = 2 << 30
"""Enough for every preview a full run writes (the 1,000-workload ones are about 40 MB each)."""


def filesystem_of(folder: Path) -> str:
    """The type of the filesystem ``folder`` is on (``/proc/mounts``' longest matching mount)."""
    target = str(folder.resolve())
    best, kind = "", "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text(encoding="utf-8").splitlines():
            fields = line.split()
            if len(fields) < 3:
                continue
            mount = fields[1]
            inside = target == mount or target.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) > len(best):
                best, kind = mount, fields[2]
    return kind


def ram_folder() -> Path | None:
    """``/dev/shm`` when it is a RAM filesystem with room, else None (the system's temp folder).

    Why: on an ext4 disk mounted with ``discard`` (this project's VMs), creating the same 6,483
    manifest files cost 0.2 s of kernel time in a fresh folder and 3.4-4.4 s right after an
    earlier output of the same size was deleted (docs/performance.md): the render step would
    measure the disk's recent history, not our code. tmpfs takes 0.1 s either way.
    """
    try:
        free = os.statvfs(RAM_FOLDER)
    except OSError:
        return None
    roomy = free.f_bavail * free.f_frsize >= RAM_FOLDER_FREE_BYTES
    return RAM_FOLDER if roomy and filesystem_of(RAM_FOLDER) == "tmpfs" else None


CALIBRATION_ITERATIONS = 2_000_000


def calibration_loop(iterations: int = CALIBRATION_ITERATIONS) -> float:
    """CPU seconds of a fixed pure-Python loop: how fast this machine runs the interpreter.

    Why: the targets are ratios measured in one run, so they mean the same on any machine, but
    absolute figures (seconds, resources per second) only compare between machines next to
    this figure. The loop does what the preview does most (calls, dict stores, integer and
    string work), with nothing that touches the disk or allocates more as it goes.
    """
    table: dict[int, str] = {}
    start = time.process_time()
    total = 0
    for index in range(iterations):
        key = index & 1023
        table[key] = str(key)
        total += len(table[key]) * (index % 7)
    seconds = time.process_time() - start
    if total < 0:  # keeps the loop's work observable
        raise AssertionError
    return seconds


def calibrate(repeats: int = 5) -> dict[str, Any]:
    """The loop ``repeats`` times: the best (the least disturbed by neighbours) and the spread."""
    runs = [calibration_loop() for _ in range(repeats)]
    best = min(runs)
    return {
        "iterations": CALIBRATION_ITERATIONS,
        "bestSeconds": round(best, 4),
        "medianSeconds": round(median(runs), 4),
        "maxSeconds": round(max(runs), 4),
        "millionIterationsPerSecond": round(CALIBRATION_ITERATIONS / best / 1e6, 3),
    }


class LoadSampler:
    """The 1-minute load average every ``interval`` seconds while the benchmark runs.

    Why: on a shared machine the other work changes during a run; its minimum, median and
    maximum say how noisy the figures were, where a start and end sample may both miss a burst.
    """

    def __init__(self, interval: float = 5.0) -> None:
        import threading

        self.interval = interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)

    def _run(self) -> None:
        while True:
            load = load_average()
            if load:
                self.samples.append(load[0])
            if self._stop.wait(self.interval):
                return

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 1)

    def summary(self) -> dict[str, Any]:
        values = sorted(self.samples)
        if not values:
            return {"samples": 0}
        return {
            "samples": len(values),
            "min": values[0],
            "median": round(median(values), 2),
            "max": values[-1],
        }
