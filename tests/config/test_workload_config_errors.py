"""Bad ``ai-platform:workloads`` config fails with the key path and an exact message.

Indices refer to the checked-in stacks: workloads[0] llama-finetune and [1] llama-eval (team
research), [2] llm-chat and [3] embeddings (team search-serving), and on dev [4]
pipeline-workers (team platform's worker pool), [5] ray-lab and [6] ray-sweep (team research,
tests/ray); teams[0] research, teams[1] search-serving, teams[2] platform.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, validate_platform_config
from tests.config.test_config_errors import _delete, _set
from tests.config.test_gpu_config_errors import Mutation, _all, _append
from tests.harness import stack_config

REDIS_TWIN: dict[str, Any] = {
    "name": "redis",
    "image": "public.ecr.aws/docker/library/redis:7.4-alpine",
    "port": 6380,
    "storageClass": "checkpoints-local",
    "size": "1Gi",
}
DNS1035 = (
    "must be a DNS-1035 label of at most 40 characters (lower-case letters, digits and '-', "
    "starting with a letter): it names the Job or Service and prefixes derived objects, got "
)

# (id, stack, mutation, expected message without the "Pulumi.<stack>.yaml: " prefix)
UNQUEUED = {"enabled": False}
"""Kueue off: GPU workloads that name no queue exist only then (with Kueue on, the cluster's
guardrails refuse them, and so does the config: tests/config/test_guardrail_config.py)."""

DEFAULT_QUEUE_CPU = (
    "ai-platform:workloads[embeddings].resources.cpu: its pods need %s cpu at their peak through "
    "the default queue of team 'search-serving', which admits 8: the namespace quota of 32 less "
    "the 24 its GPU queue may take (nominal + borrowing). Raise teams[search-serving].quota.cpu "
    "to %s or lower the queue's cpu; Kueue admits each queue's work within its own share only"
)
"""search-serving's GPU queue may take 16 + 8 of its 32 CPUs: its default queue admits 8."""

WORKERS = "ai-platform:workloads[pipeline-workers]"

BAD_WORKLOADS: list[tuple[str, str, Mutation, str | tuple[str, ...]]] = [
    # --- worker pools -----------------------------------------------------------------------------
    (
        "worker pool without its block",
        "dev",
        _delete("workloads.4.workerPool"),
        f"{WORKERS}.workerPool: required for kind 'worker-pool': name the Celery app "
        "(workerPool.app)",
    ),
    (
        "worker pool block on a training job",
        "dev",
        _set("workloads.0.workerPool", {"app": "x"}),
        "ai-platform:workloads[llama-finetune].workerPool: only for kind 'worker-pool'",
    ),
    (
        "worker pool with a command",
        "dev",
        _set("workloads.4.command", ["python", "-m", "x"]),
        f"{WORKERS}.command: a worker pool runs 'celery -A <app> worker'; put extra worker "
        "options in args",
    ),
    (
        "worker pool app not a module path",
        "dev",
        _set("workloads.4.workerPool.app", "pipelines; rm -rf /"),
        f"{WORKERS}.workerPool.app: must be a Python module path as 'celery -A' takes it, "
        "optionally with ':attribute' ('pipelines.celery_app', 'pipelines.app:celery'), got "
        "'pipelines; rm -rf /'",
    ),
    (
        "worker pool min above max",
        "dev",
        _set("workloads.4.workerPool.minReplicas", 5),
        f"{WORKERS}.workerPool.minReplicas: minReplicas 5 exceeds maxReplicas 3",
    ),
    (
        "worker pool autoscaling without KEDA",
        "dev",
        _set("autoscaling.keda", {"enabled": False}),
        f"{WORKERS}.workerPool.autoscale: autoscaling on the queue length needs KEDA: set "
        "ai-platform:autoscaling.keda.enabled to true, or autoscale to false (a fixed "
        "minReplicas pods)",
    ),
    (
        "worker pool at zero without autoscaling",
        "dev",
        _all(
            _set("workloads.4.workerPool.autoscale", False),
            _set("workloads.4.workerPool.minReplicas", 0),
        ),
        f"{WORKERS}.workerPool.minReplicas: 0 runs no worker without autoscale; set "
        "minReplicas >= 1 or autoscale: true",
    ),
    (
        "worker pool queue twice",
        "dev",
        _set("workloads.4.workerPool.queues", ["ingest", "embed", "ingest"]),
        f"{WORKERS}.workerPool.queues[2]: duplicate queue 'ingest' (first at queues[0])",
    ),
    (
        "worker pool queue with a comma",
        "dev",
        _set("workloads.4.workerPool.queues", ["ingest,embed"]),
        f"{WORKERS}.workerPool.queues[0]: must be a Celery queue name: letters, digits, '_', "
        "'.', ':' and '-' (no commas: -Q takes a comma-separated list), got 'ingest,embed'",
    ),
    (
        "worker pool sets the broker itself",
        "dev",
        _set("workloads.4.env", {"CELERY_BROKER_URL": "redis://elsewhere"}),
        f"{WORKERS}.env.CELERY_BROKER_URL: is set by the platform; remove it",
    ),
    # --- shape ------------------------------------------------------------------------------------
    (
        "name not a DNS-1035 label",
        "dev",
        _set("workloads.0.name", "9lives"),
        f"ai-platform:workloads[9lives].name: {DNS1035}'9lives'",
    ),
    (
        "name too long",
        "dev",
        _set("workloads.0.name", "a" * 41),
        f"ai-platform:workloads[{'a' * 41}].name: {DNS1035}'{'a' * 41}'",
    ),
    (
        "a grace period a soft eviction would cut short",
        "dev",
        _set("workloads.0.training.terminationGracePeriodSeconds", 600),
        "ai-platform:workloads[llama-finetune].training.terminationGracePeriodSeconds: 600 s is "
        "longer than pool 'lab-a100' grants on a soft eviction (evictionMaxPodGracePeriod 300 "
        "s): the workers would be killed before their checkpoint is saved; shorten it or raise "
        "nodePools[lab-a100].kubelet.evictionMaxPodGracePeriod",
    ),
    (
        "the default grace period above a pool's soft-eviction cap",
        "dev",
        _set("nodePools.0.kubelet.evictionMaxPodGracePeriod", 60),
        (
            "ai-platform:workloads[llama-finetune].training.terminationGracePeriodSeconds: 120 s "
            "is longer than pool 'lab-a100' grants on a soft eviction (evictionMaxPodGracePeriod "
            "60 s): the workers would be killed before their checkpoint is saved; shorten it or "
            "raise nodePools[lab-a100].kubelet.evictionMaxPodGracePeriod",
            "ai-platform:workloads[llama-eval].training.terminationGracePeriodSeconds: 120 s is "
            "longer than pool 'lab-a100' grants on a soft eviction (evictionMaxPodGracePeriod 60 "
            "s): the workers would be killed before their checkpoint is saved; shorten it or "
            "raise nodePools[lab-a100].kubelet.evictionMaxPodGracePeriod",
        ),
    ),
    (
        "a grace period longer than Karpenter waits on a drain",
        "prod",
        _set("nodePools.0.karpenter.disruption.terminationGracePeriod", "4m"),
        "ai-platform:workloads[llama-finetune].training.terminationGracePeriodSeconds: 300 s is "
        "longer than Karpenter waits for pods on a draining node of pool 'h100-training' "
        "(karpenter.disruption.terminationGracePeriod 4m): the workers would be killed before "
        "their checkpoint is saved",
    ),
    (
        "a grace period of more than a day",
        "dev",
        _set("workloads.0.training.terminationGracePeriodSeconds", 86401),
        "ai-platform:workloads[llama-finetune].training.terminationGracePeriodSeconds: must be "
        "<= 86400, got 86401",
    ),
    (
        "unknown kind",
        "dev",
        _set("workloads.0.kind", "batch"),
        "ai-platform:workloads[llama-finetune].kind: must be one of 'training', 'inference', "
        "'worker-pool', 'ray-cluster' or 'ray-job', got 'batch'",
    ),
    (
        "typo in a training key",
        "dev",
        _set("workloads.0.training.node", 2),
        "ai-platform:workloads[llama-finetune].training.node: unknown key; did you mean 'nodes'?",
    ),
    (
        "resources missing",
        "dev",
        _delete("workloads.0.resources"),
        "ai-platform:workloads[llama-finetune].resources: required key is missing",
    ),
    (
        "image with whitespace",
        "dev",
        _set("workloads.0.image", "nvcr.io/x y:1"),
        "ai-platform:workloads[llama-finetune].image: must be an image reference such as "
        "'nvcr.io/x/y:1.2', got 'nvcr.io/x y:1'",
    ),
    (
        "unknown log level",
        "dev",
        _set("workloads.0.logLevel", "trace"),
        "ai-platform:workloads[llama-finetune].logLevel: must be one of 'debug', 'info', "
        "'warning' or 'error', got 'trace'",
    ),
    (
        "zero GPUs",
        "dev",
        _set("workloads.0.gpus.count", 0),
        "ai-platform:workloads[llama-finetune].gpus.count: must be >= 1, got 0",
    ),
    (
        "backoff limit above the policy maximum",
        "dev",
        _set("workloads.0.training.backoffLimit", 11),
        "ai-platform:workloads[llama-finetune].training.backoffLimit: must be <= 10, got 11",
    ),
    (
        "exit code 0 cannot be non-retryable",
        "dev",
        _set("workloads.0.training.nonRetryableExitCodes", [0]),
        "ai-platform:workloads[llama-finetune].training.nonRetryableExitCodes[0]: must be >= 1, "
        "got 0",
    ),
    (
        "malformed CIDR",
        "dev",
        _set("workloads.0.egress", {"cidrs": ["10.0.0.1/8"]}),
        "ai-platform:workloads[llama-finetune].egress.cidrs[0]: must be a CIDR such as "
        "'52.216.0.0/15', got '10.0.0.1/8'",
    ),
    (
        "egress port out of range",
        "dev",
        _set("workloads.0.egress", {"cidrs": ["52.216.0.0/15"], "ports": [70000]}),
        "ai-platform:workloads[llama-finetune].egress.ports[0]: must be <= 65535, got 70000",
    ),
    (
        "dependency name too long",
        "dev",
        _set("workloads.2.inference.statefulDependencies.0.name", "model-cache-2"),
        "ai-platform:workloads[llm-chat].inference.statefulDependencies[model-cache-2].name: "
        "must be a DNS-1035 label of at most 11 characters (lower-case letters, digits and '-', "
        "starting with a letter): '<workload>-<dependency>' names a StatefulSet, got "
        "'model-cache-2'",
    ),
    # --- references -------------------------------------------------------------------------------
    (
        "unknown team",
        "dev",
        _set("workloads.0.team", "reserch"),
        "ai-platform:workloads[llama-finetune].team: unknown team 'reserch'; defined: platform, "
        "research, search-serving",
    ),
    (
        "duplicate name within a team",
        "dev",
        _set("workloads.1.name", "llama-finetune"),
        "ai-platform:workloads[llama-finetune].name: duplicate workload name 'llama-finetune' in "
        "team 'research' (first used by workloads[0]); it is workloads[1], one of 2 entries "
        "named 'llama-finetune'",
    ),
    (
        "inference settings on a training job",
        "dev",
        _set("workloads.0.inference", {}),
        "ai-platform:workloads[llama-finetune].inference: only for kind 'inference'",
    ),
    (
        "training settings on an inference service",
        "dev",
        _set("workloads.3.training", {}),
        "ai-platform:workloads[embeddings].training: only for kind 'training'",
    ),
    (
        "unknown pool",
        "dev",
        _set("workloads.0.gpus.pool", "lab-h100"),
        "ai-platform:workloads[llama-finetune].gpus.pool: unknown node pool 'lab-h100'; defined: "
        "lab-a100, lab-a100-mig",
    ),
    (
        "unknown storage class for created checkpoints",
        "dev",
        _set("workloads.0.training.checkpoints.storageClass", "fast-nvme"),
        "ai-platform:workloads[llama-finetune].training.checkpoints.storageClass: unknown "
        "storage class 'fast-nvme'; defined: checkpoints-local, datasets-nfs",
    ),
    (
        "unknown storage class for a dependency",
        "dev",
        _set("workloads.2.inference.statefulDependencies.0.storageClass", "fast-nvme"),
        "ai-platform:workloads[llm-chat].inference.statefulDependencies[redis].storageClass: "
        "unknown storage class 'fast-nvme'; defined: checkpoints-local, datasets-nfs",
    ),
    (
        "dataset claim that is not a team volume",
        "dev",
        _set("workloads.0.training.dataset", "imagenet"),
        "ai-platform:workloads[llama-finetune].training.dataset: team 'research' has no volume "
        "'imagenet'; its volumes: checkpoints, datasets",
    ),
    (
        "model claim that is not a team volume",
        "dev",
        _set("workloads.3.inference.model", "bge"),
        "ai-platform:workloads[embeddings].inference.model: team 'search-serving' has no volume "
        "'bge'; its volumes: models",
    ),
    (
        "checkpoint claim that is not a team volume",
        "dev",
        _set("workloads.1.training.checkpoints", {"claim": "ckpt"}),
        "ai-platform:workloads[llama-eval].training.checkpoints.claim: team 'research' has no "
        "volume 'ckpt'; its volumes: checkpoints, datasets",
    ),
    (
        "checkpoints both existing and created",
        "dev",
        _set(
            "workloads.1.training.checkpoints",
            {"claim": "checkpoints", "storageClass": "datasets-nfs", "size": "1Ti"},
        ),
        "ai-platform:workloads[llama-eval].training.checkpoints: set claim (an existing team "
        "volume) or storageClass and size (a new claim), exactly one of the two",
    ),
    (
        "checkpoints neither existing nor created",
        "dev",
        _set("workloads.1.training.checkpoints", {}),
        "ai-platform:workloads[llama-eval].training.checkpoints: set claim (an existing team "
        "volume) or storageClass and size (a new claim), exactly one of the two",
    ),
    (
        "created checkpoints without a size",
        "dev",
        _set("workloads.1.training.checkpoints", {"storageClass": "datasets-nfs"}),
        "ai-platform:workloads[llama-eval].training.checkpoints.size: required with storageClass "
        "or size",
    ),
    (
        "unknown priority class",
        "dev",
        _set("workloads.0.priorityClass", "urgent"),
        "ai-platform:workloads[llama-finetune].priorityClass: unknown priority class 'urgent'; "
        "defined: batch-low, critical, high, normal",
    ),
    (
        "priority class the team may not use",
        "dev",
        _set("workloads.0.priorityClass", "critical"),
        "ai-platform:workloads[llama-finetune].priorityClass: team 'research' may use priority "
        "classes high, normal, batch-low; got 'critical'",
    ),
    (
        "default priority class the team may not use",
        "dev",
        _set("teams.0.priorityClasses", ["high", "batch-low"]),
        (
            "ai-platform:workloads[llama-finetune].priorityClass: the default priority class "
            "'normal' is not allowed for team 'research'; set one of: high, batch-low",
            "ai-platform:workloads[ray-lab].priorityClass: the default priority class 'normal' is "
            "not allowed for team 'research'; set one of: high, batch-low",
        ),
    ),
    # --- GPUs and sharing -------------------------------------------------------------------------
    (
        "GPUs per worker above the pool's GPUs per node",
        "dev",
        _set("workloads.0.gpus.count", 8),
        "ai-platform:workloads[llama-finetune].gpus.count: 8 nvidia.com/gpu per pod, but a node "
        "of pool 'lab-a100' offers 4 (4 GPUs)",
    ),
    (
        "MIG slices above what a node offers",
        "dev",
        _set("workloads.2.gpus.count", 29),
        "ai-platform:workloads[llm-chat].gpus.count: 29 nvidia.com/mig-1g.10gb per pod, but a "
        "node of pool 'lab-a100-mig' offers 28 (4 GPUs x 7 1g.10gb slices)",
    ),
    (
        "several time-sliced GPUs per pod",
        "prod",
        _set("workloads.2.gpus.count", 2),
        "ai-platform:workloads[llm-chat].gpus.count: pool 'l4-inference' time-slices its GPUs: a "
        "pod asking for 2 nvidia.com/gpu may get slices of one GPU; request 1",
    ),
    (
        "distributed training on MIG slices",
        "dev",
        _all(
            _set("workloads.1.team", "search-serving"),
            _set("workloads.1.priorityClass", "normal"),
            _set("workloads.1.gpus", {"pool": "lab-a100-mig", "count": 2}),
            _delete("workloads.1.training.dataset"),
            _delete("workloads.1.training.checkpoints"),
        ),
        "ai-platform:workloads[llama-eval].gpus.pool: distributed training needs whole GPUs, but "
        "pool 'lab-a100-mig' shares them (mig); use an exclusive pool or one "
        "nvidia.com/mig-1g.10gb on one node",
    ),
    (
        "team without GPU quota",
        "dev",
        _all(
            _set("teams.1.quota.gpus", 0),
            _delete("teams.1.queue.pools.1"),
            _set("workloads.3.gpus", {"pool": "lab-a100", "count": 1}),
            _set("queueing", UNQUEUED),
        ),
        "ai-platform:workloads[embeddings].gpus: team 'search-serving' has no quota for "
        "nvidia.com/gpu (teams[search-serving].quota.gpus is 0)",
    ),
    (
        "team without quota for the pool's MIG slices",
        "dev",
        _all(
            _set("teams.1.quota.migSlices", {}),
            _set("teams.1.queue.pools.0.gpus", 0),
            _set("teams.1.queue.pools.0.borrowingLimit", {}),
            _set("workloads.2.inference.queued", False),
            _set("queueing", UNQUEUED),
        ),
        "ai-platform:workloads[llm-chat].gpus: team 'search-serving' has no quota for "
        "nvidia.com/mig-1g.10gb (teams[search-serving].quota.migSlices.1g.10gb is 0)",
    ),
    # --- gangs: every worker of a multi-node job at once ------------------------------------------
    (
        "gang larger than its pool, unqueued",
        "prod",
        _all(
            _set("nodePools.0.maxNodes", 1),
            _delete("teams.0.queue"),
            _set("workloads.0.gpus.count", 4),
            _set("workloads.0.training.nodes", 3),
            _set("queueing", UNQUEUED),
        ),
        "ai-platform:workloads[llama-finetune].training.nodes: the job's 3 workers x 4 "
        "nvidia.com/gpu must run at once, but pool 'h100-training' holds at most 2: 1 node "
        "(maxNodes) x 2 workers per node (8 GPUs / 4 per worker); it has 8 nvidia.com/gpu in "
        "all, the job needs 12",
    ),
    (
        "gang larger than its pool, queued with overcommit",
        "dev",
        _all(_set("nodePools.0.nodes", ["gpu-node-01"]), _set("queueing", {"overcommit": 2.0})),
        "ai-platform:workloads[llama-finetune].training.nodes: the job's 2 workers x 4 "
        "nvidia.com/gpu must run at once, but pool 'lab-a100' holds at most 1: 1 node (its node "
        "list) x 1 worker per node (4 GPUs / 4 per worker); it has 4 nvidia.com/gpu in all, the "
        "job needs 8",
    ),
    (
        "gang whose GPUs add up but do not pack onto the nodes",
        "prod",
        _all(
            _set("nodePools.0.maxNodes", 2),
            _set("queueing", {"overcommit": 4.0}),
            _set("workloads.0.gpus.count", 5),
            _set("workloads.0.training.nodes", 3),
        ),
        "ai-platform:workloads[llama-finetune].training.nodes: the job's 3 workers x 5 "
        "nvidia.com/gpu must run at once, but pool 'h100-training' holds at most 2: 2 nodes "
        "(maxNodes) x 1 worker per node (8 GPUs / 5 per worker); it has 16 nvidia.com/gpu in "
        "all, the job needs 15",
    ),
    # --- volumes across nodes ---------------------------------------------------------------------
    (
        "multi-node job on a single-node dataset volume",
        "dev",
        _set("teams.0.volumes.0.accessModes", ["ReadWriteOnce"]),
        "ai-platform:workloads[llama-finetune].training.dataset: volume 'datasets' is not shared "
        "across nodes (ReadWriteOnce); the 2 workers run on different nodes and need "
        "ReadOnlyMany or ReadWriteMany",
    ),
    (
        "multi-node job creating single-node checkpoints",
        "dev",
        _set("workloads.0.training.checkpoints.accessModes", ["ReadWriteOnce"]),
        "ai-platform:workloads[llama-finetune].training.checkpoints.accessModes: must include "
        "ReadWriteMany: the 2 workers write checkpoints from different nodes",
    ),
    (
        "multi-node job on an existing single-node checkpoint volume",
        "dev",
        _set("workloads.0.training.checkpoints", {"claim": "checkpoints"}),
        "ai-platform:workloads[llama-finetune].training.checkpoints.claim: volume 'checkpoints' "
        "is not ReadWriteMany; the 2 workers write checkpoints from different nodes",
    ),
    (
        "ReadWriteMany checkpoints on a block storage class",
        "prod",
        _set("workloads.0.training.checkpoints.storageClass", "checkpoints-gp3"),
        "ai-platform:workloads[llama-finetune].training.checkpoints.accessModes: storage class "
        "'checkpoints-gp3' (ebs.csi.aws.com) provides volumes one node mounts at a time; "
        "ReadWriteMany needs a shared filesystem class",
    ),
    (
        "replicated server on a single-node model volume",
        "prod",
        _all(
            _set("teams.1.volumes.0.accessModes", ["ReadWriteOnce"]),
            _delete("workloads.3.inference.model"),
        ),
        "ai-platform:workloads[llm-chat].inference.model: volume 'models' is not shared across "
        "nodes (ReadWriteOnce); replicas on different nodes need ReadOnlyMany or ReadWriteMany",
    ),
    # --- settings ---------------------------------------------------------------------------------
    (
        "min replicas above max replicas",
        "dev",
        _set("workloads.3.inference.minReplicas", 4),
        "ai-platform:workloads[embeddings].inference.minReplicas: minReplicas 4 exceeds "
        "maxReplicas 3",
    ),
    (
        "disruption budget that keeps every replica",
        "dev",
        _set("workloads.3.inference.minAvailable", 2),
        "ai-platform:workloads[embeddings].inference.minAvailable: must be below minReplicas "
        "(2): a budget that keeps every replica blocks node drains",
    ),
    (
        "both disruption budget settings",
        "dev",
        _all(
            _set("workloads.3.inference.minAvailable", 1),
            _set("workloads.3.inference.maxUnavailable", 1),
        ),
        "ai-platform:workloads[embeddings].inference.minAvailable: set maxUnavailable or "
        "minAvailable, not both",
    ),
    (
        "metrics on the serving port",
        "dev",
        _set("workloads.3.inference.metricsPort", 8080),
        "ai-platform:workloads[embeddings].inference.metricsPort: must differ from port 8080: the "
        "monitoring namespace may reach the metrics port only",
    ),
    (
        "autoscaler without a metric",
        "dev",
        _all(
            _set("workloads.3.inference.targetCpuUtilization", None),
            _set("workloads.3.inference.targetMemoryUtilization", None),
        ),
        "ai-platform:workloads[embeddings].inference.targetCpuUtilization: set "
        "targetCpuUtilization, targetMemoryUtilization or customMetric: the autoscaler needs a "
        "metric",
    ),
    (
        "custom metric without an adapter",
        "dev",
        _set("autoscaling.prometheusAdapter", {"enabled": False}),
        "ai-platform:workloads[llm-chat].inference.customMetric: no metrics adapter serves "
        "'vllm_num_requests_waiting', so the HPA could not read it: set "
        "ai-platform:autoscaling.prometheusAdapter.enabled to true (it serves every customMetric "
        "the workloads name, from the platform's Prometheus), or drop customMetric and scale on "
        "CPU and memory",
    ),
    (
        "adapter without monitoring",
        "dev",
        _all(
            _set("monitoring", {"enabled": False}),
            _set("autoscaling.prometheusAdapter", {"enabled": True}),
        ),
        "ai-platform:autoscaling.prometheusAdapter.enabled: prometheus-adapter answers from the "
        "platform's Prometheus, which ai-platform:monitoring.enabled false does not install: "
        "enable monitoring, or turn the adapter off",
    ),
    (
        "queued CPU-only service",
        "dev",
        _set("workloads.3.inference.queued", True),
        "ai-platform:workloads[embeddings].inference.queued: only GPU workloads are queued: the "
        "team's LocalQueue admits onto GPU pools",
    ),
    (
        "duplicate dependency",
        "dev",
        _append("workloads.2.inference.statefulDependencies", REDIS_TWIN),
        "ai-platform:workloads[llm-chat].inference.statefulDependencies[redis].name: duplicate "
        "dependency name 'redis' (first used by statefulDependencies[0]); it is "
        "workloads[llm-chat].inference.statefulDependencies[1], one of 2 entries named 'redis'",
    ),
    (
        "CPU limit below the request",
        "dev",
        _set("workloads.3.resources.cpuLimit", "1"),
        "ai-platform:workloads[embeddings].resources.cpuLimit: limit 1 is below the request 2",
    ),
    (
        "memory limit below the request",
        "dev",
        _set("workloads.3.resources.memoryLimit", "2Gi"),
        "ai-platform:workloads[embeddings].resources.memoryLimit: limit 2Gi is below the request "
        "4Gi",
    ),
    (
        "shared memory as large as the memory limit",
        "dev",
        _set("workloads.0.training.shmSize", "192Gi"),
        "ai-platform:workloads[llama-finetune].training.shmSize: shared memory 192Gi would take "
        "all of the 192Gi memory limit (a memory-backed /dev/shm counts against it)",
    ),
    (
        "environment the platform sets",
        "dev",
        _set("workloads.0.env", {"MASTER_ADDR": "x"}),
        "ai-platform:workloads[llama-finetune].env.MASTER_ADDR: is set by the platform; remove it",
    ),
    (
        "environment a dependency sets",
        "dev",
        _set("workloads.2.env", {"REDIS_HOST": "x"}),
        "ai-platform:workloads[llm-chat].env.REDIS_HOST: is set by the platform; remove it",
    ),
    (
        "egress to the whole internet",
        "dev",
        _set("workloads.0.egress", {"cidrs": ["0.0.0.0/0"]}),
        "ai-platform:workloads[llama-finetune].egress.cidrs[0]: 0.0.0.0/0 opens egress to the "
        "whole internet; name the ranges the workload needs (object storage)",
    ),
    # --- quota ------------------------------------------------------------------------------------
    (
        "service CPU above the team quota",
        "dev",
        _set("workloads.3.resources.cpu", "9"),
        "ai-platform:workloads[embeddings].resources.cpu: needs 36 CPU at its peak (4 pods x 9), "
        "above the quota of team 'search-serving' (32)",
    ),
    (
        "service memory limits above the team quota",
        "dev",
        _set("workloads.3.resources.memoryLimit", "40Gi"),
        "ai-platform:workloads[embeddings].resources.memoryLimit: needs 160Gi memory (limits) at "
        "its peak (4 pods x 40Gi), above the quota of team 'search-serving' (128Gi)",
    ),
    (
        "service GPUs above the team quota",
        "dev",
        _all(
            _set("workloads.3.gpus", {"pool": "lab-a100", "count": 1}), _set("queueing", UNQUEUED)
        ),
        "ai-platform:workloads[embeddings].gpus.count: needs 4 nvidia.com/gpu at its peak (4 "
        "pods x 1), above the quota of team 'search-serving' (2)",
    ),
    (
        "pods above the team quota",
        "dev",
        _set("teams.1.quota.pods", 4),
        "ai-platform:workloads[llm-chat]: runs up to 6 pods at its peak, above the pod quota of "
        "team 'search-serving' (4)",
    ),
    (
        "created claims above the storage quota",
        "dev",
        _set("workloads.0.training.checkpoints.size", "2Ti"),
        "ai-platform:workloads[llama-finetune].training.checkpoints.size: the volumes and "
        "workload claims of team 'research' add up to 5125Gi (datasets 2Ti + checkpoints 1Ti + "
        "team-redis-data 5Gi + llama-finetune-checkpoints 2Ti), above its storage quota of 4Ti",
    ),
    (
        "created claims above the PVC quota",
        "dev",
        _set("teams.1.quota.persistentVolumeClaims", 1),
        "ai-platform:workloads[llm-chat].inference.statefulDependencies[redis].size: the volumes "
        "and workload claims of team 'search-serving' add up to 2 PVCs (models + "
        "llm-chat-redis), above its quota of 1",
    ),
    (
        "services at their minimum replicas above the quota together",
        "dev",
        _all(
            _set("workloads.2.resources.cpu", "6"),
            _set("workloads.3.resources.cpu", "5"),
            _set("workloads.3.inference.minReplicas", 4),
            _set("workloads.3.inference.maxReplicas", 5),
        ),
        (
            "ai-platform:workloads[embeddings]: the inference services of team 'search-serving' "
            "need 32.25 CPU at their minimum replicas (llm-chat 12.25 + embeddings 20), above the "
            "team's quota of 32",
            # and at its peak (5 replicas + 1 surge) embeddings alone outgrows the default queue
            DEFAULT_QUEUE_CPU % (30, 54),
        ),
    ),
    (
        "CPU-only service beyond what the default queue admits",
        "dev",
        _set("workloads.3.resources.cpu", "3"),
        DEFAULT_QUEUE_CPU % (12, 36),
    ),
    # --- queues -----------------------------------------------------------------------------------
    (
        "GPU job on a pool outside the team's queue",
        "prod",
        _set("workloads.1.gpus.pool", "l4-inference"),
        "ai-platform:workloads[llama-eval].gpus.pool: team 'research' queues GPU work on "
        "h100-training, spot-batch only; add 'l4-inference' to teams[research].queue.pools or "
        "Kueue never admits this workload",
    ),
    (
        "job larger than the queue can ever admit",
        "dev",
        _set("teams.0.queue.pools.0.borrowingLimit.gpus", 1),
        "ai-platform:workloads[llama-finetune].gpus.count: the job needs 8 nvidia.com/gpu at "
        "once, more than the queue of team 'research' can ever admit on pool 'lab-a100' (nominal "
        "6 + borrowing 1)",
    ),
    (
        "queue without CPU for the job",
        "dev",
        _set("teams.0.queue.pools.0.cpu", "0"),
        (
            "ai-platform:workloads[llama-finetune].resources.cpu: the job needs 48 cpu at once, "
            "more than the queue of team 'research' can ever admit on pool 'lab-a100' (nominal 0 "
            "+ borrowing 16)",
            "ai-platform:workloads[ray-sweep].resources.cpu: the Ray job's head and workers need "
            "19 cpu at once, more than the queue of team 'research' can ever admit on pool "
            "'lab-a100' (nominal 0 + borrowing 16)",
        ),
    ),
    (
        "queued service of a team without a queue",
        "dev",
        _delete("teams.1.queue"),
        "ai-platform:workloads[llm-chat].inference.queued: team 'search-serving' has no Kueue "
        "queue (teams[search-serving].queue)",
    ),
]


@pytest.mark.parametrize(
    ("stack", "mutation", "expected"),
    [pytest.param(stack, m, e, id=name) for name, stack, m, e in BAD_WORKLOADS],
)
def test_bad_workload_config_names_path_and_problem(
    stack: str, mutation: Mutation, expected: str | tuple[str, ...]
) -> None:
    config = stack_config(stack)
    mutation(config)
    source = f"Pulumi.{stack}.yaml"
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(config, source)
    lines = [f"{caught.value.source}: {i.key_path}: {i.message}" for i in caught.value.issues]
    wanted = (expected,) if isinstance(expected, str) else expected
    assert lines == [f"{source}: {line}" for line in wanted]


@pytest.mark.parametrize(("stack", "extra"), [("dev", ["pipeline-workers"]), ("prod", [])])
def test_checked_in_workloads_are_valid(stack: str, extra: list[str]) -> None:
    config = validate_platform_config(stack_config(stack), f"Pulumi.{stack}.yaml")
    ray = ["ray-lab", "ray-sweep"] if stack == "dev" else []
    assert [w.name for w in config.workloads] == [
        "llama-finetune",
        "llama-eval",
        "llm-chat",
        "embeddings",
        *extra,
        *ray,
    ]


def test_same_name_in_two_teams_is_fine() -> None:
    config = stack_config("dev")
    config["workloads"][3]["name"] = "llama-eval"  # search-serving's, next to research's
    validate_platform_config(config, "Pulumi.dev.yaml")


def test_queueing_off_lets_queued_services_run_unqueued() -> None:
    config = stack_config("dev")
    config["queueing"] = {"enabled": False}
    for team in config["teams"]:
        team.pop("queue", None)
    validate_platform_config(config, "Pulumi.dev.yaml")


def test_defaults_of_a_minimal_workload() -> None:
    config = stack_config("dev")
    config["workloads"] = [
        {
            # Not research: its GPU queue may take all of its quota, so its default queue
            # admits no CPU-only work (default_queue_work_fits).
            "name": "tokenize",
            "team": "platform",
            "kind": "training",
            "image": "nvcr.io/nvidia/pytorch:25.01-py3",
            "resources": {"cpu": "4", "memory": "32Gi"},
        },
        {
            "name": "echo",
            "team": "platform",
            "kind": "inference",
            "image": "ghcr.io/acme/echo:1.0.0",
            "resources": {"cpu": "1", "memory": "1Gi"},
        },
    ]
    job, service = validate_platform_config(config, "Pulumi.dev.yaml").workloads
    training = job.training_settings
    assert (training.nodes, training.workload_type, training.backoff_limit) == (1, "training", 3)
    assert (training.master_port, training.shm_size) == (29500, "16Gi")
    assert training.preflight.enabled and not training.preflight.fail_job_on_gpu_mismatch
    assert job.log_level == "info" and job.egress.ports == [443] and job.egress.cidrs == []
    inference = service.inference_settings
    assert (inference.min_replicas, inference.max_replicas) == (2, 5)
    assert inference.target_cpu_utilization == 80
    assert (inference.pdb_max_unavailable, inference.pdb_min_available) == (1, None)
    assert (inference.port, inference.metrics_port) == (8080, 9090)
    assert not inference.service_monitor and not inference.queued


@pytest.mark.parametrize(
    ("sharing", "per_pod", "expected"),
    [
        ({"mode": "exclusive"}, 4, 2),  # 2 nodes x (4 GPUs // 4)
        ({"mode": "exclusive"}, 3, 2),  # 2 nodes x (4 // 3): a pod's GPUs come from one node
        ({"mode": "time-slicing", "replicas": 4}, 1, 32),  # 2 x (4 GPUs x 4 replicas)
        ({"mode": "mig", "migProfile": "1g.10gb"}, 3, 18),  # 2 x (4 GPUs x 7 slices // 3)
    ],
)
def test_gang_capacity_is_per_node_units_times_nodes(
    sharing: dict[str, Any], per_pod: int, expected: int
) -> None:
    from infra.gpu.capacity import gang_capacity
    from infra.gpu.config import GpuNodePoolConfig

    pool = GpuNodePoolConfig.model_validate(
        {
            "name": "lab",
            "backend": "static",
            "gpuProduct": "NVIDIA-A100-SXM4-80GB",
            "gpusPerNode": 4,
            "nodes": ["a", "b"],
            "sharing": sharing,
        }
    )
    assert gang_capacity(pool, per_pod) == expected
