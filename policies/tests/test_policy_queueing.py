"""queue-capacity: the arithmetic beyond the fixtures (overcommit, quota keys, API versions) and
the resources its violations point at."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy import Severity, StackValidationArgs

from aiplatform_policies import REGISTRY
from aiplatform_policies.harness import (
    FIXTURES,
    Fixture,
    Resource,
    load_fixture,
    policy_resource,
    run,
)
from aiplatform_policies.registry import Category

POLICY = REGISTRY["queue-capacity"].policy


def _fixture(name: str) -> Fixture:
    return load_fixture(FIXTURES / "queue-capacity" / f"{name}.yaml")


def _resource(fixture: Fixture, kind: str, name: str) -> Resource:
    [resource] = [
        r
        for r in fixture.resources
        if r.type.endswith(f":{kind}") and r.inputs["metadata"]["name"] == name
    ]
    return resource


def _inputs(fixture: Fixture, kind: str, name: str) -> dict[str, Any]:
    return _resource(fixture, kind, name).inputs


def _with_urns(fixture: Fixture) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn))

    resources = [policy_resource(r) for r in fixture.resources]
    POLICY.validate(StackValidationArgs(resources, None), report)
    return found


def test_is_a_high_severity_gpu_stack_policy() -> None:
    meta = REGISTRY["queue-capacity"]
    assert meta.stack and meta.category == Category.GPU and meta.severity == Severity.HIGH
    assert POLICY.config_schema is None


@pytest.mark.parametrize(
    ("factor", "expected"),
    [
        ("1.0625", []),
        ("2", []),
        (
            "1.05",
            [
                'ClusterQueues\' nominal quotas on flavor "h100-training" add up to 68 '
                "nvidia.com/gpu, above the pool's capacity of 64 x overcommit 1.05 = 67.2 "
                "(team-platform: 8, team-research: 60)"
            ],
        ),
    ],
)
def test_overcommit_annotation_scales_the_pool(factor: str, expected: list[str]) -> None:
    fixture = _fixture("disallowed-nominal-above-pool-capacity")
    flavor = _inputs(fixture, "ResourceFlavor", "h100-training")
    flavor["metadata"]["annotations"]["aiplatform.io/quota-overcommit"] = factor
    assert run(POLICY, fixture) == expected


def test_missing_overcommit_annotation_means_no_overcommit() -> None:
    fixture = _fixture("disallowed-nominal-above-pool-capacity")
    flavor = _inputs(fixture, "ResourceFlavor", "h100-training")
    del flavor["metadata"]["annotations"]["aiplatform.io/quota-overcommit"]
    assert run(POLICY, fixture) == run(POLICY, _fixture("disallowed-nominal-above-pool-capacity"))


def test_bare_quota_keys_cap_requests() -> None:
    """``cpu`` in a ResourceQuota is ``requests.cpu``; the tighter of the two applies."""
    fixture = _fixture("allowed-queues-fit")
    assert run(POLICY, fixture) == []
    quota = next(
        r.inputs
        for r in fixture.resources
        if r.type.endswith(":ResourceQuota") and r.inputs["metadata"]["namespace"] == "platform"
    )
    quota["spec"]["hard"]["requests.cpu"] = "16"
    assert run(POLICY, fixture) == [
        'ClusterQueue "team-platform" admits up to 20 cpu (nominal + borrowing) into namespace '
        '"platform", above its ResourceQuota requests.cpu of 16'
    ]


def test_mig_slices_are_checked_against_the_mig_quota() -> None:
    fixture = _fixture("allowed-queues-fit")
    quota = next(
        r.inputs
        for r in fixture.resources
        if r.type.endswith(":ResourceQuota") and r.inputs["metadata"]["namespace"] == "platform"
    )
    quota["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] = "7"
    assert run(POLICY, fixture) == [
        'ClusterQueue "team-platform" admits up to 14 nvidia.com/mig-1g.10gb (nominal + '
        'borrowing) into namespace "platform", above its ResourceQuota '
        "requests.nvidia.com/mig-1g.10gb of 7"
    ]


def test_kueue_kinds_match_any_api_version() -> None:
    current = _fixture("disallowed-nominal-above-pool-capacity")
    older = copy.deepcopy(current)
    for resource in older.resources:
        if "kueue.x-k8s.io" in resource.type:
            resource.type = resource.type.replace("/v1beta2:", "/v1beta1:")
    assert run(POLICY, older) == current.expect


def test_stack_without_queues_passes() -> None:
    fixture = _fixture("allowed-queues-fit")
    fixture.resources = [r for r in fixture.resources if "kueue.x-k8s.io" not in r.type]
    assert run(POLICY, fixture) == []


def test_violations_point_at_the_offending_resource() -> None:
    fixture = _fixture("disallowed-flavor-without-pool")
    local = next(
        r.urn
        for r in fixture.resources
        if r.type.endswith(":LocalQueue") and r.inputs["metadata"]["namespace"] == "search-serving"
    )
    assert [urn for _message, urn in _with_urns(fixture)] == [
        _resource(fixture, "ResourceFlavor", "lab-a100-mig").urn,
        _resource(fixture, "ResourceFlavor", "anywhere").urn,
        _resource(fixture, "ClusterQueue", "team-research").urn,
        local,
    ]
    over = _fixture("disallowed-nominal-above-pool-capacity")
    assert [urn for _message, urn in _with_urns(over)] == [
        _resource(over, "ResourceFlavor", "h100-training").urn
    ]
