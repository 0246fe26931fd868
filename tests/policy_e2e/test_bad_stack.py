"""A deliberately bad stack fails the preview: every GPU and storage policy fires through the
real path (program under mocks → resource records → pack process over the analyzer protocol)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aiplatform_policies.registry import REGISTRY
from tools import preview

BAD_STACK = Path(__file__).with_name("Pulumi.bad.yaml")


def _categories() -> dict[str, str]:
    return {name: meta.category.value for name, meta in REGISTRY.items()}


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("e2e")
    code = preview.main(
        ["--stack", "bad", "--stack-file", str(BAD_STACK), "--out", str(out), "--quiet"]
    )
    assert code == 1, "mandatory violations must fail the preview"
    return json.loads((out / "bad" / "report.json").read_text())


def test_prod_policy_config_applies_to_a_new_prod_stack(report):
    assert report["policy"]["configFile"].endswith("policies/config/prod.json")
    assert report["schema"]["byStatus"]["invalid"] == 0


@pytest.mark.parametrize(
    "policy",
    sorted(name for name, category in _categories().items() if category in ("gpu", "storage")),
)
def test_every_gpu_and_storage_policy_fires_as_mandatory(report, policy):
    fired = [v for v in report["policy"]["violations"] if v["policyName"] == policy]
    assert fired, f"{policy} did not fire on the bad stack"
    assert {v["enforcementLevel"] for v in fired} == {"mandatory"}


def test_violations_name_the_offending_resource(report):
    by_policy = {v["policyName"]: v for v in report["policy"]["violations"]}
    assert by_policy["storage-class-retain"]["resourceName"].endswith("storageclass-gold")
    assert (
        "requests 2 nvidia.com/gpu but its limit is 16"
        in (by_policy["gpu-limits-match-requests"]["message"])
    )
    assert by_policy["queue-capacity"]["stackPolicy"] is True
