"""Every custom resource of the GPU, node pool, queueing and Ray layers validates against its CRD.

Karpenter NodePool/EC2NodeClass, Kueue ResourceFlavor/ClusterQueue/LocalQueue/
WorkloadPriorityClass and KubeRay RayCluster/RayJob from both stack files, checked by the
preview's validator against the shared CRD catalog; a kind with no schema fails instead of
passing silently.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from tools.schema_validation import ManifestValidator, default_crd_location, validate_all

KINDS = {
    "NodePool",
    "EC2NodeClass",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "RayCluster",
    "RayJob",
}


@functools.cache
def _validator() -> ManifestValidator:
    return ManifestValidator("1.33", default_crd_location())


def schema_errors(manifest: dict[str, Any]) -> list[str]:
    """Every schema error of a manifest; a kind without a schema is an error too."""
    result = _validator().validate(manifest)
    if result.status == "no-schema":
        return [f"no schema for {manifest['apiVersion']} {manifest['kind']}"]
    return [f"{error.path}: {error.message}" for error in result.errors]


def test_catalog_is_present():
    location = Path(default_crd_location())
    assert (location / "karpenter.sh" / "nodepool_v1.json").is_file(), location


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_custom_resources_match_their_crd_schemas(stack, dev_run, prod_run):
    run = {"dev": dev_run, "prod": prod_run}[stack]
    checked = {kind: 0 for kind in KINDS}
    problems = []
    for resource in run.kubernetes_objects():
        if resource.kind not in KINDS:
            continue
        checked[resource.kind] += 1
        problems += [
            f"{resource.kind}/{resource.metadata['name']}: {error}"
            for error in schema_errors(resource.inputs)
        ]
    assert problems == []
    expected = (
        KINDS - {"RayCluster", "RayJob"}
        if stack == "prod"
        else KINDS - {"NodePool", "EC2NodeClass"}
    )
    assert {kind for kind, count in checked.items() if count} == expected


def test_a_broken_manifest_is_reported(prod_run):
    manifest = dict(prod_run.find("ClusterQueue", "team-research").inputs)
    manifest["spec"] = {**manifest["spec"], "cohort": "v1beta1-field"}
    assert any("cohort" in error for error in schema_errors(manifest))
    assert schema_errors({"apiVersion": "example.com/v1", "kind": "Widget"}) == [
        "no schema for example.com/v1 Widget"
    ]


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_whole_stack_validates_with_the_preview_validator(stack, dev_run, prod_run):
    """The same check the offline preview runs: every object valid, no kind without a schema."""
    run = {"dev": dev_run, "prod": prod_run}[stack]
    report = validate_all(
        [r.inputs for r in run.kubernetes_objects()], "1.33", default_crd_location()
    )
    assert not report.failed(), report.summary_text()
    kinds = {result.kind for result in report.results}
    assert KINDS - {"NodePool", "EC2NodeClass", "RayCluster", "RayJob"} <= kinds
