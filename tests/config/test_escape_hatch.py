"""The fence around ``ai-platform:extraManifests`` (``ai-platform:escapeHatch``): what it admits,
what needs a named exception, collisions with the platform's own objects, literal Secrets in
prod; and the list of the platform's objects held to what the program renders."""

from __future__ import annotations

from typing import Any

import pytest

from components.constants import ESCAPE_HATCH_EXCEPTION_ANNOTATION
from components.raw_manifests import group_kind, is_cluster_scoped
from infra.config import ConfigError, validate_platform_config
from infra.field_ownership import PATCH_FORCE_ANNOTATION
from infra.manifests.rules import platform_namespaces, platform_objects, workload_names
from tests.harness import run_stack, stack_config


def cm(name: str, namespace: str | None = "research", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **extra}


CLUSTER_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "gpu-node-reader"},
    "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
}
WEBHOOK: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "anything-goes"},
    "webhooks": [],
}
SECRET: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "hf-token", "namespace": "research"},
    "stringData": {"token": "hf_literal"},
}


def exception(name: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "reason": "Needed by the lab's tooling.", "objects": list(objects)}


def problems(config: dict[str, Any], stack: str = "dev") -> list[str]:
    try:
        validate_platform_config(config, f"Pulumi.{stack}.yaml")
    except ConfigError as error:
        return [f"{issue.key_path}: {issue.message}" for issue in error.issues]
    return []


ALLOWED = {
    "namespaced kinds in team namespaces": ([cm("a"), {**cm("b", "search-serving")}], None),
    "an allowance narrows kinds and namespaces": (
        [cm("a")],
        {"allow": [{"kinds": ["ConfigMap"], "namespaces": ["research"]}]},
    ),
    "group/Kind and core/Kind in an allowance": (
        [cm("a"), {**SECRET, "kind": "Secret", "stringData": None}],
        {"allow": [{"kinds": ["core/ConfigMap", "Secret"]}]},
    ),
    "a cluster-scoped role under a named exception": (
        [CLUSTER_ROLE],
        {
            "exceptions": [
                exception(
                    "gpu-node-readers",
                    {"kind": "rbac.authorization.k8s.io/ClusterRole", "name": "gpu-node-reader"},
                )
            ]
        },
    ),
    "CoreDNS settings in kube-system under a named exception": (
        [cm("coredns-custom", "kube-system")],
        {
            "exceptions": [
                exception(
                    "lab-dns",
                    {"kind": "ConfigMap", "namespace": "kube-system", "name": "coredns-custom"},
                )
            ]
        },
    ),
}


@pytest.mark.parametrize(("manifests", "hatch"), ALLOWED.values(), ids=ALLOWED.keys())
def test_what_the_fence_admits(dev_config, manifests, hatch) -> None:
    dev_config["extraManifests"] = manifests
    if hatch is not None:
        dev_config["escapeHatch"] = hatch
    assert problems(dev_config) == []


REFUSED = {
    "a privileged DaemonSet in a platform namespace": (
        [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "miner", "namespace": "monitoring"},
                "spec": {},
            }
        ],
        None,
        "ai-platform:extraManifests[0].metadata.namespace: 'monitoring' belongs to the "
        "monitoring stack (ai-platform:monitoring): the escape hatch applies an object there "
        "only under a named exception (ai-platform:escapeHatch.exceptions) that the prod policy "
        "config approves",
    ),
    "an object in kube-system": (
        [cm("coredns", "kube-system")],
        None,
        "ai-platform:extraManifests[0].metadata.namespace: 'kube-system' belongs to Kubernetes: "
        "the escape hatch applies an object there only under a named exception "
        "(ai-platform:escapeHatch.exceptions) that the prod policy config approves",
    ),
    "a cluster-scoped webhook": (
        [WEBHOOK],
        None,
        "ai-platform:extraManifests[0].kind: admissionregistration.k8s.io/"
        "ValidatingWebhookConfiguration is cluster-scoped: the escape hatch applies it only "
        "under a named exception (ai-platform:escapeHatch.exceptions) that the prod policy "
        "config approves",
    ),
    "no namespace": (
        [cm("loose", None)],
        None,
        "ai-platform:extraManifests[0].metadata.namespace: is not set: the object would land in "
        "the default namespace; name a team namespace",
    ),
    "a kind the allowance does not name": (
        [cm("a")],
        {"allow": [{"kinds": ["Service"]}]},
        "ai-platform:extraManifests[0].kind: ConfigMap research/a is not admitted by "
        "ai-platform:escapeHatch.allow (default: every namespaced kind in the team namespaces); "
        "add an allowance or a named exception",
    ),
    "an allowance may not open a platform namespace": (
        [],
        {"allow": [{"namespaces": ["research", "kube-system"]}]},
        "ai-platform:escapeHatch.allow[0].namespaces[1]: 'kube-system' belongs to Kubernetes: "
        "objects there need a named exception (escapeHatch.exceptions), not an allowance",
    ),
    "an allowance may not name a cluster-scoped kind": (
        [],
        {"allow": [{"kinds": ["rbac.authorization.k8s.io/ClusterRoleBinding"]}]},
        "ai-platform:escapeHatch.allow[0].kinds[0]: rbac.authorization.k8s.io/"
        "ClusterRoleBinding is cluster-scoped: it needs a named exception "
        "(escapeHatch.exceptions), not an allowance",
    ),
    "an exception for an object that is not there": (
        [cm("a")],
        {"exceptions": [exception("stale", {"kind": "ConfigMap", "namespace": "x", "name": "y"})]},
        "ai-platform:escapeHatch.exceptions[stale].objects[y]: names ConfigMap x/y, which is "
        "not in extraManifests",
    ),
    "an exception for what the allow-list admits anyway": (
        [cm("a")],
        {
            "exceptions": [
                exception("idle", {"kind": "ConfigMap", "namespace": "research", "name": "a"})
            ]
        },
        "ai-platform:escapeHatch.exceptions[idle].objects[a]: ConfigMap research/a needs no "
        "exception: escapeHatch.allow admits it",
    ),
    "a second declaration of a team's ConfigMap": (
        [cm("team-env")],
        None,
        "ai-platform:extraManifests[0].metadata.name: ConfigMap research/team-env is already "
        "declared by the platform (ai-platform:teams[research]); two declarations of one object "
        "fight over it",
    ),
    "a name a workload's objects use": (
        [cm("llama-finetune-extra")],
        None,
        "ai-platform:extraManifests[0].metadata.name: ConfigMap research/llama-finetune-extra is "
        "already declared by the platform (ai-platform:workloads[llama-finetune]); two "
        "declarations of one object fight over it",
    ),
}


@pytest.mark.parametrize(("manifests", "hatch", "expected"), REFUSED.values(), ids=REFUSED.keys())
def test_what_the_fence_refuses(dev_config, manifests, hatch, expected) -> None:
    dev_config["extraManifests"] = manifests
    if hatch is not None:
        dev_config["escapeHatch"] = hatch
    assert problems(dev_config) == [expected]


def test_a_platform_object_under_an_exception_still_collides(dev_config) -> None:
    dev_config["extraManifests"] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}}
    ]
    dev_config["escapeHatch"] = {
        "exceptions": [exception("again", {"kind": "Namespace", "name": "research"})]
    }
    assert problems(dev_config) == [
        "ai-platform:extraManifests[0].metadata.name: Namespace research is already declared by "
        "the platform (ai-platform:teams[research]); two declarations of one object fight over it"
    ]


def test_secrets_with_literal_data_are_refused_in_prod_only(dev_config, prod_config) -> None:
    dev_config["extraManifests"] = [SECRET]
    assert problems(dev_config) == []
    prod_config["extraManifests"] = [SECRET]
    assert problems(prod_config, "prod") == [
        "ai-platform:extraManifests[0].stringData: a Secret with literal data puts the secret in "
        "the stack file, in plain text; in prod create it out of band (or from your secret "
        "store) and refer to it by name"
    ]
    prod_config["extraManifests"] = [{**SECRET, "stringData": None, "type": "Opaque"}]
    assert problems(prod_config, "prod") == []


def test_an_exception_is_written_on_the_object_it_admits(dev_config) -> None:
    dev_config["extraManifests"] = [cm("a"), CLUSTER_ROLE]
    dev_config["escapeHatch"] = {
        "exceptions": [
            exception(
                "gpu-node-readers",
                {"kind": "rbac.authorization.k8s.io/ClusterRole", "name": "gpu-node-reader"},
            )
        ]
    }
    run = run_stack(dev_config)
    role = run.find("ClusterRole", "gpu-node-reader").metadata
    assert role["annotations"] == {
        PATCH_FORCE_ANNOTATION: "true",
        ESCAPE_HATCH_EXCEPTION_ANNOTATION: "gpu-node-readers",
    }
    config_map = run.find("ConfigMap", "a", "research").metadata
    assert config_map["annotations"] == {PATCH_FORCE_ANNOTATION: "true"}


# --- the list of the platform's objects is what the program renders ---------------------------
def _variants() -> dict[str, tuple[str, dict[str, Any]]]:
    no_kueue = stack_config("dev")
    no_kueue["queueing"] = {"enabled": False}
    for team in no_kueue["teams"]:
        team.pop("queue", None)
    for workload in no_kueue["workloads"]:
        (workload.get("inference") or {}).pop("queued", None)
    return {"dev": ("dev", stack_config("dev")), "prod": ("prod", stack_config("prod")),
            "dev-without-kueue": ("dev", no_kueue)}  # fmt: skip


@pytest.mark.parametrize("variant", sorted(_variants()))
def test_the_platform_objects_are_exactly_what_renders(variant: str) -> None:
    """Outside the charts, the workloads and the platform namespaces' insides, every object the
    program renders is in ``platform_objects`` and every entry there renders: the collision
    check knows what the platform declares, and knows nothing it does not."""
    stack, raw = _variants()[variant]
    config = validate_platform_config(raw, f"Pulumi.{stack}.yaml")
    run = run_stack(raw, stack)
    inside = set(platform_namespaces(config))
    reserved = workload_names(config)
    rendered = set()
    for resource in run.kubernetes_objects():
        manifest = resource.inputs
        namespace = None if is_cluster_scoped(manifest) else manifest["metadata"].get("namespace")
        name = manifest["metadata"]["name"]
        if namespace in inside:
            continue
        if any(
            ns == namespace and (name == workload or name.startswith(f"{workload}-"))
            for ns, workload in reserved
        ):
            continue
        rendered.add((group_kind(manifest), namespace, name))
    declared = set(platform_objects(config))
    assert rendered - declared == set(), "rendered but not declared"
    assert declared - rendered == set(), "declared but not rendered"


def test_a_cluster_scoped_object_written_twice_is_one_object(dev_config) -> None:
    """Found by the fence's fuzz: two namespaces do not make a ClusterRole two objects."""
    dev_config["extraManifests"] = [
        {**CLUSTER_ROLE, "metadata": {**CLUSTER_ROLE["metadata"], "namespace": namespace}}
        for namespace in ("research", "search-serving")
    ]
    ref = {"kind": "rbac.authorization.k8s.io/ClusterRole", "name": "gpu-node-reader"}
    dev_config["escapeHatch"] = {"exceptions": [exception("readers", ref)]}
    assert problems(dev_config) == [
        "ai-platform:extraManifests[1].metadata.name: ClusterRole gpu-node-reader is already "
        "declared by extraManifests[0]"
    ]
