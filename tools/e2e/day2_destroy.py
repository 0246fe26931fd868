"""Day two, destroy: on a stack that protects its data, ``pulumi destroy`` loses none of it.

    python -m tools.e2e day2 --stack prod --section destroy

After ``pulumi up``, with the real engine and provider:

1. ``pulumi destroy`` (with its preview, as an operator runs it) refuses: it names exactly the
   protected claims of the offline report, and nothing in the cluster or the state changed.
2. ``pulumi state unprotect`` of every protected resource that is not a claim (read from
   ``pulumi stack export``): only the data stays protected.
3. ``pulumi destroy --exclude-protected`` removes the rest. What the state keeps is exactly the
   protected claims and what they depend on (the engine's rule); every claim, every volume and
   every namespace that held a claim has the uid it had before; volumes of ``Retain`` classes
   say ``Retain``; every other object the stack made is gone, or retained on purpose
   (``retainOnDelete``), and listed.
4. ``pulumi state delete --force`` of the claims, then ``pulumi destroy``: the state is empty,
   the data is still there, unmanaged.
5. A stack of its own adopts the claims (``pulumi import --protect``): same uids, nothing written
   to the cluster, and its ``pulumi destroy`` refuses in turn.

docs/operations.md ("Tearing a stack down without losing data") is the same procedure for an
operator; docs/e2e.md ("Day two: destroy") says what is checked and how.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .build import KUBERNETES_PROVIDER_VERSION, PROJECT_ROOT
from .report import fail
from .run import E2E

PVC_TYPE = "kubernetes:core/v1:PersistentVolumeClaim"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
STACK_TYPE = "pulumi:pulumi:Stack"
PROVIDER_PREFIX = "pulumi:providers:"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HELM_OWNER_SELECTOR = "owner=helm"
NOT_SERVED = ("doesn't have a resource type", "could not find the requested resource")
"""What kubectl says of a kind whose CRD is gone (the second while its discovery cache lags)."""
SETTLE_S = 180.0
"""How long claims may take to be provisioned after ``pulumi up`` (the provisioner polls)."""
GONE_S = 180.0
"""How long deleted objects may take to go (finalizers, garbage collection)."""
POLL_S = 2.0
DESTROY_TIMEOUT_S = 1800.0
ADOPT_PROJECT = "ai-platform-data"
ADOPT_STACK = "data"

_REFUSED = re.compile(r'resource "(urn:pulumi:[^"\s]+)" cannot be deleted')
_STILL_PROTECTED = re.compile(r"There are still (\d+) protected resources")


# --- the state: pulumi stack export ---


@dataclass(frozen=True)
class StateResource:
    """One resource of ``pulumi stack export``: what the destroy checks need of it."""

    urn: str
    type: str
    custom: bool
    protect: bool
    retain: bool
    parent: str
    provider: str
    """The provider's URN (the export's reference without its ``::<id>``)."""
    dependencies: tuple[str, ...]
    id: str
    outputs: Mapping[str, Any]

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    @property
    def object(self) -> KubeObject | None:
        """The cluster object it stands for (a Helm release as its release), or None."""
        if not self.custom or not self.type.startswith("kubernetes:"):
            return None
        if self.type == RELEASE_TYPE:
            namespace, _, name = self.id.rpartition("/")
            return KubeObject("helm.sh/v3", "Release", namespace, name, "")
        if self.type.endswith("Patch") or self.type.startswith("kubernetes:yaml/"):
            return None  # a patch of someone else's object, or a group of objects
        meta = self.outputs.get("metadata") or {}
        api_version, kind = self.outputs.get("apiVersion"), self.outputs.get("kind")
        if not api_version or not kind or not meta.get("name"):
            return None
        return KubeObject(
            api_version, kind, meta.get("namespace") or "", meta["name"], meta.get("uid") or ""
        )


def state_resources(export: Mapping[str, Any]) -> list[StateResource]:
    """The resources of a ``pulumi stack export`` document, in the state's order."""
    resources = []
    for raw in (export.get("deployment") or {}).get("resources") or []:
        dependencies = set(raw.get("dependencies") or [])
        for urns in (raw.get("propertyDependencies") or {}).values():
            dependencies.update(urns or [])
        for key in ("deletedWith", "replaceWith"):
            if raw.get(key):
                dependencies.update([raw[key]] if isinstance(raw[key], str) else raw[key])
        resources.append(
            StateResource(
                urn=raw["urn"],
                type=raw["type"],
                custom=bool(raw.get("custom")),
                protect=bool(raw.get("protect")),
                retain=bool(raw.get("retainOnDelete")),
                parent=raw.get("parent") or "",
                provider=(raw.get("provider") or "").rsplit("::", 1)[0],
                dependencies=tuple(sorted(dependencies)),
                id=raw.get("id") or "",
                outputs=raw.get("outputs") or {},
            )
        )
    return resources


def protected_claims(offline_report: Mapping[str, Any]) -> set[str]:
    """URNs of the claims the offline preview declares ``protect``ed: what destroy must name."""
    return {
        r["urn"]
        for r in offline_report["resources"]
        if r["type"] == PVC_TYPE and (r.get("options") or {}).get("protect")
    }


def unprotect_targets(resources: Iterable[StateResource]) -> list[str]:
    """Every protected resource that is not a claim: what stands between destroy and the rest."""
    return [r.urn for r in resources if r.protect and r.type != PVC_TYPE]


def kept_by_exclude_protected(resources: Iterable[StateResource]) -> set[str]:
    """What ``pulumi destroy --exclude-protected`` leaves in the state: each protected resource
    and everything it depends on, transitively (parent, provider, ``dependsOn``, property
    dependencies, ``deletedWith``), as the engine computes it (``getProtectedExcludes``)."""
    by_urn = {r.urn: r for r in resources}
    kept: set[str] = set()
    pending = [urn for urn, r in by_urn.items() if r.protect]
    while pending:
        urn = pending.pop()
        if urn in kept or urn not in by_urn:
            continue
        kept.add(urn)
        r = by_urn[urn]
        pending += [*r.dependencies, *(u for u in (r.parent, r.provider) if u)]
    return kept


def refused_urns(output: str) -> set[str]:
    """The URNs a refused destroy names (``resource "<urn>" cannot be deleted``)."""
    return set(_REFUSED.findall(output))


def still_protected(output: str) -> int | None:
    """The count ``destroy --exclude-protected`` prints of what it left, or None."""
    found = _STILL_PROTECTED.search(output)
    return int(found.group(1)) if found else None


# --- the cluster ---


@dataclass(frozen=True)
class KubeObject:
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    """Empty for a Helm release (it is its storage Secrets, which a revision replaces)."""

    @property
    def type_key(self) -> tuple[str, str]:
        return self.api_version, self.kind

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name

    def describe(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"


def kubectl_resource(api_version: str, kind: str) -> str:
    """The ``kubectl get`` name of a kind: ``Kind.version.group``, the bare kind for core."""
    group, _, version = api_version.rpartition("/")
    return f"{kind}.{version}.{group}" if group else kind


Live = Mapping[tuple[str, str], Mapping[tuple[str, str], str] | None]
"""``(apiVersion, kind)`` -> ``(namespace, name)`` -> uid, or None when the kind is not served
(its CRD went with its chart): then no such object exists."""


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str
    phase: str
    volume: str
    storage_class: str
    resource_version: str
    selected_node: str = ""
    """The scheduler's choice for a late-binding claim (``volume.kubernetes.io/selected-node``)."""


@dataclass(frozen=True)
class Volume:
    name: str
    uid: str
    phase: str
    reclaim: str
    storage_class: str
    claim: str
    """``namespace/name`` of the claim it is bound to (``claimRef``), or empty."""


@dataclass
class DataSnapshot:
    """Every object that holds data, whoever made it: claims (the stack's, StatefulSets',
    charts'), volumes, and the namespaces that hold claims; with the classes' reclaim policies."""

    claims: dict[tuple[str, str], Claim] = field(default_factory=dict)
    volumes: dict[str, Volume] = field(default_factory=dict)
    namespaces: dict[str, str] = field(default_factory=dict)
    reclaim: dict[str, str] = field(default_factory=dict)
    """Storage class -> reclaim policy."""

    @classmethod
    def from_lists(
        cls,
        claims: Mapping[str, Any],
        volumes: Mapping[str, Any],
        namespaces: Mapping[str, Any],
        classes: Mapping[str, Any],
    ) -> DataSnapshot:
        """From ``kubectl get pvc -A``, ``pv``, ``namespaces`` and ``storageclasses`` (JSON)."""
        snapshot = cls()
        for item in claims.get("items") or []:
            meta, spec = item["metadata"], item.get("spec") or {}
            claim = Claim(
                meta["namespace"],
                meta["name"],
                meta["uid"],
                (item.get("status") or {}).get("phase", ""),
                spec.get("volumeName") or "",
                spec.get("storageClassName") or "",
                meta.get("resourceVersion") or "",
                (meta.get("annotations") or {}).get(SELECTED_NODE, ""),
            )
            snapshot.claims[(claim.namespace, claim.name)] = claim
        for item in volumes.get("items") or []:
            meta, spec = item["metadata"], item.get("spec") or {}
            ref = spec.get("claimRef") or {}
            snapshot.volumes[meta["name"]] = Volume(
                meta["name"],
                meta["uid"],
                (item.get("status") or {}).get("phase", ""),
                spec.get("persistentVolumeReclaimPolicy") or "",
                spec.get("storageClassName") or "",
                f"{ref['namespace']}/{ref['name']}" if ref.get("name") else "",
            )
        for item in namespaces.get("items") or []:
            snapshot.namespaces[item["metadata"]["name"]] = item["metadata"]["uid"]
        for item in classes.get("items") or []:
            snapshot.reclaim[item["metadata"]["name"]] = item.get("reclaimPolicy") or "Delete"
        return snapshot

    @property
    def holding_namespaces(self) -> set[str]:
        return {namespace for namespace, _ in self.claims}

    def unsettled(self, provisioners: Mapping[str, str], late: set[str]) -> list[str]:
        """Claims a provisioner still owes a volume: Pending, of a class with a provisioner, and
        either bound immediately or with a node chosen (``late``: WaitForFirstConsumer classes)."""
        waiting = []
        for claim in self.claims.values():
            if claim.phase == "Bound" or claim.volume:
                continue
            if provisioners.get(claim.storage_class, NO_PROVISIONER) == NO_PROVISIONER:
                continue
            if claim.storage_class in late and not claim.selected_node:
                continue  # no pod mounts it yet: it stays Pending on a real cluster too
            waiting.append(f"{claim.namespace}/{claim.name} ({claim.phase or 'no phase'})")
        return waiting


def data_losses(before: DataSnapshot, after: DataSnapshot) -> list[str]:
    """Every data-holding object of ``before`` that is gone or was recreated (another uid), and
    every volume whose reclaim policy is not its class's (``Retain`` keeps it past its claim)."""
    losses = []
    for key, claim in sorted(before.claims.items()):
        now = after.claims.get(key)
        if now is None or now.uid != claim.uid:
            losses.append(f"PersistentVolumeClaim {key[0]}/{key[1]}: {_fate(now)}")
    for name, volume in sorted(before.volumes.items()):
        now_volume = after.volumes.get(name)
        if now_volume is None or now_volume.uid != volume.uid:
            losses.append(f"PersistentVolume {name}: {_fate(now_volume)}")
            continue
        wanted = before.reclaim.get(volume.storage_class)
        if wanted and now_volume.reclaim != wanted:
            losses.append(
                f"PersistentVolume {name}: reclaim policy {now_volume.reclaim}, its class "
                f"{volume.storage_class} says {wanted}"
            )
        if volume.phase == "Bound" and now_volume.phase != "Bound":
            losses.append(
                f"PersistentVolume {name}: {now_volume.phase}, was Bound to {volume.claim}"
            )
    for name in sorted(before.holding_namespaces):
        uid = before.namespaces.get(name)
        if after.namespaces.get(name) != uid:
            losses.append(f"Namespace {name} (holds claims): {_fate(after.namespaces.get(name))}")
    return losses


def _fate(now: object) -> str:
    return "deleted" if now is None else "recreated (another uid)"


# --- what the stack made, before and after ---


@dataclass(frozen=True)
class Teardown:
    problems: list[str]
    survivors: list[str]
    removed: list[str]


def teardown(
    before: Iterable[StateResource],
    *,
    in_state: set[str],
    released: set[str],
    live: Live,
    releases: set[tuple[str, str]],
    data: DataSnapshot | None = None,
) -> Teardown:
    """Check each cluster object the stack had made against why it should or should not still
    be there: still in the state (kept: protected, or what protected data depends on), released
    from the state (``pulumi state delete``) or ``retainOnDelete``: there with its uid; anything
    else: gone. ``releases``: ``(namespace, name)`` of the Helm releases in the cluster."""
    problems, survivors, removed = [], [], []
    for resource in before:
        obj = resource.object
        if obj is None:
            continue
        if obj.kind == "Release" and obj.api_version == "helm.sh/v3":
            present = obj.key in releases
        else:
            objects = live.get(obj.type_key)
            present = objects is not None and objects.get(obj.key) == obj.uid
        if resource.urn in in_state:
            why = "protected" if resource.protect else "kept in the stack: protected data needs it"
            why += ", retainOnDelete" if resource.retain else ""
        elif resource.urn in released:
            why = "released from the stack (pulumi state delete)"
        elif resource.retain:
            why = "retained (retainOnDelete)"
        else:
            why = ""
        if not why:
            if present:
                problems.append(f"{obj.describe()}: still there after destroy")
            else:
                removed.append(obj.describe())
            continue
        if not present:
            problems.append(f"{obj.describe()} ({why}): gone")
            continue
        survivors.append(f"{obj.describe()}: {why}{_data_note(obj, data)}")
    return Teardown(problems, sorted(survivors), sorted(removed))


def _data_note(obj: KubeObject, data: DataSnapshot | None) -> str:
    """What a surviving object holds: a claim's volume and its policy, a namespace's claims."""
    if data is None:
        return ""
    if obj.kind == "PersistentVolumeClaim":
        claim = data.claims.get(obj.key)
        volume = data.volumes.get(claim.volume) if claim and claim.volume else None
        if volume:
            return f"; {claim.phase if claim else ''} to {volume.name} ({volume.reclaim})"
        return f"; {claim.phase if claim else 'no claim'}, no volume yet"
    if obj.kind == "Namespace":
        held = sorted(name for namespace, name in data.claims if namespace == obj.name)
        return f"; holds {', '.join(held)}" if held else ""
    if obj.kind == "StorageClass":
        return f"; reclaimPolicy {data.reclaim.get(obj.name, '?')}"
    return ""


def unmanaged_data(data: DataSnapshot, stack_claims: set[tuple[str, str]]) -> list[str]:
    """Every claim (``stack_claims``: the stack's own; the others are StatefulSets' and charts')
    and every volume, with their state."""
    lines = []
    for key, claim in sorted(data.claims.items()):
        volume = data.volumes.get(claim.volume)
        held = f" to {volume.name} ({volume.reclaim})" if volume else ""
        whose = "the stack's" if key in stack_claims else "not the stack's"
        lines.append(f"PersistentVolumeClaim {key[0]}/{key[1]}: {whose}, {claim.phase}{held}")
    for name, volume in sorted(data.volumes.items()):
        lines.append(
            f"PersistentVolume {name}: {volume.phase} to {volume.claim or '-'}, "
            f"{volume.reclaim}, class {volume.storage_class}"
        )
    return lines


def import_file(claims: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """A ``pulumi import --file`` document adopting ``(namespace, name)`` claims, named
    ``<namespace>-<name>``, with the provider version the platform runs."""
    return {
        "resources": [
            {
                "type": PVC_TYPE,
                "name": f"{namespace}-{name}",
                "id": f"{namespace}/{name}",
                "version": KUBERNETES_PROVIDER_VERSION,
            }
            for namespace, name in sorted(claims)
        ]
    }


def wait_for(
    check: Callable[[], list[str]], *, timeout_s: float, poll_s: float = POLL_S
) -> list[str]:
    """Poll ``check`` until it finds nothing or ``timeout_s`` passed; its last findings."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(poll_s)


# --- the section ---


class DestroySection:
    """The steps, sharing what the first snapshot saw."""

    def __init__(self, e2e: E2E) -> None:
        self.e2e = e2e
        self.before: list[StateResource] = []
        self.data: DataSnapshot = DataSnapshot()
        self.claims: set[str] = set()

    # helpers

    @property
    def cluster(self) -> Any:
        assert self.e2e.cluster is not None
        return self.e2e.cluster

    def export(self, cwd: Any = None) -> list[StateResource]:
        return state_resources(self.e2e.pulumi("stack", "export", cwd=cwd).json())

    def snapshot_data(self) -> DataSnapshot:
        get = self.cluster.get_json
        return DataSnapshot.from_lists(
            get("persistentvolumeclaims", "--all-namespaces"),
            get("persistentvolumes"),
            get("namespaces"),
            get("storageclasses"),
        )

    def live(self, resources: Iterable[StateResource]) -> tuple[Live, set[tuple[str, str]]]:
        """The uids of every object of those kinds in the cluster, and the Helm releases."""
        live: dict[tuple[str, str], dict[tuple[str, str], str] | None] = {}
        for resource in resources:
            obj = resource.object
            if obj is None or obj.kind == "Release" or obj.type_key in live:
                continue
            done = self.cluster.kubectl(
                "get",
                kubectl_resource(*obj.type_key),
                "--all-namespaces",
                "-o",
                "json",
                check=False,
            )
            if done.returncode != 0:
                if any(reason in done.stderr for reason in NOT_SERVED):
                    live[obj.type_key] = None
                    continue
                fail(f"kubectl get {kubectl_resource(*obj.type_key)}: {done.stderr.strip()}")
            live[obj.type_key] = {
                (i["metadata"].get("namespace") or "", i["metadata"]["name"]): i["metadata"]["uid"]
                for i in json.loads(done.stdout).get("items") or []
            }
        secrets = self.cluster.get_json("secrets", "--all-namespaces", "-l", HELM_OWNER_SELECTOR)
        releases = {
            (s["metadata"]["namespace"], (s["metadata"].get("labels") or {}).get("name", ""))
            for s in secrets.get("items") or []
        }
        return live, releases

    def check_teardown(self, in_state: set[str], released: set[str]) -> Teardown:
        """Poll until every object that should be gone is, and the data is intact; the last
        verdict (problems, if any, are the caller's to fail on)."""
        result = Teardown([], [], [])

        def problems() -> list[str]:
            nonlocal result
            live, releases = self.live(self.before)
            now = self.snapshot_data()
            result = teardown(
                self.before,
                in_state=in_state,
                released=released,
                live=live,
                releases=releases,
                data=now,
            )
            return result.problems + data_losses(self.data, now)

        found = wait_for(problems, timeout_s=GONE_S)
        return Teardown(found, result.survivors, result.removed)

    # steps

    def protects_data(self, detail: list[str]) -> None:
        self.claims = protected_claims(self.e2e.offline_report)
        if not self.claims:
            fail(
                f"stack {self.e2e.stack} protects no claim (cluster.protectData): the destroy "
                "section needs a prod-shaped stack (--stack prod)"
            )
        detail.append(f"{len(self.claims)} protected claims in the offline report")

    def snapshot(self, detail: list[str]) -> None:
        """Claims provisioned (a volume for each one a volume is owed), then the state and the
        data as they are before any destroy."""
        classes = self.cluster.get_json("storageclasses").get("items") or []
        provisioners = {c["metadata"]["name"]: c.get("provisioner", "") for c in classes}
        late = {
            c["metadata"]["name"]
            for c in classes
            if c.get("volumeBindingMode") == "WaitForFirstConsumer"
        }
        waiting = wait_for(
            lambda: self.snapshot_data().unsettled(provisioners, late), timeout_s=SETTLE_S
        )
        if waiting:
            fail(f"claims still waiting for a volume after {SETTLE_S:.0f} s: {', '.join(waiting)}")
        self.before = self.export()
        self.data = self.snapshot_data()
        objects = [r for r in self.before if r.object is not None]
        detail.append(
            f"{len(self.before)} resources in the state, {len(objects)} of them cluster objects"
        )
        detail.append(
            f"data: {len(self.data.claims)} claims, {len(self.data.volumes)} volumes, "
            f"{len(self.data.holding_namespaces)} namespaces holding claims"
        )
        detail += [f"  {line}" for line in unmanaged_data(self.data, self.stack_claims)]

    def refused(self, detail: list[str]) -> None:
        done = self.e2e.pulumi("destroy", "--yes", check=False, timeout=DESTROY_TIMEOUT_S)
        output = done.stdout + done.stderr
        if done.code == 0:
            fail("pulumi destroy succeeded on a stack with protected claims")
        named = refused_urns(output)
        if named != self.claims:
            fail(
                "pulumi destroy named other resources than the protected claims:\n"
                f"  named, not protected claims: {sorted(named - self.claims)}\n"
                f"  protected claims not named: {sorted(self.claims - named)}\n"
                f"{output[-3000:]}"
            )
        self.e2e.report.facts.setdefault("destroy", {})["refusedOn"] = sorted(named)
        detail.append(f"refused (exit {done.code}), naming the {len(named)} protected claims:")
        detail += [f"  {urn.rsplit('::', 1)[-1]}" for urn in sorted(named)]
        after = self.export()
        if [r.urn for r in after] != [r.urn for r in self.before]:
            fail("the refused destroy changed the state")
        everything = {r.urn for r in self.before}
        check = self.check_teardown(in_state=everything, released=set())
        if check.problems:
            fail("the refused destroy changed the cluster:\n" + "\n".join(check.problems))
        detail.append(
            f"nothing changed: the state's {len(after)} resources, every object's uid, the data"
        )

    def unprotect(self, detail: list[str]) -> None:
        targets = unprotect_targets(self.export())
        if targets:
            self.e2e.pulumi("state", "unprotect", "--yes", *targets)
            detail += [f"unprotected {urn}" for urn in targets]
        else:
            detail.append("nothing is protected but the claims: nothing to unprotect")
        left = {r.urn for r in self.export() if r.protect}
        if left != self.claims:
            fail(f"protected after unprotect: {sorted(left)}; expected the claims only")
        detail.append(f"protected now: the {len(left)} claims")

    def destroy_rest(self, detail: list[str]) -> None:
        predicted = kept_by_exclude_protected(self.export())
        done = self.e2e.pulumi("destroy", "--yes", "--exclude-protected", timeout=DESTROY_TIMEOUT_S)
        kept = {r.urn for r in self.export()}
        if kept != predicted:
            fail(
                "the state after destroy --exclude-protected is not the protected claims and "
                f"what they depend on:\n  kept, not predicted: {sorted(kept - predicted)}\n"
                f"  predicted, deleted: {sorted(predicted - kept)}"
            )
        self.e2e.report.facts.setdefault("destroy", {})["keptInState"] = sorted(kept)
        count = still_protected(done.stdout)
        detail.append(
            f"destroyed; the state keeps {len(kept)} resources (the CLI: {count} protected)"
        )
        result = self.check_teardown(in_state=kept, released=set())
        self.record("afterDestroy", result)
        detail.append(f"removed from the cluster: {len(result.removed)} objects")
        detail.append("survives:")
        detail += [f"  {line}" for line in result.survivors]
        detail += [
            f"  {line}"
            for line in unmanaged_data(self.snapshot_data(), self.stack_claims)
            if ": the stack's," not in line  # those are among the survivors above
        ]
        if result.problems:
            fail("\n".join(result.problems))

    def release(self, detail: list[str]) -> None:
        claims = [r.urn for r in self.export() if r.type == PVC_TYPE]
        self.e2e.pulumi("state", "delete", "--force", "--yes", *claims)
        detail.append(f"pulumi state delete --force: {len(claims)} claims")
        self.e2e.pulumi("destroy", "--yes", timeout=DESTROY_TIMEOUT_S)
        left = self.export()
        if left:
            fail(f"the state still holds {[r.urn for r in left]}")
        detail.append("pulumi destroy: the state is empty")
        result = self.check_teardown(in_state=set(), released=set(claims))
        self.record("afterRelease", result)
        detail.append("survives, unmanaged:")
        detail += [f"  {line}" for line in result.survivors]
        detail += [
            f"  {line}"
            for line in unmanaged_data(self.snapshot_data(), self.stack_claims)
            if ": the stack's," not in line
        ]
        if result.problems:
            fail("\n".join(result.problems))

    def adopt(self, detail: list[str]) -> None:
        project = self.e2e.work_dir / "adopt"
        project.mkdir(parents=True, exist_ok=True)
        (project / "Pulumi.yaml").write_text(
            f"name: {ADOPT_PROJECT}\n"
            "description: Adopts the claims a torn-down platform stack left behind.\n"
            "runtime:\n  name: python\n  options:\n"
            f"    virtualenv: {PROJECT_ROOT / '.venv'}\n",
            encoding="utf-8",
        )
        (project / "__main__.py").write_text('"""Imported resources only."""\n', encoding="utf-8")
        pulumi = self.e2e.pulumi
        pulumi("stack", "init", ADOPT_STACK, "--secrets-provider", "passphrase", cwd=project)
        pulumi("config", "set", "kubernetes:kubeconfig", str(self.cluster.kubeconfig), cwd=project)
        pulumi("config", "set", "kubernetes:context", self.cluster.context, cwd=project)
        wanted = self.stack_claims
        (project / "import.json").write_text(json.dumps(import_file(wanted), indent=2))
        before = self.snapshot_data()
        pulumi(
            "import",
            "--file",
            "import.json",
            "--protect",
            "--generate-code=false",
            "--yes",
            cwd=project,
            timeout=600,
        )
        adopted = {r.urn: r for r in self.export(cwd=project) if r.type == PVC_TYPE}
        problems = []
        for resource in adopted.values():
            obj = resource.object
            assert obj is not None
            claim = before.claims.get(obj.key)
            if not resource.protect:
                problems.append(f"{obj.describe()}: imported without protect")
            if claim is None or obj.uid != claim.uid:
                problems.append(f"{obj.describe()}: imported another object than the retained one")
        if {r.object.key for r in adopted.values() if r.object} != wanted:
            problems.append(f"imported {sorted(adopted)}, wanted {sorted(wanted)}")
        now = self.snapshot_data()
        for key in sorted(wanted):
            if (
                key in now.claims
                and now.claims[key].resource_version != before.claims[key].resource_version
            ):
                problems.append(f"PersistentVolumeClaim {key[0]}/{key[1]}: changed by the import")
        if problems:
            fail("\n".join(problems))
        detail.append(f"pulumi import --protect: {len(adopted)} claims, same uids, unchanged")
        done = pulumi("destroy", "--yes", cwd=project, check=False, timeout=600)
        named = refused_urns(done.stdout + done.stderr)
        if done.code == 0 or named != set(adopted):
            fail(
                f"the adopting stack's destroy did not refuse on its claims:\n{done.stdout[-3000:]}"
            )
        detail.append(f"its pulumi destroy refuses, naming the {len(named)} claims")
        losses = data_losses(self.data, self.snapshot_data())
        if losses:
            fail("\n".join(losses))

    @property
    def stack_claims(self) -> set[tuple[str, str]]:
        """``(namespace, name)`` of the claims the stack declared."""
        return {r.object.key for r in self.before if r.type == PVC_TYPE and r.object is not None}

    def record(self, key: str, result: Teardown) -> None:
        facts = self.e2e.report.facts.setdefault("destroy", {})
        facts[key] = {
            "survivors": result.survivors,
            "removed": result.removed,
            "problems": result.problems,
        }


def run_section(e2e: E2E) -> None:
    """The destroy section's steps, in order; each needs the one before it."""
    section = DestroySection(e2e)
    steps: list[tuple[str, Callable[[list[str]], None]]] = [
        ("the stack protects its data", section.protects_data),
        ("pulumi up", e2e.up),
        ("claims provisioned; the state and the data before destroy", section.snapshot),
        ("pulumi destroy refuses while claims are protected, naming them", section.refused),
        ("pulumi state unprotect of everything but the data", section.unprotect),
        (
            "pulumi destroy --exclude-protected removes the rest; the data survives",
            section.destroy_rest,
        ),
        ("the data leaves the stack: pulumi state delete, then destroy", section.release),
        ("a stack of its own adopts the claims: pulumi import", section.adopt),
    ]
    for name, action in steps:
        if not e2e.step(name, action):
            return
