"""examples/team-consumer: a team's program reading our real prod outputs through a StackReference.

The mocks answer the ``pulumi:pulumi:StackReference`` read with the outputs ``run_stack("prod")``
exports, so the example is proven against the contract as it is today, not against a hand-copied
fixture. The outputs handed over are validated against the published v1 schema first.
"""

from __future__ import annotations

import copy
import json
import runpy
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
from pulumi.runtime.mocks import MockResourceArgs

from components.constants import KUEUE_QUEUE_LABEL
from tests.harness import run_stack
from tests.workloads.conftest import container, mandatory_violations, pod_spec
from tools.mockrun import MockRun, PlatformMocks, run_under_mocks
from tools.schema_validation import ManifestValidator, default_crd_location

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "team-consumer"
PROJECT = "research-workloads"
SCHEMA = ROOT / "schema" / "stack-outputs.v1.schema.json"
STACK_REFERENCE = "pulumi:pulumi:StackReference"
CONFIG = {"kubeconfigContext": "lab-admin"}


class PlatformStackMocks(PlatformMocks):
    """Answer every StackReference read with ``outputs``; remember which stacks were read."""

    def __init__(self, outputs: dict[str, Any]) -> None:
        super().__init__()
        self.outputs = outputs
        self.references: list[MockResourceArgs] = []

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == STACK_REFERENCE:
            self.references.append(args)
            name = args.inputs["name"]
            return name, {"name": name, "outputs": self.outputs, "secretOutputNames": []}
        return super().new_resource(args)


def load_example() -> SimpleNamespace:
    """``team_consumer``'s globals, for its plain helpers (no Pulumi runtime involved)."""
    return SimpleNamespace(**runpy.run_path(str(EXAMPLE / "team_consumer.py"), run_name="tc"))


def run_example(outputs: dict[str, Any], **config: str) -> tuple[MockRun[Any], PlatformStackMocks]:
    """Run the example as the language host does: its directory, ``__main__.py``, fresh."""
    mocks = PlatformStackMocks(outputs)

    def program() -> Any:
        sys.modules.pop("team_consumer", None)  # imported afresh, against fresh components
        try:
            return runpy.run_path(str(EXAMPLE), run_name="__main__")
        finally:
            sys.modules.pop("team_consumer", None)

    run = run_under_mocks(
        program,
        stack="prod",
        project=PROJECT,
        config={f"{PROJECT}:{key}": value for key, value in {**CONFIG, **config}.items()},
        mocks=mocks,
    )
    return run, mocks


@pytest.fixture(scope="module")
def prod_outputs() -> dict[str, Any]:
    outputs: dict[str, Any] = run_stack("prod").value.model_dump(mode="json")
    return outputs


@pytest.fixture(scope="module")
def example(prod_outputs) -> tuple[MockRun[Any], PlatformStackMocks]:
    return run_example(copy.deepcopy(prod_outputs))


@pytest.fixture(scope="module")
def run(example) -> MockRun[Any]:
    return example[0]


def test_outputs_handed_to_the_example_meet_the_v1_schema(prod_outputs):
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(prod_outputs, schema, cls=jsonschema.Draft202012Validator)


def test_example_is_its_own_pulumi_project():
    project = (EXAMPLE / "Pulumi.yaml").read_text()
    assert project.startswith("# yaml-language-server")
    assert f"name: {PROJECT}" in project
    assert "default: acme/ai-platform/prod" in project
    assert (EXAMPLE / "README.md").exists()


def test_stack_reference_is_fully_qualified(example):
    _, mocks = example
    assert [(r.name, r.inputs["name"], r.resource_id) for r in mocks.references] == [
        ("ai-platform", "acme/ai-platform/prod", "acme/ai-platform/prod")
    ]


def test_stack_reference_name_comes_from_config(prod_outputs):
    _, mocks = run_example(copy.deepcopy(prod_outputs), platformStack="acme/ai-platform/staging")
    assert [r.inputs["name"] for r in mocks.references] == ["acme/ai-platform/staging"]


@pytest.mark.parametrize("name", ["prod", "ai-platform/prod", "acme//prod", "a/b/c/d"])
def test_a_stack_name_that_is_not_fully_qualified_is_refused(prod_outputs, name):
    with pytest.raises(ValueError, match="must be fully qualified as <org>/<project>/<stack>"):
        run_example(copy.deepcopy(prod_outputs), platformStack=name)


def _expected(prod_outputs: dict[str, Any], pool: str, team: str = "research") -> dict[str, Any]:
    return {"team": prod_outputs["teams"][team], "pool": prod_outputs["gpuPools"][pool]}


def test_job_lands_in_the_team_namespace_queue_and_pool(run, prod_outputs):
    want = _expected(prod_outputs, "h100-training")
    namespace = want["team"]["namespace"]
    job = run.find("Job", "sft-train", namespace)
    assert job.inputs["metadata"]["labels"][KUEUE_QUEUE_LABEL] == want["team"]["localQueue"]
    assert job.inputs["spec"]["suspend"] is True  # Kueue admits it
    spec = pod_spec(job)
    assert spec["nodeSelector"] == want["pool"]["nodeSelector"]
    assert spec["tolerations"] == want["pool"]["tolerations"]
    assert spec["serviceAccountName"] == want["team"]["serviceAccount"]
    trainer = container(job, "trainer")
    assert trainer["envFrom"] == [{"configMapRef": {"name": want["team"]["envConfigMap"]}}]
    gpus = str(want["pool"]["resourcesPerNode"])
    assert trainer["resources"]["limits"][want["pool"]["gpuResource"]] == gpus
    assert trainer["resources"]["requests"][want["pool"]["gpuResource"]] == gpus
    claims = {
        v["persistentVolumeClaim"]["claimName"]
        for v in spec["volumes"]
        if "persistentVolumeClaim" in v
    }
    assert claims == set(want["team"]["volumes"])  # datasets and checkpoints, by purpose


def test_inference_service_lands_in_the_team_namespace_queue_and_pool(run, prod_outputs):
    want = _expected(prod_outputs, "h100-training")
    namespace = want["team"]["namespace"]
    deployment = run.find("Deployment", "sft-serve", namespace)
    labels = deployment.inputs["metadata"]["labels"]
    assert labels[KUEUE_QUEUE_LABEL] == want["team"]["localQueue"]
    spec = pod_spec(deployment)
    assert spec["nodeSelector"] == want["pool"]["nodeSelector"]
    assert spec["tolerations"] == want["pool"]["tolerations"]
    assert spec["serviceAccountName"] == want["team"]["serviceAccount"]
    server = container(deployment, "server")
    assert server["resources"]["limits"][want["pool"]["gpuResource"]] == "1"
    for kind in ("Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
        assert run.find(kind, "sft-serve", namespace)


def test_every_object_goes_to_the_team_namespace_through_the_explicit_provider(run):
    provider = next(r for r in run.resources if r.type == "pulumi:providers:kubernetes")
    assert provider.inputs["context"] == "lab-admin"
    objects = run.kubernetes_objects()
    assert {r.type for r in run.resources} >= {
        "aiplatform:workloads:TrainingJob",
        "aiplatform:workloads:InferenceService",
    }
    assert objects
    for resource in objects:
        assert resource.metadata["namespace"] == "research", resource.name
        assert resource.options["provider"].startswith(provider.urn), resource.name


def test_team_and_pool_come_from_config(prod_outputs):
    run, _ = run_example(copy.deepcopy(prod_outputs), team="platform", pool="spot-batch")
    want = _expected(prod_outputs, "spot-batch", team="platform")
    job = run.find("Job", "sft-train", want["team"]["namespace"])
    assert pod_spec(job)["tolerations"] == want["pool"]["tolerations"]  # the preemptible taint
    assert job.inputs["metadata"]["labels"][KUEUE_QUEUE_LABEL] == want["team"]["localQueue"]


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_an_unknown_outputs_version_fails_clearly(prod_outputs, version):
    outputs = copy.deepcopy(prod_outputs)
    if version is None:
        del outputs["outputsVersion"]
        message = "exports no outputsVersion"
    else:
        outputs["outputsVersion"] = version
        message = "understands version 1 only: read ai-platform's docs/upgrading.md"
    with pytest.raises(ValueError, match=message) as failure:
        run_example(outputs)
    assert "acme/ai-platform/prod" in str(failure.value)


def test_a_version_2_stack_fails_on_the_version_not_on_renamed_outputs(prod_outputs):
    outputs = {"outputsVersion": 2, "tenants": prod_outputs["teams"]}
    with pytest.raises(ValueError, match="exports outputsVersion 2, but this program"):
        run_example(outputs)


def test_an_unknown_team_or_pool_fails_clearly(prod_outputs):
    with pytest.raises(ValueError, match=r"team 'vision' is not in .*research"):
        run_example(copy.deepcopy(prod_outputs), team="vision")
    with pytest.raises(ValueError, match=r"pool 'b200' is not in .*h100-training"):
        run_example(copy.deepcopy(prod_outputs), pool="b200")


def test_a_team_without_a_local_queue_fails_clearly(prod_outputs):
    outputs = copy.deepcopy(prod_outputs)
    outputs["teams"]["research"]["localQueue"] = None
    with pytest.raises(ValueError, match="has no LocalQueue"):
        run_example(outputs)


def test_rendered_manifests_validate(run):
    validator = ManifestValidator("1.33", default_crd_location())
    results = [validator.validate(r.inputs) for r in run.kubernetes_objects()]
    assert results
    assert [(r.kind, r.name, r.status) for r in results if r.status != "valid"] == []


def test_example_passes_the_mandatory_resource_policies(run):
    """Per-resource prod policies; stack policies need the platform's own resources too."""
    assert mandatory_violations(run.kubernetes_objects(), stack_policies=False) == []


# --- contract_from_outputs, without the Pulumi runtime -------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_contract_from_outputs_inverts_to_output_for_every_pool(stack, prod_outputs):
    example = load_example()
    outputs = prod_outputs if stack == "prod" else run_stack("dev").value.model_dump(mode="json")
    pools = outputs["gpuPools"]
    assert pools
    for name, pool in pools.items():
        # Numbers arrive as floats through a real StackReference.
        wire = {k: float(v) if isinstance(v, int) else v for k, v in pool.items()}
        contract = example.contract_from_outputs(wire, name)
        assert contract.pool == name
        assert contract.to_output() == pool
        assert example.contract_from_outputs(pool).pool == name  # from the node selector


def test_contract_from_outputs_refuses_what_it_cannot_represent(prod_outputs):
    example = load_example()
    pool = prod_outputs["gpuPools"]["h100-training"]
    with pytest.raises(ValueError, match="lacks gpuResource"):
        example.contract_from_outputs({k: v for k, v in pool.items() if k != "gpuResource"})
    with pytest.raises(ValueError, match="gpusPerNode must be an integer"):
        example.contract_from_outputs({**pool, "gpusPerNode": 7.5})
    with pytest.raises(ValueError, match="does not match exactly one taint"):
        example.contract_from_outputs({**pool, "tolerations": [{"operator": "Exists"}]})
