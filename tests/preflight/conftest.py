"""Fake container views (cgroup trees, meminfo, /dev, nvidia-smi) for the preflight tests.

Every probe of ``start_check.py`` is pointed into ``tmp_path`` so results never depend on the
machine running the tests.
"""

from __future__ import annotations

import io
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from components.workloads.preflight import start_check

GI = 2**30


class FakeNode:
    """One container's view of its node, built under ``tmp_path``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.cgroup = base / "cgroup"
        self.meminfo = base / "meminfo"
        self.dev = base / "dev"
        self.cgroup.mkdir(parents=True)
        self.dev.mkdir()
        for name in ("null", "nvidiactl", "nvidia-uvm", "nvidia-modeset"):
            (self.dev / name).touch()
        (self.dev / "nvidia-caps").mkdir()

    def cgroup_v2(self, memory_max: str | None = "max", cpu_max: str | None = "max 100000") -> None:
        (self.cgroup / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        if memory_max is not None:
            (self.cgroup / "memory.max").write_text(f"{memory_max}\n")
        if cpu_max is not None:
            (self.cgroup / "cpu.max").write_text(f"{cpu_max}\n")

    def cgroup_v1(
        self,
        memory_limit: int | None = 9223372036854771712,
        cpu_quota: int | None = -1,
        cpu_period: int = 100000,
        cpu_dir: str = "cpu,cpuacct",
    ) -> None:
        if memory_limit is not None:
            (self.cgroup / "memory").mkdir()
            (self.cgroup / "memory" / "memory.limit_in_bytes").write_text(f"{memory_limit}\n")
        if cpu_quota is not None:
            (self.cgroup / cpu_dir).mkdir()
            (self.cgroup / cpu_dir / "cpu.cfs_quota_us").write_text(f"{cpu_quota}\n")
            (self.cgroup / cpu_dir / "cpu.cfs_period_us").write_text(f"{cpu_period}\n")

    def meminfo_kib(self, total: int, available: int | None) -> None:
        lines = [f"MemTotal:       {total} kB", "MemFree:        1024 kB"]
        if available is not None:
            lines.append(f"MemAvailable:   {available} kB")
        lines.append("HugePages_Total:       0")
        self.meminfo.write_text("\n".join(lines) + "\n")

    def gpus(self, *indices: int) -> None:
        for index in indices:
            (self.dev / f"nvidia{index}").touch()

    def nvidia_smi(self, gpu_count: int, exit_code: int = 0) -> Path:
        """A fake ``nvidia-smi`` in ``<base>/bin``; lists GPUs, plus a MIG line to ignore."""
        bin_dir = self.base / "bin"
        bin_dir.mkdir(exist_ok=True)
        lines = [f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:04d})" for i in range(gpu_count)]
        lines.append("  MIG 1g.10gb     Device  0: (UUID: MIG-0000)")
        body = "\n".join(f"echo '{line}'" for line in lines)
        script = bin_dir / "nvidia-smi"
        script.write_text(f"#!/bin/sh\n{body}\nexit {exit_code}\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        return script

    def probe_args(self, nvidia_smi: str | None = "") -> list[str]:
        """Options pointing every probe here; ``nvidia_smi=None`` leaves the PATH lookup on."""
        args = ["--cgroup-root", str(self.cgroup), "--proc-meminfo", str(self.meminfo)]
        args += ["--dev-dir", str(self.dev)]
        if nvidia_smi is not None:
            args.append(f"--nvidia-smi={nvidia_smi}")
        return args

    def run(
        self,
        *options: str,
        environ: Mapping[str, str] | None = None,
        nvidia_smi: str | None = "",
    ) -> tuple[int, list[str]]:
        """Run ``main`` in-process; returns the exit code and the printed lines."""
        out = io.StringIO()
        argv = ["--start-check", *self.probe_args(nvidia_smi), *options]
        code = start_check.main(argv, environ={} if environ is None else environ, out=out)
        return code, out.getvalue().splitlines()


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeNode:
    """A fake node with 64 schedulable CPUs, whatever the test machine has."""
    monkeypatch.setattr(start_check, "affinity_cpus", lambda: (64, "sched_getaffinity"))
    base = tmp_path / "node"
    base.mkdir()
    return FakeNode(base)
