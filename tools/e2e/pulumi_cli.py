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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .build import KUBERNETES_PROVIDER_VERSION, PROJECT_ROOT, RANDOM_PROVIDER_VERSION

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
        self.backend.mkdir(parents=True, exist_ok=True)
        self._calls += 1
        log = self.work_dir / "logs" / f"{self._calls:02d}-pulumi-{args[0]}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        command = ["pulumi", *args, "--non-interactive"]
        # Its own process group: the CLI's plugins (providers, the language host, policy packs)
        # are its children, and a timeout or an interrupt must stop all of them, not orphan them.
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env={**self.env(), **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
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


def stop_group(process: subprocess.Popen[str], grace_s: float = STOP_GRACE_S) -> tuple[str, str]:
    """Interrupt the CLI as Ctrl-C would (it cancels and stops its plugins), then kill whatever
    of its process group is left; returns what it printed."""
    for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGKILL, grace_s)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            stdout, stderr = process.communicate(timeout=wait_s)
            if sig == signal.SIGINT:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)  # plugins that outlived the CLI
            return stdout or "", stderr or ""
        except subprocess.TimeoutExpired:
            continue
    return "", ""
