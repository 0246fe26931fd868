"""The pack behind the SDK's analyzer servicer, in process: the same code path the gRPC server
runs (config, enforcement levels, message framing, preview unknowns), with and without
:mod:`aiplatform_policies.speedups`, plus the throughput the driver relies on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.protobuf import struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel
from pulumi_policy.policy import _PolicyAnalyzerServicer
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from aiplatform_policies import PACK_NAME, POLICIES, REGISTRY, speedups, stackconfig
from aiplatform_policies.harness import Fixture, Resource, all_fixtures, options

FIXTURES = all_fixtures()
LEVEL = {
    EnforcementLevel.ADVISORY: proto.ADVISORY,
    EnforcementLevel.MANDATORY: proto.MANDATORY,
    EnforcementLevel.DISABLED: proto.DISABLED,
    EnforcementLevel.REMEDIATE: proto.REMEDIATE,
}


def servicer() -> _PolicyAnalyzerServicer:
    return _PolicyAnalyzerServicer(PACK_NAME, "0.1.0", POLICIES, EnforcementLevel.ADVISORY)


def struct(value: dict) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update(value)
    return result


def configure(svc: _PolicyAnalyzerServicer, stack: str) -> None:
    """Send a stack's config file the way the CLI does: one PolicyConfig per policy."""
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for name, effective in stackconfig.resolve(stackconfig.load(stack)).items():
        request.policyConfig[name].CopyFrom(
            analyzer_pb2.PolicyConfig(
                enforcementLevel=LEVEL[effective.level], properties=struct(effective.properties)
            )
        )
    svc.Configure(request, None)


def configure_only(svc: _PolicyAnalyzerServicer, fixture: Fixture) -> None:
    """Enable just the fixture's policy (with its config), disable the rest."""
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for name in REGISTRY:
        enabled = name == fixture.policy
        request.policyConfig[name].CopyFrom(
            analyzer_pb2.PolicyConfig(
                enforcementLevel=proto.MANDATORY if enabled else proto.DISABLED,
                properties=struct(fixture.config if enabled else {}),
            )
        )
    svc.Configure(request, None)


def analyze_request(resource: Resource, inputs: dict | None = None) -> analyzer_pb2.AnalyzeRequest:
    request = analyzer_pb2.AnalyzeRequest(
        type=resource.type,
        properties=struct(inputs if inputs is not None else resource.inputs),
        urn=resource.urn,
        name=resource.name,
        options=analyzer_pb2.AnalyzerResourceOptions(protect=options(resource).protect),
    )
    if resource.provider is not None:
        request.provider.CopyFrom(
            analyzer_pb2.AnalyzerProviderResource(
                type="pulumi:providers:kubernetes",
                properties=struct(resource.provider),
                urn="urn:pulumi:test::ai-platform::pulumi:providers:kubernetes::k8s",
                name="k8s",
            )
        )
    return request


def stack_request(fixture: Fixture) -> analyzer_pb2.AnalyzeStackRequest:
    return analyzer_pb2.AnalyzeStackRequest(
        resources=[
            analyzer_pb2.AnalyzerResource(
                type=r.type,
                properties=struct(r.inputs),
                urn=r.urn,
                name=r.name,
                options=analyzer_pb2.AnalyzerResourceOptions(protect=r.protect),
            )
            for r in fixture.resources
        ]
    )


def diagnostics(
    svc: _PolicyAnalyzerServicer, fixture: Fixture
) -> Iterator[analyzer_pb2.AnalyzeDiagnostic]:
    for resource in fixture.resources:
        yield from svc.Analyze(analyze_request(resource), None).diagnostics
    yield from svc.AnalyzeStack(stack_request(fixture), None).diagnostics


@pytest.fixture(params=[False, True], ids=["sdk", "speedups"])
def mode(request: pytest.FixtureRequest) -> Iterator[bool]:
    if request.param:
        assert speedups.install()
    yield request.param
    speedups.uninstall()


def test_analyzer_info_describes_every_policy() -> None:
    info = servicer().GetAnalyzerInfo(None, None)
    assert info.name == PACK_NAME and info.supportsConfig
    by_name = {p.name: p for p in info.policies}
    assert list(by_name) == [p.name for p in POLICIES]
    for name, meta in REGISTRY.items():
        policy = by_name[name]
        assert policy.description == meta.policy.description
        assert policy.remediation_steps == meta.remediation
        assert policy.severity != proto.POLICY_SEVERITY_UNSPECIFIED
        assert policy.enforcementLevel == LEVEL[meta.default_level]
        assert policy.policy_type == (
            proto.PolicyType.POLICY_TYPE_STACK
            if meta.stack
            else proto.PolicyType.POLICY_TYPE_RESOURCE
        )


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_fixture_through_the_analyzer(fixture: Fixture, mode: bool) -> None:
    svc = servicer()
    configure_only(svc, fixture)
    found = list(diagnostics(svc, fixture))
    description = REGISTRY[fixture.policy].policy.description
    assert [d.message for d in found] == [f"{description}\n{m}" for m in fixture.expect]
    assert all(
        d.policyName == fixture.policy and d.enforcementLevel == proto.MANDATORY for d in found
    )


def test_speedups_change_nothing_the_engine_sees() -> None:
    """Every fixture under the dev and prod configs: byte-identical responses in both modes."""

    def responses() -> list[bytes]:
        out = []
        for stack in ("dev", "prod"):
            svc = servicer()
            configure(svc, stack)
            for fixture in FIXTURES:
                for resource in fixture.resources:
                    out.append(svc.Analyze(analyze_request(resource), None).SerializeToString())
                out.append(svc.AnalyzeStack(stack_request(fixture), None).SerializeToString())
        return out

    plain = responses()
    assert speedups.install()
    try:
        fast = responses()
    finally:
        speedups.uninstall()
    assert plain == fast


def test_stack_configs_set_levels_and_properties() -> None:
    fixture = next(f for f in FIXTURES if f.id == "pss-restricted/disallowed-no-security-context")
    for stack, level in (("dev", proto.ADVISORY), ("prod", proto.MANDATORY)):
        svc = servicer()
        configure(svc, stack)
        found = [d for d in diagnostics(svc, fixture) if d.policyName == "pss-restricted"]
        assert found and all(d.enforcementLevel == level for d in found)
    hpa = next(f for f in FIXTURES if f.id == "hpa-replica-bounds/allowed-default-floor")
    svc = servicer()
    configure(svc, "prod")
    found = [d for d in diagnostics(svc, hpa) if d.policyName == "hpa-replica-bounds"]
    assert [d.message.split("\n")[1] for d in found] == [
        'HorizontalPodAutoscaler "llm-serve" has no minReplicas (1), below the required '
        "minimum of 2"
    ]


def test_unknown_inputs_become_preview_advisories(mode: bool) -> None:
    job = next(
        f
        for f in FIXTURES
        if f.id == "gpu-limits-match-requests/disallowed-request-not-equal-limit"
    )
    resource = job.resources[0]
    inputs = dict(resource.inputs)
    inputs["spec"] = {**inputs["spec"], "template": UNKNOWN_STRING_VALUE}
    svc = servicer()
    configure(svc, "prod")
    found = list(svc.Analyze(analyze_request(resource, inputs), None).diagnostics)
    assert found, "policies that read the pod template must say they could not run"
    for diagnostic in found:
        if "can't run policy" in diagnostic.message:
            assert diagnostic.enforcementLevel == proto.ADVISORY
            assert "during preview" in diagnostic.message
    names = {d.policyName for d in found if "can't run policy" in d.message}
    assert "gpu-limits-match-requests" in names and "pss-baseline" in names
