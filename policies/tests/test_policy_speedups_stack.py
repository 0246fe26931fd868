"""``speedups``' own ``AnalyzeStack`` against the SDK's, on a stack with the links the fixtures
lack: parents, dependencies, property dependencies and one provider shared by every resource."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2
from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy
from pulumi_policy.policy import _PolicyAnalyzerServicer
from test_policy_analyzer import configure, servicer

from aiplatform_policies import PACK_NAME, POLICIES, speedups
from aiplatform_policies.harness import FIXTURES, STACK, all_fixtures

PROVIDER = f"urn:pulumi:{STACK}::ai-platform::pulumi:providers:kubernetes::k8s"


def _struct(value: dict) -> struct_pb2.Struct:
    result = struct_pb2.Struct()
    result.update(value)
    return result


def linked_stack() -> analyzer_pb2.AnalyzeStackRequest:
    """Every fixture resource once, each fixture under a component parent, chained by deps."""
    resources = []
    provider = analyzer_pb2.AnalyzerProviderResource(
        type="pulumi:providers:kubernetes",
        properties=_struct({"context": "lab-admin", "enableServerSideApply": "true"}),
        urn=PROVIDER,
        name="k8s",
    )
    seen: set[str] = set()
    for index, fixture in enumerate(all_fixtures()):
        parent = f"urn:pulumi:{STACK}::ai-platform::aiplatform:test:Fixture::f{index}"
        resources.append(
            analyzer_pb2.AnalyzerResource(type="aiplatform:test:Fixture", urn=parent, name="f")
        )
        previous = parent
        for resource in fixture.resources:
            urn = f"{resource.urn}-{index}"
            if urn in seen:
                continue
            seen.add(urn)
            item = analyzer_pb2.AnalyzerResource(
                type=resource.type,
                properties=_struct(resource.inputs),
                urn=urn,
                name=resource.name,
                parent=parent,
                dependencies=[previous],
                options=analyzer_pb2.AnalyzerResourceOptions(
                    protect=resource.protect, parent=parent
                ),
            )
            item.provider.CopyFrom(provider)
            item.propertyDependencies["metadata"].urns.append(previous)
            resources.append(item)
            previous = urn
    return analyzer_pb2.AnalyzeStackRequest(resources=resources)


def test_stack_analysis_is_byte_identical_with_links() -> None:
    assert FIXTURES.is_dir()
    request = linked_stack()

    def responses() -> list[bytes]:
        out = []
        for stack in ("dev", "prod"):
            svc = servicer()
            configure(svc, stack)
            out.append(svc.AnalyzeStack(request, None).SerializeToString())
        return out

    plain = responses()
    assert speedups.install()
    try:
        fast = responses()
    finally:
        speedups.uninstall()
    assert plain == fast
    assert any(analyzer_pb2.AnalyzeResponse.FromString(r).diagnostics for r in plain)


def _plain(value: Any) -> Any:
    """Proxies (and what they wrap) as plain dicts and lists, so views compare by value."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(item) for item in value]
    return value


def _view(resource: Any) -> tuple:
    """Everything a stack policy can read from one resource, as plain data."""
    opts, provider = resource.opts, resource.provider
    return (
        resource.resource_type,
        resource.urn,
        resource.name,
        _plain(resource.props),
        (opts.protect, opts.parent, tuple(opts.ignore_changes), opts.delete_before_replace),
        None
        if provider is None
        else (provider.resource_type, provider.urn, _plain(provider.props)),
        None if resource.parent is None else resource.parent.urn,
        [d.urn for d in resource.dependencies],
        {k: [d.urn for d in v] for k, v in resource.property_dependencies.items()},
    )


def test_every_stack_policy_sees_the_sdks_resources() -> None:
    request = linked_stack()

    def seen() -> list[list[tuple]]:
        views: list[list[tuple]] = []

        def probe(args: StackValidationArgs, report: Any) -> None:
            views.append([_view(r) for r in args.resources])

        probes = [
            StackValidationPolicy(name=f"probe-{i}", description="probe", validate=probe)
            for i in range(2)
        ]
        svc = _PolicyAnalyzerServicer(
            PACK_NAME, "0.1.0", [*POLICIES, *probes], EnforcementLevel.ADVISORY
        )
        svc.AnalyzeStack(request, None)
        return views

    plain = seen()
    assert speedups.install()
    try:
        fast = seen()
    finally:
        speedups.uninstall()
    assert len(plain) == 2 and plain == fast
    assert any(view[6] for view in plain[0]) and any(view[7] for view in plain[0])
