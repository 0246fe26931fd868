"""Run policies on fixture manifests exactly as the policy SDK's analyzer would, in-process.

For the pack's tests and the platform's (which run the pack on what the program renders).

Props and config travel through a protobuf ``Struct`` (so integers become floats, as on the
wire), then ``deserialize_properties`` and the SDK's unknown-value proxy; stack policies get
``PolicyResource`` objects built like the SDK's ``AnalyzeStack`` builds them.

Fixture format (``fixtures/<policy-name>/{allowed,disallowed}-*.yaml``), one YAML document::

    description: what the case shows            # optional
    config: {maxGpusPerPod: 4}                  # optional policy properties
    resources:                                  # manifests, or wrappers around one
      - {apiVersion: v1, kind: Pod, ...}
      - manifest: {apiVersion: v1, kind: PersistentVolumeClaim, ...}
        options: {protect: true}                # optional resource options
        provider: {namespace: team-a}           # optional provider inputs
    expect:                                     # exact messages, in order; [] when allowed
      - 'container "trainer" requests 2 nvidia.com/gpu but its limit is 4; ...'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from google.protobuf import json_format, struct_pb2
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import unknown_checking_proxy

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
"""The pack's fixture files (tests/fixtures beside this package)."""
STACK = "test"


@dataclass
class Resource:
    """One resource of a fixture, in the shape the analyzer protocol carries."""

    type: str
    name: str
    inputs: dict[str, Any]
    protect: bool = False
    provider: dict[str, Any] | None = None

    @property
    def urn(self) -> str:
        return f"urn:pulumi:{STACK}::ai-platform::{self.type}::{self.name}"


@dataclass
class Fixture:
    path: Path
    policy: str
    allowed: bool
    resources: list[Resource]
    config: dict[str, Any] = field(default_factory=dict)
    expect: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.policy}/{self.path.stem}"


def type_token(manifest: Mapping[str, Any]) -> str:
    """``kubernetes:<group>/<version>:<Kind>`` from apiVersion and kind (core group: ``core``)."""
    api_version = str(manifest["apiVersion"])
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{manifest['kind']}"


def parse_resource(item: Mapping[str, Any]) -> Resource:
    manifest = item.get("manifest", item)
    options = item.get("options", {}) if "manifest" in item else {}
    provider = item.get("provider") if "manifest" in item else None
    name = str(
        item.get("name") or manifest.get("metadata", {}).get("name") or manifest["kind"].lower()
    )
    return Resource(
        type=str(item.get("type") or type_token(manifest)),
        name=name,
        inputs=dict(manifest),
        protect=bool(options.get("protect", False)),
        provider=provider,
    )


def load_fixture(path: Path) -> Fixture:
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("resources"), list):
        raise ValueError(f"{path}: expected a mapping with a 'resources' list")
    unknown = set(doc) - {"description", "config", "resources", "expect"}
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    return Fixture(
        path=path,
        policy=path.parent.name,
        allowed=path.name.startswith("allowed-"),
        resources=[parse_resource(r) for r in doc["resources"]],
        config=doc.get("config") or {},
        expect=list(doc.get("expect") or []),
    )


def all_fixtures() -> list[Fixture]:
    return [load_fixture(p) for p in sorted(FIXTURES.glob("*/*.yaml"))]


# --- the wire -------------------------------------------------------------------------------------
def wire(value: Mapping[str, Any]) -> dict[str, Any]:
    """What the analyzer gets after the engine marshals ``value`` into a Struct."""
    struct = struct_pb2.Struct()
    struct.update(value)
    return deserialize_properties(json_format.MessageToDict(struct))


def proxied(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return unknown_checking_proxy(wire(value))


def options(resource: Resource) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        resource.protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None
    )


def provider(resource: Resource) -> PolicyProviderResource | None:
    if resource.provider is None:
        return None
    return PolicyProviderResource(
        "pulumi:providers:kubernetes",
        proxied(resource.provider),
        f"urn:pulumi:{STACK}::ai-platform::pulumi:providers:kubernetes::k8s",
        "k8s",
    )


def _described(
    resource: Resource, inputs: dict[str, Any] | None
) -> tuple[str, Mapping[str, Any], str, str, PolicyResourceOptions, PolicyProviderResource | None]:
    """What the SDK's resource arguments and stack resources both start with."""
    props = unknown_checking_proxy(inputs) if inputs is not None else proxied(resource.inputs)
    return (
        resource.type,
        props,
        resource.urn,
        resource.name,
        options(resource),
        provider(resource),
    )


def resource_args(
    resource: Resource, config: Mapping[str, Any], inputs: dict[str, Any] | None = None
) -> ResourceValidationArgs:
    return ResourceValidationArgs(*_described(resource, inputs), wire(config) if config else None)


def policy_resource(resource: Resource, inputs: dict[str, Any] | None = None) -> PolicyResource:
    return PolicyResource(*_described(resource, inputs), None, [], {})


def run(policy: ResourceValidationPolicy | StackValidationPolicy, fixture: Fixture) -> list[str]:
    """Messages the policy reports for the fixture, in order."""
    messages: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        messages.append(message)

    if isinstance(policy, StackValidationPolicy):
        resources = [policy_resource(r) for r in fixture.resources]
        config = wire(fixture.config) if fixture.config else None
        policy.validate(StackValidationArgs(resources, config), report)
    else:
        for resource in fixture.resources:
            policy.validate(resource_args(resource, fixture.config), report)
    return messages


def iter_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a node (mappings, lists and leaves) below the root."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield (*prefix, key)
            yield from iter_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from iter_paths(item, (*prefix, index))
