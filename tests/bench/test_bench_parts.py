"""The benchmark's own parts: the median's interval, the ratio targets, the per-step CPU worker
and the no-op pack. No timings are asserted: only what is computed from them, and that the
workers measure what they say."""

from __future__ import annotations

import json
import math
import resource
import time
from pathlib import Path
from typing import Any

import pytest

from bench import measure
from bench.measure import PROJECT_ROOT, filesystem_of, ram_folder
from bench.policy_load import NOOP_PACK, repeat_records, run_policy_load
from bench.report import PER_RESOURCE_GROWTH, PROGRAM_OVER_FLOOR, STABILITY, evaluate
from bench.stats import half_width, median_interval, spread
from bench.steps import _thread_cpu_clock, foreign_threads_cpu
from bench.steps import main as steps_main


def test_median_interval_is_the_order_statistics_of_the_binomial() -> None:
    # n = 10: P(X <= 1) = 11/1024 <= 2.5% < P(X <= 2): the 2nd and 9th values.
    assert median_interval([float(v) for v in range(10, 0, -1)]) == (2.0, 9.0)
    # n = 30: the 10th and 21st values.
    assert median_interval([float(v) for v in range(1, 31)]) == (10.0, 21.0)


def test_too_few_values_have_no_interval_narrower_than_their_range() -> None:
    values = [1.0, 1.1, 1.2, 1.3, 1.4]
    assert median_interval(values) == (1.0, 1.4)
    assert math.isinf(half_width(values))
    assert spread(values)["halfWidth"] is None
    assert spread([*values, 1.2])["halfWidth"] is not None


def _entry(resources: int, ratios: list[float], steps: dict[str, float]) -> dict[str, Any]:
    return {
        "resources": resources,
        "programOverFloor": sorted(ratios)[len(ratios) // 2],
        "programOverFloorSpread": spread(ratios),
        "programCpuSeconds": 1.0,
        "floorCpuSeconds": 1.0,
        "cpuSeconds": sum(steps.values()),
        "stepsCpu": steps,
    }


def _verdicts(results: dict[str, Any]) -> dict[str, bool]:
    return {target.name: target.passed for target in evaluate(results)}


def test_targets_are_ratios_of_figures_from_the_same_run() -> None:
    steps_100 = {"config": 0.1, "program": 4.0, "render": 0.4, "schema": 1.0, "policy": 2.0}
    # Ten times the resources: linear steps cost ten times as much; render grows 30 times.
    steps_1000 = {k: v * 10 for k, v in steps_100.items()} | {"render": 12.0}
    firm = [1.10 + 0.001 * i for i in range(12)]
    loose = [1.0, 1.3, 1.05, 1.25, 1.1, 1.2, 1.12, 1.15]
    results = {
        "stacks": {"prod": _entry(150, loose, steps_100)},
        "scaling": [
            {"workloads": 100, **_entry(1000, firm, steps_100)},
            {"workloads": 1000, **_entry(10000, [PROGRAM_OVER_FLOOR + 0.01] * 8, steps_1000)},
        ],
    }
    verdicts = _verdicts(results)
    assert verdicts["program under mocks vs SDK floor, 100 workloads"]
    assert not verdicts["program under mocks vs SDK floor, 1000 workloads"]
    assert verdicts["program/floor median firm, 100 workloads"]
    assert not verdicts["program/floor median firm, prod"]  # spread wider than STABILITY
    assert half_width(loose) > STABILITY
    assert verdicts["program step: CPU per resource at 1,000 vs 100 workloads"]
    assert not verdicts["render step: CPU per resource at 1,000 vs 100 workloads"]
    assert PER_RESOURCE_GROWTH < 3.0
    assert verdicts["schema step below the program run, prod"]


def test_growth_of_a_step_is_judged_on_the_previews_without_the_pack_when_there_are_some() -> None:
    steps_100 = {"config": 0.1, "program": 4.0, "render": 0.4, "schema": 1.0, "policy": 2.0}
    # Beside the pack, render grew 3x per resource; by itself, with the stack.
    beside = {k: v * 10 for k, v in steps_100.items()} | {"render": 12.0}
    alone_100 = {k: v for k, v in steps_100.items() if k != "policy"}
    alone_1000 = {k: v * 10 for k, v in alone_100.items()} | {"policy": 99.0}
    small = {"workloads": 100, **_entry(1000, [1.1] * 8, steps_100), "stepsCpuAlone": alone_100}
    large = {"workloads": 1000, **_entry(10000, [1.1] * 8, beside)}
    name = "render step: CPU per resource at 1,000 vs 100 workloads"
    results: dict[str, Any] = {"stacks": {}, "scaling": [small, large]}
    assert not _verdicts(results)[name]  # only one size has them: both judged beside the pack
    large["stepsCpuAlone"] = alone_1000
    assert _verdicts(results)[name]
    # The policy step's growth is its own, from the previews with the pack.
    assert _verdicts(results)["policy step: CPU per resource at 1,000 vs 100 workloads"]
    measured = {t.name: t.measured for t in evaluate(results)}
    assert "without the pack" in measured[name]


def test_a_thread_cpu_clock_reads_the_thread_it_names() -> None:
    import threading

    def burn() -> None:
        end = time.thread_time() + 0.1
        while time.thread_time() < end:
            pass

    worker = threading.Thread(target=burn)
    worker.start()
    worker.join()
    mine = time.clock_gettime(_thread_cpu_clock(threading.get_native_id()))
    assert abs(mine - time.thread_time()) < 0.005
    assert time.process_time() - mine >= 0.09  # the other thread's CPU is not in this clock


def test_threads_python_started_are_not_counted_as_foreign() -> None:
    import threading

    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        foreign = foreign_threads_cpu()
        assert worker.native_id not in foreign
        assert threading.get_native_id() not in foreign
    finally:
        stop.set()
        worker.join()


def test_a_grpc_channels_threads_are_foreign(tmp_path: Path) -> None:
    import grpc

    channel = grpc.insecure_channel(f"unix:{tmp_path / 'none.sock'}")
    try:
        with pytest.raises(grpc.FutureTimeoutError):
            grpc.channel_ready_future(channel).result(timeout=0.2)
        assert foreign_threads_cpu()  # gRPC's own threads: what bench.steps gives the policy step
    finally:
        channel.close()


def test_the_work_folder_is_a_ram_filesystem_or_none(monkeypatch, tmp_path: Path) -> None:
    assert filesystem_of(Path("/proc/self")) == "proc"
    found = ram_folder()
    assert found is None or filesystem_of(found) == "tmpfs"
    monkeypatch.setattr(measure, "RAM_FOLDER", tmp_path / "missing")
    assert ram_folder() is None
    monkeypatch.setattr(measure, "RAM_FOLDER", tmp_path)
    assert ram_folder() is None or filesystem_of(tmp_path) == "tmpfs"


def test_steps_worker_records_every_steps_cpu(tmp_path: Path) -> None:
    cpu_file = tmp_path / "cpu.json"
    args = ["--stack", "dev", "--out", str(tmp_path), "--quiet", "--no-policies"]
    assert steps_main([str(cpu_file), "--", *args]) == 0
    cpu = json.loads(cpu_file.read_text(encoding="utf-8"))["cpuSeconds"]
    assert set(cpu) == {"config", "program", "render", "schema"}
    assert set(cpu) == set(json.loads((tmp_path / "dev" / "report.json").read_text())["timings"])
    assert cpu["program"] > 0


def test_steps_worker_counts_the_policy_packs_processes_in_the_policy_step(tmp_path: Path) -> None:
    # The pack is launched before the program and reaped after the report: its CPU is the
    # policy step's all the same.
    cpu_file = tmp_path / "cpu.json"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = time.process_time()
    args = ["--stack", "dev", "--out", str(tmp_path), "--quiet"]
    assert steps_main([str(cpu_file), "--", *args]) == 0
    own = time.process_time() - own
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    packs = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    cpu = json.loads(cpu_file.read_text(encoding="utf-8"))["cpuSeconds"]
    assert packs > 0
    assert cpu["policy"] >= round(packs, 4)
    # The policy step runs beside render and schema: what its thread used is not theirs too.
    assert sum(cpu.values()) - packs <= own + 0.01


def test_steps_worker_refuses_a_command_line_without_its_separator(capsys) -> None:
    assert steps_main(["cpu.json", "--stack", "dev"]) == 2
    assert "usage" in capsys.readouterr().err


@pytest.fixture(scope="module")
def prod_records() -> list[dict[str, Any]]:
    head = "urn:pulumi:prod::ai-platform::"
    return [
        {
            "urn": f"{head}kubernetes:core/v1:ConfigMap::cm",
            "type": "kubernetes:core/v1:ConfigMap",
            "name": "cm",
            "custom": True,
            "parent": "",
            "inputs": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
            "options": {},
        }
    ]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_noop_pack_runs_through_the_driver_and_finds_nothing(prod_records) -> None:
    before = _children_cpu()
    result = run_policy_load(
        PROJECT_ROOT, repeat_records(prod_records, 3), None, "prod", pack_dir=NOOP_PACK
    )
    packs = _children_cpu() - before
    assert result.resources == 3
    assert result.violations == 0
    # The pack processes were reaped and their CPU counted, not only the driver's.
    assert packs > 0
    assert result.cpu_seconds >= packs
