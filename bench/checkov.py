"""checkov on the manifests our preview rendered: the yardstick the whole preview is held to.

Why checkov: it is what a team would run on rendered manifests instead of our preview, and it
costs the same on any machine relative to us, so "our whole preview against checkov alone on the
same manifests, side by side in one run" is a target that means the same everywhere.

checkov is not a project dependency: the benchmark installs it by name with pip into a venv of
its own under ``build/bench`` (once; later runs reuse it) and never imports it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .measure import PROJECT_ROOT, BenchError, ProcessRun, run_process

CHECKOV_VERSION = "3.3.30"
"""The checkov release the figures were taken with; recorded with every result."""
CHECKOV_VENV = PROJECT_ROOT / "build" / "bench" / "checkov-venv"


def checkov_command(venv: Path = CHECKOV_VENV) -> Path:
    return venv / "bin" / "checkov"


def ensure_checkov(venv: Path = CHECKOV_VENV, version: str = CHECKOV_VERSION) -> Path:
    """``checkov`` of ``version`` in ``venv``, installed with pip when it is not there yet."""
    command = checkov_command(venv)
    if command.is_file() and installed_version(venv) == version:
        return command
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"checkov=={version}"],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            raise BenchError(f"could not install checkov {version} ({' '.join(step)}):\n{tail}")
    return command


def installed_version(venv: Path = CHECKOV_VENV) -> str | None:
    python = venv / "bin" / "python"
    if not python.is_file():
        return None
    done = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('checkov'))"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def checkov_args(manifests: Path) -> list[str]:
    """Kubernetes checks only, on the folder of manifests, nothing fetched, JSON out."""
    return [
        "-d",
        str(manifests),
        "--framework",
        "kubernetes",
        "--quiet",
        "--compact",
        "--skip-download",
        "-o",
        "json",
    ]


def run_checkov(command: Path, manifests: Path) -> tuple[ProcessRun, dict[str, Any]]:
    """One checkov process over ``manifests``; its run and its summary (checks passed, failed).

    checkov exits 1 when a check fails, which is its verdict on the manifests, not an error.
    """
    run = run_process([str(command), *checkov_args(manifests)])
    try:
        report = json.loads(run.stdout)
    except json.JSONDecodeError as exc:
        tail = "\n".join((run.stdout + run.stderr).strip().splitlines()[-15:])
        raise BenchError(f"checkov exited {run.returncode} without a report:\n{tail}") from exc
    reports = report if isinstance(report, list) else [report]
    summary: dict[str, Any] = next(
        (r.get("summary") for r in reports if r.get("check_type") == "kubernetes"), {}
    )
    if run.returncode not in (0, 1) or not summary.get("resource_count"):
        raise BenchError(f"checkov exited {run.returncode} and checked nothing: {summary}")
    return run, summary


def checkov_startup(command: Path) -> ProcessRun:
    """``checkov --version``: what starting checkov costs before it reads a manifest."""
    run = run_process([str(command), "--version"])
    if run.returncode != 0:
        raise BenchError(f"checkov --version exited {run.returncode}: {run.stderr.strip()}")
    return run
