"""The cyclic garbage collector paused around work that builds large trees nearly without cycles.

Parsing a stack file and running the program under mocks both allocate millions of containers
that reference counting frees, or that live on; every collection meanwhile rescans the survivors
for nothing (a third of parsing a 1,000-workload stack file, a fifth of its program run, and
growing faster than the stack: docs/performance.md).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside; then everything alive moves to the oldest generation.

    Why the move: what the block made sits in the youngest generation, and the first young
    pass after it would scan all of it at once (3.5 s after a 1,000-workload run). Freezing and
    unfreezing moves it without a scan; the next full collection looks at it, as at any old
    object, and frees the cycles the block left. A collector already off stays off.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if enabled:
            gc.enable()
