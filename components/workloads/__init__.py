"""Team workloads: training jobs, inference services and worker pools that respect the platform.

Usable from the stack config (``ai-platform:workloads``) and as a library from a team's own
Pulumi program (see ``examples/team-training``): build a ``SchedulingContract`` (or read one from
the platform stack's ``gpuPools`` output) and pass it in.
"""

from .common import ComputeResources, EgressAllowance, service_dns_name
from .inference_service import (
    Autoscaling,
    CustomMetric,
    InferenceService,
    InferenceServiceArgs,
    Probes,
    StatefulDependency,
)
from .training_job import CheckpointVolume, PreflightSpec, TrainingJob, TrainingJobArgs
from .worker_pool import QueueAutoscaling, WorkerPool, WorkerPoolArgs

__all__ = [
    "Autoscaling",
    "CheckpointVolume",
    "ComputeResources",
    "CustomMetric",
    "EgressAllowance",
    "InferenceService",
    "InferenceServiceArgs",
    "PreflightSpec",
    "Probes",
    "QueueAutoscaling",
    "StatefulDependency",
    "TrainingJob",
    "TrainingJobArgs",
    "WorkerPool",
    "WorkerPoolArgs",
    "service_dns_name",
]
