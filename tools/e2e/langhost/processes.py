"""The child processes the host starts (programs, plugins), so that none outlives it.

Children stay in the host's process group: the engine interrupts and, 5 s later, kills that whole
group when it closes the host. They are still tracked here so that a stop of the host by other
means (SIGTERM, the engine gone) interrupts them too, and so a cancelled call stops its child.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

GRACE_S = 5.0
"""How long an interrupted child may take to finish before it is killed (as upstream)."""


class Children:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen[bytes]] = set()

    def start(self, argv: Sequence[str], *, env: dict[str, str], cwd: Path | None,
              **kwargs: Any) -> subprocess.Popen[bytes]:  # fmt: skip
        process = subprocess.Popen(list(argv), env=env, cwd=cwd, **kwargs)
        with self._lock:
            self._live.add(process)
        return process

    def wait(self, process: subprocess.Popen[bytes], stop: Callable[[], bool]) -> int:
        """The exit code; when ``stop()`` turns true first, the child is interrupted (then
        killed after the grace period) and its code returned all the same."""
        try:
            while True:
                try:
                    return process.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    if stop():
                        return interrupt(process)
        finally:
            with self._lock:
                self._live.discard(process)

    def stop_all(self) -> None:
        with self._lock:
            live = list(self._live)
        threads = [threading.Thread(target=interrupt, args=(p,)) for p in live]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def interrupt(process: subprocess.Popen[bytes]) -> int:
    """SIGINT, then SIGKILL after the grace period; the exit code."""
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGINT)
            return process.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
        except ProcessLookupError:
            pass
    return process.wait()
