"""What the in-cluster guardrails (``components/guardrails.py``) will refuse, refused at config
time: a stack that passes the preview must not have its own workloads refused by the cluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from components.constants import DEFAULT_QUEUE_FLAVOR

from .cluster import ClusterConfig
from .errors import ConfigIssue
from .gpu import GpuNodePoolConfig
from .partial import ByName, parsed
from .queueing import QueueingConfig
from .teams import TeamConfig
from .workloads import WorkloadConfig

MIN_KUBERNETES_MINOR = 30
"""ValidatingAdmissionPolicy is GA (``admissionregistration.k8s.io/v1``) from Kubernetes 1.30."""


class GuardedPlatform(Protocol):
    @property
    def cluster(self) -> ClusterConfig: ...

    @property
    def teams(self) -> list[TeamConfig]: ...

    @property
    def node_pools(self) -> list[GpuNodePoolConfig]: ...

    @property
    def queueing(self) -> QueueingConfig: ...

    @property
    def workloads(self) -> list[WorkloadConfig]: ...


def guardrails_need_kubernetes_1_30(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    minor = int(config.cluster.kubernetes_version.split(".")[1])
    if minor < MIN_KUBERNETES_MINOR:
        yield ConfigIssue(
            ("cluster", "kubernetesVersion"),
            f"must be 1.{MIN_KUBERNETES_MINOR} or later: the tenant guardrails are "
            "ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1), got "
            f"{config.cluster.kubernetes_version!r}",
        )


def gpu_workloads_are_queued(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    """With Kueue on, the cluster refuses a GPU workload that does not name its team's GPU
    queue; a workload the platform would render unqueued is a config error instead."""
    if not config.queueing.enabled:
        return
    teams = ByName(config.teams, lambda team: team.name)
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if workload.gpus is None or found is None:
            continue
        team = found[1]
        inference = workload.kind == "inference"
        if inference and workload.inference_settings.queued:
            continue  # a queued service of a team without a queue is reported by its own rule
        if team.queue is None:
            yield ConfigIssue(
                ("workloads", index, "gpus"),
                f"team {team.name!r} has no GPU queue: with Kueue on, the cluster refuses GPU "
                "workloads outside the team's GPU queue; give the team one "
                "(ai-platform:teams[].queue)",
            )
        elif inference:
            yield ConfigIssue(
                ("workloads", index, "inference", "queued"),
                "must be true for a GPU service: with Kueue on, the cluster refuses GPU pods "
                "outside the team's GPU queue",
            )


def default_queue_flavor_is_reserved(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    if not config.queueing.enabled:
        return
    for index, pool in parsed(config.node_pools):
        if pool.name == DEFAULT_QUEUE_FLAVOR:
            yield ConfigIssue(
                ("nodePools", index, "name"),
                f"{DEFAULT_QUEUE_FLAVOR!r} is reserved: it names the Kueue flavor of the "
                "teams' default queues",
            )


GUARDRAIL_RULES = (
    guardrails_need_kubernetes_1_30,
    gpu_workloads_are_queued,
    default_queue_flavor_is_reserved,
)
