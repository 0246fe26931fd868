"""GPU policies: GPUs are the scarcest thing the platform schedules; every GPU pod must be
accounted for by the device plugin and quotas, land on a GPU pool, and be preemptible by rank."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final, NamedTuple

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, Severity

from .kube import as_int, as_map, as_seq, as_str, dig, fmt_num, labels_of, parse_quantity
from .podspec import (
    RAY_KINDS,
    WORKLOAD_KINDS,
    ContainerRef,
    PodView,
    iter_volume_mounts,
    pod_view,
    pod_views,
)
from .registry import (
    NO_KNOBS,
    Category,
    Knobs,
    int_value,
    resource_policy,
    str_list,
    string_list_schema,
)
from .scope import (
    Component,
    components,
    exempt_component,
    exempt_components_knob,
    in_namespaces,
    namespaces,
    system_namespaces_knob,
)
from .shared import (
    CHECKPOINT_GRACE_SECONDS,
    DEFAULT_PRIORITY_CLASSES,
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    KUEUE_QUEUE_LABEL,
    MIG_RESOURCE_PREFIX,
    NODE_POOL_LABEL,
    WORKLOAD_TYPE_EVALUATION,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_LABEL,
    WORKLOAD_TYPE_TRAINING,
    WORKLOAD_TYPE_WORKER,
)

GPU_POD_KINDS: Final = WORKLOAD_KINDS | RAY_KINDS
"""Kinds whose pod templates the GPU policies read: the workload kinds, and Ray clusters and
jobs (every head, worker group and submitter template)."""
WORKLOAD_TYPES: Final = (
    WORKLOAD_TYPE_TRAINING,
    WORKLOAD_TYPE_EVALUATION,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_WORKER,
)


def is_gpu_resource(key: str) -> bool:
    """Whole GPUs (``nvidia.com/gpu``) or MIG slices (``nvidia.com/mig-<profile>``)."""
    return key == GPU_RESOURCE or key.startswith(MIG_RESOURCE_PREFIX)


class ContainerGpus(NamedTuple):
    container: ContainerRef
    requests: dict[str, Any]
    """GPU/MIG keys of ``resources.requests`` → raw value."""
    limits: dict[str, Any]

    def amount(self, key: str) -> Decimal | None:
        """What the container gets: the limit (requests default to it), else the request."""
        raw = self.limits.get(key, self.requests.get(key))
        return parse_quantity(raw)


class GpuProfile(NamedTuple):
    containers: tuple[ContainerGpus, ...]
    """Only containers that mention a GPU or MIG resource."""
    is_gpu_pod: bool


def gpu_profile(view: PodView) -> GpuProfile:
    """GPU demands of a pod template, computed once per resource and shared by all GPU policies."""
    cached = view.memo.get("gpu")
    if cached is not None:
        return cached
    found: list[ContainerGpus] = []
    is_gpu = False
    for container in view.containers:
        resources = container.resources
        requests = {
            k: v
            for k, v in as_map(resources.get("requests")).items()
            if is_gpu_resource(k) and v is not None
        }
        limits = {
            k: v
            for k, v in as_map(resources.get("limits")).items()
            if is_gpu_resource(k) and v is not None
        }
        if not requests and not limits:
            continue
        entry = ContainerGpus(container, requests, limits)
        found.append(entry)
        for key in {*requests, *limits}:
            amount = entry.amount(key)
            if amount is None or amount != 0:
                is_gpu = True
    profile = GpuProfile(tuple(found), is_gpu)
    view.memo["gpu"] = profile
    return profile


def gpu_view(args: ResourceValidationArgs) -> tuple[PodView, GpuProfile] | None:
    """The pod view and GPU profile of a GPU pod template, else ``None``."""
    view = pod_view(args.resource_type, args.props)
    if view is None:
        return None
    profile = gpu_profile(view)
    return (view, profile) if profile.is_gpu_pod else None


def gpu_views(args: ResourceValidationArgs) -> list[tuple[PodView, GpuProfile]]:
    """The pod views and GPU profiles of every GPU pod template of the resource (a Ray cluster's
    GPU worker groups; the one template of other kinds)."""
    found = []
    for view in pod_views(args.resource_type, args.props):
        profile = gpu_profile(view)
        if profile.is_gpu_pod:
            found.append((view, profile))
    return found


def _whole(value: Any) -> bool:
    amount = parse_quantity(value)
    return amount is not None and amount >= 0 and amount == amount.to_integral_value()


def _show(value: Any) -> str:
    return fmt_num(value) if not isinstance(value, str) else value


# --- gpu-limits-match-requests --------------------------------------------------------------------
def _check_limits(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    for view in pod_views(args.resource_type, args.props):
        _check_view_limits(view, report)


def _check_view_limits(view: PodView, report: ReportViolation) -> None:
    for entry in gpu_profile(view).containers:
        who = view.prefix + entry.container.label
        for key in sorted({*entry.requests, *entry.limits}):
            request, limit = entry.requests.get(key), entry.limits.get(key)
            bad = [
                (f, v)
                for f, v in (("requests", request), ("limits", limit))
                if v is not None and not _whole(v)
            ]
            for field, value in bad:
                report(
                    f'{who} sets resources.{field}["{key}"] to {_show(value)}; '
                    "GPU and MIG counts must be whole numbers",
                    None,
                )
            if bad:
                continue
            if limit is None:
                report(
                    f"{who} requests {_show(request)} {key} but sets no limit; "
                    "GPU requests must equal limits",
                    None,
                )
            elif request is not None and parse_quantity(request) != parse_quantity(limit):
                report(
                    f"{who} requests {_show(request)} {key} but its limit is {_show(limit)}; "
                    "GPU requests must equal limits",
                    None,
                )


gpu_limits_match_requests = resource_policy(
    name="gpu-limits-match-requests",
    description="GPU and MIG requests are whole numbers and equal their limits.",
    category=Category.GPU,
    severity=Severity.HIGH,
    remediation=(
        "Set resources.limits for nvidia.com/gpu (or the nvidia.com/mig-<profile> slice) to the "
        "same whole number as resources.requests, or set only the limit: Kubernetes then "
        "copies it into the request. Extended resources cannot be overcommitted."
    ),
    check=_check_limits,
    knobs=NO_KNOBS,
    kinds=GPU_POD_KINDS,
    level=EnforcementLevel.MANDATORY,
)


# --- gpu-max-per-pod ------------------------------------------------------------------------------
class MaxGpus(NamedTuple):
    per_container: int
    per_pod: int


def _parse_max(raw: Mapping[str, Any]) -> MaxGpus:
    return MaxGpus(
        int_value(raw.get("maxGpusPerContainer"), 8), int_value(raw.get("maxGpusPerPod"), 8)
    )


def _check_max(args: ResourceValidationArgs, report: ReportViolation, limits: MaxGpus) -> None:
    for view, profile in gpu_views(args):
        _check_view_max(view, profile, report, limits)


def _check_view_max(
    view: PodView, profile: GpuProfile, report: ReportViolation, limits: MaxGpus
) -> None:
    app_total = Decimal(0)
    init_peak = Decimal(0)
    for entry in profile.containers:
        amount = entry.amount(GPU_RESOURCE)
        if amount is None:
            continue
        if amount > limits.per_container:
            report(
                f"{view.prefix}{entry.container.label} requests {fmt_num(amount)} {GPU_RESOURCE}, "
                "above the "
                f"per-container maximum of {limits.per_container}",
                None,
            )
        if entry.container.section == "initContainers" and not entry.container.sidecar:
            init_peak = max(init_peak, amount)
        elif entry.container.section != "ephemeralContainers":
            app_total += amount
    total = max(app_total, init_peak)
    if total > limits.per_pod:
        report(
            f"{view.prefix}pod requests {fmt_num(total)} {GPU_RESOURCE} in all, above the per-pod "
            "maximum "
            f"of {limits.per_pod}",
            None,
        )


gpu_max_per_pod = resource_policy(
    name="gpu-max-per-pod",
    description="A pod and each of its containers stay within the largest GPU node's GPU count.",
    category=Category.GPU,
    severity=Severity.MEDIUM,
    remediation=(
        "Request at most maxGpusPerContainer GPUs per container and maxGpusPerPod per pod "
        "(init containers run one at a time, app containers and sidecars add up). Larger jobs "
        "must be split into several pods (e.g. a JobSet, PyTorchJob or indexed Job with "
        "torchrun) instead of one pod that no node can hold."
    ),
    check=_check_max,
    knobs=Knobs(
        {
            "maxGpusPerContainer": {
                "type": "integer",
                "minimum": 1,
                "default": 8,
                "description": "Most nvidia.com/gpu one container may request.",
            },
            "maxGpusPerPod": {
                "type": "integer",
                "minimum": 1,
                "default": 8,
                "description": "Most nvidia.com/gpu one pod may request (the largest node's GPUs).",
            },
        },
        _parse_max,
    ),
    kinds=GPU_POD_KINDS,
)


# --- gpu-tolerates-gpu-taint ----------------------------------------------------------------------
def tolerates_gpu_taint(spec: Mapping[str, Any]) -> bool:
    """True if some toleration matches the taint every GPU node carries."""
    for toleration in as_seq(spec.get("tolerations")):
        toleration = as_map(toleration)
        key = as_str(toleration.get("key")) or ""
        operator = toleration.get("operator") or "Equal"
        effect = as_str(toleration.get("effect")) or ""
        if effect not in ("", GPU_TAINT_EFFECT):
            continue
        if operator == "Exists" and key in ("", GPU_TAINT_KEY):
            return True
        if (
            operator == "Equal"
            and key == GPU_TAINT_KEY
            and toleration.get("value") == GPU_TAINT_VALUE
        ):
            return True
    return False


_TAINT = f"{GPU_TAINT_KEY}={GPU_TAINT_VALUE}:{GPU_TAINT_EFFECT}"


def _check_taint(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    for view, _profile in gpu_views(args):
        if tolerates_gpu_taint(view.spec):
            continue
        report(
            f"{view.prefix}GPU pod does not tolerate the {_TAINT} taint of GPU nodes; add the "
            f"toleration {{key: {GPU_TAINT_KEY}, operator: Exists, effect: {GPU_TAINT_EFFECT}}}",
            None,
        )


gpu_tolerates_gpu_taint = resource_policy(
    name="gpu-tolerates-gpu-taint",
    description="Pods that request GPUs tolerate the taint that keeps other pods off GPU nodes.",
    category=Category.GPU,
    severity=Severity.MEDIUM,
    remediation=(
        f"Add the toleration key: {GPU_TAINT_KEY}, operator: Exists, effect: {GPU_TAINT_EFFECT} "
        "to the pod template. Without it the pod stays Pending: every GPU node carries the taint."
    ),
    check=_check_taint,
    knobs=NO_KNOBS,
    kinds=GPU_POD_KINDS,
)


# --- gpu-node-pool-selector -----------------------------------------------------------------------
def selected_pools(spec: Mapping[str, Any]) -> tuple[bool, set[str]]:
    """Whether the pod is pinned to node pools, and the pool names it names (empty for Exists)."""
    pools: set[str] = set()
    value = as_map(spec.get("nodeSelector")).get(NODE_POOL_LABEL)
    if isinstance(value, str) and value:
        pools.add(value)
        return True, pools
    terms = as_seq(
        dig(
            spec,
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        )
    )
    if not terms:
        return False, pools
    for term in terms:
        pinned = False
        for expr in as_seq(as_map(term).get("matchExpressions")):
            expr = as_map(expr)
            if expr.get("key") != NODE_POOL_LABEL:
                continue
            operator = expr.get("operator")
            values = [v for v in as_seq(expr.get("values")) if isinstance(v, str)]
            if operator == "In" and values:
                pools.update(values)
                pinned = True
            elif operator == "Exists":
                pinned = True
        if not pinned:
            return False, pools
    return True, pools


class PoolSettings(NamedTuple):
    allowed: frozenset[str]


def _check_pool(args: ResourceValidationArgs, report: ReportViolation, cfg: PoolSettings) -> None:
    for view, _profile in gpu_views(args):
        _check_view_pool(view, report, cfg)


def _check_view_pool(view: PodView, report: ReportViolation, cfg: PoolSettings) -> None:
    pinned, pools = selected_pools(view.spec)
    if not pinned:
        report(
            f"{view.prefix}GPU pod selects no GPU node pool; set "
            f'nodeSelector["{NODE_POOL_LABEL}"] or a required node affinity on '
            f"{NODE_POOL_LABEL} in every node selector term",
            None,
        )
        return
    if cfg.allowed:
        for pool in sorted(pools - cfg.allowed):
            report(
                f'{view.prefix}GPU pod selects node pool "{pool}", which is not one of: '
                f"{', '.join(sorted(cfg.allowed))}",
                None,
            )


gpu_node_pool_selector = resource_policy(
    name="gpu-node-pool-selector",
    description="Pods that request GPUs select a GPU node pool explicitly.",
    category=Category.GPU,
    severity=Severity.MEDIUM,
    remediation=(
        f'Set nodeSelector: {{"{NODE_POOL_LABEL}": <pool>}} on the pod template, or a required '
        f"node affinity whose every nodeSelectorTerm has {NODE_POOL_LABEL} In [<pools>]. The pool "
        "decides the GPU model, so an unpinned pod may land on the wrong (or most expensive) GPU."
    ),
    check=_check_pool,
    knobs=Knobs(
        {
            "allowedNodePools": string_list_schema(
                "Node pools GPU pods may select; empty allows any pool.", ()
            )
        },
        lambda raw: PoolSettings(frozenset(str_list(raw.get("allowedNodePools")))),
    ),
    kinds=GPU_POD_KINDS,
)


# --- gpu-priority-class ---------------------------------------------------------------------------
def _check_priority(
    args: ResourceValidationArgs, report: ReportViolation, allowed: tuple[str, ...]
) -> None:
    for view, _profile in gpu_views(args):
        name = view.spec.get("priorityClassName")
        if not isinstance(name, str) or not name:
            report(
                f"{view.prefix}GPU pod sets no priorityClassName; use one of: {', '.join(allowed)}",
                None,
            )
        elif name not in allowed:
            report(
                f'{view.prefix}GPU pod uses priorityClassName "{name}", which is not one of: '
                f"{', '.join(allowed)}",
                None,
            )


gpu_priority_class = resource_policy(
    name="gpu-priority-class",
    description="Pods that request GPUs set one of the platform's priority classes.",
    category=Category.GPU,
    severity=Severity.MEDIUM,
    remediation=(
        "Set spec.priorityClassName on the pod template to one of the allowed classes: critical "
        "for production inference, high for deadline-bound training, normal by default, batch-low "
        "for opportunistic work. Preemption decides who loses GPUs under contention."
    ),
    check=_check_priority,
    knobs=Knobs(
        {
            "allowedPriorityClasses": string_list_schema(
                "PriorityClass names GPU pods may use.", DEFAULT_PRIORITY_CLASSES
            )
        },
        lambda raw: str_list(raw.get("allowedPriorityClasses")),
    ),
    kinds=GPU_POD_KINDS,
)


# --- training-checkpoint-grace-period -------------------------------------------------------------
KUBERNETES_DEFAULT_GRACE_SECONDS: Final = 30
"""What a pod gets when it sets no ``terminationGracePeriodSeconds``."""


class CheckpointGrace(NamedTuple):
    minimum: int
    paths: tuple[str, ...]
    workload_types: frozenset[str]


def _parse_checkpoint_grace(raw: Mapping[str, Any]) -> CheckpointGrace:
    paths = tuple(p.rstrip("/") or "/" for p in str_list(raw.get("checkpointPaths")))
    return CheckpointGrace(
        int_value(raw.get("minGracePeriodSeconds"), CHECKPOINT_GRACE_SECONDS),
        paths,
        frozenset(str_list(raw.get("workloadTypes"))),
    )


def _checkpoint_mount(view: PodView, paths: tuple[str, ...]) -> str | None:
    """The first mount at or below a checkpoint path of a claim-backed volume."""
    for container in view.containers:
        for volume_name, mount_path in iter_volume_mounts(container):
            path = mount_path.rstrip("/") or "/"
            if not any(path == p or path.startswith(p + "/") for p in paths):
                continue
            if "persistentVolumeClaim" in view.volumes.get(volume_name, {}):
                return mount_path
    return None


def _check_checkpoint_grace(
    args: ResourceValidationArgs, report: ReportViolation, cfg: CheckpointGrace
) -> None:
    found = gpu_view(args)
    if found is None:
        return
    view, _profile = found
    if view.workload_type not in cfg.workload_types:
        return
    mount = _checkpoint_mount(view, cfg.paths)
    if mount is None:
        return
    raw = view.spec.get("terminationGracePeriodSeconds")
    grace = as_int(raw)
    if raw is None:
        shown = f"sets no terminationGracePeriodSeconds ({KUBERNETES_DEFAULT_GRACE_SECONDS} s)"
    elif grace is None:
        shown = f"sets terminationGracePeriodSeconds {raw!r}"
    else:
        shown = f"sets terminationGracePeriodSeconds {grace}"
    if grace is None or grace < cfg.minimum:
        report(
            f'GPU {view.workload_type} pod writes checkpoints at "{mount}" but {shown}, below '
            f"the {cfg.minimum} s it needs to save one after SIGTERM",
            None,
        )


training_checkpoint_grace_period = resource_policy(
    name="training-checkpoint-grace-period",
    description=(
        "GPU training pods with a checkpoint volume have time to save a checkpoint on SIGTERM."
    ),
    category=Category.GPU,
    severity=Severity.MEDIUM,
    remediation=(
        "Set spec.terminationGracePeriodSeconds on the pod template to at least the time a "
        "checkpoint takes to write (stack config: workloads[].training."
        "terminationGracePeriodSeconds), and handle SIGTERM in the trainer by saving one. "
        "Preemption, drains and soft evictions give a pod this long before SIGKILL; the "
        "default 30 s loses the work since the last periodic checkpoint. Keep it within the "
        "node pool's evictionMaxPodGracePeriod, which caps what a soft eviction grants."
    ),
    check=_check_checkpoint_grace,
    knobs=Knobs(
        {
            "minGracePeriodSeconds": {
                "type": "integer",
                "minimum": 0,
                "default": CHECKPOINT_GRACE_SECONDS,
                "description": "Least terminationGracePeriodSeconds of such a pod.",
            },
            "checkpointPaths": string_list_schema(
                "Mount paths (and everything below them) of checkpoint volumes.",
                ("/checkpoints",),
            ),
            "workloadTypes": string_list_schema(
                "Values of the workload-type label the policy applies to.",
                (WORKLOAD_TYPE_TRAINING, WORKLOAD_TYPE_EVALUATION),
            ),
        },
        _parse_checkpoint_grace,
    ),
    kinds=WORKLOAD_KINDS,
)


# --- gpu-no-privileged-device-access --------------------------------------------------------------
_HIDDEN_GPU_VALUES: Final = frozenset({"", "void", "none"})


def _may_run_on_gpu_nodes(view: PodView, profile: GpuProfile) -> bool:
    return profile.is_gpu_pod or tolerates_gpu_taint(view.spec) or selected_pools(view.spec)[0]


def _check_device_access(
    args: ResourceValidationArgs, report: ReportViolation, exempt: tuple[Component, ...]
) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None or exempt_component(view, exempt) is not None:
        return
    profile = gpu_profile(view)
    gpu_containers = {
        id(e.container)
        for e in profile.containers
        if any((e.amount(k) or 0) > 0 for k in {*e.requests, *e.limits})
    }
    if _may_run_on_gpu_nodes(view, profile):
        for container in view.containers:
            if container.security_context.get("privileged") is True:
                report(
                    f"{container.label} is privileged in a pod that can run on GPU nodes; a "
                    "privileged container sees every GPU of the node, outside the device "
                    "plugin's accounting",
                    None,
                )
    for name, volume in view.volumes.items():
        path = as_str(as_map(volume.get("hostPath")).get("path"))
        if path is not None and (path.rstrip("/") == "/dev" or path.startswith("/dev/nvidia")):
            report(
                f'volume "{name}" mounts hostPath "{path}"; request {GPU_RESOURCE} from the '
                "device plugin instead of mounting GPU devices",
                None,
            )
    for container in view.containers:
        if id(container) in gpu_containers:
            continue
        for env in as_seq(container.spec.get("env")):
            env = as_map(env)
            if env.get("name") != "NVIDIA_VISIBLE_DEVICES":
                continue
            value = env.get("value")
            if isinstance(value, str) and value.strip().lower() in _HIDDEN_GPU_VALUES:
                continue
            shown = value if isinstance(value, str) else "<from a reference>"
            report(
                f"{container.label} sets NVIDIA_VISIBLE_DEVICES={shown} without requesting "
                f"{GPU_RESOURCE}; that exposes GPUs the scheduler and quotas do not see",
                None,
            )


gpu_no_privileged_device_access = resource_policy(
    name="gpu-no-privileged-device-access",
    description=(
        "GPUs are reached only through the device plugin: no privileged containers on GPU "
        "nodes, no hostPath /dev/nvidia*, no NVIDIA_VISIBLE_DEVICES without a GPU request."
    ),
    category=Category.GPU,
    severity=Severity.CRITICAL,
    remediation=(
        f"Request {GPU_RESOURCE} (or a MIG slice) in resources.limits and drop "
        "securityContext.privileged, hostPath volumes of /dev or /dev/nvidia*, and "
        "NVIDIA_VISIBLE_DEVICES from containers that request no GPU. Only known components "
        "(exemptComponents: namespace and service account or pod labels) may touch devices "
        "directly."
    ),
    check=_check_device_access,
    knobs=Knobs(
        {"exemptComponents": exempt_components_knob()},
        lambda raw: components(raw, "exemptComponents"),
    ),
    kinds=GPU_POD_KINDS,
    level=EnforcementLevel.MANDATORY,
)


# --- gpu-workload-type-label ----------------------------------------------------------------------
def _check_workload_type(args: ResourceValidationArgs, report: ReportViolation, _: None) -> None:
    expected = ", ".join(WORKLOAD_TYPES[:-1]) + f" or {WORKLOAD_TYPES[-1]}"
    for view, _profile in gpu_views(args):
        value = view.workload_type
        if value is None:
            report(
                f"{view.prefix}GPU pod has no {WORKLOAD_TYPE_LABEL} label; set it to {expected}",
                None,
            )
        elif value not in WORKLOAD_TYPES:
            report(
                f'{view.prefix}GPU pod has {WORKLOAD_TYPE_LABEL}="{value}"; expected {expected}',
                None,
            )


gpu_workload_type_label = resource_policy(
    name="gpu-workload-type-label",
    description=(
        "Pods that request GPUs say whether they are training, evaluation, inference or worker."
    ),
    category=Category.GPU,
    severity=Severity.LOW,
    remediation=(
        f"Label the pod template with {WORKLOAD_TYPE_LABEL}: training, evaluation, inference or "
        "worker. "
        "Storage, probe and disruption policies, dashboards and showback key on it."
    ),
    check=_check_workload_type,
    knobs=NO_KNOBS,
    kinds=GPU_POD_KINDS,
)


# --- gpu-jobs-use-kueue ---------------------------------------------------------------------------
def _check_kueue(
    args: ResourceValidationArgs, report: ReportViolation, system: frozenset[str]
) -> None:
    found = gpu_views(args)
    if not found or in_namespaces(args.props, system):
        return
    view, _profile = found[0]
    if view.kind == "CronJob":
        job_meta = as_map(dig(args.props, "spec", "jobTemplate", "metadata"))
        where = "spec.jobTemplate.metadata.labels"
    else:
        job_meta = as_map(args.props.get("metadata"))
        where = "metadata.labels"
    queue = labels_of(job_meta).get(KUEUE_QUEUE_LABEL)
    if not isinstance(queue, str) or not queue:
        report(
            f"GPU {view.kind} has no {KUEUE_QUEUE_LABEL} label in {where}; Kueue neither admits "
            "nor accounts for it, so it bypasses the team's GPU queue",
            None,
        )


gpu_jobs_use_kueue = resource_policy(
    name="gpu-jobs-use-kueue",
    description=(
        "GPU Jobs, Ray clusters and Ray jobs in team namespaces are submitted through a Kueue "
        "LocalQueue."
    ),
    category=Category.GPU,
    severity=Severity.MEDIUM,
    remediation=(
        f"Add the label {KUEUE_QUEUE_LABEL}: <team LocalQueue> to the Job, RayCluster or RayJob "
        "(for a CronJob: to spec.jobTemplate.metadata.labels). Kueue then queues it until the "
        "team's GPU quota admits it, and fair-shares idle GPUs between teams."
    ),
    check=_check_kueue,
    knobs=Knobs(
        {"systemNamespaces": system_namespaces_knob()},
        lambda raw: namespaces(raw, "systemNamespaces"),
    ),
    kinds=("batch/Job", "batch/CronJob", *sorted(RAY_KINDS)),
)
