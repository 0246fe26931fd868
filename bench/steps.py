"""``python -m bench.steps CPU_JSON -- <preview arguments>``: the preview, with each step's CPU.

Why: the preview's own step timings (``report.json``) are wall clock, which on a shared machine
grows with the neighbours' load as much as with the stack. This runs ``tools.preview`` in the
same process exactly as ``python -m tools.preview`` would, and writes to ``CPU_JSON`` the CPU
seconds of every step: this process's (all threads) plus those of the child processes it reaped
during the step. The policy pack's processes, the preview's only children, are launched before
the program and waited for at the end of the preview: what they cost, reaped after the steps,
is the policy step's.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[1] != "--":
        print("usage: python -m bench.steps CPU_JSON -- <tools.preview arguments>", file=sys.stderr)
        return 2
    out, preview_args = Path(args[0]), args[2:]
    import tools.preview as preview

    cpu: dict[str, float] = {}
    counted_children = 0.0  # children's CPU counted in a step
    step = preview.Progress.step

    @contextmanager
    def timed_step(self: Any, key: str, label: str) -> Iterator[None]:
        nonlocal counted_children
        own, children = time.process_time(), _children_cpu()
        inner: AbstractContextManager[None] = step(self, key, label)
        try:
            with inner:
                yield
        finally:
            reaped = _children_cpu() - children
            counted_children += reaped
            cpu[key] = round(time.process_time() - own + reaped, 4)

    preview.Progress.step = timed_step  # type: ignore[method-assign]
    children_before = _children_cpu()
    try:
        code = preview.main(preview_args)
    finally:
        preview.Progress.step = step  # type: ignore[method-assign]
    if "policy" in cpu:
        late = _children_cpu() - children_before - counted_children
        cpu["policy"] = round(cpu["policy"] + late, 4)
    out.write_text(json.dumps({"cpuSeconds": cpu}) + "\n", encoding="utf-8")
    return code


if __name__ == "__main__":
    from tools.preview import exit_at_once  # as ``python -m tools.preview`` ends

    exit_at_once(main())
