"""The shared readers every policy relies on: type tokens, the pod-template registry,
quantities, image references, label selectors and the per-stack config resolution."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import EnforcementLevel

from aiplatform_policies import METAS, REGISTRY, stackconfig
from aiplatform_policies.harness import Fixture, Resource, proxied, run
from aiplatform_policies.kube import LabelSelector, format_bytes, parse_quantity, parse_type
from aiplatform_policies.podspec import POD_TEMPLATE_PATHS, pod_view
from aiplatform_policies.registry import Knobs
from aiplatform_policies.workload import parse_image

POD_SPEC = {
    "containers": [{"name": "main", "image": "nvcr.io/x:1"}],
    "initContainers": [{"name": "init", "image": "nvcr.io/y:1", "restartPolicy": "Always"}],
}


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("kubernetes:apps/v1:Deployment", ("apps", "v1", "Deployment")),
        ("kubernetes:core/v1:Pod", ("core", "v1", "Pod")),
        (
            "kubernetes:networking.k8s.io/v1:NetworkPolicy",
            ("networking.k8s.io", "v1", "NetworkPolicy"),
        ),
        (
            "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
            ("kueue.x-k8s.io", "v1beta2", "LocalQueue"),
        ),
        ("kubernetes:helm.sh/v3:Release", None),
        ("kubernetes:yaml/v2:ConfigGroup", None),
        ("aiplatform:tenancy:TeamNamespace", None),
        ("pulumi:providers:kubernetes", None),
    ],
)
def test_parse_type(token: str, expected: tuple[str, str, str] | None) -> None:
    parsed = parse_type(token)
    assert (tuple(parsed) if parsed else None) == expected


def _wrap(api_version: str, kind: str, path: tuple[str, ...]) -> dict[str, Any]:
    template: dict[str, Any] = {"metadata": {"labels": {"tier": "x"}}, "spec": POD_SPEC}
    manifest: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ns"},
    }
    if not path:
        return {
            **manifest,
            **template,
            "metadata": {**manifest["metadata"], "labels": {"tier": "x"}},
        }
    node = manifest
    for step in path[:-1]:
        node = node.setdefault(step, {})
    node[path[-1]] = template
    return manifest


@pytest.mark.parametrize("group_kind", sorted(POD_TEMPLATE_PATHS))
def test_pod_view_finds_the_template_of_every_registered_kind(group_kind: str) -> None:
    group, kind = group_kind.split("/")
    version = "v1"
    api_version = version if group == "core" else f"{group}/{version}"
    props = proxied(_wrap(api_version, kind, POD_TEMPLATE_PATHS[group_kind]))
    view = pod_view(f"kubernetes:{group}/{version}:{kind}", props)
    assert view is not None and view.kind == kind and view.namespace == "ns"
    assert view.pod_labels.get("tier") == "x"
    assert [(c.label, c.sidecar) for c in view.containers] == [
        ('init container "init"', True),
        ('container "main"', False),
    ]


def test_pod_view_ignores_non_workloads() -> None:
    assert pod_view("kubernetes:core/v1:Service", proxied({"spec": {}})) is None
    assert pod_view("kubernetes:helm.sh/v3:Release", proxied({"values": {}})) is None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("16Gi", Decimal(16 * 2**30)),
        ("1e3", Decimal(1000)),
        ("2", Decimal(2)),
        (4.0, Decimal(4)),
        ("1.5Ti", Decimal(int(1.5 * 2**40))),
        ("2 TB", None),
        ("", None),
        (True, None),
        ("12x", None),
        ("7Ei", Decimal(7 * 2**60)),
        # Past what the API server stores (2^63-1): refused, as the platform's config refuses it.
        ("8Ei", None),
        ("1e40", None),
        (2**70, None),
        (1e300, None),
        (float("inf"), None),
        # Exponents that would overflow the decimal context, or int()'s digit limit.
        ("1e9999999", None),
        ("1E-9999999", None),
        ("1e" + "9" * 5000, None),
        ("1e-0003", Decimal("0.001")),
    ],
)
def test_parse_quantity(text: Any, value: Decimal | None) -> None:
    assert parse_quantity(text) == value


ENORMOUS = "1e9999999"


def _enormous_pod() -> dict[str, Any]:
    """A GPU training pod whose every quantity is :data:`ENORMOUS`."""
    resources = {key: ENORMOUS for key in ("cpu", "memory", "nvidia.com/gpu")}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "huge",
            "namespace": "research",
            "labels": {"aiplatform.io/team": "research"},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "nvcr.io/x:1",
                    "resources": {"requests": resources, "limits": resources},
                }
            ],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": ENORMOUS}}],
        },
    }


def test_an_enormous_quantity_is_reported_never_a_crash() -> None:
    """Every quantity a policy reads, spelled past what a decimal holds: each policy runs to its
    end (a crash would fail the whole preview), and the GPU count is named as no quantity."""
    resources = [
        Resource("kubernetes:core/v1:Pod", "huge", _enormous_pod()),
        Resource(
            "kubernetes:core/v1:PersistentVolumeClaim",
            "huge-claim",
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "huge-claim", "namespace": "research"},
                "spec": {"resources": {"requests": {"storage": ENORMOUS}}},
            },
        ),
        Resource(
            "kubernetes:core/v1:ResourceQuota",
            "huge-quota",
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": {"name": "huge-quota", "namespace": "research"},
                "spec": {"hard": {"requests.nvidia.com/gpu": ENORMOUS}},
            },
        ),
    ]
    fixture = Fixture(path=Path("x.yaml"), policy="", allowed=False, resources=resources)
    messages = {meta.name: run(meta.policy, fixture) for meta in METAS}
    assert any(ENORMOUS in message for message in messages["gpu-limits-match-requests"])


def test_format_bytes() -> None:
    assert format_bytes(Decimal(64 * 2**40)) == "64Ti"
    assert format_bytes(Decimal(1536 * 2**20)) == "1536Mi"


@pytest.mark.parametrize(
    ("image", "registry", "repository", "tag", "digest"),
    [
        ("busybox", "docker.io", "docker.io/library/busybox", None, None),
        ("pytorch/pytorch:2.3", "docker.io", "docker.io/pytorch/pytorch", "2.3", None),
        ("localhost:5000/tools/stage", "localhost:5000", "localhost:5000/tools/stage", None, None),
        (
            "nvcr.io/nvidia/pytorch:24.05-py3",
            "nvcr.io",
            "nvcr.io/nvidia/pytorch",
            "24.05-py3",
            None,
        ),
        ("ghcr.io/a/b:1@sha256:" + "0" * 64, "ghcr.io", "ghcr.io/a/b", "1", "sha256:" + "0" * 64),
        ("index.docker.io/library/nginx:1", "docker.io", "docker.io/library/nginx", "1", None),
    ],
)
def test_parse_image(
    image: str, registry: str, repository: str, tag: str | None, digest: str | None
) -> None:
    assert tuple(parse_image(image)) == (registry, repository, tag, digest)


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, {"a": "1"}, True),
        (None, {"a": "1"}, False),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}, {"a": "1"}, False),
    ],
)
def test_label_selector(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert LabelSelector(proxied({"s": selector})["s"]).matches(labels) is matches


def test_helm_releases_and_components_are_skipped_by_every_policy() -> None:
    resources = [
        Resource(
            "kubernetes:helm.sh/v3:Release",
            "gpu-operator",
            {
                "chart": "gpu-operator",
                "namespace": "default",
                "values": {"driver": {"enabled": True}},
            },
        ),
        Resource("aiplatform:tenancy:TeamNamespace", "research", {"team": "research"}),
    ]
    fixture = Fixture(path=Path("x.yaml"), policy="", allowed=True, resources=resources)
    for meta in METAS:
        assert run(meta.policy, fixture) == [], meta.name


def test_knobs_merge_defaults_and_cache_the_parsed_settings() -> None:
    calls: list[dict[str, Any]] = []

    def parse(raw: Any) -> tuple[int, int]:
        calls.append(dict(raw))
        return raw["a"], raw["b"]

    knobs = Knobs(
        {"a": {"type": "integer", "default": 1}, "b": {"type": "integer", "default": 2}}, parse
    )
    assert knobs.settings(None) == (1, 2)
    assert knobs.settings({"b": 5.0, "unknown": 1}) == (1, 5.0)
    assert knobs.settings({"b": 5.0, "unknown": 1}) == (1, 5.0)
    assert len(calls) == 2, "the same config is parsed once"


def test_stack_config_resolution() -> None:
    resolved = stackconfig.resolve(
        {"all": "disabled", "pss-baseline": "mandatory", "gpu-max-per-pod": {"maxGpusPerPod": 4}}
    )
    assert resolved["pss-baseline"].level is EnforcementLevel.MANDATORY
    assert resolved["gpu-max-per-pod"].level is EnforcementLevel.DISABLED
    assert resolved["gpu-max-per-pod"].properties == {"maxGpusPerPod": 4}
    defaults = stackconfig.resolve({})
    assert all(defaults[n].level is m.default_level for n, m in REGISTRY.items())
