"""Rendered workloads pass every policy prod makes mandatory, and every manifest validates.

The policies run in-process through the pack's own test harness
(policies/aiplatform_policies/harness.py): props travel through a protobuf Struct as on the
analyzer wire.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.harness import run_stack
from tests.workloads.conftest import mandatory_violations
from tools.mockrun import CapturedResource, MockRun
from tools.schema_validation import ManifestValidator, default_crd_location

WORKLOAD_KINDS = {
    "Job",
    "ConfigMap",
    "PersistentVolumeClaim",
    "Service",
    "NetworkPolicy",
    "Deployment",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
    "StatefulSet",
    "ServiceMonitor",
}


def _workload_objects(run: MockRun[Any]) -> list[CapturedResource]:
    owners = {
        r.urn
        for r in run.resources
        if r.type in ("aiplatform:workloads:TrainingJob", "aiplatform:workloads:InferenceService")
    }
    return [r for r in run.kubernetes_objects() if r.parent in owners]


def _mandatory_violations(run: MockRun[Any]) -> list[str]:
    """Every message of every policy mandatory in policies/config/prod.json, on the whole stack."""
    return mandatory_violations(
        r for r in run.resources if r.custom and r.type.startswith("kubernetes:")
    )


def test_prod_workloads_pass_every_mandatory_policy(prod_run):
    workloads = _workload_objects(prod_run)
    assert {r.kind for r in workloads} == WORKLOAD_KINDS - {"ServiceMonitor"}
    assert _mandatory_violations(prod_run) == []


def test_the_check_is_not_vacuous(prod_config):
    """A workload that breaks a mandatory policy is reported (here: an unpinned image)."""
    broken = copy.deepcopy(prod_config)
    broken["workloads"][0]["image"] = "nvcr.io/nvidia/pytorch:latest"
    messages = _mandatory_violations(run_stack(broken, stack="prod"))
    assert any(m.startswith("image-pinned: ") and "latest" in m for m in messages), messages


def test_service_monitors_pass_too(prod_config):
    for workload in prod_config["workloads"]:
        if workload["kind"] == "inference":
            workload["inference"]["serviceMonitor"] = True
    run = run_stack(prod_config, stack="prod")
    assert {r.kind for r in _workload_objects(run)} == WORKLOAD_KINDS
    assert _mandatory_violations(run) == []


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_workload_manifest_validates_with_a_schema(stack, prod_config, dev_config):
    config = {"dev": dev_config, "prod": prod_config}[stack]
    for workload in config["workloads"]:
        if workload["kind"] == "inference":
            workload["inference"]["serviceMonitor"] = True
    run = run_stack(config, stack=stack)
    validator = ManifestValidator("1.33", default_crd_location())
    results = [validator.validate(r.inputs) for r in _workload_objects(run)]
    assert {r.kind for r in results} == WORKLOAD_KINDS
    problems = [
        f"{r.kind}/{r.name}: {r.status} {[e.to_dict() for e in r.errors]}"
        for r in results
        if r.status != "valid"
    ]
    assert problems == []
