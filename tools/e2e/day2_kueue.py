"""Day two, Kueue: the real controller admits, borrows and preempts, and the quota agrees.

    python -m tools.e2e day2 --stack dev --section kueue

After a real ``pulumi up`` of the stack, the test submits Jobs rendered by the platform's own
TrainingJob spec (``components.workloads.training_job.job_spec``), through each team's LocalQueue,
in its namespace, and reads back what Kueue decided: the Workload's ``QuotaReserved``,
``Admitted``, ``Evicted`` and ``Preempted`` conditions with their reasons and messages, the
ClusterQueue's reservation and borrowing, Kueue's ``Preempted`` events, and the pods, their nodes
and the Job's ``FailedCreate`` events. Every number comes from the rendered objects of the offline
preview (ClusterQueues, ResourceQuotas, PriorityClasses, the team namespaces' annotations): the
pure part of this module (:class:`Rendered` and the ``plan_*`` functions) turns them into the
scenarios' jobs, and ``tests/e2e/test_day2_kueue.py`` checks that arithmetic without a cluster.

KWOK finishes a Job's pods at once, which would give every quota back before anything queued
behind it. So the test's pods carry :data:`~tools.e2e.cluster.HOLD_ANNOTATION`: they stay Running,
as a trainer at work does, until the test releases them (the job then succeeds) or deletes them.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Final

from components.constants import (
    DEFAULT_QUEUE_FLAVOR,
    KUEUE_API_VERSION,
    KUEUE_QUEUE_LABEL,
    NAMESPACE_NAME_LABEL,
    TEAM_QUOTA_NAME,
    TENANT_PRIORITY_CLASSES_ANNOTATION,
    WORKLOAD_TYPE_TRAINING,
)
from components.gpu_node_pool import scheduling_contract
from components.scheduling_contract import SchedulingContract
from components.workloads.common import ComputeResources, workload_labels
from components.workloads.preflight import SCRIPT_FILENAME, script_text
from components.workloads.training_job import TRAINER_COMPONENT, TrainingJobArgs, job_spec
from infra.config import PlatformConfig
from infra.config.quantity import parse_quantity
from infra.gpu.build import pool_args as _pool_args  # the platform's config -> pool-args mapping
from infra.queueing.config import kueue_may_preempt as may_preempt

from .cluster import HOLD_ANNOTATION, LocalCluster
from .report import fail
from .run import E2E

# --- what the rendered stack says ---------------------------------------------------------------

ZERO: Final = Decimal(0)
MILLI: Final = Decimal("0.001")
MIB: Final = Decimal(2**20)
CPU_ONLY_WORKER_CPU: Final = Decimal(16)
"""Most CPU one worker of a CPU-only job asks for: it must fit a system node (32 CPUs)."""


@dataclass(frozen=True)
class Limits:
    """One resource of one flavour of a ClusterQueue."""

    nominal: Decimal
    borrowing_limit: Decimal | None = None
    """None: Kueue's default, no limit."""
    lending_limit: Decimal | None = None
    """None: Kueue's default, all of the nominal quota."""

    @property
    def lendable(self) -> Decimal:
        """What the cohort may borrow of it while it is idle."""
        return self.nominal if self.lending_limit is None else min(self.nominal, self.lending_limit)


NO_QUOTA: Final = Limits(ZERO, ZERO, ZERO)
"""A resource a ClusterQueue does not cover (Kueue admits none of it)."""


@dataclass(frozen=True)
class Queue:
    """A rendered ClusterQueue."""

    name: str
    namespace: str | None
    """The one namespace its ``namespaceSelector`` selects (the platform's queues select one)."""
    cohort: str | None
    preemption: Mapping[str, str]
    """``withinClusterQueue``, ``reclaimWithinCohort``, ``borrowWithinCohort`` (its policy)."""
    flavors: Mapping[str, Mapping[str, Limits]]
    """Flavour -> resource -> limits, in the queue's order."""

    def limits(self, flavor: str, resource: str) -> Limits:
        return self.flavors.get(flavor, {}).get(resource, NO_QUOTA)


@dataclass(frozen=True)
class PriorityView:
    name: str
    value: int
    preemption_policy: str
    global_default: bool = False


def _quantity(value: Any) -> Decimal | None:
    return None if value is None else parse_quantity(value)


def _queue(manifest: Mapping[str, Any]) -> Queue:
    spec = manifest.get("spec") or {}
    selector = (spec.get("namespaceSelector") or {}).get("matchLabels") or {}
    preemption = spec.get("preemption") or {}
    flavors: dict[str, dict[str, Limits]] = {}
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            flavors[flavor["name"]] = {
                resource["name"]: Limits(
                    parse_quantity(resource["nominalQuota"]),
                    _quantity(resource.get("borrowingLimit")),
                    _quantity(resource.get("lendingLimit")),
                )
                for resource in flavor.get("resources") or []
            }
    return Queue(
        name=manifest["metadata"]["name"],
        namespace=selector.get(NAMESPACE_NAME_LABEL),
        cohort=spec.get("cohortName"),
        preemption={
            "withinClusterQueue": preemption.get("withinClusterQueue", "Never"),
            "reclaimWithinCohort": preemption.get("reclaimWithinCohort", "Never"),
            "borrowWithinCohort": (preemption.get("borrowWithinCohort") or {}).get(
                "policy", "Never"
            ),
        },
        flavors=flavors,
    )


@dataclass(frozen=True)
class Rendered:
    """What the stack renders that Kueue and the namespace quota decide with."""

    queues: Mapping[str, Queue]
    local_queues: Mapping[tuple[str, str], str]
    """``(namespace, LocalQueue) -> ClusterQueue``."""
    quotas: Mapping[str, Mapping[str, Decimal]]
    """Namespace -> the team ResourceQuota's ``hard``."""
    classes: Mapping[str, PriorityView]
    allowed: Mapping[str, tuple[str, ...]]
    """Namespace -> the PriorityClasses its pods may use (the guardrails' annotation)."""
    flavor_labels: Mapping[str, Mapping[str, str]]
    """ResourceFlavor -> the node labels Kueue steers its pods to."""

    @classmethod
    def from_manifests(cls, manifests: Iterable[Mapping[str, Any]]) -> Rendered:
        queues: dict[str, Queue] = {}
        local_queues: dict[tuple[str, str], str] = {}
        quotas: dict[str, dict[str, Decimal]] = {}
        classes: dict[str, PriorityView] = {}
        allowed: dict[str, tuple[str, ...]] = {}
        flavor_labels: dict[str, dict[str, str]] = {}
        for manifest in manifests:
            kind, meta = manifest.get("kind"), manifest.get("metadata") or {}
            if kind == "ClusterQueue":
                queues[meta["name"]] = _queue(manifest)
            elif kind == "LocalQueue":
                local_queues[(meta["namespace"], meta["name"])] = manifest["spec"]["clusterQueue"]
            elif kind == "ResourceQuota" and meta.get("name") == TEAM_QUOTA_NAME:
                hard = (manifest.get("spec") or {}).get("hard") or {}
                quotas[meta["namespace"]] = {k: parse_quantity(v) for k, v in hard.items()}
            elif kind == "PriorityClass":
                classes[meta["name"]] = PriorityView(
                    meta["name"],
                    int(manifest["value"]),
                    manifest.get("preemptionPolicy") or "PreemptLowerPriority",
                    bool(manifest.get("globalDefault")),
                )
            elif kind == "Namespace":
                annotation = (meta.get("annotations") or {}).get(TENANT_PRIORITY_CLASSES_ANNOTATION)
                if annotation is not None:
                    allowed[meta["name"]] = tuple(n for n in annotation.split(",") if n)
            elif kind == "ResourceFlavor":
                flavor_labels[meta["name"]] = dict(
                    (manifest.get("spec") or {}).get("nodeLabels") or {}
                )
        return cls(queues, local_queues, quotas, classes, allowed, flavor_labels)

    # --- queues ---

    def team_queue(self, namespace: str) -> Queue | None:
        """The namespace's GPU ClusterQueue: the one in a cohort."""
        return next(
            (q for q in self.queues.values() if q.namespace == namespace and q.cohort), None
        )

    def default_queue(self, namespace: str) -> Queue | None:
        """The namespace's default ClusterQueue: what work naming no queue gets."""
        return next(
            (
                q
                for q in self.queues.values()
                if q.namespace == namespace
                and q.cohort is None
                and DEFAULT_QUEUE_FLAVOR in q.flavors
            ),
            None,
        )

    def local_queue(self, queue: Queue) -> str:
        for (namespace, name), target in self.local_queues.items():
            if target == queue.name and namespace == queue.namespace:
                return name
        raise LookupError(f"no LocalQueue of {queue.namespace} points at ClusterQueue {queue.name}")

    def cohort_peers(self, queue: Queue) -> list[Queue]:
        if queue.cohort is None:
            return []
        return [q for q in self.queues.values() if q.cohort == queue.cohort and q != queue]

    def borrowable(
        self, queue: Queue, flavor: str, resource: str, busy: Collection[str] = ()
    ) -> Decimal:
        """What ``queue`` may borrow of (flavour, resource) while every peer of its cohort but
        those named in ``busy`` is idle: the peers' lendable quota, capped by its borrowing
        limit."""
        supply = sum(
            (
                peer.limits(flavor, resource).lendable
                for peer in self.cohort_peers(queue)
                if peer.name not in busy
            ),
            ZERO,
        )
        limit = queue.limits(flavor, resource).borrowing_limit
        return supply if limit is None else min(limit, supply)

    def admissible(
        self, queue: Queue, flavor: str, resource: str, busy: Collection[str] = ()
    ) -> Decimal:
        """The most of (flavour, resource) Kueue admits into ``queue`` at once."""
        return queue.limits(flavor, resource).nominal + self.borrowable(
            queue, flavor, resource, busy
        )

    # --- priorities ---

    @property
    def default_class(self) -> str | None:
        return next((c.name for c in self.classes.values() if c.global_default), None)

    def never_preempting(self, namespace: str) -> list[str]:
        """The classes of the namespace whose PriorityClass says ``preemptionPolicy: Never``."""
        return [
            name
            for name in self.allowed.get(namespace, ())
            if name in self.classes and self.classes[name].preemption_policy == "Never"
        ]


# --- the scenarios' numbers ---------------------------------------------------------------------


def floor_cpu(value: Decimal) -> Decimal:
    return value.quantize(MILLI, rounding=ROUND_FLOOR)


def floor_memory(value: Decimal) -> Decimal:
    return (value / MIB).to_integral_value(rounding=ROUND_FLOOR) * MIB


def cpu_text(value: Decimal) -> str:
    """A CPU quantity as Kubernetes writes it: whole CPUs, else millicores."""
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int(value * 1000)}m"


def memory_text(value: Decimal) -> str:
    """Bytes in the largest binary unit that divides them."""
    if value == 0:
        return "0"
    for unit, power in (("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)):
        if value % Decimal(2**power) == 0:
            return f"{int(value / Decimal(2**power))}{unit}"
    return str(int(value))


@dataclass(frozen=True)
class Worker:
    """One pod of a job: GPUs (units of the pool's GPU resource), CPU and memory requests."""

    gpus: int
    cpu: Decimal
    memory: Decimal

    def describe(self, gpu_resource: str) -> str:
        gpus = f"{self.gpus} {gpu_resource}, " if self.gpus else ""
        return f"{gpus}{cpu_text(self.cpu)} cpu, {memory_text(self.memory)} memory"


@dataclass(frozen=True)
class Demand:
    """A job: ``workers`` identical pods (an Indexed Job, one worker per node)."""

    worker: Worker
    workers: int = 1

    def total(self, resource: str, gpu_resource: str | None = None) -> Decimal:
        if resource == "cpu":
            return self.worker.cpu * self.workers
        if resource == "memory":
            return self.worker.memory * self.workers
        if resource == gpu_resource:
            return Decimal(self.worker.gpus * self.workers)
        return ZERO

    def describe(self, gpu_resource: str) -> str:
        each = self.worker.describe(gpu_resource)
        return each if self.workers == 1 else f"{self.workers} workers x ({each})"


class PlanError(ValueError):
    """The stack's numbers cannot show a scenario; the message says why and what they would
    have to say."""


@dataclass(frozen=True)
class BorrowPlan:
    """A team's queue on one pool, and a peer of its cohort it borrows from while idle."""

    queue: Queue
    lender: Queue
    flavor: str
    gpu_resource: str
    per_node: int
    """Units of the GPU resource on one node of the pool."""
    nominal: int
    borrow: int
    """What the team may borrow of the lender's quota while the lender is idle."""
    worker: Worker
    """One pod of the scenarios' jobs (at most a node's GPUs)."""
    first: Demand
    """As many workers as fit the nominal quota: a second job of one worker exceeds it and fits
    only by borrowing, a third does not fit at all."""
    lender_job: Worker
    """The lender's own job on the pool, within its nominal quota: it reclaims what was lent."""
    largest: Demand
    """The largest job Kueue admits into the team's queue with the lender idle."""

    @property
    def admissible(self) -> int:
        return self.nominal + self.borrow

    @property
    def full(self) -> int:
        """What the first and the second job hold together: the queue's nominal plus borrowing,
        with less than one more worker left."""
        return (self.first.workers + 1) * self.worker.gpus

    def lines(self) -> list[str]:
        r = self.gpu_resource
        return [
            f"{self.queue.name} on {self.flavor}: nominal {self.nominal} {r}, may borrow "
            f"{self.borrow} of {self.lender.name}'s idle quota (admits {self.admissible} at once)",
            f"a first job of {self.first.describe(r)} fits the nominal quota; a second of "
            f"{self.worker.describe(r)} takes it to {self.full} {r}, borrowing "
            f"{self.full - self.nominal}; a third does not fit",
            f"{self.lender.name}'s own job: {self.lender_job.describe(r)}",
            f"largest admissible job: {self.largest.describe(r)}",
        ]


def _ratio(numerator: Decimal, denominator: Decimal) -> Decimal | None:
    return None if denominator <= 0 else numerator / denominator


def per_gpu(
    rendered: Rendered, queue: Queue, flavor: str, gpu: str, busy: Collection[str]
) -> tuple[Decimal, Decimal]:
    """CPU and memory per GPU unit that keep the GPUs the binding resource, within nominal
    quota and at the most the queue admits (the smaller of the two ratios)."""
    limits = {r: queue.limits(flavor, r) for r in ("cpu", "memory", gpu)}
    values = []
    for resource in ("cpu", "memory"):
        ratios = [
            _ratio(limits[resource].nominal, limits[gpu].nominal),
            _ratio(
                rendered.admissible(queue, flavor, resource, busy),
                rendered.admissible(queue, flavor, gpu, busy),
            ),
        ]
        found = [r for r in ratios if r is not None]
        values.append(min(found) if found else ZERO)
    return values[0], values[1]


def worker_gpus(nominal: int, admissible: int, per_node: int) -> int | None:
    """The largest worker (at most a node's units) such that the workers that fit the nominal
    quota plus one more fit what the queue admits, and one more after that does not."""
    for gpus in range(per_node, 0, -1):
        first = nominal // gpus
        if first >= 1 and (first + 1) * gpus <= admissible < (first + 2) * gpus:
            return gpus
    return None


def plan_borrowing(
    rendered: Rendered, gpu_resources: Mapping[str, str], per_node: Mapping[str, int]
) -> BorrowPlan:
    """The first team queue (by name) with a pool where an idle peer lends it enough that a job
    beyond its nominal quota fits only by borrowing, and one more never fits."""
    reasons: list[str] = []
    for queue in sorted(rendered.queues.values(), key=lambda q: q.name):
        if queue.cohort is None:
            continue
        for flavor in queue.flavors:
            gpu = gpu_resources.get(flavor)
            if gpu is None:
                continue
            nominal = int(queue.limits(flavor, gpu).nominal)
            lenders = sorted(
                (p for p in rendered.cohort_peers(queue) if p.limits(flavor, gpu).lendable > 0),
                key=lambda p: (-p.limits(flavor, gpu).lendable, p.name),
            )
            for lender in lenders:
                busy = [p.name for p in rendered.cohort_peers(queue) if p != lender]
                borrow = int(rendered.borrowable(queue, flavor, gpu, busy))
                w = worker_gpus(nominal, nominal + borrow, per_node[flavor])
                if w is None:
                    reasons.append(
                        f"{queue.name} on {flavor}: nominal {nominal}, borrowing {borrow} from "
                        f"{lender.name}: no worker of at most {per_node[flavor]} {gpu} fills "
                        "the nominal quota, borrows with one more and cannot add another"
                    )
                    continue
                cpu, memory = per_gpu(rendered, queue, flavor, gpu, busy)
                worker = Worker(w, floor_cpu(cpu * w), floor_memory(memory * w))
                first = Demand(worker, nominal // w)
                lent = lender.limits(flavor, gpu)
                lender_gpus = min(int(lent.nominal), per_node[flavor])
                lender_cpu, lender_memory = per_gpu(rendered, lender, flavor, gpu, ())
                lender_job = Worker(
                    lender_gpus,
                    floor_cpu(lender_cpu * lender_gpus),
                    floor_memory(lender_memory * lender_gpus),
                )
                left = nominal + max(0, min(borrow, int(lent.lendable) - lender_gpus))
                if left >= (first.workers + 1) * w:
                    reasons.append(
                        f"{queue.name} on {flavor}: once {lender.name} runs {lender_gpus} {gpu}, "
                        f"both jobs ({(first.workers + 1) * w}) still fit"
                    )
                    continue
                admissible = nominal + borrow
                workers = math.ceil(admissible / per_node[flavor])
                largest = Demand(
                    Worker(
                        admissible // workers,
                        floor_cpu(rendered.admissible(queue, flavor, "cpu", busy) / workers),
                        floor_memory(rendered.admissible(queue, flavor, "memory", busy) / workers),
                    ),
                    workers,
                )
                return BorrowPlan(
                    queue, lender, flavor, gpu, per_node[flavor], nominal, borrow, worker, first,
                    lender_job, largest,
                )  # fmt: skip
    raise PlanError(
        "no team queue borrows GPUs from an idle peer in this stack"
        + ("".join(f"\n  {r}" for r in reasons) or ": no borrowing limit above 0 has a lender")
    )


@dataclass(frozen=True)
class PriorityPlan:
    """The classes a team's scenarios use: its default, one above it, and the never-preempting
    ones."""

    low: PriorityView
    high: PriorityView | None
    never: tuple[PriorityView, ...]


def plan_priorities(rendered: Rendered, namespace: str) -> PriorityPlan:
    allowed = [
        rendered.classes[n] for n in rendered.allowed.get(namespace, ()) if n in rendered.classes
    ]
    if not allowed:
        raise PlanError(f"namespace {namespace} may use no PriorityClass")
    preempting = [c for c in allowed if c.preemption_policy != "Never"]
    default = rendered.default_class
    low = next((c for c in preempting if c.name == default), None) or min(
        preempting or allowed, key=lambda c: c.value
    )
    higher = [c for c in preempting if c.value > low.value]
    return PriorityPlan(
        low,
        max(higher, key=lambda c: c.value) if higher else None,
        tuple(c for c in allowed if c.preemption_policy == "Never"),
    )


@dataclass(frozen=True)
class ReclaimCase:
    """A team that may use a never-preempting class queues on a pool where a peer may borrow:
    the one place Kueue could preempt for a never-preempting workload (reclaiming quota from a
    borrowing queue, which ``reclaimWithinCohort`` allows whoever lent it). The config refuses
    such a stack; the section shows what Kueue does if one gets through."""

    lender: Queue
    """The team that may use the class (it reclaims)."""
    borrower: Queue
    flavor: str
    gpu_resource: str
    never_class: str
    borrowable: int
    """What the borrower may borrow on the pool, from anyone in the cohort."""

    def describe(self) -> str:
        return (
            f"{self.lender.name} may use {self.never_class} on {self.flavor}, where "
            f"{self.borrower.name} may borrow up to {self.borrowable} {self.gpu_resource}; it "
            f"reclaims with reclaimWithinCohort {self.lender.preemption['reclaimWithinCohort']}"
        )


def reclaim_cases(rendered: Rendered, gpu_resources: Mapping[str, str]) -> list[ReclaimCase]:
    """Every (team with a never-preempting class, peer borrowing on one of its pools), as the
    config rule ``never_preempting_classes_never_preempt`` finds them in the rendered queues."""
    cases = []
    for lender in sorted(rendered.queues.values(), key=lambda q: q.name):
        never = rendered.never_preempting(lender.namespace or "")
        if not never or lender.cohort is None:
            continue
        for flavor in lender.flavors:
            gpu = gpu_resources.get(flavor)
            if gpu is None:
                continue
            for borrower in sorted(rendered.cohort_peers(lender), key=lambda q: q.name):
                amount = int(rendered.borrowable(borrower, flavor, gpu))
                if amount > 0:
                    cases.append(ReclaimCase(lender, borrower, flavor, gpu, never[0], amount))
    return cases


@dataclass(frozen=True)
class QuotaPlan:
    """A namespace's quota against what its two ClusterQueues admit."""

    namespace: str
    hard: Mapping[str, Decimal]
    """The team ResourceQuota, by the resource Kueue names (``cpu``, ``memory``, GPU units)."""
    gpu_queue: Mapping[str, Decimal]
    """The most its GPU queue may admit: nominal plus borrowing limit over all its flavours."""
    default_queue: Mapping[str, Decimal]
    """The most its default queue may admit (CPU-only work)."""
    largest: Demand
    gpu_resource: str
    overflow: Demand | None
    """A CPU-only job that, with :attr:`largest` running, takes the namespace past its quota;
    None when no such job exists (the quota holds both)."""

    def conflicts(self) -> list[str]:
        """Each resource where both queues together may admit more than the quota."""
        lines = []
        for resource in ("cpu", "memory"):
            gpu = self.gpu_queue.get(resource, ZERO)
            default = self.default_queue.get(resource, ZERO)
            hard = self.hard.get(resource)
            if hard is not None and gpu + default > hard:
                show = cpu_text if resource == "cpu" else memory_text
                lines.append(
                    f"{resource}: the GPU queue admits up to {show(gpu)} and the default queue "
                    f"{show(default)}, {show(gpu + default)} together, above the namespace's "
                    f"{show(hard)}"
                )
        return lines


QUOTA_KEYS: Final = {"cpu": "requests.cpu", "memory": "requests.memory"}


def quota_hard(hard: Mapping[str, Decimal], resource: str) -> Decimal | None:
    """The namespace quota of a resource Kueue names (``cpu`` is ``requests.cpu`` there, a GPU
    resource ``requests.<resource>``)."""
    return hard.get(QUOTA_KEYS.get(resource, f"requests.{resource}"))


def plan_quota(rendered: Rendered, plan: BorrowPlan) -> QuotaPlan:
    queue = plan.queue
    namespace = queue.namespace or ""
    raw = rendered.quotas.get(namespace, {})
    gpu = plan.gpu_resource
    hard = {r: value for r in ("cpu", "memory", gpu) if (value := quota_hard(raw, r)) is not None}
    gpu_queue: dict[str, Decimal] = {}
    for flavor in queue.flavors:
        for resource, limits in queue.flavors[flavor].items():
            borrow = limits.borrowing_limit
            if borrow is None:  # no limit: what the cohort could lend
                borrow = rendered.borrowable(queue, flavor, resource)
            gpu_queue[resource] = gpu_queue.get(resource, ZERO) + limits.nominal + borrow
    default = rendered.default_queue(namespace)
    default_admits = (
        {r: default.limits(DEFAULT_QUEUE_FLAVOR, r).nominal for r in ("cpu", "memory")}
        if default
        else {}
    )
    overflow = None
    if "cpu" in hard:
        cpu = hard["cpu"] - plan.largest.total("cpu") + 1
        if cpu > 0:
            workers = math.ceil(cpu / CPU_ONLY_WORKER_CPU)
            each = (cpu / workers).quantize(MILLI, rounding=ROUND_CEILING)
            overflow = Demand(Worker(0, each, Decimal(2**30)), workers)
    return QuotaPlan(namespace, hard, gpu_queue, default_admits, plan.largest, gpu, overflow)


# --- the live cluster ---------------------------------------------------------------------------

SECTION_LABEL: Final = "e2e.aiplatform.io/day2"
SECTION_VALUE: Final = "kueue"
JOB_PREFIX: Final = "e2e-kueue-"
_GROUP = KUEUE_API_VERSION.split("/")
WORKLOADS: Final = f"workloads.{_GROUP[1]}.{_GROUP[0]}"
CLUSTER_QUEUES: Final = f"clusterqueues.{_GROUP[1]}.{_GROUP[0]}"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
DECIDE_TIMEOUT_S: Final = 90.0
"""Kueue decides within a scheduling cycle or two; pods then need the job controller, the
scheduler and KWOK."""
SETTLE_TIMEOUT_S: Final = 240.0
STAYS_S: Final = 6.0
"""How long a "stays pending" or "never preempts" is watched after Kueue decided: several of its
scheduling cycles and requeues, each a chance to change its mind."""
POLL_S: Final = 0.5
PREEMPTED_MESSAGE: Final = "Preempted to accommodate"
"""How Kueue's eviction message starts; a victim keeps it until the scheduler tries it again."""
DEFAULT_IMAGE: Final = "nvcr.io/nvidia/pytorch:25.01-py3"


def _condition(obj: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return condition
    return None


def _true(obj: Mapping[str, Any] | None, kind: str) -> bool:
    found = _condition(obj, kind)
    return bool(found and found.get("status") == "True")


@dataclass
class JobState:
    """One Job as the API server and Kueue see it at one moment."""

    name: str
    namespace: str
    job: Mapping[str, Any] | None
    workload: Mapping[str, Any] | None
    pods: list[Mapping[str, Any]]
    failed_create: list[str]

    @property
    def suspended(self) -> bool:
        return bool(((self.job or {}).get("spec") or {}).get("suspend"))

    @property
    def reserved(self) -> bool:
        return _true(self.workload, "QuotaReserved")

    @property
    def admitted(self) -> bool:
        return _true(self.workload, "Admitted")

    @property
    def finished(self) -> bool:
        return _true(self.workload, "Finished")

    @property
    def pending(self) -> str | None:
        """Kueue's reason and message while the workload reserves no quota."""
        found = _condition(self.workload, "QuotaReserved")
        if self.workload is None or found is None or found.get("status") == "True":
            return None
        return f"{found.get('reason')}: {found.get('message')}"

    @property
    def preempted(self) -> str | None:
        found = _condition(self.workload, "Preempted")
        if found is None or found.get("status") != "True":
            return None
        return f"{found.get('reason')}: {found.get('message')}"

    @property
    def evicted(self) -> str | None:
        found = _condition(self.workload, "Evicted")
        if found is None or found.get("status") != "True":
            return None
        return f"{found.get('reason')}: {found.get('message')}"

    @property
    def flavors(self) -> dict[str, str]:
        admission = ((self.workload or {}).get("status") or {}).get("admission") or {}
        found: dict[str, str] = {}
        for assignment in admission.get("podSetAssignments") or []:
            found.update(assignment.get("flavors") or {})
        return found

    @property
    def live_pods(self) -> list[Mapping[str, Any]]:
        return [p for p in self.pods if not p["metadata"].get("deletionTimestamp")]

    def summary(self) -> str:
        phases = sorted(p.get("status", {}).get("phase", "?") for p in self.live_pods)
        kueue = (
            "finished"
            if self.finished
            else "admitted"
            if self.admitted
            else f"pending ({self.pending})"
            if self.pending
            else "no workload yet"
            if self.workload is None
            else "reserving"
        )
        return (
            f"{self.namespace}/{self.name}: {kueue}, "
            f"{'suspended' if self.suspended else 'running'}, pods {phases or 'none'}"
        )


@dataclass(frozen=True)
class Submitted:
    name: str
    namespace: str
    demand: Demand
    priority: str
    pool: str | None
    queue: str | None


@dataclass
class Day2Kueue:
    """The section's cluster-side half: submit, observe, release, clean up."""

    cluster: LocalCluster
    config: PlatformConfig
    rendered: Rendered
    contracts: Mapping[str, SchedulingContract]
    image: str = DEFAULT_IMAGE
    submitted: list[Submitted] = field(default_factory=list)

    # --- reading ---

    def get(self, *args: str) -> Any:
        return self.cluster.get_json(*args)

    def team_of(self, namespace: str) -> str:
        return next(t.name for t in self.config.teams if t.namespace_name == namespace)

    def state(self, job: Submitted) -> JobState:
        live = self.cluster.kubectl(
            "get", "job", "-n", job.namespace, job.name, "-o", "json", "--ignore-not-found"
        ).stdout.strip()
        obj = json.loads(live) if live else None
        workload = None
        if obj is not None:
            uid = obj["metadata"]["uid"]
            for item in self.get(WORKLOADS, "-n", job.namespace).get("items", []):
                owners = item["metadata"].get("ownerReferences") or []
                if any(o.get("uid") == uid for o in owners):
                    workload = item
        pods = self.get("pods", "-n", job.namespace, "-l", f"{JOB_NAME_LABEL}={job.name}")
        events = self.get(
            "events",
            "-n",
            job.namespace,
            "--field-selector",
            f"involvedObject.kind=Job,involvedObject.name={job.name},reason=FailedCreate",
        )
        return JobState(
            job.name,
            job.namespace,
            obj,
            workload,
            pods.get("items", []),
            [e.get("message", "") for e in events.get("items", [])],
        )

    def wait(
        self,
        job: Submitted,
        what: str,
        done: Callable[[JobState], bool],
        timeout_s: float = DECIDE_TIMEOUT_S,
    ) -> JobState:
        """Poll until ``done`` holds; fail with the last state and the others' on timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            state = self.state(job)
            if done(state):
                return state
            if time.monotonic() > deadline:
                others = [self.state(j).summary() for j in self.submitted if j != job]
                fail(
                    f"{job.namespace}/{job.name}: not {what} within {timeout_s:.0f} s: "
                    f"{state.summary()}" + "".join(f"\n  {line}" for line in others)
                )
            time.sleep(POLL_S)

    def stays(self, seconds: float, checks: Callable[[], list[str]]) -> None:
        """Watch ``checks`` (problems, empty while all is well) for ``seconds``; fail at the first
        problem."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            problems = checks()
            if problems:
                fail("\n".join(problems))
            time.sleep(POLL_S)

    def wait_admitted(self, job: Submitted) -> JobState:
        """Admitted, unsuspended, and every worker's pod created and bound to a node."""
        return self.wait(
            job,
            "admitted and placed",
            lambda s: (
                s.admitted
                and not s.suspended
                and len(s.live_pods) == job.demand.workers
                and all(p.get("spec", {}).get("nodeName") for p in s.live_pods)
            ),
        )

    def wait_pending(self, job: Submitted) -> JobState:
        """Kueue tried to admit it and could not: its scheduler's own reason (not the eviction
        message a preempted workload carries until it is tried again)."""
        return self.wait(
            job,
            "found inadmissible by Kueue's scheduler",
            lambda s: (
                s.pending is not None
                and s.suspended
                and not s.live_pods
                and PREEMPTED_MESSAGE not in s.pending
            ),
        )

    def queue_usage(self, queue: str) -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
        """(flavour, resource) -> (reserved, borrowed), from the ClusterQueue's status."""
        status = self.get(CLUSTER_QUEUES, queue).get("status") or {}
        usage = {}
        for flavor in status.get("flavorsReservation") or []:
            for resource in flavor.get("resources") or []:
                usage[(flavor["name"], resource["name"])] = (
                    parse_quantity(resource.get("total") or "0"),
                    parse_quantity(resource.get("borrowed") or "0"),
                )
        return usage

    def wait_usage(
        self, queue: str, flavor: str, resource: str, reserved: Decimal, borrowed: Decimal
    ) -> None:
        """The ClusterQueue's status catches up with what its workloads hold."""
        deadline = time.monotonic() + DECIDE_TIMEOUT_S
        while True:
            got = self.queue_usage(queue).get((flavor, resource), (ZERO, ZERO))
            if got == (reserved, borrowed):
                return
            if time.monotonic() > deadline:
                fail(
                    f"ClusterQueue {queue}: {resource} on {flavor} reserved {got[0]}, borrowed "
                    f"{got[1]}; expected {reserved} and {borrowed}"
                )
            time.sleep(POLL_S)

    def preemptions(self) -> set[tuple[str, str, str]]:
        """Every ``Preempted`` event Kueue recorded on a Workload: (namespace, workload,
        message)."""
        found = set()
        for team in self.config.teams:
            events = self.get(
                "events",
                "-n",
                team.namespace_name,
                "--field-selector",
                "involvedObject.kind=Workload,reason=Preempted",
            )
            for event in events.get("items", []):
                found.add(
                    (
                        team.namespace_name,
                        event["involvedObject"]["name"],
                        event.get("message", ""),
                    )
                )
        return found

    def placement_problems(self, job: Submitted, state: JobState) -> list[str]:
        """Each pod on a node of the pool the workload's flavour steers to, with the pool's GPU
        labels and room for its GPUs."""
        if job.pool is None:
            return []
        problems = []
        want = self.rendered.flavor_labels.get(job.pool, {})
        contract = self.contracts[job.pool]
        flavors = set(state.flavors.values())
        if flavors != {job.pool}:
            problems.append(f"{job.name}: admitted on flavours {sorted(flavors)}, not {job.pool}")
        for pod in state.live_pods:
            node_name = pod["spec"]["nodeName"]
            node = self.get("node", node_name)
            labels = node["metadata"].get("labels") or {}
            wrong = {k: labels.get(k) for k, v in want.items() if labels.get(k) != v}
            allocatable = parse_quantity(
                (node.get("status") or {}).get("allocatable", {}).get(contract.gpu_resource, "0")
            )
            if wrong or allocatable < job.demand.worker.gpus:
                problems.append(
                    f"{job.name}: pod {pod['metadata']['name']} on {node_name} with labels "
                    f"{wrong or 'as the flavour says'} and {allocatable} {contract.gpu_resource}"
                )
        return problems

    def placement_fact(self, state: JobState, pool: str) -> str:
        nodes = sorted({p["spec"]["nodeName"] for p in state.live_pods})
        product = self.contracts[pool].product
        return f"pods on {', '.join(nodes)} (pool {pool}, {product})"

    # --- writing ---

    def manifests(self, job: Submitted) -> list[dict[str, Any]]:
        """The Job (and its preflight ConfigMap) as the platform's TrainingJob renders it, plus
        the hold annotation on its pods."""
        contract = self.contracts[job.pool] if job.pool else None
        team = self.team_of(job.namespace)
        args = TrainingJobArgs(
            team=team,
            namespace=job.namespace,
            name=job.name,
            image=self.image,
            resources=ComputeResources(
                cpu=cpu_text(job.demand.worker.cpu), memory=memory_text(job.demand.worker.memory)
            ),
            command=("torchrun",),
            args=("/workspace/train.py",),
            nodes=job.demand.workers,
            gpus=job.demand.worker.gpus,
            scheduling=contract if job.demand.worker.gpus else None,
            priority_class=job.priority,
            queue_name=job.queue,
        )
        spec = job_spec(args)
        spec["template"]["metadata"]["annotations"][HOLD_ANNOTATION] = "true"
        labels = {
            **workload_labels(team, job.name, TRAINER_COMPONENT, WORKLOAD_TYPE_TRAINING),
            SECTION_LABEL: SECTION_VALUE,
        }
        job_labels = {**labels, **({KUEUE_QUEUE_LABEL: job.queue} if job.queue else {})}
        objects: list[dict[str, Any]] = []
        if args.preflight_config_map:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": args.preflight_config_map,
                        "namespace": job.namespace,
                        "labels": labels,
                    },
                    "data": {SCRIPT_FILENAME: script_text()},
                }
            )
        objects.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": job.name, "namespace": job.namespace, "labels": job_labels},
                "spec": spec,
            }
        )
        return objects

    def submit(
        self,
        name: str,
        queue: Queue | None,
        demand: Demand,
        priority: str,
        pool: str | None,
        namespace: str | None = None,
    ) -> Submitted:
        """Create a job in the queue's namespace, through its LocalQueue (``queue`` None: a
        CPU-only job that names no queue, as the platform renders one)."""
        where = namespace or (queue.namespace if queue else None)
        assert where is not None
        job = Submitted(
            f"{JOB_PREFIX}{name}",
            where,
            demand,
            priority,
            pool,
            self.rendered.local_queue(queue) if queue else None,
        )
        document = {"apiVersion": "v1", "kind": "List", "items": self.manifests(job)}
        self.cluster.kubectl("create", "-f", "-", input=json.dumps(document))
        self.submitted.append(job)
        return job

    def release(self, job: Submitted) -> JobState:
        """Let the job's pods finish (the trainer is done), and wait until Kueue knows."""
        self.cluster.kubectl(
            "annotate",
            "pods",
            "-n",
            job.namespace,
            "-l",
            f"{JOB_NAME_LABEL}={job.name}",
            f"{HOLD_ANNOTATION}=false",
            "--overwrite",
        )
        return self.wait(job, "finished", lambda s: s.finished)

    def delete(self, job: Submitted) -> None:
        """Delete the job and its ConfigMap, and wait until its pods and workload are gone."""
        self.cluster.kubectl(
            "delete",
            f"job/{job.name}",
            f"configmap/{job.name}-preflight",
            "-n",
            job.namespace,
            "--ignore-not-found",
            "--cascade=foreground",
            "--wait=true",
            "--timeout=120s",
            timeout_s=150,
        )
        if job in self.submitted:
            self.submitted.remove(job)
        self.wait_gone(lambda name: name == job.name)

    def cleanup(self) -> None:
        """Delete every job of this section, and wait until Kueue has let go of them."""
        namespaces = [t.namespace_name for t in self.config.teams]
        for namespace in namespaces:
            self.cluster.kubectl(
                "delete",
                "job,configmap",
                "-n",
                namespace,
                "-l",
                f"{SECTION_LABEL}={SECTION_VALUE}",
                "--cascade=foreground",
                "--wait=true",
                "--timeout=120s",
                timeout_s=150,
            )
        self.submitted.clear()
        self.wait_gone(lambda name: name.startswith(JOB_PREFIX))

    def wait_gone(self, owned_by: Callable[[str], bool]) -> None:
        """Wait until no workload or pod of the jobs ``owned_by`` selects (by name) is left."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            left = [
                f"{item['kind']} {item['metadata']['namespace']}/{item['metadata']['name']}"
                for kind in (WORKLOADS, "pods")
                for item in self.get(kind, "--all-namespaces").get("items", [])
                if any(
                    owned_by(o.get("name", ""))
                    for o in item["metadata"].get("ownerReferences") or []
                    if o.get("kind") == "Job"
                )
            ]
            if not left:
                return
            if time.monotonic() > deadline:
                fail(f"left after their jobs were deleted: {', '.join(left)}")
            time.sleep(POLL_S)

    def settle(self) -> list[str]:
        """Wait until the stack's own workloads are finished or admitted (KWOK finishes its Jobs
        at once); the facts of what they hold."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            items = self.get(WORKLOADS, "--all-namespaces").get("items", [])
            waiting = [
                f"{i['metadata']['namespace']}/{i['metadata']['name']}"
                for i in items
                if not (_true(i, "Finished") or _true(i, "Admitted"))
            ]
            if not waiting:
                break
            if time.monotonic() > deadline:
                fail(f"the stack's own workloads did not settle: {', '.join(waiting)}")
            time.sleep(POLL_S)
        facts = []
        for queue in sorted(self.rendered.queues):
            usage = {k: v for k, v in self.queue_usage(queue).items() if v[0] > 0}
            if usage:
                held = ", ".join(
                    f"{_show(r, t)} {r} on {f}" for (f, r), (t, _) in sorted(usage.items())
                )
                facts.append(f"before: {queue} holds {held} (the stack's own workloads)")
        return facts


# --- the section --------------------------------------------------------------------------------


def contracts_of(config: PlatformConfig) -> dict[str, SchedulingContract]:
    return {pool.name: scheduling_contract(_pool_args(pool)) for pool in config.node_pools}


def training_image(config: PlatformConfig) -> str:
    return next((w.image for w in config.workloads if w.kind == "training"), DEFAULT_IMAGE)


def manifests_of(report: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The rendered Kubernetes objects of an offline report."""
    for resource in report.get("resources") or []:
        inputs = resource.get("inputs") or {}
        if "kind" in inputs:
            yield inputs


Scenario = Callable[["Section", list[str]], None]


def cleaned(method: Scenario) -> Scenario:
    """Run a scenario and always delete what it submitted, so the next one starts from the
    stack's own state whatever happened."""

    @functools.wraps(method)
    def run(self: Section, detail: list[str]) -> None:
        try:
            method(self, detail)
        finally:
            self.live.cleanup()

    return run


@dataclass
class Section:
    """The scenarios; each is one ``e2e.step`` and leaves nothing behind."""

    live: Day2Kueue
    borrow: BorrowPlan
    priorities: PriorityPlan
    quota: QuotaPlan
    reclaims: Sequence[ReclaimCase]

    @property
    def rendered(self) -> Rendered:
        return self.live.rendered

    def one(self, name: str, queue: Queue, demand: Demand, priority: str) -> Submitted:
        return self.live.submit(name, queue, demand, priority, self.borrow.flavor)

    @cleaned
    def suspended_until_quota(self, detail: list[str]) -> None:
        """A job waits suspended while the team's queue is full, and runs on the pool's nodes as
        soon as a running job frees the quota."""
        live, plan = self.live, self.borrow
        r, low = plan.gpu_resource, self.priorities.low.name
        detail += live.settle()
        occupant = self.one("occupant", plan.queue, plan.largest, low)
        live.wait_admitted(occupant)
        live.wait_usage(
            plan.queue.name, plan.flavor, r,
            Decimal(plan.admissible), Decimal(plan.admissible - plan.nominal),
        )  # fmt: skip
        detail.append(
            f"{occupant.name} ({plan.largest.describe(r)}, {low}): admitted; {plan.queue.name} "
            f"holds {plan.admissible} {r}, all it may"
        )
        waiting = self.one("waits", plan.queue, Demand(plan.worker), low)
        state = live.wait_pending(waiting)

        def still_waiting() -> list[str]:
            now, other = live.state(waiting), live.state(occupant)
            problems = []
            if not now.suspended or now.live_pods or now.reserved:
                problems.append(f"{waiting.name} started while the queue was full: {now.summary()}")
            if not other.admitted:
                problems.append(f"{occupant.name} lost its admission: {other.summary()}")
            return problems

        live.stays(STAYS_S, still_waiting)
        detail.append(
            f"{waiting.name} ({plan.worker.describe(r)}, {low}): suspended, no pods, for "
            f"{STAYS_S:.0f} s; Kueue: {state.pending}"
        )
        started = time.monotonic()
        live.release(occupant)
        state = live.wait_admitted(waiting)
        problems = live.placement_problems(waiting, state)
        if problems:
            fail("\n".join(problems))
        detail.append(
            f"{occupant.name} finished; {waiting.name} admitted {time.monotonic() - started:.1f} s "
            f"later on flavour {plan.flavor} and unsuspended; "
            f"{live.placement_fact(state, plan.flavor)}"
        )

    @cleaned
    def borrows_while_idle(self, detail: list[str]) -> None:
        """Beyond nominal quota a job borrows the idle peer's quota; it waits when it may borrow
        no more (the borrowing limit), and is preempted back to waiting when the peer reclaims
        what it lent."""
        live, plan = self.live, self.borrow
        r, low = plan.gpu_resource, self.priorities.low.name
        detail += live.settle()
        detail += plan.lines()
        first = self.one("first", plan.queue, plan.first, low)
        live.wait_admitted(first)
        second = self.one("second", plan.queue, Demand(plan.worker), low)
        state = live.wait_admitted(second)
        problems = live.placement_problems(second, state)
        if problems:
            fail("\n".join(problems))
        held = plan.full
        live.wait_usage(
            plan.queue.name, plan.flavor, r, Decimal(held), Decimal(held - plan.nominal)
        )
        lent = live.queue_usage(plan.lender.name).get((plan.flavor, r), (ZERO, ZERO))[0]
        detail.append(
            f"{second.name} admitted beyond the nominal {plan.nominal}: {plan.queue.name} holds "
            f"{held} {r}, borrowing {held - plan.nominal}, while {plan.lender.name} holds {lent} "
            f"on {plan.flavor}; {live.placement_fact(state, plan.flavor)}"
        )
        third = self.one("third", plan.queue, Demand(plan.worker), low)
        state = live.wait_pending(third)
        live.stays(STAYS_S, lambda: [] if not (now := live.state(third)).reserved else [
            f"{third.name} admitted past the borrowing limit: {now.summary()}"
        ])  # fmt: skip
        detail.append(
            f"{third.name}: {held + plan.worker.gpus} {r} would exceed nominal plus borrowing "
            f"limit ({plan.admissible}): pending for {STAYS_S:.0f} s; Kueue: {state.pending}"
        )
        live.delete(third)
        before = live.preemptions()
        lender_class = plan_priorities(self.rendered, plan.lender.namespace or "").low.name
        lender = self.one("lender", plan.lender, Demand(plan.lender_job), lender_class)
        live.wait_admitted(lender)
        reclaim = plan.lender.preemption["reclaimWithinCohort"]
        states = {
            job.name: live.wait(job, "decided", lambda s: s.admitted or s.pending is not None)
            for job in (first, second)
        }
        evicted = [job for job in (first, second) if not states[job.name].admitted]
        if len(evicted) != 1:
            fail(
                f"{lender.name} reclaiming {plan.lender_job.gpus} {r} (reclaimWithinCohort "
                f"{reclaim}) should have preempted exactly one of {first.name}, {second.name}: "
                + "; ".join(s.summary() for s in states.values())
            )
        victim = evicted[0]
        events = sorted(e[2] for e in live.preemptions() - before if e[0] == victim.namespace)
        detail.append(
            f"{lender.name} ({plan.lender_job.describe(r)}) in {plan.lender.namespace}: admitted "
            f"within its nominal quota; reclaimWithinCohort {reclaim} preempted {victim.name}: "
            f"{events[0] if events else states[victim.name].preempted}"
        )
        state = live.wait_pending(victim)

        def cannot_borrow() -> list[str]:
            now = live.state(victim)
            if now.reserved or now.live_pods or not now.suspended:
                return [
                    f"{victim.name} runs again while {plan.lender.name} is busy: {now.summary()}"
                ]
            return []

        live.stays(STAYS_S, cannot_borrow)
        detail.append(
            f"{victim.name} cannot borrow while {plan.lender.name} uses its quota: suspended, no "
            f"pods, for {STAYS_S:.0f} s; Kueue: {state.pending}"
        )

    @cleaned
    def preemption(self, detail: list[str]) -> None:
        """In the team's full queue a never-preempting job waits, evicting nothing, while one of a
        higher class preempts the default class as ``withinClusterQueue`` says; across the
        cohort, a never-preempting job of a team that lent quota waits for the borrower to
        finish instead of reclaiming the quota by preemption."""
        live, plan, classes = self.live, self.borrow, self.priorities
        r, low, settings = plan.gpu_resource, classes.low, plan.queue.preemption
        detail += live.settle()
        served = (live.get(CLUSTER_QUEUES, plan.queue.name).get("spec") or {}).get("preemption")
        detail.append(
            f"{plan.queue.name} preemption: withinClusterQueue {settings['withinClusterQueue']}, "
            f"reclaimWithinCohort {settings['reclaimWithinCohort']}, borrowWithinCohort "
            f"{settings['borrowWithinCohort']} (rendered); served: {json.dumps(served)}"
        )
        rendered_spec = {
            "withinClusterQueue": settings["withinClusterQueue"],
            "reclaimWithinCohort": settings["reclaimWithinCohort"],
            "borrowWithinCohort": {"policy": settings["borrowWithinCohort"]},
        }
        if served != rendered_spec:
            fail(f"{plan.queue.name} serves preemption {served}, rendered {rendered_spec}")
        fill = [
            self.one(f"fill-{i}", plan.queue, demand, low.name)
            for i, demand in enumerate((plan.first, Demand(plan.worker)), start=1)
        ]
        for job in fill:
            live.wait_admitted(job)
        detail.append(
            f"{', '.join(j.name for j in fill)} ({low.name}, {low.value}): admitted, "
            f"{plan.full} {r}: the queue is full"
        )
        problems: list[str] = []
        for never in classes.never:
            before = live.preemptions()
            job = self.one(f"never-{never.name}", plan.queue, Demand(plan.worker), never.name)
            state = live.wait_pending(job)

            def nothing_preempted(before: set[tuple[str, str, str]] = before) -> list[str]:
                out = [f"{e[1]} preempted: {e[2]}" for e in sorted(live.preemptions() - before)]
                return out + [
                    f"{f.name} lost its admission: {s.summary()}"
                    for f in fill
                    if not (s := live.state(f)).admitted
                ]

            live.stays(STAYS_S, nothing_preempted)
            allowed = may_preempt(settings["withinClusterQueue"], never.value, low.value)
            detail.append(
                f"{job.name} ({never.name}, {never.value}, preemptionPolicy Never): pending, "
                f"nothing preempted for {STAYS_S:.0f} s; Kueue: {state.pending}"
            )
            if allowed:
                problems.append(
                    f"withinClusterQueue {settings['withinClusterQueue']} lets {never.name} "
                    f"({never.value}) preempt {low.name} ({low.value})"
                )
        high = classes.high
        if high is None:
            problems.append(f"{plan.queue.namespace} may use no class above {low.name}")
        elif may_preempt(settings["withinClusterQueue"], high.value, low.value):
            before = live.preemptions()
            job = self.one(f"high-{high.name}", plan.queue, Demand(plan.worker), high.name)
            live.wait_admitted(job)
            states = {
                f.name: live.wait(f, "decided", lambda s: s.admitted or s.pending is not None)
                for f in fill
            }
            lost = [name for name, s in states.items() if not s.admitted]
            reasons = [
                e[2] for e in sorted(live.preemptions() - before) if any(n in e[1] for n in lost)
            ]
            preempted = [states[n].preempted or "" for n in lost]
            if len(lost) != 1 or not all(p.startswith("InClusterQueue") for p in preempted):
                problems.append(
                    f"{job.name} ({high.name}) admitted, but it preempted {lost} ({preempted})"
                )
            detail.append(
                f"{job.name} ({high.name}, {high.value}): admitted; withinClusterQueue "
                f"{settings['withinClusterQueue']} let it preempt {', '.join(lost)} ({low.name}, "
                f"{low.value}), reason {', '.join(x.split(':')[0] for x in preempted)}: "
                f"{reasons[0] if reasons else '; '.join(preempted)}"
            )
        else:
            job = self.one(f"high-{high.name}", plan.queue, Demand(plan.worker), high.name)
            state = live.wait_pending(job)
            detail.append(
                f"{job.name} ({high.name}): withinClusterQueue {settings['withinClusterQueue']} "
                f"lets it preempt nothing: pending; Kueue: {state.pending}"
            )
        live.cleanup()
        if not self.reclaims:
            detail.append(
                "no team that may use a never-preempting class queues on a pool where another "
                "team may borrow (the config refuses that): in the cohort it can reclaim nothing"
            )
        for case in self.reclaims:
            detail.append(case.describe())
            try:
                problems += self.reclaim(case, detail)
            finally:
                live.cleanup()
        if problems:
            fail("\n".join(problems))

    def reclaim(self, case: ReclaimCase, detail: list[str]) -> list[str]:
        """The borrower takes all it may of the lender's quota; the lender's never-preempting
        job must wait for it, not evict it."""
        live, r, flavor, borrower = self.live, case.gpu_resource, case.flavor, case.borrower
        held = live.queue_usage(borrower.name).get((flavor, r), (ZERO, ZERO))[0]
        units = int(self.rendered.admissible(borrower, flavor, r) - held)
        if not 0 < units <= live.contracts[flavor].resources_per_node:
            return [f"{case.describe()}: no one pod fills {borrower.name} ({units} {r})"]
        top = plan_priorities(self.rendered, borrower.namespace or "")
        borrower_class = (top.high or top.low).name
        small = (Decimal(1), Decimal(4 * 2**30))
        big = live.submit(
            "borrower", borrower, Demand(Worker(units, *small)), borrower_class, flavor
        )
        live.wait_admitted(big)
        usage = live.queue_usage(borrower.name).get((flavor, r), (ZERO, ZERO))
        detail.append(
            f"{big.name} ({units} {r}, {borrower_class}) in {borrower.namespace}: admitted; "
            f"{borrower.name} holds {usage[0]} {r} on {flavor}, borrowing {usage[1]}"
        )
        units = int(case.lender.limits(flavor, r).nominal)
        if units <= 0:
            return [f"{case.describe()}: {case.lender.name} has no nominal quota there to reclaim"]
        before = live.preemptions()
        job = live.submit(
            f"reclaim-{case.never_class}", case.lender, Demand(Worker(units, *small)),
            case.never_class, flavor,
        )  # fmt: skip
        state = live.wait(job, "decided", lambda s: s.admitted or s.pending is not None)
        deadline = time.monotonic() + STAYS_S
        preempted: list[str] = []
        while not preempted and time.monotonic() < deadline:
            preempted = [f"{e[0]}/{e[1]}: {e[2]}" for e in sorted(live.preemptions() - before)]
            time.sleep(POLL_S)
        if preempted:
            reclaim = case.lender.preemption["reclaimWithinCohort"]
            team = live.team_of(case.lender.namespace or "")
            return [
                f"{job.name} ({units} {r}, {case.never_class}, preemptionPolicy Never) in "
                f"{case.lender.namespace} preempted {'; '.join(preempted)}",
                f"  Kueue does not read a PriorityClass's preemptionPolicy: {case.lender.name} "
                f"reclaims lent quota with reclaimWithinCohort {reclaim}, from borrowers of any "
                f"priority. For {case.never_class} never to preempt, the stack would have to say "
                f"one of: {case.never_class} not in team {team}'s priorityClasses; a "
                f"borrowingLimit of 0 {r} on {flavor} for {borrower.name}; "
                "queueing.reclaimWithinCohort LowerPriority (then no team reclaims from a "
                "borrower of its own priority or above)",
            ]
        detail.append(
            f"{job.name} ({units} {r}, {case.never_class}) in {case.lender.namespace}: pending, "
            f"nothing preempted for {STAYS_S:.0f} s; Kueue: {state.pending}"
        )
        live.release(big)
        live.wait_admitted(job)
        detail.append(f"{big.name} finished; {job.name} admitted: it waited for the capacity")
        return []

    @cleaned
    def quota_agrees(self, detail: list[str]) -> None:
        """What Kueue admits, the namespace ResourceQuota admits: the largest admissible job
        alone, then with CPU-only work of the default queue running beside it."""
        live, plan, quota = self.live, self.borrow, self.quota
        r, low = plan.gpu_resource, self.priorities.low.name
        detail += live.settle()
        detail.append(
            f"{quota.namespace} ResourceQuota: "
            + ", ".join(f"{k} {_show(k, v)}" for k, v in quota.hard.items())
            + "; its GPU queue admits at most "
            + ", ".join(f"{k} {_show(k, v)}" for k, v in quota.gpu_queue.items())
            + "; its default queue "
            + (", ".join(f"{k} {_show(k, v)}" for k, v in quota.default_queue.items()) or "none")
        )
        problems = [
            f"the largest admissible job needs {_show(k, plan.largest.total(k, r))} {k}, above "
            f"the namespace's {_show(k, v)}"
            for k, v in quota.hard.items()
            if plan.largest.total(k, r) > v
        ]
        largest = self.one("largest", plan.queue, plan.largest, low)
        problems += self.pods_created(largest, detail, "alone")
        live.delete(largest)
        conflicts = quota.conflicts()
        detail += conflicts or ["both queues at their most fit the namespace quota together"]
        if quota.overflow is not None:
            cpu_job = live.submit("cpu-only", None, quota.overflow, low, None, quota.namespace)
            state = live.wait(cpu_job, "decided", lambda s: s.admitted or s.pending is not None)
            if state.admitted:
                problems += self.pods_created(cpu_job, detail, "through the default queue")
            else:
                detail.append(
                    f"{cpu_job.name} ({quota.overflow.describe(r)}, CPU-only, names no queue): "
                    f"the default queue keeps it pending; Kueue: {state.pending}"
                )
            again = self.one("largest-again", plan.queue, plan.largest, low)
            problems += self.pods_created(again, detail, f"beside {cpu_job.name}")
        if problems and conflicts:
            most = ", ".join(
                f"{k} {_show(k, max(ZERO, quota.hard[k] - quota.gpu_queue.get(k, ZERO)))}"
                for k in ("cpu", "memory")
                if k in quota.hard
            )
            problems.append(
                f"  for the queues to agree with the quota, the default queue of "
                f"{quota.namespace} may admit at most the quota less the GPU queue's most: {most}"
            )
        if problems:
            fail("\n".join(problems))

    def pods_created(self, job: Submitted, detail: list[str], when: str) -> list[str]:
        """Kueue admitted it: every pod is created, none refused for an exceeded quota."""
        live, r = self.live, self.borrow.gpu_resource
        state = live.wait(
            job,
            "admitted with its pods created, or refused by the namespace quota",
            lambda s: (
                (s.admitted and len(s.live_pods) == job.demand.workers)
                or any("exceeded quota" in m for m in s.failed_create)
            ),
        )
        refused = [m for m in state.failed_create if "exceeded quota" in m]
        if refused:
            return [
                f"{job.name} ({job.demand.describe(r)}), {when}: admitted by Kueue "
                f"({'Admitted' if state.admitted else 'not yet Admitted'}), then refused by the "
                f"namespace quota: {refused[0]}"
            ]
        status = live.get("resourcequota", "-n", job.namespace, TEAM_QUOTA_NAME).get("status") or {}
        used = ", ".join(
            f"{k} {status.get('used', {}).get(k)}/{status.get('hard', {}).get(k)}"
            for k in ("requests.cpu", "requests.memory", f"requests.{r}")
            if k in status.get("hard", {})
        )
        detail.append(
            f"{job.name} ({job.demand.describe(r)}), {when}: admitted, {len(state.live_pods)} of "
            f"{job.demand.workers} pods created, no FailedCreate; quota used {used}"
        )
        return []


def _show(resource: str, value: Decimal) -> str:
    if resource.endswith("cpu"):
        return cpu_text(value)
    if resource.endswith("memory"):
        return memory_text(value)
    return str(value)


def build_section(e2e: E2E) -> Section:
    """The scenarios' numbers from the offline report's rendered objects and the stack config."""
    assert e2e.cluster is not None
    config = e2e.cluster.config
    rendered = Rendered.from_manifests(manifests_of(e2e.offline_report))
    contracts = contracts_of(config)
    gpu_resources = {name: c.gpu_resource for name, c in contracts.items()}
    per_node = {name: c.resources_per_node for name, c in contracts.items()}
    borrow = plan_borrowing(rendered, gpu_resources, per_node)
    return Section(
        Day2Kueue(e2e.cluster, config, rendered, contracts, training_image(config)),
        borrow,
        plan_priorities(rendered, borrow.queue.namespace or ""),
        plan_quota(rendered, borrow),
        reclaim_cases(rendered, gpu_resources),
    )


SCENARIOS: Final[tuple[tuple[str, Scenario], ...]] = (
    ("Kueue: a GPU job stays suspended until its queue has quota, then runs on the pool's nodes",
     Section.suspended_until_quota),
    ("Kueue: beyond nominal quota a job borrows from an idle team, and waits when it cannot",
     Section.borrows_while_idle),
    ("Kueue: batch-low never preempts; higher priority preempts lower as the queue says",
     Section.preemption),
    ("Kueue: a job Kueue admits is never refused by the namespace ResourceQuota",
     Section.quota_agrees),
)  # fmt: skip


def run_section(e2e: E2E) -> None:
    """``pulumi up`` of the stack, then each scenario as a step (docs/e2e.md, "Day two: Kueue")."""
    if not e2e.step("pulumi up", e2e.up):
        return
    built: list[Section] = []

    def section() -> Section:
        if not built:
            try:
                built.append(build_section(e2e))
            except PlanError as exc:
                fail(f"the stack's numbers cannot show this: {exc}")
        return built[0]

    def step(scenario: Scenario) -> Callable[[list[str]], None]:
        return lambda detail: scenario(section(), detail)

    for name, scenario in SCENARIOS:
        e2e.step(name, step(scenario))
