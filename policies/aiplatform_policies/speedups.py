"""Decode a resource's props once per RPC instead of once per policy, and decode them faster.

Why: pulumi-policy's analyzer servicer converts the request's protobuf Struct to Python
(``json_format.MessageToDict`` → ``deserialize_properties`` → ``unknown_checking_proxy``) inside
its per-policy loop. With ~35 policies that conversion is >90% of the pack's run time and caps
``Analyze`` at ~330 resources/s, and ``AnalyzeStack`` redoes every resource for every stack
policy. The result of each step depends only on its input object, and policies never mutate
props, so the same converted object can be handed to every policy of one RPC.

How: :func:`install` wraps the servicer's ``Analyze`` and ``AnalyzeStack`` so that, for the
duration of one call on one thread, the three module-level functions the servicer uses return
the previous result for the *same input object* (identity, with the input kept alive so its id
cannot be reused), and so do its ``_get_resource_options`` and ``_get_provider_resource``
helpers (per request; the provider also per identical provider message, since ``AnalyzeStack``
carries one copy of it per resource). ``MessageToDict`` of a ``Struct`` takes a direct
recursive path with the same result as protobuf's generic printer, at about a third of its cost
(the printer dispatches on field descriptors for every value). ``AnalyzeStack`` builds the
stack's ``PolicyResource`` list once and hands every stack policy its own list of those objects;
the SDK rebuilds and relinks all of them for each stack policy. Outside those calls, and for
``Remediate`` (which writes to props), nothing changes. Everything the SDK reports is
identical (``policies/tests/test_policy_analyzer.py`` compares the serialized responses of both
modes).

It relies on SDK internals, so it runs only on the pulumi-policy release it was verified
against (:data:`VERIFIED_PULUMI_POLICY`, pinned in policies/requirements.txt); on any other it
says so in one line on stderr and leaves the SDK as it is. Set
``AIPLATFORM_POLICY_NO_SPEEDUPS=1`` to turn it off.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any, cast

from google.protobuf import struct_pb2

_local = threading.local()
_originals: dict[str, Any] = {}
ENV_OFF = "AIPLATFORM_POLICY_NO_SPEEDUPS"
VERIFIED_PULUMI_POLICY = "1.21.0"
"""The pulumi-policy release whose internals this module was checked against (the tests of
both modes pass on it). Another release gets the SDK unchanged until someone verifies it."""


def sdk_version() -> str | None:
    """The installed pulumi-policy release, or ``None`` if it has no distribution metadata."""
    try:
        return metadata.version("pulumi-policy")
    except metadata.PackageNotFoundError:
        return None


def rpc_cache() -> dict[Any, Any] | None:
    """The cache of the RPC running on this thread, or ``None`` outside a scoped RPC.

    Policies may memoise per-resource work in it keyed by ``(tag, id(props))``, storing the props
    object alongside the value (so the id cannot be reused while the entry lives).
    """
    cache: dict[Any, Any] | None = getattr(_local, "cache", None)
    return cache


def _memoized(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Single-argument calls reuse the result for the same input object within one RPC."""

    @functools.wraps(fn)
    def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        cache = rpc_cache()
        if cache is None or args or kwargs:
            return fn(obj, *args, **kwargs)
        key = (wrapper, id(obj))
        hit = cache.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        result = fn(obj)
        cache[key] = (obj, result)
        return result

    return wrapper


def _value_to_python(value: Any) -> Any:
    """One ``google.protobuf.Value`` as ``json_format`` renders it (same types, same errors)."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "struct_value":
        return _struct_to_dict(value.struct_value)
    if kind == "number_value":
        number = value.number_value
        if math.isinf(number):
            raise ValueError(
                "Fail to serialize Infinity for Value.number_value, which would parse as "
                "string_value"
            )
        if math.isnan(number):
            raise ValueError(
                "Fail to serialize NaN for Value.number_value, which would parse as string_value"
            )
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "list_value":
        return [_value_to_python(item) for item in value.list_value.values]
    return None  # null_value, or no kind set


def _struct_to_dict(message: Any) -> dict[str, Any]:
    fields = message.fields
    return {key: _value_to_python(fields[key]) for key in fields}


_STRUCT = struct_pb2.Struct.DESCRIPTOR.full_name


def _fast_message_to_dict(real: Callable[..., Any]) -> Callable[..., Any]:
    """``MessageToDict`` with a direct path for plain ``Struct`` calls (all the SDK makes)."""

    @functools.wraps(real)
    def message_to_dict(message: Any, *args: Any, **kwargs: Any) -> Any:
        descriptor = getattr(message, "DESCRIPTOR", None)
        if args or kwargs or descriptor is None or descriptor.full_name != _STRUCT:
            return real(message, *args, **kwargs)
        return _struct_to_dict(message)

    return message_to_dict


class _JsonFormat:
    """Stands in for ``google.protobuf.json_format`` inside the SDK module only."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.MessageToDict = _memoized(_fast_message_to_dict(real.MessageToDict))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _per_request(method: Callable[..., Any]) -> Callable[..., Any]:
    """A servicer helper ``(self, request)`` that reuses its result for the same request."""

    @functools.wraps(method)
    def wrapper(self: Any, request: Any) -> Any:
        cache = rpc_cache()
        if cache is None:
            return method(self, request)
        key = (wrapper, id(request))
        hit = cache.get(key)
        if hit is not None and hit[0] is request:
            return hit[1]
        result = method(self, request)
        cache[key] = (request, result)
        return result

    return wrapper


def _per_provider(method: Callable[..., Any]) -> Callable[..., Any]:
    """``_get_provider_resource``, once per request and once per distinct provider message.

    ``AnalyzeStack`` repeats the provider's full message in every resource; equal messages give
    equal results, so the first one's result serves all of them.
    """

    @functools.wraps(method)
    def wrapper(self: Any, request: Any) -> Any:
        cache = rpc_cache()
        if cache is None or not request.HasField("provider"):
            return method(self, request)
        key = (wrapper, request.provider.SerializeToString(deterministic=True))
        if key not in cache:
            cache[key] = method(self, request)
        return cache[key]

    return _per_request(wrapper)


_HELPERS = {"_get_resource_options": _per_request, "_get_provider_resource": _per_provider}


def _stack_resources(servicer: Any, request: Any, sdk: Any) -> list[Any]:
    """The ``PolicyResource`` list the SDK's ``AnalyzeStack`` builds, linked the same way."""
    built: list[tuple[Any, str, list[str], dict[str, list[str]]]] = []
    for r in request.resources:
        props = sdk.unknown_checking_proxy(
            sdk.deserialize_properties(sdk.json_format.MessageToDict(r.properties))
        )
        resource = sdk.PolicyResource(
            r.type,
            props,
            r.urn,
            r.name,
            servicer._get_resource_options(r),
            servicer._get_provider_resource(r),
            None,
            [],
            {},
        )
        property_dependencies = {k: list(v.urns) for k, v in r.propertyDependencies.items()}
        built.append((resource, r.parent, list(r.dependencies), property_dependencies))
    by_urn = {resource.urn: resource for resource, *_ in built}
    for resource, parent, dependencies, property_dependencies in built:
        if parent is not None and parent in by_urn:
            resource.parent = by_urn[parent]
        resource.dependencies.extend(by_urn[d] for d in dependencies if d in by_urn)
        for key, urns in property_dependencies.items():
            resource.property_dependencies[key] = [by_urn[d] for d in urns if d in by_urn]
    return [resource for resource, *_ in built]


def _analyze_stack(original: Callable[..., Any]) -> Callable[..., Any]:
    """The SDK's ``AnalyzeStack``, building the stack's resources once instead of per policy.

    Same policy loop, levels, violations, unknown-value advisories and not-applicable reasons as
    pulumi-policy 1.21's (``policy.py``); each policy gets its own list of the shared resources.
    Falls back to the SDK's own method when the servicer lacks the attributes it reads.
    """
    from pulumi_policy import policy as sdk

    prefix = "_PolicyAnalyzerServicer__"
    attributes = ("policies", "stack_tags", "policy_pack_name", "policy_pack_version")

    @functools.wraps(original)
    def analyze_stack(self: Any, request: Any, context: Any) -> Any:
        if not all(hasattr(self, prefix + name) for name in attributes):
            return original(self, request, context)
        pack_name = getattr(self, prefix + "policy_pack_name")
        pack_version = getattr(self, prefix + "policy_pack_version")
        self._configure_runtime_settings()
        response = sdk.proto.AnalyzeResponse()
        resources: list[Any] | None = None
        for policy in getattr(self, prefix + "policies"):
            level = self._get_enforcement_level(policy)
            if level == sdk.EnforcementLevel.DISABLED or not isinstance(
                policy, sdk.StackValidationPolicy
            ):
                continue
            if level == sdk.EnforcementLevel.REMEDIATE:
                level = sdk.EnforcementLevel.MANDATORY
            report_violation = self._create_report_violation(
                response, policy.name, policy.description, level, policy.severity
            )
            if resources is None:
                resources = _stack_resources(self, request, sdk)
            config = self._get_policy_config(policy.name)
            args = sdk.StackValidationArgs(
                list(resources), config, getattr(self, prefix + "stack_tags")
            )
            try:
                result: Any = policy.validate(args, report_violation)
                if sdk.isawaitable(result):
                    loop = sdk.asyncio.new_event_loop()
                    task = sdk.asyncio.Task(cast(Any, result), loop=loop)
                    loop.run_until_complete(task)
                    loop.close()
            except sdk.UnknownValueError as e:
                response.diagnostics.append(
                    sdk.proto.AnalyzeDiagnostic(
                        policyName=policy.name,
                        policyPackName=pack_name,
                        policyPackVersion=pack_version,
                        message=(
                            f"can't run policy '{policy.name}' from policy pack "
                            f"'{pack_name}@v{pack_version}' during preview: {e.message}"
                        ),
                        urn="",
                        description=policy.description,
                        enforcementLevel=self._map_enforcement_level(sdk.EnforcementLevel.ADVISORY),
                    )
                )
            except sdk._NotApplicableError as e:
                response.not_applicable.append(
                    sdk.proto.PolicyNotApplicable(policy_name=policy.name, reason=e.reason or "")
                )
        return response

    return analyze_stack


def _scoped(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, request: Any, context: Any) -> Any:
        _local.cache = {}
        try:
            return method(self, request, context)
        finally:
            _local.cache = None

    return run


def install() -> bool:
    """Install the per-RPC conversion cache into pulumi-policy; ``True`` if it is active."""
    if _originals:
        return True
    if os.environ.get(ENV_OFF):
        return False
    version = sdk_version()
    if version != VERIFIED_PULUMI_POLICY:
        print(
            f"warning: policy pack speedups off: pulumi-policy {version} is not "
            f"{VERIFIED_PULUMI_POLICY}, the release they were verified against",
            file=sys.stderr,
        )
        return False
    from pulumi_policy import policy as sdk

    servicer = getattr(sdk, "_PolicyAnalyzerServicer", None)
    needed = ("json_format", "deserialize_properties", "unknown_checking_proxy")
    stack_names = (
        "PolicyResource",
        "StackValidationArgs",
        "StackValidationPolicy",
        "EnforcementLevel",
        "UnknownValueError",
        "_NotApplicableError",
        "isawaitable",
        "asyncio",
        "proto",
    )
    if servicer is None or not all(hasattr(sdk, name) for name in (*needed, *stack_names)):
        return False
    methods = ("Analyze", "AnalyzeStack", *_HELPERS)
    if not all(callable(getattr(servicer, m, None)) for m in methods):
        return False
    _originals.update({name: getattr(sdk, name) for name in needed})
    _originals.update({method: getattr(servicer, method) for method in methods})
    sdk.json_format = _JsonFormat(sdk.json_format)
    sdk.deserialize_properties = _memoized(sdk.deserialize_properties)
    sdk.unknown_checking_proxy = _memoized(sdk.unknown_checking_proxy)
    servicer.Analyze = _scoped(servicer.Analyze)
    servicer.AnalyzeStack = _scoped(_analyze_stack(servicer.AnalyzeStack))
    for method, wrap in _HELPERS.items():
        setattr(servicer, method, wrap(getattr(servicer, method)))
    return True


def uninstall() -> None:
    """Restore the SDK as it was (tests compare both modes in one process)."""
    if not _originals:
        return
    from pulumi_policy import policy as sdk

    servicer = sdk._PolicyAnalyzerServicer
    for method in ("Analyze", "AnalyzeStack", *_HELPERS):
        setattr(servicer, method, _originals.pop(method))
    for name, value in _originals.items():
        setattr(sdk, name, value)
    _originals.clear()
