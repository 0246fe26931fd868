"""``ai-platform:extraManifests``: raw Kubernetes objects the platform applies as they are.

Free-form by nature, so the model is a list of mappings; ``extra_manifest_issues`` checks what
the program needs to register them (kind, name, a typed resource to map to) with exact paths.
Whether they are *good* objects is the policy pack's and the schema validation's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from components.constants import (
    ALLOW_DNS_POLICY_NAME,
    DEFAULT_DENY_POLICY_NAME,
    DEFAULT_QUEUE_FLAVOR,
    EC2_NODE_CLASS_KIND,
    GPU_OPERATOR_NAMESPACE,
    KARPENTER_API_VERSION,
    KARPENTER_AWS_GROUP,
    KEDA_NAMESPACE,
    KUEUE_DEFAULT_LOCAL_QUEUE,
    KUEUE_NAMESPACE,
    METRICS_SERVER_NAMESPACE,
    PROJECT,
    PROMETHEUS_ADAPTER_NAMESPACE,
    SYSTEM_NAMESPACES,
    TEAM_ADMIN_ROLE,
    TEAM_ENV_CONFIGMAP,
    TEAM_LIMIT_RANGE_NAME,
    TEAM_LOCAL_QUEUE_NAME,
    TEAM_QUOTA_NAME,
    TEAM_VIEWER_ROLE,
    TEAM_WORKLOAD_SERVICE_ACCOUNT,
)
from components.guardrails import (
    MONITOR_POLICIES,
    POLICY_PREFIX,
    PRIORITY_QUOTA_NAME,
    SHAPES,
    policy_name,
)
from components.kueue import cluster_queue_name, default_cluster_queue_name
from components.raw_manifests import (
    CLUSTER_SCOPED_KINDS,
    custom_resource_extra_fields,
    group_kind,
    is_builtin,
    is_cluster_scoped,
    resource_class,
)
from components.team_redis_server import rendered_objects as redis_objects

from ..config.errors import ConfigIssue, entry_ref
from ..config.partial import parsed
from ..config.views import HasCluster, HasMonitoring, HasTeams
from .config import EscapeHatchConfig

KUEUE_GROUP = "kueue.x-k8s.io"

ExtraManifests = list[dict[str, Any]]


def extra_manifest_issues(manifests: ExtraManifests) -> Iterator[ConfigIssue]:
    seen: dict[tuple[str, str, str], int] = {}
    for index, manifest in enumerate(manifests):
        path: tuple[str | int, ...] = ("extraManifests", index)
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        meta = manifest.get("metadata")
        problems = False
        for field_name, value in (("apiVersion", api_version), ("kind", kind)):
            if not isinstance(value, str) or not value:
                yield ConfigIssue((*path, field_name), "required key is missing or not a string")
                problems = True
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            yield ConfigIssue((*path, "metadata", "name"), "required key is missing")
            problems = True
        if problems:
            continue
        assert isinstance(api_version, str) and isinstance(kind, str) and isinstance(meta, dict)
        if is_builtin(api_version) and resource_class(api_version, kind) is None:
            yield ConfigIssue(
                (*path, "kind"), f"{api_version} has no kind {kind!r} in pulumi-kubernetes"
            )
        elif not is_builtin(api_version):
            for field in custom_resource_extra_fields(manifest):
                yield ConfigIssue(
                    (*path, field),
                    "custom resources can carry only apiVersion, kind, metadata and spec",
                )
        # A cluster-scoped object is one object whatever namespace it is written with.
        namespace = "" if is_cluster_scoped(manifest) else str(meta.get("namespace", ""))
        identity = (kind, namespace, str(meta["name"]))
        if identity in seen:
            yield ConfigIssue(
                (*path, "metadata", "name"),
                f"{kind} {'/'.join(p for p in identity[1:] if p)} is already declared by "
                f"extraManifests[{seen[identity]}]",
            )
        else:
            seen[identity] = index


# --- The fence (ai-platform:escapeHatch) and collisions with what the platform declares --------
ObjectKey = tuple[str, str | None, str]
"""``(group/Kind or Kind, namespace, name)`` of an object."""


class Fenced(HasCluster, HasTeams, HasMonitoring, Protocol):
    """What the fence reads."""

    @property
    def extra_manifests(self) -> list[dict[str, Any]]: ...

    @property
    def escape_hatch(self) -> EscapeHatchConfig: ...


def platform_namespaces(config: Any) -> dict[str, str]:
    """Namespaces the platform's own components live in → the key that puts them there."""
    found: dict[str, str] = {}
    if config.gpu_stack.enabled:
        found[GPU_OPERATOR_NAMESPACE] = f"the GPU operator ({PROJECT}:gpuStack)"
    if config.queueing.enabled:
        found[KUEUE_NAMESPACE] = f"Kueue ({PROJECT}:queueing)"
    if config.autoscaling.keda.enabled:
        found[KEDA_NAMESPACE] = f"KEDA ({PROJECT}:autoscaling.keda)"
    if config.autoscaling.metrics_server.enabled:
        found[METRICS_SERVER_NAMESPACE] = f"metrics-server ({PROJECT}:autoscaling.metricsServer)"
    if config.autoscaling.prometheus_adapter.enabled:
        found[PROMETHEUS_ADAPTER_NAMESPACE] = (
            f"prometheus-adapter ({PROJECT}:autoscaling.prometheusAdapter)"
        )
    if config.ray.enabled:
        found[config.ray.namespace] = f"the KubeRay operator ({PROJECT}:ray)"
    if config.monitoring.enabled:
        found[config.monitoring.namespace] = f"the monitoring stack ({PROJECT}:monitoring)"
        found[config.monitoring.logging_namespace] = f"the logging stack ({PROJECT}:monitoring)"
    return found


def platform_objects(config: Any) -> dict[ObjectKey, str]:
    """Objects the platform declares outside its charts and workloads, by key → who declares
    them (a key path). Workloads reserve their names in their namespace instead
    (``workload_names``); tests/config/test_escape_hatch.py holds this to what renders."""
    found: dict[ObjectKey, str] = {}
    for namespace, owner in platform_namespaces(config).items():
        found[("Namespace", None, namespace)] = owner
    for _, pc in parsed(config.priority_classes):
        where = _ref("priorityClasses", pc.name)
        found[("scheduling.k8s.io/PriorityClass", None, pc.name)] = where
        if config.queueing.enabled:
            found[(f"{KUEUE_GROUP}/WorkloadPriorityClass", None, pc.name)] = where
    for _, sc in parsed(config.storage.classes):
        found[("storage.k8s.io/StorageClass", None, sc.name)] = _ref("storage.classes", sc.name)
    guardrails = [policy_name(shape) for shape in SHAPES]
    guardrails += [f"{POLICY_PREFIX}{monitors.name}" for monitors in MONITOR_POLICIES]
    for guardrail in guardrails:
        for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            found[(f"admissionregistration.k8s.io/{kind}", None, guardrail)] = (
                "the tenant guardrails"
            )
    for _, pool in parsed(config.node_pools):
        where = _ref("nodePools", pool.name)
        if config.queueing.enabled:
            found[(f"{KUEUE_GROUP}/ResourceFlavor", None, pool.name)] = where
        if pool.backend == "karpenter" and pool.karpenter is not None:
            found[(f"{KARPENTER_API_VERSION.split('/')[0]}/NodePool", None, pool.name)] = where
            if pool.karpenter.ec2_node_class is not None:
                name = pool.karpenter.node_class_ref.name
                found[(f"{KARPENTER_AWS_GROUP}/{EC2_NODE_CLASS_KIND}", None, name)] = where
        for node in pool.nodes:
            found[("Node", None, node)] = where
    if config.queueing.enabled:
        found[(f"{KUEUE_GROUP}/ResourceFlavor", None, DEFAULT_QUEUE_FLAVOR)] = (
            f"the default queues' flavor ({PROJECT}:queueing)"
        )
    for _, team in parsed(config.teams):
        ns, where = team.namespace_name, _ref("teams", team.name)
        found[("Namespace", None, ns)] = where
        for kind, name in (
            ("ResourceQuota", TEAM_QUOTA_NAME),
            ("ResourceQuota", PRIORITY_QUOTA_NAME),
            ("LimitRange", TEAM_LIMIT_RANGE_NAME),
            ("ServiceAccount", TEAM_WORKLOAD_SERVICE_ACCOUNT),
            ("ConfigMap", TEAM_ENV_CONFIGMAP),
            ("networking.k8s.io/NetworkPolicy", DEFAULT_DENY_POLICY_NAME),
            ("networking.k8s.io/NetworkPolicy", ALLOW_DNS_POLICY_NAME),
            ("rbac.authorization.k8s.io/Role", TEAM_ADMIN_ROLE),
            ("rbac.authorization.k8s.io/Role", TEAM_VIEWER_ROLE),
        ):
            found[(kind, ns, name)] = where
        for role, groups in (
            (TEAM_ADMIN_ROLE, team.admin_groups),
            (TEAM_VIEWER_ROLE, team.viewer_groups),
        ):
            if groups:
                found[("rbac.authorization.k8s.io/RoleBinding", ns, role)] = where
        for volume in team.volumes:
            found[("PersistentVolumeClaim", ns, volume.name)] = f"{where}.volumes[{volume.name}]"
        if team.redis.enabled:
            for kind, name in redis_objects(config.monitoring.enabled):
                found[(kind, ns, name)] = f"{where}.redis"
        if config.queueing.enabled:
            found[(f"{KUEUE_GROUP}/LocalQueue", ns, KUEUE_DEFAULT_LOCAL_QUEUE)] = where
            found[(f"{KUEUE_GROUP}/ClusterQueue", None, default_cluster_queue_name(team.name))] = (
                where
            )
            if team.queue is not None:
                queue = (f"{KUEUE_GROUP}/ClusterQueue", None, cluster_queue_name(team.name))
                found[(f"{KUEUE_GROUP}/LocalQueue", ns, TEAM_LOCAL_QUEUE_NAME)] = f"{where}.queue"
                found[queue] = f"{where}.queue"
    return found


def _ref(list_key: str, name: str) -> str:
    head, _, last = list_key.rpartition(".")
    return f"{PROJECT}:{head + '.' if head else ''}{entry_ref(last, name)}"


def workload_names(config: Any) -> dict[tuple[str, str], str]:
    """``(namespace, workload name)`` → its key: the workload's objects are named after it
    (``<name>`` and ``<name>-...``), so those names are its own in its namespace."""
    namespaces = {team.name: team.namespace_name for _, team in parsed(config.teams)}
    return {
        (namespaces[workload.team], workload.name): _ref("workloads", workload.name)
        for _, workload in parsed(config.workloads)
        if workload.team in namespaces
    }


def _key(manifest: dict[str, Any]) -> ObjectKey:
    meta = manifest.get("metadata") or {}
    namespace = None if is_cluster_scoped(manifest) else meta.get("namespace")
    return (group_kind(manifest), namespace, str(meta.get("name")))


def _show(key: ObjectKey) -> str:
    kind, namespace, name = key
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _kind_matches(pattern: str, kind: str) -> bool:
    """``*``, ``Kind`` for the core group (also ``core/Kind``), or ``group/Kind``."""
    return pattern in ("*", kind) or (pattern.startswith("core/") and pattern[5:] == kind)


def _admitted(config: Any, key: ObjectKey, teams: frozenset[str]) -> bool:
    kind, namespace, _ = key
    return namespace is not None and any(
        namespace in (teams if allowance.namespaces is None else allowance.namespaces)
        and any(_kind_matches(pattern, kind) for pattern in allowance.kinds)
        for allowance in config.escape_hatch.allow
    )


def _ref_key(ref: Any) -> ObjectKey:
    """An exception's object as a key (``core/Kind`` written as ``Kind``)."""
    return (ref.kind.removeprefix("core/"), ref.namespace, ref.name)


def exception_positions(config: Any) -> dict[int, str]:
    """Position in ``extraManifests`` → the exception that admits it (for the annotation)."""
    named = {
        _ref_key(ref): exception.name
        for exception in config.escape_hatch.exceptions
        for ref in exception.objects
    }
    found: dict[int, str] = {}
    for index, manifest in enumerate(config.extra_manifests):
        key = _key(manifest)
        if key in named:
            found[index] = named[key]
    return found


def extra_manifests_stay_in_the_fence(config: Fenced) -> Iterator[ConfigIssue]:
    """Every object is allowed, or named by an exception; no object is declared twice."""
    teams = frozenset(team.namespace_name for _, team in parsed(config.teams))
    reserved = {**{ns: "Kubernetes" for ns in SYSTEM_NAMESPACES}, **platform_namespaces(config)}
    hatch = config.escape_hatch
    for index, allowance in enumerate(hatch.allow):
        for position, allowed in enumerate(allowance.namespaces or []):
            if allowed in reserved:
                yield ConfigIssue(
                    ("escapeHatch", "allow", index, "namespaces", position),
                    f"{allowed!r} belongs to {reserved[allowed]}: objects there need a named "
                    "exception (escapeHatch.exceptions), not an allowance",
                )
        for position, pattern in enumerate(allowance.kinds):
            if pattern.removeprefix("core/") in CLUSTER_SCOPED_KINDS:
                yield ConfigIssue(
                    ("escapeHatch", "allow", index, "kinds", position),
                    f"{pattern} is cluster-scoped: it needs a named exception "
                    "(escapeHatch.exceptions), not an allowance",
                )
    written = {
        _key(m): i
        for i, m in enumerate(config.extra_manifests)
        if isinstance(m.get("metadata"), dict) and isinstance(m["metadata"].get("name"), str)
    }
    claimed: dict[ObjectKey, str] = {}
    for index, exception in enumerate(hatch.exceptions):
        at = ("escapeHatch", "exceptions", index)
        for position, ref in enumerate(exception.objects):
            key = _ref_key(ref)
            if key not in written:
                yield ConfigIssue(
                    (*at, "objects", position),
                    f"names {_show(key)}, which is not in extraManifests",
                )
            elif key in claimed:
                yield ConfigIssue(
                    (*at, "objects", position),
                    f"{_show(key)} is already admitted by exception {claimed[key]!r}",
                )
            elif _admitted(config, key, teams):
                yield ConfigIssue(
                    (*at, "objects", position),
                    f"{_show(key)} needs no exception: escapeHatch.allow admits it",
                )
            claimed.setdefault(key, exception.name)
    declared = platform_objects(config)
    workloads = workload_names(config)
    excepted = exception_positions(config)
    unregistrable = {
        issue.path[1]
        for issue in extra_manifest_issues(config.extra_manifests)
        if issue.path[-1] != "name"  # a duplicate is judged once, as its first declaration
    }
    for index, manifest in enumerate(config.extra_manifests):
        meta = manifest.get("metadata")
        if (
            index in unregistrable
            or not isinstance(meta, dict)
            or not isinstance(meta.get("name"), str)
        ):
            continue  # one error per object: extra_manifest_issues says what is wrong
        key = _key(manifest)
        kind, namespace, name = key
        path: tuple[str | int, ...] = ("extraManifests", index)
        owner: str | None = declared.get(key) or next(
            (
                where
                for (ns, workload), where in workloads.items()
                if ns == namespace and (name == workload or name.startswith(f"{workload}-"))
            ),
            None,
        )
        if owner is not None:
            yield ConfigIssue(
                (*path, "metadata", "name"),
                f"{_show(key)} is already declared by the platform ({owner}); two declarations "
                "of one object fight over it",
            )
        if (
            kind == "Secret"
            and (manifest.get("data") or manifest.get("stringData"))
            and config.cluster.environment == "prod"
        ):
            yield ConfigIssue(
                (*path, "stringData" if manifest.get("stringData") else "data"),
                "a Secret with literal data puts the secret in the stack file, in plain text; in "
                "prod create it out of band (or from your secret store) and refer to it by name",
            )
        if index in excepted:
            continue
        if (
            kind not in CLUSTER_SCOPED_KINDS
            and namespace is None
            and is_builtin(str(manifest.get("apiVersion", "")))
        ):
            yield ConfigIssue(
                (*path, "metadata", "namespace"),
                "is not set: the object would land in the default namespace; name a team namespace",
            )
        elif namespace is None:
            yield ConfigIssue(
                (*path, "kind"),
                f"{kind} is cluster-scoped: the escape hatch applies it only under a named "
                "exception (ai-platform:escapeHatch.exceptions) that the prod policy config "
                "approves",
            )
        elif namespace in reserved:
            yield ConfigIssue(
                (*path, "metadata", "namespace"),
                f"{namespace!r} belongs to {reserved[namespace]}: the escape hatch applies an "
                "object there only under a named exception (ai-platform:escapeHatch.exceptions) "
                "that the prod policy config approves",
            )
        elif not _admitted(config, key, teams):
            yield ConfigIssue(
                (*path, "kind"),
                f"{_show(key)} is not admitted by ai-platform:escapeHatch.allow (default: every "
                "namespaced kind in the team namespaces); add an allowance or a named exception",
            )


def extra_manifests_are_registrable(config: Fenced) -> Iterator[ConfigIssue]:
    yield from extra_manifest_issues(config.extra_manifests)


RULES = (extra_manifests_are_registrable, extra_manifests_stay_in_the_fence)
"""The escape hatch rules, in the order they report."""
