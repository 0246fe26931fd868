"""Every object the platform declares is applied with force (infra/field_ownership.py), so that
``pulumi up`` takes back the fields it declares from whoever changed them.

Found by the e2e's faults section (docs/e2e.md, "Day two: faults"): without force,
``kubectl scale`` of a StatefulSet and, after a ``pulumi up`` killed mid-way, any later change of
an object whose create the killed run had sent both failed with "Server-Side Apply field
conflict detected". What force may not do is tested too: take Helm's objects, a Patch's target.
"""

from __future__ import annotations

import pulumi_kubernetes as k8s
import pytest

from infra.field_ownership import PATCH_FORCE_ANNOTATION, is_forced, with_force
from tests.harness import run_stack
from tools.mockrun import MockRun


@pytest.fixture(scope="module", params=["dev", "prod"])
def stack_run(request: pytest.FixtureRequest) -> MockRun:
    return run_stack(request.param)


def test_every_declared_object_is_applied_with_force(stack_run: MockRun) -> None:
    objects = [r for r in stack_run.resources if r.is_kubernetes_object]
    assert objects
    for resource in objects:
        annotations = (resource.inputs.get("metadata") or {}).get("annotations") or {}
        if resource.type.startswith("kubernetes:helm.sh/") or resource.type.endswith("Patch"):
            assert PATCH_FORCE_ANNOTATION not in annotations, resource.urn
        else:
            assert annotations.get(PATCH_FORCE_ANNOTATION) == "true", resource.urn


def test_the_objects_own_annotations_are_kept(stack_run: MockRun) -> None:
    namespaces = [r for r in stack_run.resources if r.type == "kubernetes:core/v1:Namespace"]
    for namespace in namespaces:
        annotations = namespace.inputs["metadata"].get("annotations") or {}
        assert annotations[PATCH_FORCE_ANNOTATION] == "true"
    team_namespaces = [
        n for n in namespaces if len(n.inputs["metadata"].get("annotations") or {}) > 1
    ]
    assert team_namespaces, "team namespaces carry the tenant annotations besides force"


@pytest.mark.parametrize(
    ("resource_type", "forced"),
    [
        ("kubernetes:core/v1:ConfigMap", True),
        ("kubernetes:apps/v1:StatefulSet", True),
        ("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", True),
        ("kubernetes:helm.sh/v3:Release", False),
        ("kubernetes:yaml/v2:ConfigGroup", False),
        ("kubernetes:core/v1:NodePatch", False),
        ("pulumi:providers:kubernetes", False),
        ("random:index/randomPassword:RandomPassword", False),
    ],
)
def test_which_types_are_forced(resource_type: str, forced: bool) -> None:
    assert is_forced(resource_type) is forced


def test_with_force_adds_to_what_the_program_declared() -> None:
    assert with_force(None) == {"annotations": {PATCH_FORCE_ANNOTATION: "true"}}
    assert with_force({"name": "a"}) == {
        "name": "a",
        "annotations": {PATCH_FORCE_ANNOTATION: "true"},
    }
    declared = {"name": "a", "annotations": {"x": "1", PATCH_FORCE_ANNOTATION: "false"}}
    assert with_force(declared)["annotations"] == {"x": "1", PATCH_FORCE_ANNOTATION: "false"}
    assert declared["annotations"] == {"x": "1", PATCH_FORCE_ANNOTATION: "false"}  # a copy
    meta = k8s.meta.v1.ObjectMetaArgs(name="a", annotations={"x": "1"})
    assert with_force(meta).annotations == {PATCH_FORCE_ANNOTATION: "true", "x": "1"}
