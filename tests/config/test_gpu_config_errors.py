"""Bad GPU pool, GPU stack and queue config fails with the key path and an exact message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from infra.config import ConfigError, validate_platform_config
from tests.config.test_config_errors import _delete, _set
from tests.harness import stack_config

Mutation = Callable[[dict[str, Any]], None]


def _append(path: str, value: Any) -> Mutation:
    def mutate(config: dict[str, Any]) -> None:
        target: Any = config
        for part in [int(p) if p.isdigit() else p for p in path.split(".")]:
            target = target[part]
        target.append(value)

    return mutate


def _all(*mutations: Mutation) -> Mutation:
    def mutate(config: dict[str, Any]) -> None:
        for mutation in mutations:
            mutation(config)

    return mutate


# (id, stack, mutation, expected message without the "Pulumi.<stack>.yaml: " prefix)
BAD_CONFIGS: list[tuple[str, str, Mutation, str]] = [
    (
        "duplicate pool name",
        "dev",
        _append(
            "nodePools",
            {
                "name": "lab-a100",
                "backend": "static",
                "gpuProduct": "NVIDIA-A100-SXM4-80GB",
                "gpusPerNode": 4,
                "nodes": ["gpu-node-09"],
            },
        ),
        "ai-platform:nodePools[lab-a100].name: duplicate node pool name 'lab-a100' (first used "
        "by nodePools[0]); it is nodePools[2], one of 2 entries named 'lab-a100'",
    ),
    (
        "zero GPUs per node",
        "dev",
        _set("nodePools.0.gpusPerNode", 0),
        "ai-platform:nodePools[lab-a100].gpusPerNode: must be > 0, got 0",
    ),
    (
        "static pool without nodes",
        "dev",
        _set("nodePools.1.nodes", []),
        "ai-platform:nodePools[lab-a100-mig].nodes: a static pool must name at least one node",
    ),
    (
        "static pool with maxNodes",
        "dev",
        _set("nodePools.0.maxNodes", 4),
        "ai-platform:nodePools[lab-a100].maxNodes: only for backend 'karpenter'; a static pool is "
        "sized by its node list",
    ),
    (
        "node in two static pools",
        "dev",
        _set("nodePools.1.nodes", ["gpu-node-03", "gpu-node-01"]),
        "ai-platform:nodePools[lab-a100-mig].nodes[1]: node 'gpu-node-01' already belongs to "
        "pool 'lab-a100'",
    ),
    (
        "karpenter pool without a node class",
        "prod",
        _delete("nodePools.2.karpenter"),
        "ai-platform:nodePools[spot-batch].karpenter: required for backend 'karpenter': name the "
        "node class in karpenter.nodeClassRef.name",
    ),
    (
        "karpenter pool with a node class ref missing its name",
        "prod",
        _set("nodePools.2.karpenter.nodeClassRef", {}),
        "ai-platform:nodePools[spot-batch].karpenter.nodeClassRef.name: required key is missing",
    ),
    (
        "karpenter pool without maxNodes",
        "prod",
        _delete("nodePools.1.maxNodes"),
        "ai-platform:nodePools[l4-inference].maxNodes: required for backend 'karpenter': it "
        "bounds the pool's GPU limit",
    ),
    (
        "minNodes above maxNodes",
        "prod",
        _set("nodePools.0.minNodes", 9),
        "ai-platform:nodePools[h100-training].minNodes: minNodes 9 exceeds maxNodes 8",
    ),
    (
        "minNodes between zero and maxNodes",
        "prod",
        _set("nodePools.0.minNodes", 2),
        "ai-platform:nodePools[h100-training].minNodes: must be 0 or equal to maxNodes (8): a "
        "Karpenter NodePool scales from zero or keeps a fixed number of nodes",
    ),
    (
        "karpenter pool launching any instance",
        "prod",
        _set("nodePools.2.karpenter.instanceTypes", []),
        "ai-platform:nodePools[spot-batch].karpenter: set instanceTypes or instanceFamilies: a "
        "GPU pool must not launch any instance type",
    ),
    (
        "time-slicing with one replica",
        "prod",
        _set("nodePools.1.sharing.replicas", 1),
        "ai-platform:nodePools[l4-inference].sharing.replicas: time-slicing needs at least 2 "
        "replicas per GPU, got 1",
    ),
    (
        "time-slicing without replicas",
        "prod",
        _set("nodePools.1.sharing", {"mode": "time-slicing"}),
        "ai-platform:nodePools[l4-inference].sharing.replicas: required for mode 'time-slicing' "
        "(at least 2)",
    ),
    (
        "MIG profile of another GPU generation",
        "dev",
        _set("nodePools.1.sharing.migProfile", "1g.5gb"),
        "ai-platform:nodePools[lab-a100-mig].sharing.migProfile: MIG profile '1g.5gb' is not "
        "valid for NVIDIA-A100-SXM4-80GB (A100 80GB); valid: 1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, "
        "4g.40gb, 7g.80gb",
    ),
    (
        "MIG on a GPU without MIG",
        "prod",
        _set("nodePools.1.sharing", {"mode": "mig", "migProfile": "1g.6gb"}),
        "ai-platform:nodePools[l4-inference].sharing.migProfile: NVIDIA-L4 does not support MIG",
    ),
    (
        "two MIG strategies",
        "dev",
        _append(
            "nodePools",
            {
                "name": "lab-h100-mig",
                "backend": "static",
                "gpuProduct": "NVIDIA-H100-80GB-HBM3",
                "gpusPerNode": 8,
                "nodes": ["gpu-node-09"],
                "sharing": {"mode": "mig", "migProfile": "3g.40gb", "migStrategy": "single"},
            },
        ),
        "ai-platform:nodePools[lab-h100-mig].sharing.migStrategy: all MIG pools must use one "
        "strategy (the GPU operator's is cluster-wide): nodePools[lab-a100-mig] uses 'mixed'",
    ),
    (
        "training pool consolidated when underutilised",
        "prod",
        _set("nodePools.0.karpenter.disruption.consolidationPolicy", "WhenEmptyOrUnderutilized"),
        "ai-platform:nodePools[h100-training].karpenter.disruption.consolidationPolicy: training "
        "pools must use WhenEmpty: consolidating underutilised nodes evicts running training",
    ),
    (
        "budget schedule without duration",
        "prod",
        _delete("nodePools.0.karpenter.disruption.budgets.0.duration"),
        "ai-platform:nodePools[h100-training].karpenter.disruption.budgets[0]: schedule and "
        "duration must be set together",
    ),
    (
        "bad budget node count",
        "prod",
        _set("nodePools.0.karpenter.disruption.budgets.1.nodes", "all"),
        "ai-platform:nodePools[h100-training].karpenter.disruption.budgets[1].nodes: must be a "
        "node count such as '0' or a percentage such as '10%', got 'all'",
    ),
    (
        "soft eviction without a grace period",
        "prod",
        _set(
            "nodePools.0.kubelet",
            {"evictionSoft": {"memory.available": "20%", "nodefs.available": "15%"}},
        ),
        "ai-platform:nodePools[h100-training].kubelet.evictionSoftGracePeriod: needs a grace "
        "period for every evictionSoft signal; missing: nodefs.available",
    ),
    (
        "a grace period without a soft threshold",
        "dev",
        _set(
            "nodePools.0.kubelet.evictionSoftGracePeriod",
            {"memory.available": "1m30s", "pid.available": "1m"},
        ),
        "ai-platform:nodePools[lab-a100].kubelet.evictionSoftGracePeriod: has signals without an "
        "evictionSoft threshold: pid.available",
    ),
    (
        "soft threshold below the hard floor",
        "dev",
        _set("nodePools.0.kubelet.evictionSoft", {"memory.available": "8%"}),
        "ai-platform:nodePools[lab-a100].kubelet.evictionSoft.memory.available: evictionSoft "
        "memory.available '8%' must leave more available than evictionHard '10%': soft "
        "eviction must start before the hard floor, or it never runs",
    ),
    (
        "soft threshold as a quantity below a percentage floor",
        "dev",
        _set("nodePools.0.kubelet.evictionSoft", {"memory.available": "64Gi"}),
        "ai-platform:nodePools[lab-a100].kubelet.evictionSoft.memory.available: evictionSoft "
        "memory.available '64Gi' must leave more available than evictionHard '10%': soft "
        "eviction must start before the hard floor, or it never runs",
    ),
    (
        "a hard floor above the default soft threshold",
        "dev",
        _set("nodePools.0.kubelet.evictionHard", {"memory.available": "25%"}),
        "ai-platform:nodePools[lab-a100].kubelet.evictionHard.memory.available: evictionSoft "
        "memory.available '20%' must leave more available than evictionHard '25%': soft "
        "eviction must start before the hard floor, or it never runs",
    ),
    (
        "a percentage and a quantity without the node's memory",
        "dev",
        _all(
            _delete("nodePools.0.nodeMemory"),
            _delete("nodePools.0.kubelet.systemReserved"),
            _delete("nodePools.0.kubelet.kubeReserved"),
            _set("nodePools.0.kubelet.evictionHard", {"memory.available": "2Gi"}),
        ),
        "ai-platform:nodePools[lab-a100].nodeMemory: required to compare evictionSoft "
        "memory.available '20%' with evictionHard '2Gi' (a percentage and a quantity)",
    ),
    (
        "memory reservations without the node's memory",
        "dev",
        _delete("nodePools.0.nodeMemory"),
        "ai-platform:nodePools[lab-a100].nodeMemory: required with kubeReserved.memory and "
        "systemReserved.memory: the reservations and eviction thresholds must leave memory for "
        "pods",
    ),
    (
        "reservations and the soft threshold above the node's memory",
        "dev",
        _set("nodePools.0.kubelet.systemReserved", {"memory": "820Gi"}),
        "ai-platform:nodePools[lab-a100].nodeMemory: 1Ti leaves no memory for pods after "
        "kubeReserved.memory 4Gi, systemReserved.memory 820Gi and the evictionSoft "
        "memory.available threshold '20%' (204.8Gi): the node would always be under memory "
        "pressure",
    ),
    (
        "a percentage out of range",
        "dev",
        _set("nodePools.0.kubelet.evictionHard", {"memory.available": "0%"}),
        "ai-platform:nodePools[lab-a100].kubelet.evictionHard.memory.available: must be a "
        "percentage above 0% and below 100%, got '0%'",
    ),
    (
        "a grace period that is no duration",
        "dev",
        _set("nodePools.0.kubelet.evictionSoftGracePeriod", {"memory.available": "90"}),
        "ai-platform:nodePools[lab-a100].kubelet.evictionSoftGracePeriod.memory.available: "
        "must be a duration such as '90s', '1m30s' or '2m', got '90'",
    ),
    (
        "a reservation of an unknown resource",
        "dev",
        _set("nodePools.0.kubelet.kubeReserved", {"gpu": "1"}),
        "ai-platform:nodePools[lab-a100].kubelet.kubeReserved.gpu: must be one of 'cpu', "
        "'memory', 'ephemeral-storage' or 'pid', got 'gpu'",
    ),
    (
        "a pool on another pool's node class with other kubelet settings",
        "prod",
        _set("nodePools.2.kubelet", {"maxPods": 50}),
        "ai-platform:nodePools[spot-batch].kubelet: must equal the kubelet settings of "
        "nodePools[l4-inference], which creates node class 'gpu-general' this pool launches "
        "with (or give this pool its own ec2NodeClass)",
    ),
    (
        "kubelet settings on a node class made elsewhere",
        "prod",
        _all(
            _set("nodePools.2.karpenter.nodeClassRef.name", "gpu-shared"),
            _set("nodePools.2.kubelet", {}),
        ),
        "ai-platform:nodePools[spot-batch].kubelet: node class 'gpu-shared' is not created by "
        "any pool, so its own kubelet settings apply: set them there, or give this pool its "
        "ec2NodeClass",
    ),
    (
        "reserved capacity without reservations",
        "prod",
        _delete("nodePools.0.karpenter.ec2NodeClass.capacityReservationTags"),
        "ai-platform:nodePools[h100-training].karpenter.ec2NodeClass: capacityType 'reserved' "
        "needs capacityReservationIds or capacityReservationTags to select the reservations",
    ),
    (
        "two pools create the same node class",
        "prod",
        _set("nodePools.1.karpenter.nodeClassRef.name", "gpu-training"),
        "ai-platform:nodePools[l4-inference].karpenter.nodeClassRef.name: node class "
        "'gpu-training' is already created by pool 'h100-training'",
    ),
    (
        "unpinnable AMI alias",
        "prod",
        _set("nodePools.0.karpenter.ec2NodeClass.amiAlias", "ubuntu@22.04"),
        "ai-platform:nodePools[h100-training].karpenter.ec2NodeClass.amiAlias: must be an EKS "
        "AMI alias 'family@version' such as 'al2023@v20251110', got 'ubuntu@22.04'",
    ),
    (
        "queue on an unknown pool",
        "dev",
        _set("teams.0.queue.pools.0.pool", "lab-h100"),
        "ai-platform:teams[research].queue.pools[lab-h100].pool: unknown node pool 'lab-h100'; "
        "defined: lab-a100, lab-a100-mig",
    ),
    (
        "pool listed twice in a queue",
        "dev",
        _set("teams.1.queue.pools.1.pool", "lab-a100-mig"),
        "ai-platform:teams[search-serving].queue.pools[lab-a100-mig].pool: pool 'lab-a100-mig' "
        "is listed twice (first at pools[0]); it is teams[search-serving].queue.pools[1], one of "
        "2 entries named 'lab-a100-mig'",
    ),
    (
        "lending more than the nominal quota",
        "dev",
        _set("teams.0.queue.pools.0.lendingLimit", {"gpus": 7}),
        "ai-platform:teams[research].queue.pools[lab-a100].lendingLimit.gpus: lending limit 7 "
        "exceeds the nominal quota 6",
    ),
    (
        "nominal quotas above pool capacity",
        "dev",
        _all(
            _set("teams.0.queue.pools.0.gpus", 8), _set("teams.0.queue.pools.0.borrowingLimit", {})
        ),
        "ai-platform:teams[search-serving].queue.pools[lab-a100].gpus: the teams' nominal quotas "
        "on pool 'lab-a100' add up to 10 nvidia.com/gpu (research 8 + search-serving 2), above "
        "its 8 (2 nodes x 4 GPUs) x overcommit 1.0",
    ),
    (
        "MIG quotas above pool capacity",
        "dev",
        _all(
            _set("teams.2.queue.pools.0.gpus", 15), _set("teams.2.quota.migSlices", {"1g.10gb": 15})
        ),
        "ai-platform:teams[platform].queue.pools[lab-a100-mig].gpus: the teams' nominal quotas "
        "on pool 'lab-a100-mig' add up to 29 nvidia.com/mig-1g.10gb (search-serving 14 + "
        "platform 15), above its 28 (1 node x 4 GPUs x 7 1g.10gb slices) x overcommit 1.0",
    ),
    (
        "time-sliced quotas above pool capacity",
        "prod",
        _all(_set("teams.1.queue.pools.0.gpus", 60), _set("teams.1.quota.gpus", 68)),
        "ai-platform:teams[platform].queue.pools[l4-inference].gpus: the teams' nominal quotas "
        "on pool 'l4-inference' add up to 68 nvidia.com/gpu (search-serving 60 + platform 8), "
        "above its 64 (16 nodes x 1 GPU x 4 replicas) x overcommit 1.0",
    ),
    (
        "overcommit below one",
        "prod",
        _set("queueing.overcommit", 0.5),
        "ai-platform:queueing.overcommit: must be >= 1.0, got 0.5",
    ),
    (
        "a never-preempting class where Kueue would reclaim with it",
        "dev",
        _delete("teams.2.priorityClasses"),  # all four classes, batch-low among them
        "ai-platform:teams[platform]: team 'platform' may use 'batch-low' (preemptionPolicy "
        "Never), but Kueue ignores preemptionPolicy: with reclaimWithinCohort Any, a batch-low "
        "job on pool 'lab-a100-mig' would evict what team 'search-serving' borrows there (its "
        "critical, normal work). Leave 'batch-low' out of teams[platform].priorityClasses, set "
        "the borrowingLimit of teams[search-serving].queue.pools[lab-a100-mig] to 0, or set "
        "queueing.reclaimWithinCohort to LowerPriority",
    ),
    (
        "a never-preempting class that would evict its own team's newer work",
        "dev",
        _set("queueing", {"withinClusterQueue": "LowerOrNewerEqualPriority"}),
        "ai-platform:teams[research].priorityClasses: team 'research' may use 'batch-low' "
        "(preemptionPolicy Never), but Kueue ignores preemptionPolicy: withinClusterQueue "
        "LowerOrNewerEqualPriority lets a batch-low job evict the team's own batch-low work. To "
        "keep 'batch-low', set queueing.withinClusterQueue to LowerPriority",
    ),
    (
        "namespace GPU quota below nominal plus borrowing",
        "dev",
        # Shrink the 2 x 4 GPU fine-tune too, which a quota of 6 would also reject.
        _all(_set("teams.0.quota.gpus", 6), _set("workloads.0.training.nodes", 1)),
        "ai-platform:teams[research].quota.gpus: the team's queue may admit 8 nvidia.com/gpu "
        "(lab-a100 6 + 2 borrowing), above the namespace quota of 6",
    ),
    (
        "namespace CPU quota below nominal plus borrowing",
        "dev",
        _set("teams.0.queue.pools.0.borrowingLimit.cpu", "32"),
        "ai-platform:teams[research].quota.cpu: the team's queue may admit 80 cpu (lab-a100 48 + "
        "32 borrowing), above the namespace quota of 66",
    ),
    (
        "namespace memory quota below nominal plus borrowing",
        "dev",
        _set("teams.0.queue.pools.0.memory", "448Gi"),
        "ai-platform:teams[research].quota.memory: the team's queue may admit 576Gi memory "
        "(lab-a100 448Gi + 128Gi borrowing), above the namespace quota of 514Gi",
    ),
    (
        "namespace quota lacks the MIG resource",
        "dev",
        _delete("teams.2.quota.migSlices"),
        "ai-platform:teams[platform].quota.migSlices: the team's queue may admit 7 "
        "nvidia.com/mig-1g.10gb (lab-a100-mig 7), above the namespace quota of 0 1g.10gb slices",
    ),
]


@pytest.mark.parametrize(
    ("stack", "mutation", "expected"),
    [(s, m, e) for _, s, m, e in BAD_CONFIGS],
    ids=[i for i, _, _, _ in BAD_CONFIGS],
)
def test_bad_gpu_config_names_path_and_problem(stack: str, mutation: Mutation, expected: str):
    config = stack_config(stack)
    mutation(config)
    source = f"Pulumi.{stack}.yaml"
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, source)
    lines = [f"{caught.value.source}: {i.key_path}: {i.message}" for i in caught.value.issues]
    assert lines == [f"{source}: {expected}"]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stack_files_satisfy_the_gpu_rules(stack: str) -> None:
    validate_platform_config(stack_config(stack), f"Pulumi.{stack}.yaml")


def test_overcommit_allows_more_nominal_than_capacity() -> None:
    config = stack_config("dev")
    config["teams"][0]["queue"]["pools"][0].update({"gpus": 8, "borrowingLimit": {}})
    with pytest.raises(ConfigError):
        validate_platform_config(config, "Pulumi.dev.yaml")
    config["queueing"] = {"overcommit": 1.25}
    validate_platform_config(config, "Pulumi.dev.yaml")
