"""Synthetic stack configs of any size, so preview cost can be measured as the platform grows.

Why generated rather than checked in: the sizes are a benchmark parameter, and a generator keeps
every size valid as the config rules evolve (tests/bench checks that it still validates).

Shape: ``workloads`` spread over ``ceil(workloads / 10)`` teams. Each team looks like a prod
team: quota, a Kueue queue on three GPU pools, datasets/checkpoints/models volumes, and a mix
of training jobs (multi-node, single-node, evaluation on spot, CPU-only) and inference services
(queued GPU services, one with a Redis, CPU-only services). The pools grow with the number of
teams so the teams' nominal quotas always fit their capacity, and monitoring egress is narrowed
as in prod, so every size previews without a policy violation.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from components.constants import PROJECT

WORKLOADS_PER_TEAM = 10

# Per-team nominal Kueue quota on each pool; the pools are sized from these.
_H100_NOMINAL = 16
_L4_NOMINAL = 8  # time-sliced units (4 per GPU)
_SPOT_NOMINAL = 4

_PYTORCH = "nvcr.io/nvidia/pytorch:25.01-py3"
_VLLM = "ghcr.io/acme-ml/vllm-openai:v0.10.1"
_TEI = "ghcr.io/huggingface/text-embeddings-inference:cpu-1.7"
_REDIS = "public.ecr.aws/docker/library/redis:7.4-alpine"

_NODE_CLASS = {
    "role": "KarpenterNodeRole-bench",
    "amiAlias": "al2023@v20251110",
    "subnetSelectorTags": {"karpenter.sh/discovery": "bench"},
    "securityGroupSelectorTags": {"karpenter.sh/discovery": "bench"},
}


def team_count(workloads: int) -> int:
    """Teams for a stack of ``workloads`` workloads: one per ``WORKLOADS_PER_TEAM``."""
    return max(1, math.ceil(workloads / WORKLOADS_PER_TEAM))


def _pools(teams: int) -> list[dict[str, Any]]:
    """Three Karpenter pools (training, inference, spot batch) sized for ``teams`` queues."""
    return [
        {
            "name": "h100-training",
            "backend": "karpenter",
            "purpose": "training",
            "gpuProduct": "NVIDIA-H100-80GB-HBM3",
            "gpusPerNode": 8,
            "maxNodes": math.ceil(teams * _H100_NOMINAL / 8),
            "capacityType": "reserved",
            "karpenter": {
                "nodeClassRef": {"name": "gpu-training"},
                "instanceTypes": ["p5.48xlarge"],
                "zones": ["us-east-1a"],
                "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m"},
                "ec2NodeClass": {
                    **_NODE_CLASS,
                    "instanceStorePolicy": "RAID0",
                    "capacityReservationTags": {"aiplatform.io/pool": "h100-training"},
                },
            },
        },
        {
            "name": "l4-inference",
            "backend": "karpenter",
            "purpose": "inference",
            "gpuProduct": "NVIDIA-L4",
            "gpusPerNode": 1,
            "maxNodes": math.ceil(teams * _L4_NOMINAL / 4),
            "sharing": {"mode": "time-slicing", "replicas": 4},
            "karpenter": {
                "nodeClassRef": {"name": "gpu-general"},
                "instanceFamilies": ["g6"],
                "disruption": {"consolidateAfter": "10m"},
                "ec2NodeClass": dict(_NODE_CLASS),
            },
        },
        {
            "name": "spot-batch",
            "backend": "karpenter",
            "purpose": "batch",
            "gpuProduct": "NVIDIA-L40S",
            "gpusPerNode": 4,
            "maxNodes": math.ceil(teams * _SPOT_NOMINAL / 4),
            "capacityType": "spot",
            "taints": [{"key": "aiplatform.io/preemptible", "value": "true"}],
            "karpenter": {
                "nodeClassRef": {"name": "gpu-general"},
                "instanceTypes": ["g6e.12xlarge"],
                "disruption": {"consolidateAfter": "5m"},
            },
        },
    ]


def _team(name: str, index: int) -> dict[str, Any]:
    return {
        "name": name,
        "purpose": "training" if index % 2 == 0 else "serving",
        "description": f"Synthetic benchmark team {index}.",
        "adminGroups": [f"{name}-leads"],
        "viewerGroups": [f"{name}-members"],
        "labels": {"cost-center": f"cc-{index:05d}"},
        "quota": {
            "cpu": "1024",
            "memory": "8Ti",
            "gpus": 64,
            "storage": "40Ti",
            "persistentVolumeClaims": 20,
            "pods": 300,
        },
        "queue": {
            "pools": [
                {
                    "pool": "h100-training",
                    "gpus": _H100_NOMINAL,
                    "cpu": "192",
                    "memory": "2Ti",
                    "borrowingLimit": {"gpus": 8, "cpu": "96", "memory": "1Ti"},
                },
                {"pool": "l4-inference", "gpus": _L4_NOMINAL, "cpu": "32", "memory": "128Gi"},
                {"pool": "spot-batch", "gpus": _SPOT_NOMINAL, "cpu": "32", "memory": "256Gi"},
            ]
        },
        "priorityClasses": ["critical", "high", "normal", "batch-low"],
        "env": {"HF_HUB_OFFLINE": "1"},
        "volumes": [
            {
                "name": "datasets",
                "purpose": "datasets",
                "storageClass": "datasets-efs",
                "size": "10Ti",
                "accessModes": ["ReadWriteMany"],
            },
            {
                "name": "checkpoints",
                "purpose": "checkpoints",
                "storageClass": "checkpoints-gp3",
                "size": "2Ti",
            },
            {
                "name": "models",
                "purpose": "models",
                "storageClass": "datasets-efs",
                "size": "1Ti",
                "accessModes": ["ReadOnlyMany"],
            },
        ],
    }


def _training(name: str, team: str, slot: int) -> dict[str, Any]:
    """Slots 0-4: multi-node fine-tune, single-node job, two spot evaluations, CPU data prep."""
    base: dict[str, Any] = {"name": name, "team": team, "kind": "training", "image": _PYTORCH}
    if slot == 0:
        return {
            **base,
            "command": ["torchrun"],
            "args": ["/workspace/finetune.py", "--config", "/workspace/configs/sft.yaml"],
            "env": {"NCCL_DEBUG": "WARN"},
            "resources": {"cpu": "96", "memory": "960Gi"},
            "gpus": {"pool": "h100-training", "count": 8},
            "priorityClass": "high",
            "egress": {"cidrs": ["52.216.0.0/15"]},
            "training": {
                "nodes": 2,
                "dataset": "datasets",
                "checkpoints": {
                    "storageClass": "datasets-efs",
                    "size": "4Ti",
                    "accessModes": ["ReadWriteMany"],
                },
                "shmSize": "64Gi",
                "nonRetryableExitCodes": [78],
                "preflight": {"checkpointMinFree": "500Gi"},
            },
        }
    if slot == 1:
        return {
            **base,
            "command": ["torchrun"],
            "args": ["/workspace/pretrain.py"],
            "resources": {"cpu": "96", "memory": "960Gi"},
            "gpus": {"pool": "h100-training", "count": 8},
            "priorityClass": "normal",
            "training": {
                "dataset": "datasets",
                "checkpoints": {"claim": "checkpoints"},
                "shmSize": "64Gi",
            },
        }
    if slot in (2, 3):
        return {
            **base,
            "command": ["python3"],
            "args": ["/workspace/evaluate.py", "--checkpoints", "/checkpoints"],
            "resources": {"cpu": "8", "memory": "64Gi"},
            "gpus": {"pool": "spot-batch", "count": 1},
            "priorityClass": "batch-low",
            "training": {
                "workloadType": "evaluation",
                "dataset": "datasets",
                "checkpoints": {"claim": "checkpoints"},
                "shmSize": "8Gi",
                "backoffLimit": 6,
                "activeDeadlineSeconds": 21600,
            },
        }
    return {
        **base,
        "command": ["python3"],
        "args": ["/workspace/tokenize.py"],
        "resources": {"cpu": "16", "memory": "64Gi"},
        "priorityClass": "batch-low",
        "training": {"dataset": "datasets", "shmSize": "1Gi", "preflight": {"enabled": False}},
    }


def _inference(name: str, team: str, slot: int) -> dict[str, Any]:
    """Slots 0-1: queued GPU services (slot 0 with a Redis); 2-4: CPU-only services."""
    base: dict[str, Any] = {"name": name, "team": team, "kind": "inference"}
    if slot in (0, 1):
        settings: dict[str, Any] = {
            "port": 8000,
            "metricsPort": 9090,
            "minReplicas": 2,
            "maxReplicas": 4,
            "customMetric": {"name": "vllm_num_requests_waiting", "averageValue": "5"},
            "model": "models",
            "shmSize": "2Gi",
            "allowFromNamespaces": ["ingress-nginx"],
            "queued": True,
        }
        if slot == 0:
            settings["statefulDependencies"] = [
                {
                    "name": "redis",
                    "image": _REDIS,
                    "port": 6379,
                    "storageClass": "checkpoints-gp3",
                    "size": "20Gi",
                    "args": ["--appendonly", "yes", "--dir", "/data"],
                }
            ]
        return {
            **base,
            "image": _VLLM,
            "args": ["--model", "/models/qwen2.5-3b-instruct", "--port", "8000"],
            "resources": {"cpu": "3", "memory": "12Gi"},
            "gpus": {"pool": "l4-inference", "count": 1},
            "priorityClass": "critical",
            "inference": settings,
        }
    return {
        **base,
        "image": _TEI,
        "args": ["--model-id", "/models/bge-base-en-v1.5", "--port", "8080"],
        "resources": {"cpu": "4", "memory": "8Gi"},
        "priorityClass": "critical",
        "inference": {
            "minReplicas": 2,
            "maxReplicas": 6,
            "targetCpuUtilization": 70,
            "model": "models",
            "allowFromNamespaces": ["ingress-nginx"],
        },
    }


_TRAINING_NAMES = ("finetune", "pretrain", "eval-a", "eval-b", "data-prep")
_INFERENCE_NAMES = ("llm-chat", "llm-batch", "embeddings", "reranker", "classifier")


def _workload(team: str, position: int) -> dict[str, Any]:
    """The ``position``-th workload of a team: training and inference alternate."""
    slot = position // 2
    if position % 2 == 0:
        return _training(_TRAINING_NAMES[slot], team, slot)
    return _inference(_INFERENCE_NAMES[slot], team, slot)


def synthetic_config(workloads: int) -> dict[str, Any]:
    """``ai-platform:`` keys (prefix stripped) for a prod-like stack with ``workloads`` workloads.

    Passes ``validate_platform_config`` at any size; the sizes are what the benchmark varies.
    """
    if workloads < 1:
        raise ValueError("workloads must be >= 1")
    teams = team_count(workloads)
    team_names = [f"team-{index:04d}" for index in range(teams)]
    return {
        "cluster": {
            "name": "bench",
            "environment": "prod",
            "kubeconfigContext": "bench-deployer",
            "kubernetesVersion": "1.33",
        },
        "storage": {
            "classes": [
                {
                    "name": "checkpoints-gp3",
                    "purpose": "checkpoints",
                    "provisioner": "ebs.csi.aws.com",
                    "default": True,
                    "parameters": {"type": "gp3", "encrypted": "true"},
                },
                {
                    "name": "datasets-efs",
                    "purpose": "datasets",
                    "provisioner": "efs.csi.aws.com",
                    "volumeBindingMode": "Immediate",
                    "parameters": {"provisioningMode": "efs-ap", "fileSystemId": "fs-0123456789"},
                },
            ]
        },
        "teams": [_team(name, index) for index, name in enumerate(team_names)],
        "nodePools": _pools(teams),
        "gpuStack": {"driver": False, "toolkit": False},
        # Every team borrows on h100-training and may use batch-low: only LowerPriority reclaim
        # keeps batch-low from preempting (Kueue ignores a class's preemptionPolicy).
        "queueing": {"cohort": "bench", "reclaimWithinCohort": "LowerPriority"},
        # The inference services' custom metric needs its adapter.
        "autoscaling": {"prometheusAdapter": {"enabled": True}},
        "monitoring": {
            # As in prod: egress to named ranges only (the pack rejects 0.0.0.0/0).
            "alertmanager": {"egressCidrs": ["10.0.250.0/24"]},
            "network": {
                "apiServerCidrs": ["10.0.0.0/16"],
                "nodeCidrs": ["10.0.0.0/16"],
                "objectStorageCidrs": ["10.0.240.0/24"],
            },
        },
        "workloads": [
            _workload(team_names[index // WORKLOADS_PER_TEAM], index % WORKLOADS_PER_TEAM)
            for index in range(workloads)
        ],
    }


def write_stack_file(
    directory: Path, stack: str, config: dict[str, Any], *, workload_files: bool = False
) -> Path:
    """Write ``Pulumi.<stack>.yaml`` as a user would, for ``tools.preview --stack-file``.

    ``workload_files``: each team's workloads in ``workloads/<team>.yaml`` beside it, named by
    ``workloadFiles``, as a stack past the engine's config limit must be written (same workloads,
    same order: a team's are contiguous and the files sort in team order).
    """
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"Pulumi.{stack}.yaml"
    values = dict(config)
    if workload_files:
        folder = directory / "workloads"
        folder.mkdir(exist_ok=True)
        by_team: dict[str, list[dict[str, Any]]] = {}
        for workload in values.pop("workloads", []):
            by_team.setdefault(workload["team"], []).append(workload)
        for team, workloads in by_team.items():
            text = yaml.safe_dump({"workloads": workloads}, sort_keys=False)
            (folder / f"{team}.yaml").write_text(text, encoding="utf-8")
        values["workloadFiles"] = ["workloads/*.yaml"]
    document = {"config": {f"{PROJECT}:{key}": value for key, value in values.items()}}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path
