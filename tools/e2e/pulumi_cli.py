"""The real Pulumi CLI, run the way CI runs it: a file backend, a passphrase, no traffic out.

Every call has a bounded timeout, its output goes to a log file per call, and a failure raises
with the command, the exit code and the tail of what it printed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .build import KUBERNETES_PROVIDER_VERSION, PROJECT_ROOT, RANDOM_PROVIDER_VERSION
from .cluster import session_members

PASSPHRASE = "ai-platform-e2e"
"""The e2e stacks' secrets provider passphrase: the stacks hold only test values."""
DEFAULT_TIMEOUT_S = 900.0
STOP_GRACE_S = 20.0
PROVIDERS = {"kubernetes": KUBERNETES_PROVIDER_VERSION, "random": RANDOM_PROVIDER_VERSION}
"""The resource plugins the platform's SDKs ask for, at the versions the e2e builds."""
ORGANIZATION = "organization"
"""A file backend's organization: what a fully-qualified StackReference names."""


class CliError(RuntimeError):
    def __init__(self, args: Sequence[str], code: int | None, output: str, log: Path) -> None:
        tail = "\n".join(output.strip().splitlines()[-40:])
        verdict = "timed out" if code is None else f"exited {code}"
        super().__init__(f"pulumi {' '.join(args)} {verdict} (log: {log})\n{tail}")
        self.code = code
        self.output = output


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@dataclass
class PulumiCli:
    """One e2e run's CLI: its own PULUMI_HOME, backend and logs under ``work_dir``."""

    bin_dir: Path
    work_dir: Path
    kubeconfig: Path | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    _calls: int = 0

    @property
    def backend(self) -> Path:
        return self.work_dir / "state"

    @property
    def path_dir(self) -> Path:
        """What the CLI finds on PATH: itself only. It finds our language host beside its own
        executable, as it finds its bundled ones, and the providers in its plugin cache at the
        exact versions the SDKs ask for (as a user's machine has them), never ambiently."""
        return self.work_dir / "path"

    def install_plugins(self) -> list[str]:
        """Link the CLI onto PATH and install the providers into this run's plugin cache."""
        self.path_dir.mkdir(parents=True, exist_ok=True)
        link = self.path_dir / "pulumi"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(self.bin_dir / "pulumi")
        installed = []
        for name, version in PROVIDERS.items():
            binary = self.bin_dir / f"pulumi-resource-{name}"
            self.run(["plugin", "install", "resource", name, version, "--file", str(binary)],
                     cwd=self.work_dir)  # fmt: skip
            installed.append(f"{name} {version}")
        return installed

    def env(self) -> dict[str, str]:
        venv_bin = PROJECT_ROOT / ".venv" / "bin"
        env = {
            key: value
            for key, value in os.environ.items()
            # the ambient Pulumi settings of whoever runs this must not leak in
            if not key.startswith("PULUMI_") and key != "KUBECONFIG"
        }
        env.update(
            PATH=os.pathsep.join([str(self.path_dir), str(venv_bin), env.get("PATH", "")]),
            PULUMI_HOME=str(self.work_dir / "pulumi-home"),
            PULUMI_BACKEND_URL=self.backend.as_uri(),
            PULUMI_CONFIG_PASSPHRASE=PASSPHRASE,
            PULUMI_SKIP_UPDATE_CHECK="true",
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
            PULUMI_DISABLE_REGISTRY_RESOLVE="true",
            PULUMI_PYTHON_CMD=str(venv_bin / "python"),
            PYTHONDONTWRITEBYTECODE="1",
        )
        if self.kubeconfig is not None:
            env["KUBECONFIG"] = str(self.kubeconfig)
        env.update(self.extra_env)
        return env

    def run(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        timeout: float = DEFAULT_TIMEOUT_S,
        check: bool = True,
        stdin: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        command, log = self._next_call(args)
        process = self._popen(command, cwd, env)
        try:
            stdout, stderr = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = stop_group(process)
            output = stdout + stderr
            log.write_text(f"$ {' '.join(command)}  (in {cwd})\n{output}\n[timed out]\n")
            raise CliError(args, None, output, log) from None
        except BaseException:
            stop_group(process)
            raise
        done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
        log.write_text(
            f"$ {' '.join(command)}  (in {cwd})\n[exit {done.returncode}]\n"
            f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}\n"
        )
        if check and done.returncode != 0:
            raise CliError(args, done.returncode, done.stdout + done.stderr, log)
        return Result(done.returncode, done.stdout, done.stderr)

    def start(
        self, args: Sequence[str], *, cwd: Path, env: Mapping[str, str] | None = None
    ) -> Background:
        """Start a call without waiting for it, for faults injected while it runs: its output is
        read as it comes (:meth:`Background.wait_for_line`). Use it as a context manager, so
        that its process group is stopped however the block ends."""
        command, log = self._next_call(args)
        process = self._popen(command, cwd, env, stdin=subprocess.DEVNULL)
        return Background(list(args), command, cwd, log, process)

    def _next_call(self, args: Sequence[str]) -> tuple[list[str], Path]:
        self.backend.mkdir(parents=True, exist_ok=True)
        self._calls += 1
        log = self.work_dir / "logs" / f"{self._calls:02d}-pulumi-{args[0]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        return ["pulumi", *args, "--non-interactive"], log

    def _popen(
        self,
        command: list[str],
        cwd: Path,
        env: Mapping[str, str] | None,
        stdin: int = subprocess.PIPE,
    ) -> subprocess.Popen[str]:
        # Its own session: the CLI's plugins (providers, the language host, policy packs) are its
        # children, each in a process group of its own but all in this session, and a timeout or
        # an interrupt must stop all of them, not orphan them.
        return subprocess.Popen(
            command,
            cwd=cwd,
            env={**self.env(), **(env or {})},
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )


class Background:
    """A CLI call running in the background (:meth:`PulumiCli.start`). Two threads read its
    stdout and stderr line by line, so a fault can be timed on what it printed."""

    def __init__(
        self,
        args: list[str],
        command: list[str],
        cwd: Path,
        log: Path,
        process: subprocess.Popen[str],
    ) -> None:
        self.args = args
        self.command = command
        self.cwd = cwd
        self.log = log
        self.process = process
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(stream, lines), daemon=True)
            for stream, lines in ((process.stdout, self.stdout), (process.stderr, self.stderr))
        ]
        for reader in self._readers:
            reader.start()

    @property
    def pid(self) -> int:
        """The CLI's pid, which is also its process group's id."""
        return self.process.pid

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            with self._changed:
                lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_line(self, matches: Callable[[str], bool], timeout: float) -> str | None:
        """The first stdout line that ``matches``, as soon as it is printed; ``None`` if the
        call ended or ``timeout`` passed without one."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in self.stdout[seen:]:
                    if matches(line):
                        return line
                seen = len(self.stdout)
                left = deadline - time.monotonic()
                if left <= 0 or not any(r.is_alive() for r in self._readers):
                    return None
                self._changed.wait(left)

    def wait(self, timeout: float = DEFAULT_TIMEOUT_S) -> Result:
        """Its exit code and output once it ends (never raises on a non-zero exit: a fault is
        expected to fail it); on timeout its group is stopped and :class:`CliError` raised."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop("[timed out]")
            raise CliError(self.args, None, self.output, self.log) from None
        self._finish(f"[exit {code}]")
        return Result(code, "".join(self.stdout), "".join(self.stderr))

    @property
    def output(self) -> str:
        return "".join(self.stdout) + "".join(self.stderr)

    def _finish(self, verdict: str) -> None:
        for reader in self._readers:
            reader.join(timeout=STOP_GRACE_S)
        self.log.write_text(
            f"$ {' '.join(self.command)}  (in {self.cwd}, in the background)\n{verdict}\n"
            f"--- stdout\n{''.join(self.stdout)}\n--- stderr\n{''.join(self.stderr)}\n"
        )

    def kill(self, sig: int = signal.SIGKILL) -> list[int]:
        """Signal the CLI and every plugin it started (its session), all at once, as a crash
        of the machine would; returns their pids."""
        return kill_session(self.pid, sig)

    def stop(self, verdict: str = "[stopped]") -> None:
        """Interrupt it as Ctrl-C would, then kill what is left of its group."""
        if self.process.poll() is None:
            for sig in (signal.SIGINT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, sig)
                try:
                    self.process.wait(timeout=STOP_GRACE_S)
                    break
                except subprocess.TimeoutExpired:
                    continue
            self._finish(verdict)
        kill_session(self.pid)  # plugins that outlived the CLI

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        """Whatever happened, nothing of its process group outlives the block."""
        self.stop()


def kill_session(sid: int, sig: int = signal.SIGKILL) -> list[int]:
    """Send ``sig`` to every live process of the session ``sid``; returns their pids."""
    members = session_members(sid)
    for pid in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return members


def stop_group(process: subprocess.Popen[str], grace_s: float = STOP_GRACE_S) -> tuple[str, str]:
    """Interrupt the CLI as Ctrl-C would (it cancels and stops its plugins), then kill whatever
    of its session is left; returns what it printed."""
    output = ("", "")
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, grace_s)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            stdout, stderr = process.communicate(timeout=wait_s)
            output = (stdout or "", stderr or "")
            break
        except subprocess.TimeoutExpired:
            continue
    kill_session(process.pid)  # plugins that outlived the CLI, each in a group of its own
    return output
