"""An ML team's own Pulumi program that reads ai-platform's stack outputs and deploys onto them.

Where ``examples/team-training`` writes the GPU pool's scheduling contract out by hand, this
program reads everything it needs from the platform stack through a fully-qualified
``StackReference``: the team's namespace, service account, environment ConfigMap, LocalQueue and
shared volumes (``teams.<team>``) and the pool's contract (``gpuPools.<pool>``). It refuses an
``outputsVersion`` it does not know. README.md explains why the components are created inside
one ``apply`` and why that still previews fully.

Run it from this directory (``__main__.py`` calls :func:`main`)::

    pulumi config set platformStack acme/ai-platform/prod
    pulumi up
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from components.constants import NODE_POOL_LABEL
from components.scheduling_contract import SchedulingContract, Taint
from components.workloads import (
    Autoscaling,
    CheckpointVolume,
    ComputeResources,
    InferenceService,
    InferenceServiceArgs,
    Probes,
    TrainingJob,
    TrainingJobArgs,
    service_dns_name,
)

DEFAULT_PLATFORM_STACK: Final = "acme/ai-platform/prod"
"""``<org>/<project>/<stack>`` of the platform stack, unless ``platformStack`` says otherwise."""
SUPPORTED_OUTPUTS_VERSION: Final = 1
"""The major version of the platform's outputs contract this program was written against."""
DEFAULT_TEAM: Final = "research"
DEFAULT_POOL: Final = "h100-training"

JOB_NAME: Final = "sft-train"
SERVER_NAME: Final = "sft-serve"


class PlatformOutputsError(ValueError):
    """The platform stack, or what it exports, is not what this program can work with."""


# --- Reading the platform's outputs (plain values: no Pulumi runtime needed) ----------------------


def platform_stack_name(value: str | None) -> str:
    """The configured stack name, which must be fully qualified.

    A bare ``prod`` would name a stack of *this* project (``research-workloads/prod``), and
    ``ai-platform/prod`` would depend on the organization of whoever runs ``pulumi up``.
    """
    name = value or DEFAULT_PLATFORM_STACK
    parts = name.split("/")
    if len(parts) != 3 or not all(parts):
        raise PlatformOutputsError(
            f"platformStack {name!r} must be fully qualified as <org>/<project>/<stack>, "
            f"e.g. {DEFAULT_PLATFORM_STACK}"
        )
    return name


def _as_int(value: Any, what: str) -> int:
    """Stack outputs travel as JSON through protobuf: every number arrives as a float."""
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise PlatformOutputsError(f"{what} must be an integer, got {value!r}")
    return int(value)


def check_outputs_version(version: Any, stack: str) -> int:
    """Fail clearly unless the platform exports the outputs contract this program knows."""
    if version is None:
        raise PlatformOutputsError(
            f"platform stack {stack} exports no outputsVersion: it is not an ai-platform stack, "
            "has never been deployed, or you may not read it"
        )
    try:
        found = _as_int(version, "outputsVersion")
    except PlatformOutputsError:
        found = None
    if found != SUPPORTED_OUTPUTS_VERSION:
        shown = found if found is not None else repr(version)
        raise PlatformOutputsError(
            f"platform stack {stack} exports outputsVersion {shown}, but this program "
            f"understands version {SUPPORTED_OUTPUTS_VERSION} only: read ai-platform's "
            "docs/upgrading.md and update this program (or pin platformStack to a stack that "
            f"still exports version {SUPPORTED_OUTPUTS_VERSION})"
        )
    return SUPPORTED_OUTPUTS_VERSION


def taint_from_toleration(toleration: Mapping[str, Any]) -> Taint:
    """Invert ``Taint.toleration``: ``Equal`` with a value, or ``Exists`` without one."""
    key, operator, effect = (toleration.get(k) for k in ("key", "operator", "effect"))
    value = toleration.get("value")
    if key and effect and "tolerationSeconds" not in toleration:
        if operator == "Equal" and value:
            return Taint(str(key), str(value), str(effect))
        if operator == "Exists" and not value:
            return Taint(str(key), "", str(effect))
    raise PlatformOutputsError(
        f"toleration {dict(toleration)} does not match exactly one taint "
        "(need key, effect and Equal with a value or Exists without one)"
    )


def contract_from_outputs(
    pool_outputs: Mapping[str, Any], pool: str | None = None
) -> SchedulingContract:
    """The pool's ``SchedulingContract`` from its ``gpuPools.<pool>`` output (v1 shape).

    The inverse of ``SchedulingContract.to_output``. ``pool`` defaults to the pool label of the
    node selector (the pool's name is the key of ``gpuPools``, not part of its value).
    """
    required = (
        "nodeSelector",
        "tolerations",
        "gpuResource",
        "gpusPerNode",
        "resourcesPerNode",
        "product",
        "capacityType",
        "sharing",
    )
    missing = [key for key in required if key not in pool_outputs]
    if missing:
        raise PlatformOutputsError(f"gpuPools.{pool or '<pool>'} lacks {', '.join(missing)}")
    node_selector = {str(k): str(v) for k, v in dict(pool_outputs["nodeSelector"]).items()}
    name = pool or node_selector.get(NODE_POOL_LABEL)
    if not name:
        raise PlatformOutputsError(f"cannot tell the pool's name from {node_selector}")
    return SchedulingContract(
        pool=name,
        product=str(pool_outputs["product"]),
        capacity_type=str(pool_outputs["capacityType"]),
        gpu_resource=str(pool_outputs["gpuResource"]),
        gpus_per_node=_as_int(pool_outputs["gpusPerNode"], f"gpuPools.{name}.gpusPerNode"),
        resources_per_node=_as_int(
            pool_outputs["resourcesPerNode"], f"gpuPools.{name}.resourcesPerNode"
        ),
        sharing=str(pool_outputs["sharing"]),
        node_selector=node_selector,
        taints=tuple(taint_from_toleration(t) for t in pool_outputs["tolerations"]),
    )


@dataclass(frozen=True)
class Target:
    """Where and how our workloads run, resolved from the platform's outputs."""

    team: str
    namespace: str
    service_account: str
    env_config_map: str
    local_queue: str
    contract: SchedulingContract
    dataset_claim: str | None
    checkpoint_claim: str | None
    model_claim: str | None


def _claim(volumes: Mapping[str, str], purpose: str) -> str | None:
    """The first shared claim with that purpose (``teams.<team>.volumes``: claim → purpose)."""
    return next((claim for claim, p in sorted(volumes.items()) if p == purpose), None)


def resolve_target(
    teams: Mapping[str, Any], gpu_pools: Mapping[str, Any], team: str, pool: str
) -> Target:
    """Our team's entry of ``teams`` and the chosen entry of ``gpuPools``, checked."""
    if team not in teams:
        raise PlatformOutputsError(
            f"team {team!r} is not in the platform's teams output (known: {', '.join(teams)})"
        )
    if pool not in gpu_pools:
        raise PlatformOutputsError(
            f"pool {pool!r} is not in the platform's gpuPools output "
            f"(known: {', '.join(gpu_pools) or 'none'})"
        )
    ours = teams[team]
    local_queue = ours.get("localQueue")
    if not local_queue:
        raise PlatformOutputsError(
            f"team {team!r} has no LocalQueue (teams.{team}.localQueue is null): GPU work goes "
            "through Kueue, so ask the platform team for a queue in the team's config"
        )
    volumes = dict(ours.get("volumes") or {})
    checkpoints = _claim(volumes, "checkpoints")
    return Target(
        team=team,
        namespace=str(ours["namespace"]),
        service_account=str(ours["serviceAccount"]),
        env_config_map=str(ours["envConfigMap"]),
        local_queue=str(local_queue),
        contract=contract_from_outputs(gpu_pools[pool], pool),
        dataset_claim=_claim(volumes, "datasets"),
        checkpoint_claim=checkpoints,
        # The server loads what the job wrote when the team has no separate models volume.
        model_claim=_claim(volumes, "models") or checkpoints,
    )


# --- Pulumi: the reference, the provider and the workloads ----------------------------------------


def read_platform_outputs(platform: pulumi.StackReference, stack: str) -> pulumi.Output[Any]:
    """``{"teams": ..., "gpuPools": ...}``, read only once ``outputsVersion`` has been checked.

    The version is checked first, so a stack of another major version fails with the version
    message rather than with whatever its renamed outputs would break. Within version 1,
    ``teams`` and ``gpuPools`` are always exported, hence ``require_output``.
    """
    checked = platform.get_output("outputsVersion").apply(
        lambda version: check_outputs_version(version, stack)
    )
    return checked.apply(
        lambda _: pulumi.Output.all(
            teams=platform.require_output("teams"),
            gpuPools=platform.require_output("gpuPools"),
        )
    )


@dataclass(frozen=True)
class Deployed:
    """What the workloads' consumers need (plain values: exported below)."""

    job_name: str
    master_addr: str
    service_host: str


def deploy(target: Target, opts: pulumi.ResourceOptions) -> Deployed:
    """A two-node fine-tuning job and the server for its model, on the team's pool and queue."""
    contract = target.contract
    job = TrainingJob(
        JOB_NAME,
        TrainingJobArgs(
            team=target.team,
            namespace=target.namespace,
            name=JOB_NAME,
            image="nvcr.io/nvidia/pytorch:25.01-py3",
            command=("torchrun",),
            args=("/workspace/sft.py", "--epochs", "3"),
            resources=ComputeResources(cpu="32", memory="256Gi"),
            nodes=2,
            gpus=contract.resources_per_node,  # per worker: whole nodes
            scheduling=contract,
            priority_class="high",
            queue_name=target.local_queue,
            service_account=target.service_account,
            env_config_map=target.env_config_map,
            dataset_claim=target.dataset_claim,
            checkpoints=(
                CheckpointVolume(claim=target.checkpoint_claim) if target.checkpoint_claim else None
            ),
            shm_size="32Gi",
        ),
        opts,
    )
    server = InferenceService(
        SERVER_NAME,
        InferenceServiceArgs(
            team=target.team,
            namespace=target.namespace,
            name=SERVER_NAME,
            image="nvcr.io/nvidia/tritonserver:25.01-py3",
            command=("tritonserver",),
            # The job writes its exported model under /<job> of the claim mounted at /models.
            args=(
                f"--model-repository=/models/{JOB_NAME}",
                "--http-port=8000",
                "--metrics-port=8002",
            ),
            resources=ComputeResources(cpu="8", memory="64Gi"),
            port=8000,
            metrics_port=8002,
            probes=Probes(readiness_path="/v2/health/ready", liveness_path="/v2/health/live"),
            autoscaling=Autoscaling(min_replicas=2, max_replicas=4),
            gpus=1,
            scheduling=contract,
            priority_class="high",
            queue_name=target.local_queue,
            service_account=target.service_account,
            env_config_map=target.env_config_map,
            model_claim=target.model_claim,
        ),
        opts,
    )
    return Deployed(
        job_name=job.job_name,
        master_addr=job.master_addr,
        service_host=service_dns_name(server.service_name, target.namespace),
    )


def main() -> None:
    config = pulumi.Config()
    stack = platform_stack_name(config.get("platformStack"))
    team = config.get("team") or DEFAULT_TEAM
    pool = config.get("pool") or DEFAULT_POOL

    platform = pulumi.StackReference("ai-platform", stack_name=stack)
    target = read_platform_outputs(platform, stack).apply(
        lambda outputs: resolve_target(outputs["teams"], outputs["gpuPools"], team, pool)
    )

    # Everything goes to the platform's cluster, never to whatever the current context is.
    provider = k8s.Provider("platform-cluster", context=config.require("kubeconfigContext"))
    opts = pulumi.ResourceOptions(provider=provider)

    # The components need plain values (the contract is a dataclass they validate, label values
    # and resource names are strings), so they are created in this one apply. StackReference
    # outputs are read at preview too, so preview still shows every object (README.md).
    deployed = target.apply(lambda resolved: deploy(resolved, opts))

    pulumi.export("platformStack", stack)
    pulumi.export("namespace", target.apply(lambda t: t.namespace))
    pulumi.export("jobName", deployed.apply(lambda d: d.job_name))
    pulumi.export("masterAddr", deployed.apply(lambda d: d.master_addr))
    pulumi.export("serviceHost", deployed.apply(lambda d: d.service_host))
