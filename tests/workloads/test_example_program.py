"""examples/team-training: a team's own program using the components as a library, under mocks."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pytest

from components.constants import KUEUE_QUEUE_LABEL, NODE_POOL_LABEL
from tests.workloads.conftest import container, mandatory_violations, pod_spec
from tools.mockrun import MockRun, run_under_mocks
from tools.schema_validation import ManifestValidator, default_crd_location

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "team-training"
PROJECT = "team-training"


def run_example(**config: str) -> MockRun[Any]:
    def program() -> Any:
        return runpy.run_path(str(EXAMPLE / "__main__.py"), run_name="__main__")

    return run_under_mocks(
        program,
        stack="dev",
        project=PROJECT,
        config={f"{PROJECT}:{key}": value for key, value in config.items()},
    )


@pytest.fixture(scope="module")
def example() -> MockRun[Any]:
    return run_example(namespace="research", kubeconfigContext="lab-admin")


def test_example_is_a_pulumi_project():
    assert (EXAMPLE / "Pulumi.yaml").read_text().startswith("# yaml-language-server")
    assert "name: team-training" in (EXAMPLE / "Pulumi.yaml").read_text()


def test_example_deploys_a_training_job_and_an_inference_service(example):
    types = {r.type for r in example.resources}
    assert {"aiplatform:workloads:TrainingJob", "aiplatform:workloads:InferenceService"} <= types
    job = example.find("Job", "detector-train", "research")
    assert job.inputs["metadata"]["labels"][KUEUE_QUEUE_LABEL] == "gpu-queue"
    assert pod_spec(job)["nodeSelector"] == {NODE_POOL_LABEL: "h100-training"}
    assert container(job, "trainer")["resources"]["limits"]["nvidia.com/gpu"] == "8"
    deployment = example.find("Deployment", "detector-serve", "research")
    assert pod_spec(deployment)["tolerations"][0]["key"] == "nvidia.com/gpu"
    assert example.find("HorizontalPodAutoscaler", "detector-serve", "research")


def test_example_uses_an_explicit_provider(example):
    provider = next(r for r in example.resources if r.type == "pulumi:providers:kubernetes")
    assert provider.inputs["context"] == "lab-admin"
    for resource in example.kubernetes_objects():
        assert resource.options["provider"].startswith(provider.urn), resource.name


def test_example_namespace_and_pool_come_from_config():
    run = run_example(namespace="vision", pool="h100-batch")
    job = run.find("Job", "detector-train", "vision")
    assert pod_spec(job)["nodeSelector"] == {NODE_POOL_LABEL: "h100-batch"}


def test_example_manifests_validate(example):
    validator = ManifestValidator("1.33", default_crd_location())
    results = [validator.validate(r.inputs) for r in example.kubernetes_objects()]
    assert [(r.kind, r.name, r.status) for r in results if r.status != "valid"] == []


def test_example_passes_the_mandatory_resource_policies(example):
    """Per-resource prod policies; stack policies need the platform's own resources too."""
    assert mandatory_violations(example.kubernetes_objects(), stack_policies=False) == []
