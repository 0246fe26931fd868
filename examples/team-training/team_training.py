"""An ML team's own Pulumi program on ai-platform: a fine-tuning job and the server for its model.

The team imports the platform's components as a library; the platform stack has already created
the namespace (quota, service account, team ConfigMap, default-deny networking), the Kueue
LocalQueue and the shared volumes. The GPU pool's scheduling contract is written out by hand
here; the platform stack also exports it as ``gpuPools.<pool>``.

Run it from this directory (``__main__.py`` runs this file)::

    pulumi up
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.constants import (
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    NODE_POOL_LABEL,
    TEAM_LOCAL_QUEUE_NAME,
)
from components.scheduling_contract import SchedulingContract, Taint
from components.workloads import (
    Autoscaling,
    CheckpointVolume,
    ComputeResources,
    CustomMetric,
    EgressAllowance,
    InferenceService,
    InferenceServiceArgs,
    PreflightSpec,
    Probes,
    TrainingJob,
    TrainingJobArgs,
    service_dns_name,
)

config = pulumi.Config()
team = config.get("team") or "research"
namespace = config.get("namespace") or team
pool = config.get("pool") or "h100-training"

# What the platform's gpuPools.<pool> output says about the pool, written out by hand.
h100 = SchedulingContract(
    pool=pool,
    product="NVIDIA-H100-80GB-HBM3",
    capacity_type="reserved",
    gpu_resource=GPU_RESOURCE,
    gpus_per_node=8,
    resources_per_node=8,
    node_selector={NODE_POOL_LABEL: pool},
    taints=(Taint(GPU_TAINT_KEY, GPU_TAINT_VALUE, GPU_TAINT_EFFECT),),
)

# Everything goes to the platform's cluster, never to whatever the current context is.
provider = k8s.Provider("platform", context=config.get("kubeconfigContext"))
opts = pulumi.ResourceOptions(provider=provider)

detector = TrainingJob(
    "detector-train",
    TrainingJobArgs(
        team=team,
        namespace=namespace,
        name="detector-train",
        image="nvcr.io/nvidia/pytorch:25.01-py3",
        command=("torchrun",),
        args=("/workspace/train_detector.py", "--epochs", "40"),
        resources=ComputeResources(cpu="64", memory="512Gi"),
        nodes=2,
        gpus=8,  # per worker
        scheduling=h100,
        priority_class="high",
        queue_name=TEAM_LOCAL_QUEUE_NAME,
        dataset_claim="datasets",
        checkpoints=CheckpointVolume(
            storage_class="datasets-efs",
            size="1Ti",
            access_modes=("ReadWriteMany",),
            protect=True,
        ),
        shm_size="32Gi",
        non_retryable_exit_codes=(78,),
        preflight=PreflightSpec(checkpoint_min_free="200Gi"),
        egress=EgressAllowance(cidrs=("52.216.0.0/15",)),
    ),
    opts,
)

server = InferenceService(
    "detector-serve",
    InferenceServiceArgs(
        team=team,
        namespace=namespace,
        name="detector-serve",
        image="nvcr.io/nvidia/tritonserver:25.01-py3",
        command=("tritonserver",),
        args=("--model-repository=/models", "--http-port=8000", "--metrics-port=8002"),
        resources=ComputeResources(cpu="8", memory="32Gi"),
        port=8000,
        metrics_port=8002,
        probes=Probes(readiness_path="/v2/health/ready", liveness_path="/v2/health/live"),
        autoscaling=Autoscaling(
            min_replicas=2,
            max_replicas=4,
            custom_metric=CustomMetric("nv_inference_queue_duration_us", "50000"),
        ),
        gpus=1,
        scheduling=h100,
        priority_class="high",
        model_claim="models",
        allow_from_namespaces=("ingress-nginx",),
    ),
    opts,
)

pulumi.export("jobName", detector.job_name)
pulumi.export("masterAddr", detector.master_addr)
pulumi.export("serviceHost", service_dns_name(server.service_name, namespace))
