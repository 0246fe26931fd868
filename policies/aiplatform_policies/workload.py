"""Workload policies: predictable scheduling (resources), safe rollouts (probes, disruption
budgets, autoscaler bounds), reproducible images and batch jobs that clean up after themselves."""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final, NamedTuple

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from .kube import (
    LabelSelector,
    as_int,
    as_map,
    as_seq,
    as_str,
    dig,
    effective_namespace,
    fmt_num,
    is_kind,
    name_of,
    parse_quantity,
)
from .podspec import WORKLOAD_KINDS, PodView, pod_view, workload_replicas
from .registry import (
    NO_KNOBS,
    Category,
    Knobs,
    bool_value,
    int_value,
    resource_policy,
    stack_policy,
    str_list,
    string_list_schema,
)
from .scope import namespaces, system_namespaces_knob
from .shared import (
    WORKLOAD_TYPE_EVALUATION,
    WORKLOAD_TYPE_INFERENCE,
    WORKLOAD_TYPE_TRAINING,
)

SERVING_KINDS: Final = frozenset({"apps/Deployment", "apps/StatefulSet"})
BATCH_KINDS: Final = frozenset({"batch/Job", "batch/CronJob"})
PDB: Final = "policy/PodDisruptionBudget"
HPA: Final = "autoscaling/HorizontalPodAutoscaler"


def is_serving(view: PodView, system_namespaces: frozenset[str]) -> bool:
    """Inference pods anywhere (except batch jobs), and long-running Deployments/StatefulSets
    in team namespaces unless they say they are training or evaluation."""
    if view.token.group_kind in BATCH_KINDS:
        return False
    kind = view.workload_type
    if kind == WORKLOAD_TYPE_INFERENCE:
        return True
    if kind in (WORKLOAD_TYPE_TRAINING, WORKLOAD_TYPE_EVALUATION):
        return False
    return (
        view.token.group_kind in SERVING_KINDS
        and (view.namespace or "default") not in system_namespaces
    )


# --- container-resources ------------------------------------------------------------------------
class ResourceRules(NamedTuple):
    require_cpu_limit: bool


_REQUIRED: Final = (("requests", "cpu"), ("requests", "memory"), ("limits", "memory"))


def _check_resources(
    args: ResourceValidationArgs, report: ReportViolation, cfg: ResourceRules
) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None:
        return
    required = _REQUIRED + ((("limits", "cpu"),) if cfg.require_cpu_limit else ())
    for container in view.containers:
        if container.section == "ephemeralContainers":
            continue  # the API forbids resources on ephemeral containers
        resources = container.resources
        requests = as_map(resources.get("requests"))
        limits = as_map(resources.get("limits"))
        sections = {"requests": requests, "limits": limits}
        missing = [f"resources.{s}.{r}" for s, r in required if sections[s].get(r) in (None, "")]
        if missing:
            report(f"{container.label} sets no {', '.join(missing)}", None)
        parsed: dict[tuple[str, str], Decimal] = {}
        for section, values in sections.items():
            for resource in ("cpu", "memory"):
                raw = values.get(resource)
                if raw in (None, ""):
                    continue
                amount = parse_quantity(raw)
                if amount is None or amount < 0:
                    report(
                        f'{container.label} sets resources.{section}.{resource} to "{raw}", '
                        "which is not a Kubernetes quantity",
                        None,
                    )
                else:
                    parsed[(section, resource)] = amount
        for resource in ("cpu", "memory"):
            request = parsed.get(("requests", resource))
            limit = parsed.get(("limits", resource))
            if request is not None and limit is not None and limit < request:
                report(
                    f"{container.label} has a {resource} limit of {fmt_num(limits.get(resource))} "
                    f"below its request of {fmt_num(requests.get(resource))}",
                    None,
                )


container_resources = resource_policy(
    name="container-resources",
    description="Every container (init containers too) requests CPU and memory and limits memory.",
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Set resources.requests.cpu, resources.requests.memory and resources.limits.memory on "
        "every container and init container, with limits >= requests. Requests are what the "
        "scheduler and quotas count; a missing memory limit lets one pod take the node's memory. "
        "CPU limits are optional (they throttle) unless requireCpuLimit is set."
    ),
    check=_check_resources,
    knobs=Knobs(
        {
            "requireCpuLimit": {
                "type": "boolean",
                "default": False,
                "description": "Also require resources.limits.cpu.",
            }
        },
        lambda raw: ResourceRules(bool_value(raw.get("requireCpuLimit"), False)),
    ),
    kinds=WORKLOAD_KINDS,
)


# --- serving-probes -------------------------------------------------------------------------------
class ProbeRules(NamedTuple):
    system_namespaces: frozenset[str]
    require_startup: bool


def _check_probes(args: ResourceValidationArgs, report: ReportViolation, cfg: ProbeRules) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None or not is_serving(view, cfg.system_namespaces):
        return
    probes = ("readinessProbe", "livenessProbe") + (
        ("startupProbe",) if cfg.require_startup else ()
    )
    for container in view.app_containers():
        missing = [p for p in probes if not isinstance(container.spec.get(p), Mapping)]
        if missing:
            report(
                f"{container.label} of a serving workload has no {' and no '.join(missing)}", None
            )


serving_probes = resource_policy(
    name="serving-probes",
    description="Serving containers have readiness and liveness probes.",
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Add a readinessProbe (traffic only once the model is loaded) and a livenessProbe "
        "(restart a wedged server) to every container of inference workloads and of "
        "Deployments/StatefulSets in team namespaces. Slow model loads want a startupProbe too."
    ),
    check=_check_probes,
    knobs=Knobs(
        {
            "systemNamespaces": system_namespaces_knob(),
            "requireStartupProbe": {
                "type": "boolean",
                "default": False,
                "description": "Also require a startupProbe.",
            },
        },
        lambda raw: ProbeRules(
            namespaces(raw, "systemNamespaces"), bool_value(raw.get("requireStartupProbe"), False)
        ),
    ),
    kinds=WORKLOAD_KINDS,
)


# --- images ---------------------------------------------------------------------------------------
class ImageRef(NamedTuple):
    registry: str
    repository: str
    """``registry/path`` without tag or digest, registry normalised (``docker.io/library/x``)."""
    tag: str | None
    digest: str | None


_DIGEST: Final = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$")


def parse_image(image: str) -> ImageRef:
    """Split an image reference the way container runtimes resolve it."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = None
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, path = first, rest
    else:
        registry, path = "docker.io", name
        if "/" not in path:
            path = f"library/{path}"
    if registry in ("index.docker.io", "registry-1.docker.io"):
        registry = "docker.io"
    return ImageRef(registry, f"{registry}/{path}", tag, digest or None)


class PinRules(NamedTuple):
    require_digest: bool
    mutable_tags: frozenset[str]


def _check_pinned(args: ResourceValidationArgs, report: ReportViolation, cfg: PinRules) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None:
        return
    for container in view.containers:
        image = as_str(container.spec.get("image"))
        if not image:
            report(f"{container.label} sets no image", None)
            continue
        ref = parse_image(image)
        if ref.digest is not None:
            if not _DIGEST.match(ref.digest):
                report(f'{container.label} image "{image}" has a malformed digest', None)
            continue
        if ref.tag is None:
            report(
                f'{container.label} image "{image}" has no tag; pin a version tag or a digest', None
            )
        elif ref.tag in cfg.mutable_tags:
            report(
                f'{container.label} image "{image}" uses the mutable tag "{ref.tag}"; pin a '
                "version tag or a digest",
                None,
            )
        elif cfg.require_digest:
            report(f'{container.label} image "{image}" is not pinned by digest (@sha256:...)', None)


image_pinned = resource_policy(
    name="image-pinned",
    description="Container images are pinned: a version tag or a digest, never latest or no tag.",
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Reference images as registry/repo:1.2.3 or, better, registry/repo@sha256:<digest>. "
        "'latest' and untagged images change under a running job: a restarted worker of a "
        "multi-day training run may come back with different code."
    ),
    check=_check_pinned,
    knobs=Knobs(
        {
            "requireDigest": {
                "type": "boolean",
                "default": False,
                "description": "Require @sha256 digests, not only tags.",
            },
            "mutableTags": string_list_schema("Tags treated as unpinned.", ("latest",)),
        },
        lambda raw: PinRules(
            bool_value(raw.get("requireDigest"), False), frozenset(str_list(raw.get("mutableTags")))
        ),
    ),
    kinds=WORKLOAD_KINDS,
)


DEFAULT_REGISTRIES: Final = ("nvcr.io", "registry.k8s.io", "ghcr.io", "quay.io", "public.ecr.aws")


def _registry_allowed(ref: ImageRef, allowed: tuple[str, ...]) -> bool:
    for entry in allowed:
        entry = entry.rstrip("/")
        if ref.registry == entry or ref.repository.startswith(entry + "/"):
            return True
    return False


def _check_registry(
    args: ResourceValidationArgs, report: ReportViolation, allowed: tuple[str, ...]
) -> None:
    view = pod_view(args.resource_type, args.props)
    if view is None:
        return
    for container in view.containers:
        image = as_str(container.spec.get("image"))
        if not image:
            continue
        ref = parse_image(image)
        if not _registry_allowed(ref, allowed):
            report(
                f'{container.label} image "{image}" comes from {ref.registry}, which is not an '
                f"allowed registry ({', '.join(allowed)})",
                None,
            )


image_registry_allowed = resource_policy(
    name="image-registry-allowed",
    description="Container images come from the platform's allowed registries.",
    category=Category.WORKLOAD,
    severity=Severity.HIGH,
    remediation=(
        "Pull from an allowed registry (or mirror the image into one). Entries match a whole "
        "registry (nvcr.io) or a path prefix (ghcr.io/acme); images without a registry are "
        "docker.io/library images."
    ),
    check=_check_registry,
    knobs=Knobs(
        {
            "allowedRegistries": string_list_schema(
                "Registries or registry/path prefixes images may come from.", DEFAULT_REGISTRIES
            )
        },
        lambda raw: str_list(raw.get("allowedRegistries")),
    ),
    kinds=WORKLOAD_KINDS,
)


# --- job-lifecycle --------------------------------------------------------------------------------
def _check_job(args: ResourceValidationArgs, report: ReportViolation, max_backoff: int) -> None:
    is_cron = is_kind(args.resource_type, "batch/CronJob")
    spec = as_map(
        dig(args.props, "spec", "jobTemplate", "spec") if is_cron else args.props.get("spec")
    )
    who = "CronJob job template" if is_cron else "Job"
    missing = []
    if spec.get("backoffLimit") is None and spec.get("backoffLimitPerIndex") is None:
        missing.append("backoffLimit")
    for field in ("activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        if spec.get(field) is None:
            missing.append(field)
    if missing:
        report(f"{who} sets no {', '.join(missing)}", None)
    backoff = as_int(spec.get("backoffLimit"))
    if backoff is not None and backoff > max_backoff:
        report(f"{who} sets backoffLimit {backoff}, above the maximum of {max_backoff}", None)


job_lifecycle = resource_policy(
    name="job-lifecycle",
    description="Jobs bound their retries and run time and are garbage-collected when finished.",
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Set spec.backoffLimit (or backoffLimitPerIndex for indexed Jobs), "
        "spec.activeDeadlineSeconds and spec.ttlSecondsAfterFinished on Jobs (for CronJobs: on "
        "spec.jobTemplate.spec). A crash-looping GPU job otherwise retries for hours, and "
        "finished Jobs pile up and keep their pods' logs and quota objects."
    ),
    check=_check_job,
    knobs=Knobs(
        {
            "maxBackoffLimit": {
                "type": "integer",
                "minimum": 0,
                "default": 10,
                "description": "Largest backoffLimit allowed.",
            }
        },
        lambda raw: int_value(raw.get("maxBackoffLimit"), 10),
    ),
    kinds=BATCH_KINDS,
)


# --- scaledobject-bounds (stack) -----------------------------------------------------------------
SCALED_OBJECT: Final = "keda.sh/ScaledObject"
SCALE_TARGET_KINDS: Final = frozenset({"Deployment", "StatefulSet"})
"""What a team's ScaledObject may scale: its own Deployments and StatefulSets (``apps/v1``)."""
KEDA_DEFAULT_MAX_REPLICAS: Final = 100
"""KEDA's ``maxReplicaCount`` when a ScaledObject sets none."""


class ScaledObjectSettings(NamedTuple):
    max_replicas: int
    system: frozenset[str]


def _targets_in_stack(resources: list[PolicyResource]) -> set[tuple[str, str, str]]:
    return {
        (effective_namespace(r.props), kind, name_of(r.props))
        for r in resources
        for kind in SCALE_TARGET_KINDS
        if is_kind(r.resource_type, f"apps/{kind}")
    }


def _check_scaled_objects(
    args: StackValidationArgs, report: ReportViolation, settings: ScaledObjectSettings
) -> None:
    targets = _targets_in_stack(args.resources)
    for resource in args.resources:
        if not is_kind(resource.resource_type, SCALED_OBJECT):
            continue
        namespace = effective_namespace(resource.props)
        if namespace in settings.system:
            continue
        name = name_of(resource.props)
        spec = as_map(resource.props.get("spec"))
        ref = as_map(spec.get("scaleTargetRef"))
        kind = as_str(ref.get("kind")) or "Deployment"
        api_version = as_str(ref.get("apiVersion")) or "apps/v1"
        target = as_str(ref.get("name")) or ""
        what = f'ScaledObject "{name}" in namespace "{namespace}"'
        if kind not in SCALE_TARGET_KINDS or api_version != "apps/v1":
            report(
                f"{what} scales {api_version} {kind} {target!r}; a team's ScaledObject scales "
                "an apps/v1 Deployment or StatefulSet of its namespace",
                resource.urn,
            )
        elif (namespace, kind, target) not in targets:
            report(
                f"{what} scales {kind} {target!r}, which this stack does not define in that "
                "namespace",
                resource.urn,
            )
        raw_max = spec.get("maxReplicaCount")
        maximum = as_int(raw_max) if raw_max is not None else KEDA_DEFAULT_MAX_REPLICAS
        minimum = as_int(spec.get("minReplicaCount")) or 0
        if maximum is None:
            continue
        if maximum > settings.max_replicas:
            shown = (
                f"maxReplicaCount {maximum}"
                if raw_max is not None
                else (f"no maxReplicaCount (KEDA's default, {KEDA_DEFAULT_MAX_REPLICAS})")
            )
            report(
                f"{what} has {shown}, above the limit of {settings.max_replicas}",
                resource.urn,
            )
        if minimum > maximum:
            report(
                f"{what} has minReplicaCount {minimum} above maxReplicaCount {maximum}",
                resource.urn,
            )


scaledobject_bounds = stack_policy(
    name="scaledobject-bounds",
    description=(
        "A team's KEDA ScaledObject scales a Deployment or StatefulSet of its own namespace "
        "that the stack defines, within a bounded maxReplicaCount."
    ),
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Point spec.scaleTargetRef at an apps/v1 Deployment or StatefulSet the stack defines in "
        "the ScaledObject's namespace, and set spec.maxReplicaCount (at most maxReplicas) and "
        "minReplicaCount no higher. Without a bound, a queue that floods scales to KEDA's "
        "default of 100 pods."
    ),
    check=_check_scaled_objects,
    knobs=Knobs(
        {
            "maxReplicas": {
                "type": "integer",
                "minimum": 1,
                "default": 50,
                "description": "Largest maxReplicaCount a ScaledObject may set.",
            },
            "systemNamespaces": system_namespaces_knob(),
        },
        lambda raw: ScaledObjectSettings(
            int_value(raw.get("maxReplicas"), 50), namespaces(raw, "systemNamespaces")
        ),
    ),
)


# --- hpa-replica-bounds ---------------------------------------------------------------------------
def _check_hpa(args: ResourceValidationArgs, report: ReportViolation, floor: int) -> None:
    name = name_of(args.props)
    spec = as_map(args.props.get("spec"))
    min_raw = spec.get("minReplicas")
    minimum = as_int(min_raw) if min_raw is not None else 1
    maximum = as_int(spec.get("maxReplicas"))
    if minimum is None:
        return
    if maximum is not None and minimum > maximum:
        report(
            f'HorizontalPodAutoscaler "{name}" has minReplicas {minimum} above maxReplicas '
            f"{maximum}",
            None,
        )
    if minimum < floor:
        shown = f"minReplicas {minimum}" if min_raw is not None else "no minReplicas (1)"
        report(
            f'HorizontalPodAutoscaler "{name}" has {shown}, below the required minimum of {floor}',
            None,
        )


hpa_replica_bounds = resource_policy(
    name="hpa-replica-bounds",
    description="HorizontalPodAutoscalers have minReplicas <= maxReplicas and a minimum floor.",
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Set spec.minReplicas to at least minReplicas (2 in prod, so one replica survives a node "
        "drain) and no higher than spec.maxReplicas."
    ),
    check=_check_hpa,
    knobs=Knobs(
        {
            "minReplicas": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "Lowest minReplicas an HPA may set.",
            }
        },
        lambda raw: int_value(raw.get("minReplicas"), 1),
    ),
    kinds=(HPA,),
    level=EnforcementLevel.MANDATORY,
)


# --- serving-pdb (stack) --------------------------------------------------------------------------
def _hpa_targets(resources: list[PolicyResource]) -> dict[tuple[str, str, str], tuple[int, int]]:
    """``(namespace, kind, name)`` → (minReplicas, maxReplicas) of HPAs in the stack."""
    found = {}
    for resource in resources:
        if not is_kind(resource.resource_type, HPA):
            continue
        spec = as_map(resource.props.get("spec"))
        target = as_map(spec.get("scaleTargetRef"))
        kind, name = as_str(target.get("kind")), as_str(target.get("name"))
        if kind and name:
            minimum = as_int(spec.get("minReplicas")) or 1
            maximum = as_int(spec.get("maxReplicas")) or minimum
            found[(effective_namespace(resource.props), kind, name)] = (minimum, maximum)
    return found


def _allowed_disruptions(spec: Mapping[str, Any], replicas: int) -> tuple[bool, str]:
    """Whether the budget lets at least one of ``replicas`` pods be evicted, and its setting."""
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    if max_unavailable is not None:
        shown = f"maxUnavailable: {fmt_num(max_unavailable)}"
        return _scaled(max_unavailable, replicas) > 0, shown
    if min_available is not None:
        shown = f"minAvailable: {fmt_num(min_available)}"
        return _scaled(min_available, replicas) < replicas, shown
    return False, "neither minAvailable nor maxUnavailable"


def _scaled(value: Any, replicas: int) -> int:
    """An IntOrString budget value in pods; percentages round up, as the disruption controller."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            percent = Decimal(value[:-1])
        except ArithmeticError:
            return 0
        return math.ceil(percent * replicas / 100)
    number = as_int(value)
    if number is None and isinstance(value, str) and value.isdigit():
        number = int(value)
    return number or 0


def _check_pdb(args: StackValidationArgs, report: ReportViolation, system: frozenset[str]) -> None:
    budgets: dict[str, list[tuple[PolicyResource, LabelSelector]]] = {}
    for budget in args.resources:
        if is_kind(budget.resource_type, PDB):
            selector = LabelSelector(dig(budget.props, "spec", "selector"))
            budgets.setdefault(effective_namespace(budget.props), []).append((budget, selector))
    hpas = _hpa_targets(args.resources)
    for resource in args.resources:
        view = pod_view(resource.resource_type, resource.props)
        if (
            view is None
            or view.token.group_kind not in SERVING_KINDS
            or not is_serving(view, system)
        ):
            continue
        namespace = effective_namespace(resource.props)
        replicas = workload_replicas(view) or 1
        scale = hpas.get((namespace, view.kind, view.name))
        peak = replicas
        if scale is not None:
            replicas, peak = scale
        if max(replicas, peak) < 2:
            continue
        who = f'{view.kind} "{view.name}"'
        pod_labels = dict(view.pod_labels)
        covering = [b for b, selector in budgets.get(namespace, ()) if selector.matches(pod_labels)]
        if not covering:
            report(
                f"{who} runs up to {peak} replicas but no PodDisruptionBudget selects its pods",
                resource.urn,
            )
            continue
        if len(covering) > 1:
            names = ", ".join(sorted(name_of(b.props) for b in covering))
            report(
                f"{who} is selected by {len(covering)} PodDisruptionBudgets ({names}); the "
                "eviction API refuses to evict pods covered by more than one",
                resource.urn,
            )
            continue
        budget = covering[0]
        ok, shown = _allowed_disruptions(as_map(budget.props.get("spec")), replicas)
        if not ok:
            report(
                f'PodDisruptionBudget "{name_of(budget.props)}" ({shown}) allows no disruption '
                f"of {who} at {replicas} replicas; node drains would block",
                budget.urn,
            )


serving_pdb = stack_policy(
    name="serving-pdb",
    description=(
        "Multi-replica serving workloads have exactly one PodDisruptionBudget that allows "
        "evictions."
    ),
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Add one PodDisruptionBudget per serving workload whose selector matches the pod "
        "template labels, with maxUnavailable >= 1 (or a percentage) or minAvailable below the "
        "replica count (the HPA's minReplicas when autoscaled). Without a budget a drain can "
        "take every replica at once; with a budget that allows nothing, drains and node "
        "upgrades hang."
    ),
    check=_check_pdb,
    knobs=Knobs(
        {"systemNamespaces": system_namespaces_knob()},
        lambda raw: namespaces(raw, "systemNamespaces"),
    ),
)


# --- log-level-shipped (stack) --------------------------------------------------------------------
HELM_RELEASE_TYPE: Final = re.compile(r"^kubernetes:helm\.sh/v\d+:Release$")
"""Helm releases carry the log shipper's configuration in their values (Fluent Bit's chart:
``values.config.filters``, classic-mode sections)."""


class DropRule(NamedTuple):
    """A Fluent Bit grep ``Exclude <key> <regex>``: records whose key matches are dropped."""

    release: str
    key: str
    pattern: re.Pattern[str]
    text: str


def _sections(text: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """``[NAME]`` sections of a classic-mode Fluent Bit config, each with its ``Key Value``s."""
    sections: list[tuple[str, list[tuple[str, str]]]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            sections.append((line[1:-1].strip().upper(), []))
        elif line and not line.startswith("#") and sections:
            key, _, value = line.partition(" ")
            sections[-1][1].append((key.lower(), value.strip()))
    return sections


def _drop_rules(release: str, filters: str) -> list[DropRule]:
    """The Exclude rules of the grep filters that drop a record when any one matches (``or``,
    and the legacy mode); an ``and`` filter needs every rule at once and is left out."""
    rules = []
    for name, entries in _sections(filters):
        settings = dict(entries)
        if name != "FILTER" or settings.get("name", "").lower() != "grep":
            continue
        if settings.get("logical_op", "or").lower() != "or":
            continue
        for key, value in entries:
            field, _, regex = value.partition(" ")
            if key != "exclude" or not regex.strip():
                continue
            try:
                pattern = re.compile(regex.strip())
            except re.error:
                continue  # an Onigmo construct Python lacks: no verdict rather than a wrong one
            rules.append(DropRule(release, field, pattern, f"{field} {regex.strip()}"))
    return rules


def _uncollected(inputs: str) -> list[str]:
    """``Exclude_Path`` globs of the tail inputs: container logs the shipper never reads."""
    globs = []
    for name, entries in _sections(inputs):
        for key, value in entries:
            if name == "INPUT" and key == "exclude_path":
                globs += [glob.strip() for glob in value.split(",") if glob.strip()]
    return globs


def _collected(namespace: str, globs: list[str]) -> bool:
    """Whether the shipper reads the namespace's container logs (``<pod>_<namespace>_<container>
    -<id>.log`` under /var/log/containers)."""
    sample = f"/var/log/containers/pod_{namespace}_container-0.log"
    return not any(fnmatch.fnmatchcase(sample, glob) for glob in globs)


def _records_at(level: str) -> tuple[tuple[str, str], ...]:
    """``(key, value)`` of a record a program logging at ``level`` emits: the level as a JSON key
    (merged into the record by the kubernetes filter), or a text line in the usual forms."""
    return (
        ("level", level),
        ("severity", level),
        ("log", f"level={level} msg=..."),
        ("log", f"{level.upper()}: ..."),
    )


class LogLevelRules(NamedTuple):
    variables: frozenset[str]


def _check_log_levels(
    args: StackValidationArgs, report: ReportViolation, cfg: LogLevelRules
) -> None:
    rules: list[DropRule] = []
    uncollected: list[str] = []
    for resource in args.resources:
        if HELM_RELEASE_TYPE.match(resource.resource_type):
            config = as_map(dig(resource.props, "values", "config"))
            filters, inputs = as_str(config.get("filters")), as_str(config.get("inputs"))
            release = as_str(resource.props.get("name")) or resource.name
            rules += _drop_rules(release, filters or "")
            uncollected += _uncollected(inputs or "")
    if not rules:
        return
    for resource in args.resources:
        view = pod_view(resource.resource_type, resource.props)
        if view is None or not _collected(view.namespace or "default", uncollected):
            continue  # logs the shipper never reads are not dropped by level
        for container in view.containers:
            for variable in as_seq(container.spec.get("env")):
                variable = as_map(variable)
                level = as_str(variable.get("value"))
                if as_str(variable.get("name")) not in cfg.variables or not level:
                    continue
                dropped = next(
                    (
                        rule
                        for key, value in _records_at(level)
                        for rule in rules
                        if rule.key == key and rule.pattern.search(value)
                    ),
                    None,
                )
                if dropped is not None:
                    report(
                        f'{view.kind} "{view.name}": {container.label} logs at '
                        f"{variable.get('name')}={level}, but the logging pipeline drops "
                        f'{level} records (Helm release "{dropped.release}", grep filter '
                        f"Exclude {dropped.text}); its {level} lines never reach the log store",
                        resource.urn,
                    )


log_level_shipped = stack_policy(
    name="log-level-shipped",
    description="Workloads do not log at a level the logging pipeline drops.",
    category=Category.WORKLOAD,
    severity=Severity.LOW,
    remediation=(
        "Log at a level the pipeline keeps (stack config: ai-platform:workloads[].logLevel: "
        "info), or ship the lines while you need them (ai-platform:monitoring.fluentBit."
        "dropDebugLogs: false). Lines the log shipper drops cost CPU in the pod and in the "
        "shipper, and whoever raised the level is left looking for output that never arrives."
    ),
    check=_check_log_levels,
    knobs=Knobs(
        {
            "levelVariables": string_list_schema(
                "Environment variables that set a container's log level.", ("LOG_LEVEL",)
            )
        },
        lambda raw: LogLevelRules(frozenset(str_list(raw.get("levelVariables")))),
    ),
)


# --- hpa-custom-metrics-served (stack) -----------------------------------------------------------
CUSTOM_METRIC_TYPES: Final = ("pods", "object")
"""HPA metric types the custom metrics API answers (``type: Pods`` and ``type: Object``)."""
PROMETHEUS_ADAPTER_CHART: Final = "prometheus-adapter"


def _hpa_custom_metrics(props: Mapping[str, Any]) -> list[str]:
    """The custom metric names an HPA's ``spec.metrics`` read, in order."""
    names = []
    for metric in as_seq(dig(props, "spec", "metrics")):
        for kind in CUSTOM_METRIC_TYPES:
            name = as_str(dig(metric, kind, "metric", "name"))
            if name:
                names.append(name)
    return names


def _adapter_metrics(resources: list[PolicyResource]) -> tuple[set[str], bool]:
    """What the stack's prometheus-adapter releases serve: the names their custom rules publish
    (``rules.custom[].name.as``), and whether one serves names no rule spells out (the chart's
    default rules, or a rule without ``as``)."""
    served: set[str] = set()
    open_ended = False
    for resource in resources:
        if not HELM_RELEASE_TYPE.match(resource.resource_type):
            continue
        chart = as_str(resource.props.get("chart")) or ""
        if PROMETHEUS_ADAPTER_CHART not in chart.split("/"):
            continue
        rules = as_map(dig(resource.props, "values", "rules"))
        if rules.get("default", True) is not False:
            open_ended = True
        for rule in as_seq(rules.get("custom")):
            name = as_str(dig(rule, "name", "as"))
            if name:
                served.add(name)
            else:
                open_ended = True
    return served, open_ended


def _check_custom_metrics(args: StackValidationArgs, report: ReportViolation, _: None) -> None:
    served, open_ended = _adapter_metrics(args.resources)
    if open_ended:
        return
    for resource in args.resources:
        if not is_kind(resource.resource_type, HPA):
            continue
        for metric in _hpa_custom_metrics(resource.props):
            if metric not in served:
                report(
                    f'HorizontalPodAutoscaler "{name_of(resource.props)}" in namespace '
                    f'"{effective_namespace(resource.props)}" scales on the custom metric '
                    f'"{metric}", which no metrics adapter of this stack serves; it could not '
                    "read it",
                    resource.urn,
                )


hpa_custom_metrics_served = stack_policy(
    name="hpa-custom-metrics-served",
    description=(
        "HorizontalPodAutoscalers scale only on custom metrics an adapter of the stack serves."
    ),
    category=Category.WORKLOAD,
    severity=Severity.MEDIUM,
    remediation=(
        "Install the Prometheus adapter with a rule for the metric (stack config: "
        "ai-platform:autoscaling.prometheusAdapter.enabled: true serves every customMetric the "
        "workloads name), or scale on CPU and memory. An HPA that cannot read one of its "
        "metrics never scales down, and scales up only on the others."
    ),
    check=_check_custom_metrics,
    knobs=NO_KNOBS,
)
