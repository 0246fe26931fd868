"""``python -m bench.steps CPU_JSON -- <preview arguments>``: the preview, with each step's CPU.

Why: the preview's own step timings (``report.json``) are wall clock, which on a shared machine
grows with the neighbours' load as much as with the stack. This runs ``tools.preview`` in the
same process exactly as ``python -m tools.preview`` would, and writes to ``CPU_JSON`` the CPU
seconds of every step.

A step on the main thread gets this process's CPU over the step (all threads: the mock monitor
answers on executor threads), less what a step running beside it on a thread of its own used
meanwhile, and less what threads the interpreter did not start used meanwhile (gRPC's, which
carry the policy step's calls); such a step (the policy step) gets its thread's CPU and those
threads'. The policy step also gets the CPU of the pack's processes, the preview's only
children, reaped at the end of the preview (they are launched before the program and waited for
after the report).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _thread_cpu_clock(tid: int) -> int:
    """The CPU clock of this process's thread ``tid`` (Linux's encoding, the clock id glibc's
    ``pthread_getcpuclockid`` returns): it reads any thread, not only those Python started."""
    return ((~tid) << 3) | 6


def foreign_threads_cpu() -> dict[int, float]:
    """CPU seconds so far of each live thread of this process that Python did not start."""
    python = {thread.native_id for thread in threading.enumerate()}
    used: dict[int, float] = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        if tid in python:
            continue
        try:
            used[tid] = time.clock_gettime(_thread_cpu_clock(tid))
        except OSError:  # ended meanwhile: its CPU stays with the step it ran in
            continue
    return used


def foreign_since(before: dict[int, float]) -> float:
    """What those threads used since ``before`` (a thread born since counts from zero)."""
    return sum(cpu - before.get(tid, 0.0) for tid, cpu in foreign_threads_cpu().items())


class BesideSteps:
    """The CPU used so far by the steps that run on threads of their own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, tuple[int, float]] = {}  # thread id: (CPU clock, at its start)
        self._ended = 0.0

    def start(self) -> None:
        clock = time.pthread_getcpuclockid(threading.get_ident())
        with self._lock:
            self._running[threading.get_ident()] = (clock, time.clock_gettime(clock))

    def end(self) -> float:
        """This thread's step has ended: the CPU it used."""
        with self._lock:
            clock, start = self._running.pop(threading.get_ident())
            used = time.clock_gettime(clock) - start
            self._ended += used
        return used

    def used(self) -> float:
        with self._lock:
            running = sum(time.clock_gettime(c) - s for c, s in self._running.values())
            return self._ended + running


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[1] != "--":
        print("usage: python -m bench.steps CPU_JSON -- <tools.preview arguments>", file=sys.stderr)
        return 2
    out, preview_args = Path(args[0]), args[2:]
    import tools.preview as preview

    cpu: dict[str, float] = {}
    beside = BesideSteps()
    timing = preview.Progress.timing

    foreign = [0.0]  # what gRPC's threads used during the main thread's steps

    @contextmanager
    def timed_step(self: Any, key: str) -> Iterator[None]:
        on_main = threading.current_thread() is threading.main_thread()
        own, others, threads = time.process_time(), beside.used(), foreign_threads_cpu()
        if not on_main:
            beside.start()
        inner: AbstractContextManager[None] = timing(self, key)
        try:
            with inner:
                yield
        finally:
            if on_main:
                beside_meanwhile = beside.used() - others
                foreign_meanwhile = foreign_since(threads)
                foreign[0] += foreign_meanwhile
                used = time.process_time() - own - beside_meanwhile - foreign_meanwhile
            else:
                used = beside.end()
            cpu[key] = round(used, 4)

    preview.Progress.timing = timed_step  # type: ignore[method-assign]
    children_before = _children_cpu()
    try:
        code = preview.main(preview_args)
    finally:
        preview.Progress.timing = timing  # type: ignore[method-assign]
    if "policy" in cpu:
        cpu["policy"] = round(cpu["policy"] + foreign[0] + _children_cpu() - children_before, 4)
    out.write_text(json.dumps({"cpuSeconds": cpu}) + "\n", encoding="utf-8")
    return code


if __name__ == "__main__":
    from tools.preview import exit_at_once  # as ``python -m tools.preview`` ends

    exit_at_once(main())
