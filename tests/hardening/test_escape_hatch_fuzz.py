"""The escape hatch's fence under generated input: kinds, namespaces, names, allowances and
exceptions drawn at random over the real dev config, judged against a model of the fence.

The model is the rule as docs/security.md states it, written apart from the code: an object is
refused when it collides with a platform object or a workload's names, and otherwise when no
exception names it and it is cluster-scoped, or has no namespace, or sits in a system or
platform namespace, or no allowance admits its kind there. The config must be refused at
exactly the objects the model refuses (and nowhere else when every exception is sound), and a
valid config must register every object, with its exception's annotation exactly when one
admits it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from infra.config import ConfigError, validate_platform_config
from infra.manifests.rules import exception_positions
from tests.hardening.mutations import BASES

TEAMS = ("research", "search-serving", "platform")
PLATFORM = ("gpu-operator", "kueue-system", "monitoring", "logging")
SYSTEM = ("kube-system", "default", "kube-public")


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    cluster_scoped: bool

    @property
    def group_kind(self) -> str:
        group = self.api_version.rpartition("/")[0]
        return f"{group}/{self.kind}" if group else self.kind


KINDS = (
    Kind("v1", "ConfigMap", False),
    Kind("v1", "Service", False),
    Kind("apps/v1", "Deployment", False),
    Kind("rbac.authorization.k8s.io/v1", "RoleBinding", False),
    Kind("networking.k8s.io/v1", "NetworkPolicy", False),
    Kind("rbac.authorization.k8s.io/v1", "ClusterRole", True),
    Kind("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", True),
    Kind("storage.k8s.io/v1", "StorageClass", True),
    Kind("kueue.x-k8s.io/v1beta2", "ResourceFlavor", True),
    Kind("example.com/v1", "Widget", False),
)
PLATFORM_NAMES = {
    ("ConfigMap", "team-env"),
    ("networking.k8s.io/NetworkPolicy", "default-deny-all"),
    ("rbac.authorization.k8s.io/RoleBinding", "team-admin"),
    ("kueue.x-k8s.io/ResourceFlavor", "lab-a100"),
    ("storage.k8s.io/StorageClass", "datasets-nfs"),
}
"""Objects the dev stack's platform declares (by kind and name) among the generated ones."""
WORKLOADS = {"research": ("llama-finetune", "llama-eval"), "search-serving": ("llm-chat",)}


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(KINDS))
    name = draw(
        st.sampled_from(
            [
                "vendor",
                "team-env",
                "default-deny-all",
                "team-admin",
                "lab-a100",
                "datasets-nfs",
                "llama-eval",
                "llm-chat-cache",
                "gadget",
            ]
        )
    )
    namespace = draw(st.sampled_from([*TEAMS, *PLATFORM, *SYSTEM, None]))
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    manifest: dict[str, Any] = {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}
    if kind.kind == "Widget":
        manifest["spec"] = {}
    return manifest


@st.composite
def fenced_configs(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    config = copy.deepcopy(BASES["dev"])
    objects = draw(st.lists(manifests(), max_size=6))
    unique: dict[tuple[str, str | None, str], dict[str, Any]] = {}
    for manifest in objects:  # one object each (duplicates: tests/config/test_escape_hatch.py)
        kind = KIND_OF[manifest["kind"]]
        key = (kind.kind, _scope(manifest, kind), manifest["metadata"]["name"])
        unique.setdefault(key, manifest)
    objects = list(unique.values())
    config["extraManifests"] = objects
    hatch: dict[str, Any] = {}
    if draw(st.booleans()):
        hatch["allow"] = [
            {
                "kinds": draw(
                    st.lists(
                        st.sampled_from(["*", "ConfigMap", "Service", "apps/Deployment"]),
                        min_size=1,
                        max_size=2,
                        unique=True,
                    )
                ),
                "namespaces": draw(
                    st.lists(st.sampled_from(TEAMS), min_size=1, max_size=2, unique=True)
                ),
            }
        ]
    excepted = draw(st.lists(st.sampled_from(range(len(objects))), unique=True)) if objects else []
    if excepted:
        hatch["exceptions"] = [
            {
                "name": f"exception-{position}",
                "reason": "generated",
                "objects": [_ref(objects[position], KIND_OF[objects[position]["kind"]])],
            }
            for position in excepted
        ]
    config["escapeHatch"] = hatch
    return config, objects


KIND_OF = {kind.kind: kind for kind in KINDS}


def _ref(manifest: dict[str, Any], kind: Kind) -> dict[str, Any]:
    ref = {"kind": kind.group_kind, "name": manifest["metadata"]["name"]}
    namespace = manifest["metadata"].get("namespace")
    if namespace is not None and not kind.cluster_scoped:
        ref["namespace"] = namespace
    return ref


def _scope(manifest: dict[str, Any], kind: Kind) -> str | None:
    """The namespace the object lives in; None when cluster-scoped."""
    namespace = manifest["metadata"].get("namespace")
    if kind.cluster_scoped or (kind.kind == "Widget" and namespace is None):
        return None
    return namespace


def model(config: dict[str, Any]) -> tuple[set[int], set[int]]:
    """``(objects refused, exceptions that are not sound)`` by position."""
    allow = config["escapeHatch"].get("allow") or [{"kinds": ["*"], "namespaces": list(TEAMS)}]
    excepted = {
        (ref["kind"], ref.get("namespace"), ref["name"]): index
        for index, exception in enumerate(config["escapeHatch"].get("exceptions") or [])
        for ref in exception["objects"]
    }
    refused, unsound = set(), set()
    for index, manifest in enumerate(config["extraManifests"]):
        kind = KIND_OF[manifest["kind"]]
        namespace, name = _scope(manifest, kind), manifest["metadata"]["name"]
        # Cluster-scoped objects collide by name, namespaced ones in the team namespaces (one
        # written without a namespace lands in "default", where the platform declares nothing).
        collides = (kind.group_kind, name) in PLATFORM_NAMES and (
            namespace in TEAMS or (namespace is None and kind.cluster_scoped)
        )
        collides = collides or any(
            name == w or name.startswith(f"{w}-") for w in WORKLOADS.get(namespace or "", ())
        )
        key = (kind.group_kind, namespace, name)
        admitted = namespace in TEAMS and any(
            namespace in (a.get("namespaces") or TEAMS)
            and any(p in ("*", kind.kind, kind.group_kind) for p in a["kinds"])
            for a in allow
        )
        if key in excepted and admitted:
            unsound.add(excepted[key])
        if collides or (key not in excepted and not admitted):
            refused.add(index)
    return refused, unsound


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=fenced_configs())
def test_the_fence_refuses_exactly_what_the_model_refuses(
    case: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    config, objects = case
    note(f"{objects}\n{config['escapeHatch']}")
    refused, unsound = model(config)
    try:
        validated = validate_platform_config(config, "Pulumi.dev.yaml")
    except ConfigError as error:
        paths = [issue.path for issue in error.issues]
        assert all(p[0] in ("extraManifests", "escapeHatch") for p in paths), error.render()
        found = {p[1] for p in paths if p[0] == "extraManifests"}
        assert found == refused, error.render()
        bad_exceptions = {p[2] for p in paths if p[:2] == ("escapeHatch", "exceptions")}
        assert bad_exceptions == unsound, error.render()
        return
    assert not refused and not unsound, f"accepted; the model refuses {refused}, {unsound}"
    admitted = exception_positions(validated)
    expected = {
        position
        for position, manifest in enumerate(objects)
        for exception in config["escapeHatch"].get("exceptions") or []
        if _ref(manifest, KIND_OF[manifest["kind"]]) in exception["objects"]
    }
    assert set(admitted) == expected


def _cm(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "research"},
    }


def test_the_generator_reaches_every_verdict() -> None:
    """Not vacuous: the model, on hand-picked cases, refuses, admits, and spots an idle
    exception."""
    config = copy.deepcopy(BASES["dev"])
    storage = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "x"}}
    config["extraManifests"] = [_cm("vendor"), _cm("team-env"), storage]
    idle = {"kind": "ConfigMap", "namespace": "research", "name": "vendor"}
    config["escapeHatch"] = {"exceptions": [{"name": "idle", "reason": "x", "objects": [idle]}]}
    assert model(config) == ({1, 2}, {0})
