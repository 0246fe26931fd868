"""Bad ``ai-platform:teams[].redis`` config, and workloads that need a team Redis, fail with the
key path and an exact message.

Indices refer to the checked-in stacks: teams[0] research (with a Redis in both stacks),
teams[1] search-serving (none); workloads[0] llama-finetune, [1] llama-eval (research),
[2] llm-chat, [3] embeddings (search-serving).
"""

from __future__ import annotations

import pytest

from infra.config import validate_platform_config
from tests.config.test_config_errors import _set
from tests.config.test_gpu_config_errors import Mutation, _all
from tests.harness import config_error_lines, stack_config

BAD_REDIS: list[tuple[str, str, Mutation, str | tuple[str, ...]]] = [
    (
        "unknown eviction policy",
        "dev",
        _set("teams.0.redis.evictionPolicy", "lru"),
        "ai-platform:teams[research].redis.evictionPolicy: must be one of 'noeviction', "
        "'allkeys-lru', 'allkeys-lfu', 'allkeys-random', 'volatile-lru', 'volatile-lfu', "
        "'volatile-random' or 'volatile-ttl', got 'lru'",
    ),
    (
        "unknown storage class",
        "dev",
        _set("teams.0.redis.storageClass", "fast"),
        "ai-platform:teams[research].redis.storageClass: unknown storage class 'fast'; "
        "defined: checkpoints-local, datasets-nfs",
    ),
    (
        "maxmemory above 90% of the limit",
        "dev",
        _set("teams.0.redis.maxmemory", "1000Mi"),
        "ai-platform:teams[research].redis.maxmemory: 1000Mi leaves Redis too little of its "
        "memory limit of 1Gi: at most 921Mi (90%); client and pub/sub buffers and the "
        "append-only file's rewrite live outside maxmemory, and at the limit the kernel kills "
        "the server",
    ),
    (
        "maxmemory zero",
        "dev",
        _set("teams.0.redis.maxmemory", "0"),
        "ai-platform:teams[research].redis.maxmemory: must be at least 1Mi (0 would let Redis "
        "grow into its OOM kill), got 0",
    ),
    (
        "priority class the team may not use",
        "dev",
        _set("teams.0.redis.priorityClass", "critical"),
        "ai-platform:teams[research].redis.priorityClass: priority class 'critical' is not "
        "allowed for team 'research' (the cluster would refuse the server's pod); set one of: "
        "high, normal, batch-low",
    ),
    (
        "status channel with a space",
        "dev",
        _set("teams.0.redis.statusChannel", "training status"),
        "ai-platform:teams[research].redis.statusChannel: must be a channel name of letters, "
        "digits, '_', '.', ':' and '-' (starting with a letter or digit, at most 128 "
        "characters), got 'training status'",
    ),
    (
        "password revision zero",
        "dev",
        _set("teams.0.redis.passwordRevision", 0),
        "ai-platform:teams[research].redis.passwordRevision: must be >= 1, got 0",
    ),
    (
        "the volume overflows the storage quota",
        "dev",
        _set("teams.0.redis.size", "2Ti"),
        "ai-platform:teams[research].redis.size: the team's volumes (3Ti) and its Redis volume "
        "(2Ti) add up to 5Ti, above its storage quota of 4Ti",
    ),
    (
        "the server does not fit the default queue",
        "dev",
        _set("teams.0.redis.cpu", "3"),
        "ai-platform:teams[research].redis.cpu: the server pod needs 3.05 cpu (with its "
        "exporter) through the default queue of team 'research', which admits 2: the namespace "
        "quota of 66 less the 64 its GPU queue may take. Raise teams[research].quota.cpu to "
        "67.05 or lower the queue's cpu; Kueue admits the server (it names no queue) through "
        "the default queue",
    ),
    (
        "the server does not fit the namespace quota",
        "dev",
        _set("teams.0.redis.memory", "1Ti"),
        "ai-platform:teams[research].redis.memory: the server pod needs 1048640Mi memory (with "
        "its exporter), above the quota of team 'research' (514Gi)",
    ),
    (
        "a status channel for a team without a Redis",
        "dev",
        _set("workloads.2.statusChannel", "serving_status"),
        "ai-platform:workloads[llm-chat].statusChannel: a status channel needs the team Redis, "
        "and team 'search-serving' has none; set teams[search-serving].redis.enabled: true",
    ),
    (
        "publishing status in a team whose Redis is off",
        "dev",
        _all(
            _set("teams.0.redis.enabled", False),
            _set("workloads.0.training.publishStatus", True),
        ),
        "ai-platform:workloads[llama-finetune].training.publishStatus: publishing status needs "
        "the team Redis, and team 'research' has none; set teams[research].redis.enabled: true",
    ),
    (
        "publishing status without a command",
        "dev",
        _all(
            _set("workloads.0.training.publishStatus", True),
            _set("workloads.0.command", []),
        ),
        "ai-platform:workloads[llama-finetune].training.publishStatus: the status publisher "
        "runs the trainer's command and reports on it; set the workload's command (the image's "
        "entrypoint cannot be wrapped)",
    ),
    (
        "REDIS_URL in the env of a team with a Redis",
        "dev",
        _set("workloads.1.env", {"REDIS_URL": "redis://elsewhere:6379/0"}),
        "ai-platform:workloads[llama-eval].env.REDIS_URL: is set by the platform for the "
        "workloads of a team with a Redis (the team Redis Secret); remove it",
    ),
    (
        "a worker pool of a team without a Redis",
        "dev",
        _set("teams.2.redis.enabled", False),
        "ai-platform:workloads[pipeline-workers].kind: a worker pool (its Celery broker) needs "
        "the team Redis, and team 'platform' has none; set teams[platform].redis.enabled: true",
    ),
    (
        "the Redis volume is one PVC too many",
        "dev",
        _set("teams.0.quota.persistentVolumeClaims", 2),
        # Reported once, on the team: the workload rule counts only what crosses the line later.
        "ai-platform:teams[research].redis: the team's 2 volumes and its Redis volume exceed its "
        "quota of 2 PVCs",
    ),
    (
        "a workload claim crosses the PVC quota the Redis volume counts against",
        "dev",
        _set("teams.0.quota.persistentVolumeClaims", 3),
        "ai-platform:workloads[llama-finetune].training.checkpoints.size: the volumes and "
        "workload claims of team 'research' add up to 4 PVCs (datasets + checkpoints + "
        "team-redis-data + llama-finetune-checkpoints), above its quota of 3",
    ),
]


@pytest.mark.parametrize(
    ("stack", "mutation", "expected"),
    [pytest.param(stack, m, e, id=name) for name, stack, m, e in BAD_REDIS],
)
def test_bad_redis_config_names_path_and_problem(
    stack: str, mutation: Mutation, expected: str | tuple[str, ...]
) -> None:
    wanted = (expected,) if isinstance(expected, str) else expected
    assert config_error_lines(stack, mutation) == [f"Pulumi.{stack}.yaml: {w}" for w in wanted]


def test_a_team_has_no_redis_unless_it_asks() -> None:
    config = validate_platform_config(stack_config("dev"), "Pulumi.dev.yaml")
    redis = {team.name: team.redis for team in config.teams}
    assert not redis["search-serving"].enabled
    assert redis["research"].enabled
    # The broker's default: at maxmemory writes fail, nothing is evicted silently.
    assert redis["research"].eviction_policy == "noeviction"
    assert redis["research"].status_channel == "training_status"


def test_maxmemory_defaults_to_three_quarters_of_the_limit() -> None:
    config = validate_platform_config(stack_config("dev"), "Pulumi.dev.yaml")
    assert config.teams[0].redis.maxmemory_bytes() == 768 * 1024 * 1024
    changed = stack_config("dev")
    changed["teams"][0]["redis"]["maxmemory"] = "900Mi"
    explicit = validate_platform_config(changed, "Pulumi.dev.yaml")
    assert explicit.teams[0].redis.maxmemory_bytes() == 900 * 1024 * 1024
