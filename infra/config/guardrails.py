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


def team_pairs_are_declared(config: GuardedPlatform) -> Iterator[ConfigIssue]:
    """``reachableFrom`` names other teams; a service opened to another team's namespace needs
    that team in its own team's ``reachableFrom`` (the pack refuses undeclared pairs)."""
    teams = ByName(config.teams, lambda team: team.name)
    owners = {team.namespace_name: team.name for _, team in parsed(config.teams)}
    for index, team in parsed(config.teams):
        for position, name in enumerate(team.reachable_from):
            if name == team.name:
                yield ConfigIssue(
                    ("teams", index, "reachableFrom", position), "a team always reaches itself"
                )
            elif name not in teams:
                yield ConfigIssue(
                    ("teams", index, "reachableFrom", position),
                    f"unknown team {name!r}; defined: {', '.join(teams.names())}",
                )
    for index, workload in parsed(config.workloads):
        found = teams.get(workload.team)
        if workload.kind != "inference" or found is None:
            continue
        team = found[1]
        allowed = workload.inference_settings.allow_from_namespaces
        for position, namespace in enumerate(allowed):
            caller = owners.get(namespace)
            if caller is not None and caller != team.name and caller not in team.reachable_from:
                yield ConfigIssue(
                    ("workloads", index, "inference", "allowFromNamespaces", position),
                    f"namespace {namespace!r} belongs to team {caller!r}, which may reach team "
                    f"{team.name!r} only if its reachableFrom lists {caller!r}",
                )


GUARDRAIL_RULES = (
    guardrails_need_kubernetes_1_30,
    gpu_workloads_are_queued,
    default_queue_flavor_is_reserved,
    team_pairs_are_declared,
)
