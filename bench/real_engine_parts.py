"""The pure parts of ``bench.real_engine``: no cluster, no CLI, unit-tested offline.

- which process of a CLI's session is which (engine, provider, language host, program, policy
  pack), from ``/proc/<pid>/stat`` and its command line;
- the floor's manifests: the Helm releases' objects as Helm stored them (a release Secret is
  base64, gzip and JSON), CRDs read back from a cluster made fit to apply again, and the order a
  plain ``kubectl apply`` needs (definitions and namespaces, then the charts, then the rest);
- the engine's event log: how long each kind of resource took from its step's start to its
  outputs (where an update's time goes), custom resources only;
- the ratios the benchmark reports, and its table.
"""

from __future__ import annotations

import base64
import gzip
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from infra.config.load import ENVIRONMENT_STRING_LIMIT, engine_config_bytes

CLOCK_TICKS: Final = 100
"""``sysconf(SC_CLK_TCK)`` on Linux: the unit of utime/stime in ``/proc/<pid>/stat``."""

ROLES: Final = (
    "engine",
    "kubernetes provider",
    "random provider",
    "language host",
    "program",
    "policy pack",
    "other",
)
"""The processes of a Pulumi CLI session, as the benchmark splits its CPU time."""


@dataclass(frozen=True)
class ProcStat:
    """What ``/proc/<pid>/stat`` says about one process."""

    pid: int
    comm: str
    state: str
    session: int
    cpu_ticks: int
    """utime + stime of the process itself (its reaped children are in cutime/cstime)."""
    children_ticks: int


def parse_proc_stat(pid: int, text: str) -> ProcStat:
    """One ``/proc/<pid>/stat`` line; the command sits in parentheses and may hold spaces."""
    close = text.rindex(")")
    comm = text[text.index("(") + 1 : close]
    fields = text[close + 2 :].split()
    # fields[0] is field 3 (state); utime, stime, cutime, cstime are fields 14-17.
    return ProcStat(
        pid=pid,
        comm=comm,
        state=fields[0],
        session=int(fields[3]),
        cpu_ticks=int(fields[11]) + int(fields[12]),
        children_ticks=int(fields[13]) + int(fields[14]),
    )


def role_of(command: Sequence[str]) -> str:
    """Which part of a CLI session the process with ``command`` (its argv) is."""
    if not command:
        return "other"
    program = command[0].rsplit("/", 1)[-1]
    text = " ".join(command)
    if program == "pulumi":
        return "engine"
    if program == "pulumi-resource-kubernetes":
        return "kubernetes provider"
    if program == "pulumi-resource-random":
        return "random provider"
    if "pulumi.policy" in text or "policy_proxy" in text:
        return "policy pack"
    if "tools.e2e.langhost" in text or "pulumi-language-python" in text:
        return "language host"
    if "executor.py" in text:
        return "program"
    return "other"


@dataclass
class SessionCpu:
    """Peak CPU seen per process of a session, summed per role (sampled while it ran)."""

    by_pid: dict[int, tuple[str, int]] = field(default_factory=dict)

    def observe(self, pid: int, role: str, cpu_ticks: int) -> None:
        known, previous = self.by_pid.get(pid, (role, 0))
        # A process that is exiting shows an empty command line: it keeps the role it had.
        self.by_pid[pid] = (known if role == "other" else role, max(previous, cpu_ticks))

    def by_role(self) -> dict[str, float]:
        totals: dict[str, float] = defaultdict(float)
        for role, ticks in self.by_pid.values():
            totals[role] += ticks / CLOCK_TICKS
        return {role: round(totals[role], 2) for role in ROLES if role in totals}


# --- the floor's manifests ---------------------------------------------------------------------

HELM_RELEASE_SECRET_TYPE: Final = "helm.sh/release.v1"
_HELM_GZIP_MAGIC: Final = b"\x1f\x8b\x08"
_KEPT_METADATA: Final = ("name", "namespace", "labels", "annotations")


def decode_helm_release(data: str) -> dict[str, Any]:
    """A release Secret's ``data.release`` as the API server returns it: base64 of Helm's own
    base64 of (usually) gzipped JSON."""
    raw = base64.b64decode(base64.b64decode(data))
    if raw[:3] == _HELM_GZIP_MAGIC:
        raw = gzip.decompress(raw)
    release: dict[str, Any] = json.loads(raw)
    return release


@dataclass(frozen=True)
class ChartObjects:
    """What one Helm release installed, as ``kubectl apply -n <namespace>`` takes it."""

    release: str
    namespace: str
    documents: list[dict[str, Any]]


_INSTALL_HOOKS: Final = frozenset({"pre-install", "post-install"})


def release_objects(release: Mapping[str, Any]) -> ChartObjects:
    """The objects of a deployed release: its manifest and its install hooks (Helm runs them on
    install; test hooks it never runs)."""
    texts = [release.get("manifest") or ""]
    for hook in release.get("hooks") or []:
        if _INSTALL_HOOKS & set(hook.get("events") or []):
            texts.append(hook.get("manifest") or "")
    documents = [
        doc for text in texts for doc in yaml.safe_load_all(text) if isinstance(doc, dict) and doc
    ]
    return ChartObjects(str(release["name"]), str(release.get("namespace") or ""), documents)


def latest_releases(secrets: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The newest revision of each release among the Secrets of a ``kubectl get secrets -A``."""
    newest: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
    for secret in secrets:
        if secret.get("type") != HELM_RELEASE_SECRET_TYPE:
            continue
        release = decode_helm_release(secret["data"]["release"])
        key = (str(release.get("namespace")), str(release["name"]))
        version = int(release.get("version") or 0)
        if key not in newest or newest[key][0] < version:
            newest[key] = (version, release)
    return [release for _, (_, release) in sorted(newest.items())]


def reapplicable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """An object read back from a cluster, as one would apply it to a fresh one: no status,
    no server-set metadata (uid, resourceVersion, managedFields, timestamps)."""
    metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k in _KEPT_METADATA}
    annotations = {
        k: v
        for k, v in (metadata.get("annotations") or {}).items()
        if k != "kubectl.kubernetes.io/last-applied-configuration"
    }
    if annotations:
        metadata["annotations"] = annotations
    else:
        metadata.pop("annotations", None)
    return {
        **{k: v for k, v in obj.items() if k not in ("metadata", "status")},
        "metadata": metadata,
    }


def unmasked(doc: dict[str, Any]) -> dict[str, Any]:
    """A rendered manifest whose secret fields the offline preview masked (``[secret]`` in
    place of a Secret's whole ``data``/``stringData``), with a stand-in of the right shape."""
    if doc.get("kind") != "Secret":
        return doc
    fixed = dict(doc)
    for key in ("data", "stringData"):
        if key in fixed and not isinstance(fixed[key], dict):
            fixed[key] = {"masked": "YmVuY2g=" if key == "data" else "bench"}
    return fixed


FIRST_KINDS: Final = frozenset({"CustomResourceDefinition", "Namespace"})
"""What a plain ``kubectl apply`` needs in place before anything else: the definitions of the
custom resources and the namespaces objects live in."""


def split_first(
    documents: Iterable[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(definitions and namespaces, the rest)``, each in its given order."""
    first: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for doc in documents:
        (first if doc.get("kind") in FIRST_KINDS else rest).append(doc)
    return first, rest


def cluster_scoped_kinds(api_resources: str) -> set[str]:
    """Kinds of ``kubectl api-resources --namespaced=false --no-headers`` (the last column)."""
    return {line.split()[-1] for line in api_resources.splitlines() if line.strip()}


def in_namespace(
    documents: Iterable[dict[str, Any]], namespace: str, cluster_kinds: set[str]
) -> list[dict[str, Any]]:
    """A release's objects with its namespace where they name none, as Helm installs them (a
    plain ``kubectl apply -n`` refuses a file whose objects name different namespaces)."""
    placed = []
    for doc in documents:
        metadata = doc.get("metadata") or {}
        if doc.get("kind") not in cluster_kinds and not metadata.get("namespace") and namespace:
            doc = {**doc, "metadata": {**metadata, "namespace": namespace}}
        placed.append(doc)
    return placed


def namespace_documents(names: Iterable[str]) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        for name in sorted(set(names))
        if name
    ]


# --- the engine's event log --------------------------------------------------------------------


@dataclass
class KindTime:
    count: int = 0
    seconds: float = 0.0
    longest: float = 0.0


_COMPONENTS: Final = ("aiplatform:", "pulumi:pulumi:")
"""Types whose steps last as long as their children: left out of the time per kind."""


def step_times(lines: Iterable[str]) -> dict[str, KindTime]:
    """Per resource type, how many steps the engine ran and the seconds from each step's start
    (``resourcePreEvent``) to its outputs (``resOutputsEvent``), from ``pulumi up --event-log``.
    The log's timestamps are whole seconds: good for where minutes go, not for milliseconds."""
    started: dict[str, tuple[str, int]] = {}
    kinds: dict[str, KindTime] = defaultdict(KindTime)
    for line in lines:
        line = line.strip()
        if not line:
            continue
        event = json.loads(line)
        stamp = int(event.get("timestamp") or 0)
        if "resourcePreEvent" in event:
            meta = event["resourcePreEvent"].get("metadata") or {}
            kind = str(meta.get("type"))
            if meta.get("op") not in (None, "same", "read") and not kind.startswith(_COMPONENTS):
                started[meta["urn"]] = (kind, stamp)
        elif "resOutputsEvent" in event:
            meta = event["resOutputsEvent"].get("metadata") or {}
            begun = started.pop(str(meta.get("urn")), None)
            if begun is not None:
                entry = kinds[begun[0]]
                seconds = max(0, stamp - begun[1])
                entry.count += 1
                entry.seconds += seconds
                entry.longest = max(entry.longest, seconds)
    return dict(kinds)


def slowest_kinds(kinds: Mapping[str, KindTime], top: int = 8) -> list[dict[str, Any]]:
    ranked = sorted(kinds.items(), key=lambda item: (-item[1].seconds, item[0]))[:top]
    return [
        {"type": name, "steps": k.count, "stepSeconds": k.seconds, "longestSeconds": k.longest}
        for name, k in ranked
    ]


# --- ratios and the table ----------------------------------------------------------------------


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or ``None`` when either is missing or the floor is zero."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return round(numerator / denominator, 2)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def stack_ratios(entry: Mapping[str, Any]) -> dict[str, float | None]:
    """The ratios of one stack's figures: ``pulumi up`` over the kubectl floor (wall, the
    machine's CPU: client and cluster, and the client's alone) and the real preview over the
    offline one (wall and CPU). Only the CPU ratios compare runs made under different loads."""

    def get(step: str, key: str) -> float | None:
        value = (entry.get(step) or {}).get(key)
        return float(value) if value is not None else None

    def machine(step: str) -> float | None:
        client, cluster = get(step, "cpuSeconds"), get(step, "clusterCpuSeconds")
        return None if client is None or cluster is None else client + cluster

    return {
        "upOverFloorWall": ratio(get("up", "wallSeconds"), get("floor", "wallSeconds")),
        "upOverFloorMachineCpu": ratio(machine("up"), machine("floor")),
        "upOverFloorCpu": ratio(get("up", "cpuSeconds"), get("floor", "cpuSeconds")),
        "previewOverOfflineWall": ratio(
            get("preview", "wallSeconds"), get("offlinePreview", "wallSeconds")
        ),
        "previewOverOfflineCpu": ratio(
            get("preview", "cpuSeconds"), get("offlinePreview", "cpuSeconds")
        ),
    }


def _cell(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1f}{unit}" if unit == " s" else f"{value:.2f}{unit}"
    return f"{value}{unit}"


def table(results: Mapping[str, Any]) -> str:
    """The results as a Markdown table, one row per stack."""
    header = (
        "| stack | objects | offline preview | real preview | pulumi up | kubectl floor "
        "| up / floor (wall) | real / offline preview (wall) |\n"
        "|:---|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, entry in results.get("stacks", {}).items():
        ratios = entry.get("ratios") or stack_ratios(entry)

        def both(step: str, entry: Mapping[str, Any] = entry) -> str:
            figures = entry.get(step) or {}
            if not figures:
                return "-"
            return (
                f"{_cell(figures.get('wallSeconds'), ' s')} "
                f"({_cell(figures.get('cpuSeconds'), ' s')} CPU)"
            )

        rows.append(
            f"| {name} | {_cell(entry.get('objects'))} | {both('offlinePreview')} "
            f"| {both('preview')} | {both('up')} | {both('floor')} "
            f"| {_cell(ratios.get('upOverFloorWall'))} "
            f"| {_cell(ratios.get('previewOverOfflineWall'))} |"
        )
    return header + "\n".join(rows)


def details(results: Mapping[str, Any]) -> str:
    """Per stack: where ``pulumi up``'s CPU went (per process, and the cluster's), and the
    resource kinds whose steps took longest."""
    lines = []
    for name, entry in results.get("stacks", {}).items():
        up = entry.get("up") or {}
        if not up:
            continue
        processes = ", ".join(f"{role} {cpu:.1f}" for role, cpu in up["cpuByProcess"].items())
        lines.append(
            f"- **{name}**: `pulumi up` CPU-s per process: {processes}; the cluster's "
            f"{up['clusterCpuSeconds']:.1f} CPU-s (floor: "
            f"{_cell((entry.get('floor') or {}).get('clusterCpuSeconds'), ' s')})"
        )
        slow = entry.get("upSlowestKinds") or []
        if slow:
            kinds = "; ".join(
                f"{k['type'].split(':', 1)[-1]} {k['steps']} steps {k['stepSeconds']:.0f} s "
                f"(longest {k['longestSeconds']:.0f} s)"
                for k in slow[:5]
            )
            lines.append(f"  slowest kinds (step seconds, summed): {kinds}")
    return "\n".join(lines)


def config_too_large(config: Mapping[str, Any]) -> str | None:
    """Why the real CLI cannot run a stack with this config, or None when it can."""
    size = engine_config_bytes(config)
    if size <= ENVIRONMENT_STRING_LIMIT:
        return None
    return (
        f"its config is {size:,} bytes as PULUMI_CONFIG, and Linux limits one environment "
        f"string to {ENVIRONMENT_STRING_LIMIT:,} (MAX_ARG_STRLEN): neither the program nor the "
        "policy pack can be started by the real CLI"
    )
