"""Each check against fake cgroup v1/v2 trees, /dev dirs, datasets and checkpoint dirs: the
exact line it prints and the exact exit code, because podFailurePolicy and on-call read both."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from components.workloads.preflight import start_check
from tests.preflight.conftest import GI, FakeNode

CODES = start_check.EXIT_CODES
KIB = 1024


# --- memory -------------------------------------------------------------------------------------


def test_memory_cgroup_v2_ok(node: FakeNode) -> None:
    node.cgroup_v2(memory_max=str(32 * GI))
    node.meminfo_kib(total=512 * GI // KIB, available=400 * GI // KIB)
    code, lines = node.run("--min-memory", "16Gi")
    assert code == 0
    assert lines[0] == "start-check: OK memory 32Gi >= 16Gi (cgroup v2 memory.max)"


def test_memory_cgroup_v2_short(node: FakeNode) -> None:
    node.cgroup_v2(memory_max=str(8 * GI))
    code, lines = node.run("--min-memory", "16Gi")
    assert code == CODES["memory"] == 10
    assert lines == [
        "start-check: FAIL memory: need 16Gi, container has 8Gi (cgroup v2 memory.max)",
        "start-check: failed: memory (exit 10)",
    ]


def test_memory_cgroup_v1_limit(node: FakeNode) -> None:
    node.cgroup_v1(memory_limit=8 * GI)
    code, lines = node.run("--min-memory", "16Gi")
    assert code == 10
    assert lines[0] == (
        "start-check: FAIL memory: need 16Gi, container has 8Gi (cgroup v1 memory.limit_in_bytes)"
    )


def test_memory_cgroup_v1_unlimited_falls_back_to_meminfo(node: FakeNode) -> None:
    node.cgroup_v1()  # 9223372036854771712: v1's "no limit"
    node.meminfo_kib(total=64 * GI // KIB, available=20 * GI // KIB)
    code, lines = node.run("--min-memory", "16Gi")
    assert code == 0
    assert lines[0] == f"start-check: OK memory 20Gi >= 16Gi ({node.meminfo} MemAvailable)"


def test_memory_cgroup_v2_max_falls_back_to_meminfo(node: FakeNode) -> None:
    node.cgroup_v2(memory_max="max")
    node.meminfo_kib(total=64 * GI // KIB, available=10 * GI // KIB)
    code, lines = node.run("--min-memory", "16Gi")
    assert code == 10
    assert lines[0] == (
        f"start-check: FAIL memory: need 16Gi, container has 10Gi ({node.meminfo} MemAvailable)"
    )


def test_memory_limit_above_physical_memory_is_not_real(node: FakeNode) -> None:
    node.cgroup_v2(memory_max=str(1024 * GI))
    node.meminfo_kib(total=64 * GI // KIB, available=60 * GI // KIB)
    code, lines = node.run("--min-memory", "100Gi")
    assert code == 10
    assert lines[0].endswith(f"container has 60Gi ({node.meminfo} MemAvailable)")


def test_memory_old_kernel_without_memavailable_uses_memtotal(node: FakeNode) -> None:
    node.meminfo_kib(total=64 * GI // KIB, available=None)
    code, lines = node.run("--min-memory", "16Gi")
    assert code == 0
    assert lines[0] == f"start-check: OK memory 64Gi >= 16Gi ({node.meminfo} MemTotal)"


def test_memory_unmeasurable_is_a_retryable_probe_error(node: FakeNode) -> None:
    code, lines = node.run("--min-memory", "16Gi")  # no cgroup files, no meminfo
    assert code == CODES["probe-error"] == 3
    assert code not in start_check.NON_RETRYABLE_EXIT_CODES
    assert lines[0] == (
        "start-check: FAIL memory: cannot measure: "
        f"no cgroup memory limit and no MemTotal in {node.meminfo}"
    )


# --- cpus ---------------------------------------------------------------------------------------


def test_cpus_cgroup_v2_ok(node: FakeNode) -> None:
    node.cgroup_v2(cpu_max="400000 100000")
    code, lines = node.run("--min-cpus", "4")
    assert code == 0
    assert lines[1] == "start-check: OK cpus 4 >= 4 (cgroup v2 cpu.max)"


def test_cpus_cgroup_v2_short(node: FakeNode) -> None:
    node.cgroup_v2(cpu_max="400000 100000")
    code, lines = node.run("--min-cpus", "4500m")
    assert code == CODES["cpu"] == 11
    assert lines[1] == "start-check: FAIL cpus: need 4500m, container has 4 (cgroup v2 cpu.max)"


def test_cpus_millicores(node: FakeNode) -> None:
    node.cgroup_v2(cpu_max="50000 100000")
    code, lines = node.run("--min-cpus", "500m")
    assert code == 0
    assert lines[1] == "start-check: OK cpus 0.5 >= 500m (cgroup v2 cpu.max)"


def test_cpus_cgroup_v2_unlimited_uses_affinity(node: FakeNode) -> None:
    node.cgroup_v2(cpu_max="max 100000")
    code, lines = node.run("--min-cpus", "8")
    assert code == 0
    assert lines[1] == "start-check: OK cpus 64 >= 8 (sched_getaffinity)"


@pytest.mark.parametrize("cpu_dir", ["cpu,cpuacct", "cpu"])
def test_cpus_cgroup_v1_quota(node: FakeNode, cpu_dir: str) -> None:
    node.cgroup_v1(cpu_quota=150000, cpu_period=100000, cpu_dir=cpu_dir)
    code, lines = node.run("--min-cpus", "2")
    assert code == 11
    assert (
        lines[1] == "start-check: FAIL cpus: need 2, container has 1.5 (cgroup v1 cpu.cfs_quota_us)"
    )


def test_cpus_cgroup_v1_no_quota_uses_affinity(node: FakeNode) -> None:
    node.cgroup_v1(cpu_quota=-1)
    code, lines = node.run("--min-cpus", "96")
    assert code == 11
    assert lines[1] == "start-check: FAIL cpus: need 96, container has 64 (sched_getaffinity)"


def test_cpus_quota_above_cpuset_is_capped(node: FakeNode) -> None:
    node.cgroup_v2(cpu_max="12800000 100000")  # 128 CPUs of quota, 64 in the affinity mask
    code, lines = node.run("--min-cpus", "100")
    assert code == 11
    assert lines[1].endswith("container has 64 (sched_getaffinity)")


def test_cpus_unmeasurable_is_a_probe_error(
    node: FakeNode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(start_check, "affinity_cpus", lambda: None)
    code, lines = node.run("--min-cpus", "1")
    assert code == 3
    assert lines[1] == (
        "start-check: FAIL cpus: cannot measure: "
        "no cgroup cpu quota and the OS reports no CPU count"
    )


def test_affinity_cpus_reads_the_real_process() -> None:
    found = start_check.affinity_cpus()
    assert found is not None
    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert found[0] == expected


# --- gpus ---------------------------------------------------------------------------------------


def test_gpus_device_nodes_ok(node: FakeNode) -> None:
    node.gpus(*range(8))
    code, lines = node.run("--expect-gpus", "8")
    assert code == 0
    assert lines[2] == f"start-check: OK gpus 8 visible == 8 expected ({node.dev}/nvidia0..7)"


def test_gpus_device_nodes_short(node: FakeNode) -> None:
    node.gpus(0, 1, 2, 3)
    code, lines = node.run("--expect-gpus", "8")
    assert code == CODES["gpu"] == 12
    assert lines[2] == (
        f"start-check: FAIL gpus: expected 8 visible GPUs, found 4 ({node.dev}/nvidia0..3)"
    )


def test_gpus_real_dev_dir_renders_like_the_docs() -> None:
    assert start_check._format_nodes("/dev", [0, 1, 2, 3]) == "/dev/nvidia0..3"


def test_gpus_more_than_expected_fails_unless_at_least(node: FakeNode) -> None:
    node.gpus(*range(8))
    code, lines = node.run("--expect-gpus", "4")
    assert code == 12
    assert lines[2] == (
        f"start-check: FAIL gpus: expected 4 visible GPUs, found 8 ({node.dev}/nvidia0..7)"
    )
    code, lines = node.run("--expect-gpus", "4", "--gpus-at-least")
    assert code == 0
    assert lines[2] == f"start-check: OK gpus 8 visible >= 4 expected ({node.dev}/nvidia0..7)"


def test_gpus_at_least_still_fails_short(node: FakeNode) -> None:
    node.gpus(0)
    code, lines = node.run("--expect-gpus", "2", "--gpus-at-least")
    assert code == 12
    assert lines[2] == (
        f"start-check: FAIL gpus: expected at least 2 visible GPUs, found 1 ({node.dev}/nvidia0)"
    )


def test_gpus_non_contiguous_nodes_are_listed(node: FakeNode) -> None:
    node.gpus(0, 2, 10)
    code, lines = node.run("--expect-gpus", "3")
    assert code == 0
    assert lines[2].endswith(f"({node.dev}/nvidia0,2,10)")


def test_gpus_device_nodes_beat_env(node: FakeNode) -> None:
    """Assigned in the env but not injected as nodes: CUDA would see nothing, so 0 counts."""
    env = {"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}
    code, lines = node.run("--expect-gpus", "2", environ=env)
    assert code == 12
    assert lines[2] == (
        "start-check: FAIL gpus: expected 2 visible GPUs, found 0 "
        f"(no {node.dev}/nvidia[0-9]* device nodes)"
    )


def test_gpus_env_when_dev_dir_cannot_be_listed(tmp_path: Path) -> None:
    code, lines = _run_gpus(tmp_path, 2, {"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"})
    assert code == 0
    missing = tmp_path / "no-dev"
    assert lines[2] == (
        f"start-check: OK gpus 2 visible == 2 expected "
        f"(NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b; cannot list {missing})"
    )


def test_gpus_env_all_defers_to_cuda_visible_devices(tmp_path: Path) -> None:
    env = {"NVIDIA_VISIBLE_DEVICES": "all", "CUDA_VISIBLE_DEVICES": "0,1,2"}
    code, lines = _run_gpus(tmp_path, 4, env)
    assert code == 12
    assert "found 3 (CUDA_VISIBLE_DEVICES=0,1,2;" in lines[2]


def test_gpus_no_source_at_all(tmp_path: Path) -> None:
    code, lines = _run_gpus(tmp_path, 1, {})
    assert code == 12
    assert lines[2] == (
        "start-check: FAIL gpus: expected 1 visible GPUs, found 0 "
        f"(cannot list {tmp_path / 'no-dev'}; "
        "NVIDIA_VISIBLE_DEVICES/CUDA_VISIBLE_DEVICES unset or 'all')"
    )


def test_gpus_long_env_value_is_summarised(tmp_path: Path) -> None:
    uuids = ",".join(f"GPU-{i:036d}" for i in range(8))
    code, lines = _run_gpus(tmp_path, 8, {"NVIDIA_VISIBLE_DEVICES": uuids})
    assert code == 0
    assert "(NVIDIA_VISIBLE_DEVICES=<8 entries>;" in lines[2]


def _run_gpus(tmp_path: Path, expect: int, env: dict[str, str]) -> tuple[int, list[str]]:
    """Only the GPU check, with a dev dir that does not exist so the env is consulted."""
    out = io.StringIO()
    argv = ["--start-check", "--all", "--dev-dir", str(tmp_path / "no-dev"), "--nvidia-smi="]
    code = start_check.main([*argv, "--expect-gpus", str(expect)], environ=env, out=out)
    return code, out.getvalue().splitlines()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0,1", 2),
        ("GPU-6f2c", 1),
        ("0,,1", 2),
        ("", 0),
        ("none", 0),
        ("void", 0),
        ("-1", 0),
        ("0,-1,2", 1),  # CUDA stops at the first invalid index
        ("all", None),
        ("ALL", None),
    ],
)
def test_count_env_devices(value: str, expected: int | None) -> None:
    assert start_check._count_env_devices(value) == expected


def test_gpus_nvidia_smi_wins_over_device_nodes(node: FakeNode) -> None:
    """Nodes for 8 GPUs but the driver answers for 7: one fell off the bus."""
    node.gpus(*range(8))
    smi = node.nvidia_smi(gpu_count=7)
    code, lines = node.run("--expect-gpus", "8", nvidia_smi=str(smi))
    assert code == 12
    assert lines[2] == "start-check: FAIL gpus: expected 8 visible GPUs, found 7 (nvidia-smi -L)"


def test_gpus_nvidia_smi_found_on_path(node: FakeNode) -> None:
    smi = node.nvidia_smi(gpu_count=8)
    env = {"PATH": str(smi.parent)}
    code, lines = node.run("--expect-gpus", "8", environ=env, nvidia_smi=None)
    assert code == 0
    assert lines[2] == "start-check: OK gpus 8 visible == 8 expected (nvidia-smi -L)"


def test_gpus_failing_nvidia_smi_falls_back_to_nodes(node: FakeNode) -> None:
    node.gpus(0, 1)
    smi = node.nvidia_smi(gpu_count=0, exit_code=9)
    code, lines = node.run("--expect-gpus", "2", nvidia_smi=str(smi))
    assert code == 0
    assert lines[2] == (
        f"start-check: OK gpus 2 visible == 2 expected "
        f"({node.dev}/nvidia0..1; nvidia-smi -L exited 9)"
    )


def test_gpus_unrunnable_nvidia_smi_falls_back_to_nodes(node: FakeNode) -> None:
    node.gpus(0)
    code, lines = node.run("--expect-gpus", "1", nvidia_smi=str(node.base / "missing-smi"))
    assert code == 0
    assert lines[2].endswith(f"({node.dev}/nvidia0; nvidia-smi -L failed: FileNotFoundError)")


def test_gpus_zero_skips(node: FakeNode) -> None:
    code, lines = node.run("--expect-gpus", "0")
    assert code == 0
    assert lines[2] == "start-check: SKIP gpus: --expect-gpus is 0"


# --- dataset ------------------------------------------------------------------------------------


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "dataset"
    (path / "train").mkdir(parents=True)
    (path / "train" / "shard-00000.tar").write_bytes(b"x")
    (path / "train" / "shard-00001.tar").write_bytes(b"x")
    return path


def test_dataset_ok(node: FakeNode, dataset: Path) -> None:
    code, lines = node.run("--dataset-path", str(dataset))
    assert code == 0
    assert lines[3] == f"start-check: OK dataset {dataset} has at least 1 file"


def test_dataset_min_files_ok(node: FakeNode, dataset: Path) -> None:
    code, lines = node.run("--dataset-path", str(dataset), "--dataset-min-files", "2")
    assert code == 0
    assert lines[3] == f"start-check: OK dataset {dataset} has at least 2 files"


def test_dataset_too_few_files(node: FakeNode, dataset: Path) -> None:
    code, lines = node.run("--dataset-path", str(dataset), "--dataset-min-files", "3")
    assert code == CODES["dataset-empty"] == 14
    assert lines[3] == f"start-check: FAIL dataset: {dataset} has 2 files, need at least 3"


def test_dataset_missing(node: FakeNode, tmp_path: Path) -> None:
    path = tmp_path / "not-mounted"
    code, lines = node.run("--dataset-path", str(path))
    assert code == CODES["dataset-missing"] == 13
    assert lines[3] == f"start-check: FAIL dataset: {path} does not exist"


def test_dataset_under_a_file_is_missing(node: FakeNode, dataset: Path) -> None:
    path = dataset / "train" / "shard-00000.tar" / "sub"
    code, lines = node.run("--dataset-path", str(path))
    assert code == 13
    assert lines[3] == f"start-check: FAIL dataset: {path} does not exist"


def test_dataset_not_a_directory(node: FakeNode, dataset: Path) -> None:
    path = dataset / "train" / "shard-00000.tar"
    code, lines = node.run("--dataset-path", str(path))
    assert code == CODES["dataset-not-directory"] == 17
    assert lines[3] == f"start-check: FAIL dataset: {path} is not a directory"


def test_dataset_empty_ignores_dot_entries_and_empty_dirs(node: FakeNode, tmp_path: Path) -> None:
    path = tmp_path / "fresh-pv"
    (path / "lost+found").mkdir(parents=True)
    (path / ".snapshot" / "hourly.0").mkdir(parents=True)
    (path / ".snapshot" / "hourly.0" / "old.tar").write_bytes(b"x")
    (path / ".keep").touch()
    code, lines = node.run("--dataset-path", str(path))
    assert code == 14
    assert lines[3] == f"start-check: FAIL dataset: {path} is empty (no files)"


def test_dataset_follows_directory_symlinks_without_looping(
    node: FakeNode, dataset: Path, tmp_path: Path
) -> None:
    path = tmp_path / "linked"
    path.mkdir()
    (path / "train").symlink_to(dataset / "train", target_is_directory=True)
    (path / "loop").symlink_to(path, target_is_directory=True)
    code, lines = node.run("--dataset-path", str(path), "--dataset-min-files", "3")
    assert code == 14
    assert lines[3] == f"start-check: FAIL dataset: {path} has 2 files, need at least 3"


def test_dataset_unreadable(node: FakeNode, dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(path: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(start_check.os, "scandir", denied)  # root ignores chmod
    code, lines = node.run("--dataset-path", str(dataset))
    assert code == CODES["dataset-unreadable"] == 18
    assert lines[3] == f"start-check: FAIL dataset: cannot read {dataset}: Permission denied"


def test_dataset_count_stops_early(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i}").touch()
    assert start_check.count_dataset_files(str(tmp_path), 3) == 3
    assert start_check.count_dataset_files(str(tmp_path), 1000) == 50


# --- checkpoint ---------------------------------------------------------------------------------


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    path = tmp_path / "checkpoints"
    path.mkdir()
    return path


def _fake_statvfs(free: int) -> Any:
    return lambda path: SimpleNamespace(f_bavail=free // 4096, f_frsize=4096)


def test_checkpoint_writable_and_leaves_nothing(node: FakeNode, ckpt: Path) -> None:
    code, lines = node.run("--checkpoint-path", str(ckpt))
    assert code == 0
    assert lines[4] == f"start-check: OK checkpoint {ckpt} is writable"
    assert list(ckpt.iterdir()) == []


def test_checkpoint_missing(node: FakeNode, tmp_path: Path) -> None:
    path = tmp_path / "ckpt" / "run-1"
    code, lines = node.run("--checkpoint-path", str(path))
    assert code == CODES["checkpoint-not-writable"] == 15
    assert lines[4] == f"start-check: FAIL checkpoint: {path} does not exist"


def test_checkpoint_not_a_directory(node: FakeNode, ckpt: Path) -> None:
    path = ckpt / "file"
    path.touch()
    code, lines = node.run("--checkpoint-path", str(path))
    assert code == 15
    assert lines[4] == f"start-check: FAIL checkpoint: {path} is not a directory"


def test_checkpoint_create(node: FakeNode, ckpt: Path) -> None:
    path = ckpt / "team-a" / "run-1"
    code, lines = node.run("--checkpoint-path", str(path), "--checkpoint-create")
    assert code == 0
    assert lines[4] == f"start-check: OK checkpoint {path} is writable"
    assert path.is_dir()


def test_checkpoint_create_fails(node: FakeNode, ckpt: Path) -> None:
    (ckpt / "file").touch()
    path = ckpt / "file" / "run-1"
    code, lines = node.run("--checkpoint-path", str(path), "--checkpoint-create")
    assert code == 15
    assert lines[4] == f"start-check: FAIL checkpoint: cannot create {path}: Not a directory"


def test_checkpoint_read_only(node: FakeNode, ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def read_only(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(start_check.tempfile, "mkstemp", read_only)  # root ignores chmod
    code, lines = node.run("--checkpoint-path", str(ckpt))
    assert code == 15
    assert (
        lines[4] == f"start-check: FAIL checkpoint: cannot write to {ckpt}: Read-only file system"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through mode bits")
def test_checkpoint_permission_denied(node: FakeNode, ckpt: Path) -> None:
    ckpt.chmod(0o555)
    try:
        code, lines = node.run("--checkpoint-path", str(ckpt))
    finally:
        ckpt.chmod(0o755)
    assert code == 15
    assert lines[4] == f"start-check: FAIL checkpoint: cannot write to {ckpt}: Permission denied"


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EDQUOT])
def test_checkpoint_full_at_fsync_is_a_space_failure(
    node: FakeNode, ckpt: Path, monkeypatch: pytest.MonkeyPatch, err: int
) -> None:
    def full(fd: int) -> None:
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(start_check.os, "fsync", full)
    code, lines = node.run("--checkpoint-path", str(ckpt), "--all")
    assert code == CODES["checkpoint-space"] == 16
    assert lines[4] == f"start-check: FAIL checkpoint: cannot write to {ckpt}: {os.strerror(err)}"
    assert list(ckpt.iterdir()) == []  # the probe file was cleaned up


def test_checkpoint_space_ok(node: FakeNode, ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(start_check.os, "statvfs", _fake_statvfs(100 * GI))
    code, lines = node.run("--checkpoint-path", str(ckpt), "--checkpoint-min-free", "50Gi")
    assert code == 0
    assert lines[5] == f"start-check: OK checkpoint-space 100Gi free >= 50Gi ({ckpt})"


def test_checkpoint_space_short(
    node: FakeNode, ckpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(start_check.os, "statvfs", _fake_statvfs(100 * GI))
    code, lines = node.run("--checkpoint-path", str(ckpt), "--checkpoint-min-free", "200Gi")
    assert code == CODES["checkpoint-space"] == 16
    assert lines[5] == f"start-check: FAIL checkpoint-space: need 200Gi free, {ckpt} has 100Gi"


def test_checkpoint_space_real_statvfs(node: FakeNode, ckpt: Path) -> None:
    code, lines = node.run("--checkpoint-path", str(ckpt), "--checkpoint-min-free", "1Ki")
    assert code == 0
    assert lines[5].startswith("start-check: OK checkpoint-space ")


def test_checkpoint_space_skipped_when_path_unusable(node: FakeNode, tmp_path: Path) -> None:
    path = tmp_path / "nope"
    code, lines = node.run("--checkpoint-path", str(path), "--checkpoint-min-free", "1Gi", "--all")
    assert code == 15
    assert lines[4:] == [
        f"start-check: FAIL checkpoint: {path} does not exist",
        "start-check: SKIP checkpoint-space: checkpoint path is not usable",
        "start-check: failed: checkpoint (exit 15)",
    ]


# --- the run as a whole -------------------------------------------------------------------------


def test_all_pass_prints_one_line_per_check(
    node: FakeNode, dataset: Path, ckpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(start_check.os, "statvfs", _fake_statvfs(2 * 2**40))
    node.cgroup_v2(memory_max=str(64 * GI), cpu_max="800000 100000")
    node.gpus(*range(8))
    code, lines = node.run(
        "--min-memory=32Gi",
        "--min-cpus=8",
        "--expect-gpus=8",
        f"--dataset-path={dataset}",
        f"--checkpoint-path={ckpt}",
        "--checkpoint-min-free=1Ti",
    )
    assert code == 0
    assert lines == [
        "start-check: OK memory 64Gi >= 32Gi (cgroup v2 memory.max)",
        "start-check: OK cpus 8 >= 8 (cgroup v2 cpu.max)",
        f"start-check: OK gpus 8 visible == 8 expected ({node.dev}/nvidia0..7)",
        f"start-check: OK dataset {dataset} has at least 1 file",
        f"start-check: OK checkpoint {ckpt} is writable",
        f"start-check: OK checkpoint-space 2Ti free >= 1Ti ({ckpt})",
        "start-check: passed (6 ok, 0 skipped)",
    ]


def test_nothing_configured_skips_everything(node: FakeNode) -> None:
    code, lines = node.run()
    assert code == 0
    assert lines == [
        "start-check: SKIP memory: no --min-memory",
        "start-check: SKIP cpus: no --min-cpus",
        "start-check: SKIP gpus: --expect-gpus is 0",
        "start-check: SKIP dataset: no --dataset-path",
        "start-check: SKIP checkpoint: no --checkpoint-path",
        "start-check: SKIP checkpoint-space: no --checkpoint-min-free",
        "start-check: passed (0 ok, 6 skipped)",
    ]


def test_fail_fast_stops_at_first_failure(node: FakeNode, tmp_path: Path) -> None:
    node.cgroup_v2(memory_max=str(8 * GI))
    smi = node.nvidia_smi(gpu_count=8)
    marker = tmp_path / "smi-ran"
    smi.write_text(f"#!/bin/sh\ntouch {marker}\n")
    code, lines = node.run(
        "--min-memory=16Gi",
        "--expect-gpus=8",
        f"--dataset-path={tmp_path / 'x'}",
        nvidia_smi=str(smi),
    )
    assert code == 10
    assert lines == [
        "start-check: FAIL memory: need 16Gi, container has 8Gi (cgroup v2 memory.max)",
        "start-check: failed: memory (exit 10)",
    ]
    assert not marker.exists()  # later probes never ran


def test_all_reports_every_failure_with_first_code(node: FakeNode, tmp_path: Path) -> None:
    node.cgroup_v2(memory_max=str(8 * GI), cpu_max="200000 100000")
    node.gpus(0, 1, 2, 3)
    missing = tmp_path / "x"
    code, lines = node.run(
        "--all", "--min-memory=16Gi", "--min-cpus=1", "--expect-gpus=8", f"--dataset-path={missing}"
    )
    assert code == 10
    assert lines == [
        "start-check: FAIL memory: need 16Gi, container has 8Gi (cgroup v2 memory.max)",
        "start-check: OK cpus 2 >= 1 (cgroup v2 cpu.max)",
        f"start-check: FAIL gpus: expected 8 visible GPUs, found 4 ({node.dev}/nvidia0..3)",
        f"start-check: FAIL dataset: {missing} does not exist",
        "start-check: SKIP checkpoint: no --checkpoint-path",
        "start-check: SKIP checkpoint-space: no --checkpoint-min-free",
        "start-check: failed: memory, gpus, dataset (exit 10)",
    ]


def test_all_prefers_a_config_error_over_a_probe_error(node: FakeNode) -> None:
    """Retrying cannot fix the CPU shortfall, so the pod must exit with the non-retryable code."""
    node.cgroup_v2(memory_max="max", cpu_max="100000 100000")
    code, lines = node.run("--all", "--min-memory=1Gi", "--min-cpus=2")
    assert code == 11
    assert lines[-1] == "start-check: failed: memory, cpus (exit 11)"


def test_bug_exits_1_with_a_line(
    node: FakeNode, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(start_check, "check_dataset", boom)
    code, lines = node.run()
    assert code == CODES["internal-error"] == 1
    assert lines[-1] == "start-check: FAIL internal error: RuntimeError('boom')"
    assert "Traceback" in capsys.readouterr().err
