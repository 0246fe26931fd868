"""One place that finds the pod templates in every workload kind.

Every pod-level policy goes through :func:`pod_view` (or :func:`pod_views`, for kinds with
several templates), so a new workload kind (a CRD that embeds a pod template) is one line in
``POD_TEMPLATE_PATHS`` (components/constants.py, generated into ``shared.py``), or a function
in :data:`TEMPLATE_LISTS` when it embeds several (a Ray cluster's head and worker groups). The
view is built once per resource and shared by all policies: it is memoised by the identity of
the props object, which the SDK (with :mod:`.speedups`) hands unchanged to every policy of one
RPC.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from .kube import (
    EMPTY_MAP,
    TypeToken,
    as_map,
    as_seq,
    as_str,
    dig,
    labels_of,
    metadata,
    parse_type,
)
from .shared import POD_TEMPLATE_PATHS, WORKLOAD_TYPE_LABEL
from .speedups import rpc_cache

WORKLOAD_KINDS: Final = frozenset(POD_TEMPLATE_PATHS)
"""The kinds with one pod template (``<group>/<Kind>``), as policies name the kinds they read."""
RAY_CLUSTER: Final = "ray.io/RayCluster"
RAY_JOB: Final = "ray.io/RayJob"
RAY_KINDS: Final = frozenset({RAY_CLUSTER, RAY_JOB})


def _ray_templates(props: Mapping[str, Any], kind: str) -> Iterator[tuple[str, Any]]:
    """A RayCluster's (or a RayJob's embedded cluster's) head and worker group templates, and a
    RayJob's submitter pod template, each with how messages name it."""
    cluster = as_map(dig(props, "spec", "rayClusterSpec") if kind == RAY_JOB else props.get("spec"))
    yield "head group", dig(cluster, "headGroupSpec", "template")
    for index, group in enumerate(as_seq(cluster.get("workerGroupSpecs"))):
        group = as_map(group)
        name = as_str(group.get("groupName")) or f"#{index}"
        yield f'worker group "{name}"', group.get("template")
    if kind == RAY_JOB and isinstance(dig(props, "spec", "submitterPodTemplate"), Mapping):
        yield "submitter pod", dig(props, "spec", "submitterPodTemplate")


TEMPLATE_LISTS: Final = {RAY_CLUSTER: _ray_templates, RAY_JOB: _ray_templates}
"""``<group>/<Kind>`` → the pod templates of a kind that embeds several, each with its name."""

CONTAINER_SECTIONS: Final = ("initContainers", "containers", "ephemeralContainers")
"""Pod spec lists that hold containers, in the order the kubelet starts them."""

_SECTION_NOUN: Final = {
    "initContainers": "init container",
    "containers": "container",
    "ephemeralContainers": "ephemeral container",
}


class ContainerRef:
    """A container of a pod template, with the list it came from (for precise messages)."""

    __slots__ = ("name", "section", "sidecar", "spec")

    def __init__(self, name: str, section: str, spec: Mapping[str, Any]) -> None:
        self.name = name
        self.section = section
        self.spec = spec
        self.sidecar = section == "initContainers" and spec.get("restartPolicy") == "Always"
        """A native sidecar: an init container that keeps running next to the app containers."""

    @property
    def label(self) -> str:
        """``container "trainer"`` / ``init container "fetch"``: how messages name it."""
        return f'{_SECTION_NOUN[self.section]} "{self.name}"'

    @property
    def security_context(self) -> Mapping[str, Any]:
        return as_map(self.spec.get("securityContext"))

    @property
    def resources(self) -> Mapping[str, Any]:
        return as_map(self.spec.get("resources"))


class PodView:
    """The pod-relevant parts of a workload manifest, read once."""

    __slots__ = (
        "containers",
        "kind",
        "memo",
        "name",
        "namespace",
        "object_labels",
        "pod_annotations",
        "pod_labels",
        "props",
        "spec",
        "token",
        "volumes",
        "where",
    )

    def __init__(
        self,
        token: TypeToken,
        props: Mapping[str, Any],
        template: Mapping[str, Any],
        where: str = "",
    ):
        meta = metadata(props)
        self.where = where
        """Which of a kind's several pod templates this is (``worker group "gpu"``); "" for
        kinds with one."""
        pod_meta = as_map(template.get("metadata"))
        self.token = token
        self.kind = token.kind
        self.props = props
        self.name = as_str(meta.get("name")) or ""
        self.namespace: str | None = as_str(meta.get("namespace")) or None
        self.object_labels = labels_of(meta)
        self.pod_labels = labels_of(pod_meta) if template is not props else self.object_labels
        self.pod_annotations = as_map(pod_meta.get("annotations"))
        self.spec = as_map(template.get("spec"))
        self.containers = tuple(_containers(self.spec))
        self.volumes: dict[str, Mapping[str, Any]] = {}
        for volume in as_seq(self.spec.get("volumes")):
            volume = as_map(volume)
            volume_name = as_str(volume.get("name"))
            if volume_name is not None:
                self.volumes[volume_name] = volume
        self.memo: dict[str, Any] = {}
        """Per-resource results shared by policies (GPU counts, ...)."""

    @property
    def prefix(self) -> str:
        """What a message starts with to say which template it is about."""
        return f"{self.where}: " if self.where else ""

    @property
    def workload_type(self) -> str | None:
        """``WORKLOAD_TYPE_LABEL`` from the pod template, else from the object itself."""
        value = self.pod_labels.get(WORKLOAD_TYPE_LABEL)
        if value is None:
            value = self.object_labels.get(WORKLOAD_TYPE_LABEL)
        return as_str(value)

    @property
    def pod_security_context(self) -> Mapping[str, Any]:
        return as_map(self.spec.get("securityContext"))

    def app_containers(self) -> Iterator[ContainerRef]:
        """Containers of the ``containers`` list only (what serves traffic, what probes cover)."""
        return (c for c in self.containers if c.section == "containers")


def _containers(spec: Mapping[str, Any]) -> Iterator[ContainerRef]:
    for section in CONTAINER_SECTIONS:
        for index, item in enumerate(as_seq(spec.get(section))):
            item = as_map(item)
            name = as_str(item.get("name")) or f"#{index}"
            yield ContainerRef(name, section, item)


_last: tuple[object, str, PodView | None] = (None, "", None)


def pod_view(resource_type: str, props: Mapping[str, Any]) -> PodView | None:
    """The pod view of a workload resource, or ``None`` for every other resource.

    Memoised by the identity of the props object (cheap and exact; the cache keeps the object
    alive so its id cannot be reused): across all policies of one RPC when :mod:`.speedups` is
    active (stack policies revisit every resource), else for the most recent resource.
    """
    global _last
    cache = rpc_cache()
    if cache is not None:
        key = (_VIEW_TAG, id(props))
        hit = cache.get(key)
        if hit is not None and hit[0] is props:
            return hit[1]
        view = _build(resource_type, props)
        cache[key] = (props, view)
        return view
    last = _last
    if last[0] is props and last[1] == resource_type:
        return last[2]
    view = _build(resource_type, props)
    _last = (props, resource_type, view)
    return view


_VIEW_TAG: Final = "pod_view"


def _build(resource_type: str, props: Mapping[str, Any]) -> PodView | None:
    token = parse_type(resource_type)
    if token is None:
        return None
    path = POD_TEMPLATE_PATHS.get(token.group_kind)
    if path is None:
        return None
    template = dig(props, *path) if path else props
    if not isinstance(template, Mapping):
        template = EMPTY_MAP
    return PodView(token, props, template)


def pod_views(resource_type: str, props: Mapping[str, Any]) -> tuple[PodView, ...]:
    """Every pod template of a workload resource: the one of :func:`pod_view`, or each of a
    kind in :data:`TEMPLATE_LISTS`; none for other resources. Memoised like :func:`pod_view`."""
    single = pod_view(resource_type, props)
    if single is not None:
        return (single,)
    token = parse_type(resource_type)
    if token is None or token.group_kind not in TEMPLATE_LISTS:
        return ()
    cache = rpc_cache()
    key = (_VIEWS_TAG, id(props))
    if cache is not None:
        hit = cache.get(key)
        if hit is not None and hit[0] is props:
            return hit[1]
    views = tuple(
        PodView(token, props, template if isinstance(template, Mapping) else EMPTY_MAP, where)
        for where, template in TEMPLATE_LISTS[token.group_kind](props, token.group_kind)
    )
    if cache is not None:
        cache[key] = (props, views)
    return views


_VIEWS_TAG: Final = "pod_views"


def workload_replicas(view: PodView) -> int | None:
    """``spec.replicas`` of a replicated workload (default 1), ``None`` for pods/jobs/daemons."""
    if view.token.group_kind not in (
        "apps/Deployment",
        "apps/StatefulSet",
        "apps/ReplicaSet",
        "core/ReplicationController",
    ):
        return None
    replicas = dig(view.props, "spec", "replicas")
    if isinstance(replicas, bool):
        return 1
    if isinstance(replicas, int | float) and float(replicas).is_integer():
        return int(replicas)
    return 1


def pod_selector(view: PodView) -> Mapping[str, Any] | None:
    """The workload's own ``spec.selector`` (a LabelSelector), if it has one."""
    selector = dig(view.props, "spec", "selector")
    return selector if isinstance(selector, Mapping) else None


def iter_volume_mounts(container: ContainerRef) -> Iterator[tuple[str, str]]:
    """``(volume name, mount path)`` pairs of a container."""
    for mount in as_seq(container.spec.get("volumeMounts")):
        mount = as_map(mount)
        name = as_str(mount.get("name"))
        path = as_str(mount.get("mountPath"))
        if name is not None and path is not None:
            yield name, path


def strings(value: Any) -> Sequence[str]:
    """String items of a list-like value, as a tuple."""
    return tuple(item for item in as_seq(value) if isinstance(item, str))
