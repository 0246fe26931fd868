"""The script as shipped: stdlib-only, Python 3.9 syntax, runnable with ``python -I``, served
verbatim by ``script_text()``, and with an exit-code table the docs and podFailurePolicy share."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from components.workloads import preflight
from components.workloads.preflight import start_check
from tests.preflight.conftest import GI, FakeNode

SCRIPT = Path(start_check.__file__)


def test_script_text_is_the_file() -> None:
    text = preflight.script_text()
    assert text == SCRIPT.read_text(encoding="utf-8")
    assert text.startswith("#!/usr/bin/env python3\n")
    assert len(text.encode()) < 1024 * 1024  # fits a ConfigMap


def test_container_path() -> None:
    assert preflight.CONTAINER_SCRIPT_PATH == "/preflight/start_check.py"
    assert SCRIPT.name == preflight.SCRIPT_FILENAME


def test_imports_are_stdlib_only() -> None:
    tree = ast.parse(SCRIPT.read_text(encoding="utf-8"))
    modules: set[str] = set()
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            assert stmt.level == 0, "relative imports break when run as a file"
            modules.add((stmt.module or "").split(".")[0])
    assert modules - set(sys.stdlib_module_names) - {"__future__"} == set()


def test_python39_grammar() -> None:
    ast.parse(SCRIPT.read_text(encoding="utf-8"), feature_version=(3, 9))


def test_exit_code_table_is_documented_exactly() -> None:
    documented = {
        name: int(code)
        for code, name in re.findall(r"^ +(\d+)  ([a-z-]+) ", start_check.__doc__ or "", re.M)
    }
    assert documented == dict(start_check.EXIT_CODES)


def test_exit_codes_are_distinct_and_valid() -> None:
    codes = list(start_check.EXIT_CODES.values())
    assert len(set(codes)) == len(codes)
    assert all(0 <= code < 126 for code in codes)  # 126+ mean exec failure or a signal
    assert start_check.EXIT_CODES["ok"] == 0
    assert start_check.EXIT_CODES["usage"] == 2  # what argparse exits with


def test_non_retryable_codes() -> None:
    codes = start_check.NON_RETRYABLE_EXIT_CODES
    assert codes == (10, 11, 12, 13, 14, 15, 16, 17, 18)
    assert codes == preflight.NON_RETRYABLE_EXIT_CODES
    assert preflight.EXIT_CODES is start_check.EXIT_CODES


def test_pod_failure_policy_rule_meets_the_api_rules() -> None:
    rule = preflight.pod_failure_policy_rule("start-check")
    values = rule["onExitCodes"]["values"]
    assert rule == {
        "action": "FailJob",
        "onExitCodes": {"containerName": "start-check", "operator": "In", "values": values},
    }
    assert values == sorted(set(values)) and 0 not in values and len(values) <= 255


def _subprocess(
    python: str, args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the file as the init container does; ``-I -S`` hides user and site packages."""
    return subprocess.run(
        [python, "-I", "-S", str(SCRIPT), "--start-check", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env if env is not None else {"PATH": os.defpath},
        timeout=60,
        check=False,
    )


def test_subprocess_isolated_pass(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "n")
    node.cgroup_v2(memory_max=str(32 * GI), cpu_max="50000 100000")
    smi = node.nvidia_smi(gpu_count=2)
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.parquet").touch()
    proc = _subprocess(
        sys.executable,
        [
            *node.probe_args(nvidia_smi=None),
            "--min-memory=16Gi",
            "--min-cpus=500m",
            "--expect-gpus=2",
            f"--dataset-path={data}",
            f"--checkpoint-path={tmp_path / 'ckpt' / 'run'}",
            "--checkpoint-create",
            "--checkpoint-min-free=1Ki",
        ],
        cwd=tmp_path,
        env={"PATH": f"{smi.parent}{os.pathsep}{os.defpath}"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[:4] == [
        "start-check: OK memory 32Gi >= 16Gi (cgroup v2 memory.max)",
        "start-check: OK cpus 0.5 >= 500m (cgroup v2 cpu.max)",
        "start-check: OK gpus 2 visible == 2 expected (nvidia-smi -L)",
        f"start-check: OK dataset {data} has at least 1 file",
    ]
    assert lines[-1] == "start-check: passed (6 ok, 0 skipped)"


def test_subprocess_isolated_gpu_failure(tmp_path: Path) -> None:
    node = FakeNode(tmp_path / "n")
    node.gpus(0, 1, 2, 3)
    proc = _subprocess(sys.executable, [*node.probe_args(), "--expect-gpus=8"], cwd=tmp_path)
    assert proc.returncode == 12
    assert proc.stdout.splitlines() == [
        "start-check: SKIP memory: no --min-memory",
        "start-check: SKIP cpus: no --min-cpus",
        f"start-check: FAIL gpus: expected 8 visible GPUs, found 4 ({node.dev}/nvidia0..3)",
        "start-check: failed: gpus (exit 12)",
    ]


def test_subprocess_usage_error(tmp_path: Path) -> None:
    proc = _subprocess(sys.executable, ["--min-memory=16 GB"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "not a Kubernetes quantity: '16 GB'" in proc.stderr


def test_subprocess_defaults_probe_this_machine(tmp_path: Path) -> None:
    """No probe options: the real /sys/fs/cgroup, /proc/meminfo and /dev must not crash it."""
    proc = _subprocess(sys.executable, ["--all", "--min-memory=1", "--min-cpus=1m"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _python39() -> str | None:
    """A working ``python3.9`` (the oldest the script supports), or None; shims may not run."""
    found = shutil.which("python3.9")
    if found is None:
        return None
    try:
        probe = subprocess.run([found, "-c", "pass"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return found if probe.returncode == 0 else None


def test_runs_on_python39(tmp_path: Path) -> None:
    python39 = _python39()
    if python39 is None:
        pytest.skip("no working python3.9 on PATH")
    node = FakeNode(tmp_path / "n")
    node.cgroup_v1(memory_limit=8 * GI, cpu_quota=200000)
    proc = _subprocess(python39, [*node.probe_args(), "--all", "--min-memory=16Gi"], cwd=tmp_path)
    assert proc.returncode == 10, proc.stderr
    assert proc.stdout.splitlines()[0] == (
        "start-check: FAIL memory: need 16Gi, container has 8Gi (cgroup v1 memory.limit_in_bytes)"
    )
