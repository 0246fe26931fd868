"""Config errors of Ray workloads: every message, at the key the user edits, before anything
registers; a Ray cluster's minimum (head and minimum workers) must fit its pool and its queue."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, validate_platform_config
from tests.harness import stack_config


def _ray_lab(config: dict[str, Any]) -> dict[str, Any]:
    return next(w for w in config["workloads"] if w["name"] == "ray-lab")


def _ray_sweep(config: dict[str, Any]) -> dict[str, Any]:
    return next(w for w in config["workloads"] if w["name"] == "ray-sweep")


def _errors(config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, "Pulumi.dev.yaml")
    return [f"{i.key_path}: {i.message}" for i in caught.value.issues]


def test_the_dev_stack_is_valid() -> None:
    validate_platform_config(stack_config("dev"), "Pulumi.dev.yaml")


def test_a_cluster_whose_minimum_cannot_fit_the_pool_at_once_is_refused() -> None:
    config = stack_config("dev")
    cluster = _ray_lab(config)
    cluster["gpus"] = {"pool": "lab-a100", "count": 4}
    cluster["resources"] = {"cpu": "4", "memory": "16Gi"}
    cluster["rayCluster"] = {"minWorkers": 3, "maxWorkers": 3}
    errors = _errors(config)
    assert (
        "ai-platform:workloads[ray-lab].rayCluster.minWorkers: the cluster's minimum 3 workers x "
        "4 nvidia.com/gpu must run at once, but pool 'lab-a100' holds at most 2: 2 nodes (its "
        "node list) x 1 worker per node (4 GPUs / 4 per worker); it has 8 nvidia.com/gpu in "
        "all, the cluster needs 12"
    ) in errors


def test_only_the_minimum_must_fit_the_pool_at_once() -> None:
    config = stack_config("dev")
    cluster = _ray_lab(config)
    cluster["gpus"] = {"pool": "lab-a100", "count": 4}
    cluster["resources"] = {"cpu": "4", "memory": "16Gi"}
    cluster["rayCluster"] = {"minWorkers": 1, "maxWorkers": 2}
    validate_platform_config(config, "Pulumi.dev.yaml")


def test_a_ray_job_whose_workers_cannot_fit_the_pool_at_once_is_refused() -> None:
    config = stack_config("dev")
    job = _ray_sweep(config)
    job["gpus"] = {"pool": "lab-a100", "count": 3}
    job["resources"] = {"cpu": "4", "memory": "16Gi"}
    job["rayJob"]["workers"] = 3
    assert (
        "ai-platform:workloads[ray-sweep].rayJob.workers: the Ray job's 3 workers x 3 "
        "nvidia.com/gpu must run at once, but pool 'lab-a100' holds at most 2: 2 nodes (its node "
        "list) x 1 worker per node (4 GPUs / 3 per worker); it has 8 nvidia.com/gpu in all, the "
        "Ray job needs 9"
    ) in _errors(config)


def test_a_queued_cluster_whose_head_and_minimum_exceed_the_queue_is_refused() -> None:
    config = stack_config("dev")
    cluster = _ray_lab(config)
    # 3 workers x 20 CPU + the head's 2 + the autoscaler's 0.5: above the 48 + 16 the queue
    # admits on lab-a100, though 3 x 20 alone would fit.
    cluster["resources"] = {"cpu": "20", "memory": "32Gi"}
    cluster["rayCluster"] = {"minWorkers": 3, "maxWorkers": 3}
    validate_platform_config(config, "Pulumi.dev.yaml")  # 62.5 fits 64
    cluster["resources"] = {"cpu": "21", "memory": "32Gi"}
    errors = _errors(config)
    assert (
        "ai-platform:workloads[ray-lab].resources.cpu: the cluster's head and minimum workers "
        "need 65.5 cpu at once, more than the queue of team 'research' can ever admit on pool "
        "'lab-a100' (nominal 48 + borrowing 16)"
    ) in errors


def test_the_workers_range_is_a_range() -> None:
    config = stack_config("dev")
    _ray_lab(config)["rayCluster"] = {"minWorkers": 2, "maxWorkers": 1}
    assert _errors(config) == [
        "ai-platform:workloads[ray-lab].rayCluster.maxWorkers: maxWorkers 1 is below minWorkers 2"
    ]


def test_a_ray_job_needs_its_block_and_ray_kinds_take_no_command() -> None:
    config = stack_config("dev")
    job = _ray_sweep(config)
    del job["rayJob"]
    job["command"] = ["python"]
    assert _errors(config) == [
        "ai-platform:workloads[ray-sweep].command: not for Ray workloads: KubeRay starts Ray in "
        "every pod; a ray-job runs rayJob.entrypoint",
        "ai-platform:workloads[ray-sweep].rayJob: required for kind 'ray-job' (its entrypoint)",
    ]


def test_a_settings_block_is_only_for_its_kind() -> None:
    config = stack_config("dev")
    _ray_lab(config)["rayJob"] = {"entrypoint": "python x.py"}
    _ray_lab(config)["training"] = {"nodes": 1}
    assert _errors(config) == [
        "ai-platform:workloads[ray-lab].training: only for kind 'training'",
        "ai-platform:workloads[ray-lab].rayJob: only for kind 'ray-job'",
    ]


def test_gcs_fault_tolerance_needs_the_team_redis() -> None:
    config = stack_config("dev")
    config["teams"][0]["redis"]["enabled"] = False  # research's Redis, and its one client
    config["workloads"][0]["training"]["publishStatus"] = False
    _ray_lab(config)["rayCluster"]["gcsFaultTolerance"] = True
    assert _errors(config) == [
        "ai-platform:workloads[ray-lab].rayCluster.gcsFaultTolerance: needs the Redis of team "
        "'research', and the team has none; turn gcsFaultTolerance off (a head restart then "
        "restarts the cluster's work)"
    ]


def test_the_head_shared_memory_fits_its_memory_limit() -> None:
    config = stack_config("dev")
    _ray_lab(config)["rayCluster"]["head"] = {"resources": {"cpu": "2", "memory": "4Gi"}}
    assert _errors(config) == [
        "ai-platform:workloads[ray-lab].rayCluster.shmSize: shared memory 4Gi would take all of "
        "the head's 4Gi memory limit (a memory-backed /dev/shm counts against it)"
    ]


def test_ray_kinds_reserve_what_kuberay_sets() -> None:
    config = stack_config("dev")
    _ray_lab(config)["env"] = {"RAY_ADDRESS": "ray://elsewhere:10001"}
    assert _errors(config) == [
        "ai-platform:workloads[ray-lab].env.RAY_ADDRESS: is set by the platform; remove it"
    ]


def test_max_workers_beyond_the_team_quota_are_refused() -> None:
    config = stack_config("dev")
    cluster = _ray_lab(config)
    cluster["rayCluster"] = {"minWorkers": 1, "maxWorkers": 9}
    errors = _errors(config)
    assert (
        "ai-platform:workloads[ray-lab].gpus.count: needs 9 nvidia.com/gpu at its peak (9 pods "
        "x 1), above the quota of team 'research' (8)"
    ) in errors
