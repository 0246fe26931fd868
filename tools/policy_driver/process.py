"""The pack as its own process: launched as the CLI's shim launches it, stopped without orphans."""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import grpc
import yaml

from .errors import PackLayoutError, PackStartError

# pulumi.policy's __main__ requires an engine address but never dials it; there is no engine.
_NO_ENGINE_ADDRESS = "127.0.0.1:0"
# Same limit as pulumi_policy's server and the engine's client (400 MiB).
_MAX_MESSAGE = 400 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE),
    ("grpc.max_send_message_length", _MAX_MESSAGE),
]
_STDERR_KEEP = 64 * 1024


def _load_pack_project(pack_dir: Path) -> dict[str, Any]:
    yml = pack_dir / "PulumiPolicy.yaml"
    if not pack_dir.is_dir():
        raise PackLayoutError(f"policy pack directory {pack_dir} does not exist")
    if not yml.is_file():
        raise PackLayoutError(
            f"failed to load Pulumi policy project located at {str(pack_dir)!r}: "
            f"{yml.name} not found"
        )
    try:
        data = yaml.safe_load(yml.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise PackLayoutError(f"{yml}: invalid YAML: {e}") from e
    if not isinstance(data, dict):
        raise PackLayoutError(f"{yml}: expected a mapping")
    runtime = data.get("runtime")
    name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if name != "python":
        raise PackLayoutError(
            f"{yml}: runtime is {name!r}; this driver only runs Python policy packs"
        )
    if not (pack_dir / "__main__.py").is_file():
        raise PackLayoutError(f"policy pack {pack_dir} has no __main__.py")
    return data


def pack_launch_command(
    pack_dir: str | os.PathLike[str], python: str | None = None
) -> tuple[list[str], Path]:
    """The command line and working directory the CLI's shim uses for a Python pack.

    `python3 -u -m pulumi.policy <engine-address> .` run in the pack directory, with the
    virtualenv from `runtime.options.virtualenv` when set. Without one, the CLI runs `python3`
    from PATH; offline the driver's own interpreter is the equivalent (override with `python`).
    Other runtime options are passed as `-key=value`, as NewPolicyAnalyzer does.
    """
    pdir = Path(pack_dir).resolve()
    project = _load_pack_project(pdir)
    runtime = project.get("runtime")
    options = (runtime.get("options") or {}) if isinstance(runtime, dict) else {}
    interpreter = python
    venv = options.get("virtualenv")
    if interpreter is None and venv:
        vdir = Path(venv) if Path(venv).is_absolute() else pdir / venv
        candidate = vdir / "bin" / "python"
        if not candidate.is_file():
            raise PackLayoutError(f"{str(vdir)!r} doesn't appear to be a virtual environment")
        interpreter = str(candidate)
    cmd = [interpreter or sys.executable, "-u", "-m", "pulumi.policy", _NO_ENGINE_ADDRESS, "."]
    cmd += [f"-{k}={v}" for k, v in options.items() if k != "virtualenv" and f"{v}" != ""]
    return cmd, pdir


def polite_stop_signal() -> signal.Signals:
    """SIGINT, as the CLI stops a plugin; SIGTERM when this process ignores SIGINT.

    A shell starts background jobs (``make bench &``, ``nohup``) with SIGINT ignored, and a child
    inherits that: the pack would sit out the whole grace period and then be killed, 5 s per
    preview. SIGTERM is never ignored that way.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return signal.SIGTERM
    return signal.SIGINT


class PolicyPackProcess:
    """A running policy pack: start, read the port, serve a channel, stop without orphans.

    Stop mirrors the CLI's plugin Kill: SIGINT to the process group (pulumi_policy stops its
    server on KeyboardInterrupt; SIGTERM where SIGINT is ignored, see `polite_stop_signal`),
    SIGKILL to the group after `grace` seconds.
    """

    def __init__(
        self,
        pack_dir: str | os.PathLike[str],
        *,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 30.0,
        grace: float = 5.0,
    ) -> None:
        self.pack_dir = Path(pack_dir)
        self._python = python
        self._extra_env = dict(env or {})
        self._startup_timeout = startup_timeout
        self._grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self._stop_signal = signal.SIGINT
        self._stderr = bytearray()
        self._stdout = bytearray()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._port_line: list[bytes] = []
        self._port_ready = threading.Event()
        self._stop_sent: float | None = None  # when stop() interrupted the pack
        self.port: int | None = None
        self.channel: grpc.Channel | None = None
        self.project: dict[str, Any] = {}

    @property
    def pid(self) -> int | None:
        """The pack's process id (also its process group id)."""
        return self._proc.pid if self._proc else None

    @property
    def stderr_text(self) -> str:
        """The last 64 KiB the pack wrote to stderr (tracebacks end up here)."""
        with self._lock:
            return self._stderr.decode("utf-8", "replace")

    @property
    def stdout_text(self) -> str:
        """What the pack printed after the port line (the CLI shows it as info)."""
        with self._lock:
            return self._stdout.decode("utf-8", "replace")

    def __enter__(self) -> PolicyPackProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def python(self) -> str | None:
        """The interpreter asked for (None: the pack's own, as the CLI picks it)."""
        return self._python

    @property
    def env(self) -> dict[str, str]:
        """What this pack's environment adds to the driver's (the engine's constructEnv)."""
        return dict(self._extra_env)

    def start(self) -> grpc.Channel:
        """Launch the pack, wait for its port line, open and return the channel."""
        if self._proc is not None:
            raise RuntimeError("PolicyPackProcess.start() called twice")
        return self.connect()

    def connect(self) -> grpc.Channel:
        """Wait for the port line of the pack (launching it first if :meth:`launch` has not),
        open and return the channel."""
        if self.channel is not None:
            raise RuntimeError("PolicyPackProcess.connect() called twice")
        self.launch()
        try:
            self.port = self._wait_for_port()
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=_CHANNEL_OPTIONS)
            try:
                grpc.channel_ready_future(self.channel).result(timeout=self._startup_timeout)
            except grpc.FutureTimeoutError as e:
                raise PackStartError(
                    self._describe(f"policy pack did not accept connections on port {self.port}")
                ) from e
        except BaseException:
            self.close()
            raise
        return self.channel

    def launch(self) -> None:
        """Start the pack's process and return at once: it imports and starts serving while
        the caller goes on (the preview runs the program meanwhile). Once only; a no-op after."""
        if self._proc is not None:
            return
        cmd, cwd = pack_launch_command(self.pack_dir, self._python)
        self.project = _load_pack_project(cwd)
        env = {**os.environ, **self._extra_env}
        # Decided now: the pack inherits this process's SIGINT disposition at launch.
        self._stop_signal = polite_stop_signal()
        try:
            self._proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group, like cmdutil.RegisterProcessGroup
            )
        except OSError as e:
            raise PackStartError(f"could not launch {cmd[0]}: {e}") from e
        atexit.register(self.close)
        self._spawn(self._read_stderr)
        self._spawn(self._read_stdout)

    def _spawn(self, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, daemon=True, name=f"policy-pack-{target.__name__}")
        t.start()
        self._threads.append(t)

    def _read_stderr(self) -> None:
        assert self._proc is not None
        stream = cast(io.BufferedReader, self._proc.stderr)
        for chunk in iter(lambda: stream.read1(65536), b""):
            with self._lock:
                self._stderr += chunk
                del self._stderr[:-_STDERR_KEEP]

    def _read_stdout(self) -> None:
        # Read the first line (the port) then keep draining so a chatty pack never blocks.
        assert self._proc is not None
        stream = cast(io.BufferedReader, self._proc.stdout)
        self._port_line.append(stream.readline())
        self._port_ready.set()
        for chunk in iter(lambda: stream.read1(65536), b""):
            with self._lock:
                self._stdout += chunk
                del self._stdout[:-_STDERR_KEEP]

    def _wait_for_port(self) -> int:
        assert self._proc is not None
        deadline = time.monotonic() + self._startup_timeout
        exited_at: float | None = None
        while not self._port_ready.wait(0.05):
            # A child of the pack may hold stdout open after the pack died: don't wait for EOF.
            if exited_at is None and self._exit_status(0.0) is not None:
                exited_at = time.monotonic()
            if exited_at is not None and time.monotonic() - exited_at > 0.2:
                break
            if time.monotonic() > deadline:
                raise PackStartError(
                    self._describe(
                        f"policy pack did not print its port within {self._startup_timeout:g}s"
                    )
                )
        line = self._port_line[0] if self._port_line else b""
        if not line.endswith(b"\n"):
            # EOF before a full line: the pack exited (or closed stdout) without serving.
            code = self._exit_status(self._grace)
            self._kill_group()  # so the readers see EOF and collect the whole stderr
            self._join_readers(timeout=1.0)
            got = f" (read {line.decode('utf-8', 'replace')!r})" if line else ""
            status = f"exit status {code}" if code is not None else "closed stdout"
            raise PackStartError(self._describe(f"policy pack failed to start: {status}{got}"))
        text = line.decode("utf-8", "replace").strip()
        try:
            port = int(text)
        except ValueError:
            port = -1
        if not 0 < port <= 65535:
            raise PackStartError(
                self._describe(f"policy pack wrote an invalid port to stdout: {text!r}")
            )
        return port

    def _describe(self, what: str) -> str:
        err = self.stderr_text.strip()
        out = self.stdout_text.strip()
        parts = [f"{what} [{self.pack_dir}]"]
        if err:
            parts.append(f"--- pack stderr ---\n{err}")
        if out:
            parts.append(f"--- pack stdout ---\n{out}")
        return "\n".join(parts)

    def describe_failure(self, what: str, wait: float = 0.0) -> str:
        """`what`, plus whatever the pack wrote to stderr/stdout (to explain a failure).

        `wait`: how long to give a pack that is probably dying to exit (for its status).
        """
        code = self._exit_status(wait)
        if code is not None:
            self._kill_group()  # leftovers of a dead pack; lets the readers reach EOF
            self._join_readers(timeout=1.0)
            what += f" (pack exited with status {code})"
        return self._describe(what)

    def _join_readers(self, timeout: float = 5.0) -> None:
        for t in self._threads:
            t.join(timeout)

    def _exit_status(self, timeout: float) -> int | None:
        """Wait up to `timeout` for the pack to exit, without reaping it.

        Leaving the exited leader a zombie keeps its process-group id reserved, so the final
        killpg in close() can never hit an unrelated group that reused the id.
        """
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is not None:
            return proc.returncode
        deadline = time.monotonic() + timeout
        while True:
            try:
                res = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:
                return proc.returncode if proc.returncode is not None else -1
            if res is not None:
                return res.si_status if res.si_code == os.CLD_EXITED else -res.si_status
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def alive(self) -> bool:
        """True while the pack process is running."""
        return self._proc is not None and self._exit_status(0.0) is None

    def stop(self) -> None:
        """Close the channel and ask the pack to end (the CLI's interrupt), without waiting for
        it: :meth:`close` waits, what is done meanwhile overlaps the pack's exit."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        proc = self._proc
        if proc is None or proc.returncode is not None or self._stop_sent is not None:
            return
        if self._exit_status(0.0) is None:
            self._signal_group(proc, self._stop_signal)
        self._stop_sent = time.monotonic()

    def close(self) -> None:
        """Stop the process group and wait for it: the interrupt, then SIGKILL to whatever is
        left `grace` seconds after it; safe to call repeatedly."""
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        self.stop()
        proc = self._proc
        if proc is None or proc.returncode is not None or self._stop_sent is None:
            return
        self._exit_status(max(0.0, self._stop_sent + self._grace - time.monotonic()))
        self._kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=self._grace)
        self._join_readers()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    @property
    def returncode(self) -> int | None:
        """The pack's exit status once it has ended (negative: the signal that ended it)."""
        return None if self._proc is None else self._proc.returncode

    def _kill_group(self) -> None:
        # Only while the leader is unreaped (a zombie at worst) does the group id stay ours:
        # then kill anything left in it (the pack if it ignored SIGINT, children it started).
        if self._proc is not None and self._proc.returncode is None:
            self._signal_group(self._proc, signal.SIGKILL)

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
