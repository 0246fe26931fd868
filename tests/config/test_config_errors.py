"""Bad stack config fails with the stack file, the key path and the problem; all at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra.config import ConfigError, validate_platform_config
from tests.harness import stack_config

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(config: dict[str, Any]) -> None:
        target: Any = config
        parts = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = value

    return mutate


def _delete(path: str) -> Mutation:
    def mutate(config: dict[str, Any]) -> None:
        target: Any = config
        parts = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parts[:-1]:
            target = target[part]
        del target[parts[-1]]

    return mutate


def _duplicate_research(config: dict[str, Any]) -> None:
    """teams[2] renamed research, without its worker pool (which would name a lost team)."""
    config["teams"][2]["name"] = "research"
    del config["workloads"][4]


def _priority_classes(**changes: dict[str, Any]) -> list[dict[str, Any]]:
    classes: list[dict[str, Any]] = [
        {"name": "critical", "value": 100000},
        {"name": "high", "value": 10000},
        {"name": "normal", "value": 1000, "globalDefault": True},
        {"name": "batch-low", "value": 100, "preemptionPolicy": "Never"},
    ]
    for item in classes:
        item.update(changes.get(item["name"].replace("-", "_"), {}))
    return classes


BAD_CONFIGS: list[tuple[str, Mutation, str]] = [
    (
        "negative GPU quota",
        _set("teams.2.quota.gpus", -1),
        "ai-platform:teams[platform].quota.gpus: must be >= 0, got -1",
    ),
    (
        "unknown top-level key",
        _set("teamz", []),
        "ai-platform:teamz: unknown key; did you mean 'teams'?",
    ),
    (
        "unknown nested key",
        _set("teams.0.quota.gpu", 4),
        "ai-platform:teams[research].quota.gpu: unknown key; did you mean 'gpus'?",
    ),
    (
        "snake_case key",
        _set("cluster.kubeconfig_context", "x"),
        "ai-platform:cluster.kubeconfig_context: unknown key; did you mean 'kubeconfigContext'?",
    ),
    (
        "team name not DNS-1123",
        _set("teams.1.name", "Search_Serving"),
        "ai-platform:teams[Search_Serving].name: must be a DNS-1123 label (lower-case letters, "
        "digits and '-', starting and ending with a letter or digit, at most 63 characters), got "
        "'Search_Serving'",
    ),
    (
        "duplicate team name",
        _duplicate_research,
        "ai-platform:teams[research].name: duplicate team name 'research' (first used by "
        "teams[0]); it is teams[2], one of 2 entries named 'research'",
    ),
    (
        "quota not a quantity",
        _set("teams.0.quota.memory", "lots"),
        "ai-platform:teams[research].quota.memory: must be a Kubernetes quantity such as '4', "
        "'500m' or '16Gi', got 'lots'",
    ),
    (
        "two default storage classes",
        _set("storage.classes.1.default", True),
        "ai-platform:storage.classes: exactly one storage class must set default: true, found "
        "'checkpoints-local', 'datasets-nfs'",
    ),
    (
        "no default storage class",
        _set("storage.classes.0.default", False),
        "ai-platform:storage.classes: exactly one storage class must set default: true, found none",
    ),
    (
        "unknown priority class on a team",
        _set("teams.0.priorityClasses", ["high", "urgent"]),
        "ai-platform:teams[research].priorityClasses[1]: unknown priority class 'urgent'; defined: "
        "batch-low, critical, high, normal",
    ),
    (
        "missing required key",
        _delete("cluster.kubeconfigContext"),
        "ai-platform:cluster.kubeconfigContext: required key is missing",
    ),
    (
        "bad environment",
        _set("cluster.environment", "production"),
        "ai-platform:cluster.environment: must be one of 'dev', 'staging' or 'prod', "
        "got 'production'",
    ),
    (
        "default limit below default request",
        _set("teams.1.containerDefaults.limits.memory", "2Gi"),
        "ai-platform:teams[search-serving].containerDefaults.limits.memory: default limit 2Gi is "
        "below the default request 4Gi",
    ),
    (
        "volume on an unknown storage class",
        _set("teams.0.volumes.0.storageClass", "fast-ssd"),
        "ai-platform:teams[research].volumes[datasets].storageClass: unknown storage class "
        "'fast-ssd'; defined: checkpoints-local, datasets-nfs",
    ),
    (
        "reserved namespace",
        _set("teams.2.namespace", "kube-system"),
        "ai-platform:teams[platform].namespace: namespace 'kube-system' is reserved for the "
        "system or the platform",
    ),
    (
        "platform-owned env var",
        _set("teams.0.env.TRAINING_ENV", "prod"),
        "ai-platform:teams[research].env.TRAINING_ENV: is set by the platform; remove it",
    ),
    (
        "wrong type for a list",
        _set("teams", {"research": {}}),
        "ai-platform:teams: must be a list, got a mapping",
    ),
    (
        "two global default priority classes",
        _set("priorityClasses", _priority_classes(critical={"globalDefault": True})),
        "ai-platform:priorityClasses: exactly one priority class must set globalDefault: true, "
        "found 'critical', 'normal'",
    ),
    (
        "priority value in the system range",
        _set("priorityClasses", _priority_classes(critical={"value": 2_000_000_000})),
        "ai-platform:priorityClasses[critical].value: must be <= 1000000000, got 2000000000",
    ),
    (
        "volumes above the storage quota",
        _set("teams.0.quota.storage", "1Ti"),
        "ai-platform:teams[research].volumes: the team's volumes add up to 3Ti (datasets 2Ti + "
        "checkpoints 1Ti), above its storage quota of 1Ti",
    ),
]


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [(m, e) for _, m, e in BAD_CONFIGS],
    ids=[i for i, _, _ in BAD_CONFIGS],
)
def test_bad_config_names_file_path_and_problem(mutation: Mutation, expected: str) -> None:
    config = stack_config("dev")
    mutation(config)
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, "Pulumi.dev.yaml")
    lines = [f"{caught.value.source}: {i.key_path}: {i.message}" for i in caught.value.issues]
    assert lines == [f"Pulumi.dev.yaml: {expected}"]


def test_all_errors_are_listed_at_once() -> None:
    config = stack_config("prod")
    config["teams"][2]["quota"]["gpus"] = -1
    config["teams"][0]["quota"]["cpu"] = "many"
    config["clustr"] = {}
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, "Pulumi.prod.yaml")
    text = caught.value.render()
    assert text.splitlines() == [
        "3 stack config errors:",
        "  Pulumi.prod.yaml: ai-platform:teams[research].quota.cpu: must be a Kubernetes quantity "
        "such as '4', '500m' or '16Gi', got 'many'",
        "  Pulumi.prod.yaml: ai-platform:teams[platform].quota.gpus: must be >= 0, got -1",
        "  Pulumi.prod.yaml: ai-platform:clustr: unknown key; did you mean 'cluster'?",
        "not checked until the errors above are fixed:",
        "  - ai-platform:teams[research]: its cross-field checks, and those of the entries that "
        "refer to it (workloads needing redis have it, workload priority classes, workload "
        "volumes, workloads fit team quota, workload claims fit team quota, serving floor fits "
        "team quota, workloads fit queues, default queue work fits, workloads have team redis, "
        "workload env leaves redis to platform, gpu workloads are queued, team pairs are "
        "declared)",
        "  - ai-platform:teams[platform]: its cross-field checks",
        "  - pool quotas fit capacity: not run (reads ai-platform:teams[research])",
    ]


def test_prod_refuses_storage_that_deletes_volumes() -> None:
    config = stack_config("prod")
    config["storage"]["classes"][1]["reclaimPolicy"] = "Delete"
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, "Pulumi.prod.yaml")
    assert [i.key_path for i in caught.value.issues] == [
        "ai-platform:storage.classes[datasets-efs].reclaimPolicy"
    ]


def test_checked_in_stacks_are_valid() -> None:
    for stack in ("dev", "prod"):
        config = validate_platform_config(stack_config(stack), f"Pulumi.{stack}.yaml")
        assert len(config.teams) >= 3
