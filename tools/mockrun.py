"""Run the real Pulumi program under Pulumi's mock runtime and capture every resource.

Shared by the offline preview and the tests. Each run gets a fresh event loop, fresh runtime
settings and a fresh import of our own packages, so no state leaks between runs.

The cyclic garbage collector is off during a run (``components.collector``): the SDK allocates
millions of containers per thousand resources, nearly all freed by their reference counts, and
each collection rescanned the survivors; with the collector merely slowed down, its passes still
took a fifth of a 1,000-workload run and grew faster than the stack. The cycles a run leaves
(its futures and Outputs) are collected later, with the rest of the heap: the run holds about a
tenth more memory meanwhile (docs/performance.md).

Two things the SDK does for the engine are skipped, since the mock monitor has no use for them:
the stack walk that gives each registration its source position, and deserializing a
registration's inputs twice and serializing them back when the mocks echo them unchanged. On
prod they were a fifth of the program's run; the program's resources and outputs are the same.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import pulumi
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor, MockResourceArgs, Mocks, _resolve_callbacks
from pulumi.runtime.proto import resource_pb2, source_pb2
from pulumi.runtime.sync_await import _sync_await

from components.collector import collector_paused
from components.constants import PROJECT

from .records import SECRET_MARK, UNKNOWN_MARK

T = TypeVar("T")

STACK_TYPE = "pulumi:pulumi:Stack"
OUR_PACKAGES = ("infra", "components")
"""Our import roots: purged before each run so module state cannot leak between runs."""
STACK_TRACE_FUNCTION = "_get_stack_trace"
"""The SDK's (``pulumi.runtime.resource``) source-position walk, skipped under mocks."""
_runs = 0


@dataclass
class CapturedResource:
    """One registered resource with its inputs and the options the engine would see."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str
    inputs: dict[str, Any]
    options: dict[str, Any]
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    secret_paths: list[str] = field(default_factory=list)

    @property
    def is_kubernetes_object(self) -> bool:
        return (
            self.custom
            and self.type.startswith("kubernetes:")
            and "kind" in self.inputs
            and "apiVersion" in self.inputs
        )

    @property
    def kind(self) -> str:
        return str(self.inputs.get("kind", ""))

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.inputs.get("metadata")
        return meta if isinstance(meta, dict) else {}

    def to_record(self) -> dict[str, Any]:
        """The JSON form documented in docs/resource-records.md."""
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "custom": self.custom,
            "parent": self.parent,
            "inputs": self.inputs,
            "options": self.options,
            "propertyDependencies": self.property_dependencies,
        }


def _redact(value: Any, path: str, secret_paths: list[str]) -> Any:
    if rpc.is_rpc_secret(value):
        secret_paths.append(path)
        return SECRET_MARK
    if value is rpc.UNKNOWN or value == rpc.UNKNOWN:
        return UNKNOWN_MARK
    if isinstance(value, dict):
        if rpc._special_sig_key in value:  # resource references and other special values
            return {k: v for k, v in value.items() if k != rpc._special_sig_key}
        return {k: _redact(v, f"{path}.{k}" if path else k, secret_paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, f"{path}[{i}]", secret_paths) for i, v in enumerate(value)]
    if isinstance(value, float) and value.is_integer():
        # The wire format has only doubles; a manifest's 53 must not come back as 53.0.
        return int(value)
    return value


class CapturingMonitor(MockMonitor):
    """A mock monitor that also records resource options, which ``MockResourceArgs`` lacks."""

    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.captured: list[CapturedResource] = []

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        """URNs as the engine makes them: the root stack's type is not part of its children's
        (the SDK's mock prefixes it, so offline URNs would differ from ``pulumi up``'s)."""
        if parent.split("::")[2:3] == [STACK_TYPE]:
            parent = ""
        return super().make_urn(parent, type_, name)

    def RegisterResource(self, request: resource_pb2.RegisterResourceRequest) -> Any:  # noqa: N802
        """What the SDK's mock monitor does, with the inputs deserialized once (for the capture
        and the mocks alike) and, when the mocks echo them unchanged, answered with the
        request's own Struct instead of serializing them back: 2 of the 3 conversions a
        registration cost. Mocks must return a new state, not change ``args.inputs`` in place."""
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == STACK_TYPE:
            return resource_pb2.RegisterResourceResponse(urn=urn)
        raw = rpc.deserialize_properties(request.object, keep_unknowns=True)
        secret_paths: list[str] = []
        self.captured.append(
            CapturedResource(
                urn=urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent=request.parent,
                inputs=_redact(raw, "", secret_paths),
                options=_options(request),
                property_dependencies={
                    key: list(deps.urns) for key, deps in request.propertyDependencies.items()
                },
                secret_paths=secret_paths,
            )
        )
        resource_id, state = self.mocks.new_resource(
            MockResourceArgs(
                typ=request.type,
                name=request.name,
                inputs=raw,
                provider=request.provider,
                resource_id=request.importId,
                custom=request.custom or False,
                transforms=_resolve_callbacks(request.transforms) if request.transforms else [],
            )
        )
        resource_id = resource_id or ""  # what the wire format makes of an id left out
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, resource_id, state)
        echoed = state == raw
        body = request.object if echoed else _sync_await(rpc.serialize_properties(state, {}))
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=body)


def _options(request: resource_pb2.RegisterResourceRequest) -> dict[str, Any]:
    return {
        "protect": bool(request.protect),
        "retainOnDelete": bool(request.retainOnDelete),
        "dependsOn": list(request.dependencies),
        "provider": request.provider,
        "deleteBeforeReplace": bool(request.deleteBeforeReplace),
        "ignoreChanges": list(request.ignoreChanges),
        "replaceOnChanges": list(request.replaceOnChanges),
        "additionalSecretOutputs": list(request.additionalSecretOutputs),
        "customTimeouts": {
            "create": request.customTimeouts.create,
            "update": request.customTimeouts.update,
            "delete": request.customTimeouts.delete,
        }
        if request.HasField("customTimeouts")
        else None,
    }


class PlatformMocks(Mocks):
    """Echo inputs back as state, as a provider's Create would for declarative resources."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "pulumi:pulumi:StackReference":
            state.setdefault("outputs", {})
        meta = state.get("metadata")
        if isinstance(meta, dict) and meta.get("name"):
            namespace = meta.get("namespace")
            resource_id = f"{namespace}/{meta['name']}" if namespace else str(meta["name"])
        else:
            resource_id = f"{args.name}-id"
        return resource_id, state

    def call(self, args: Any) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


@dataclass
class MockRun(Generic[T]):
    """What a program run under mocks produced."""

    resources: list[CapturedResource]
    value: T

    def by_type(self, type_token: str) -> list[CapturedResource]:
        return [r for r in self.resources if r.type == type_token]

    def kubernetes_objects(self) -> list[CapturedResource]:
        return [r for r in self.resources if r.is_kubernetes_object]

    def find(self, kind: str, name: str, namespace: str | None = None) -> CapturedResource:
        """The Kubernetes object of that kind and name; fails loudly when absent or ambiguous."""
        matches = [
            r
            for r in self.kubernetes_objects()
            if r.kind == kind
            and r.metadata.get("name") == name
            and (namespace is None or r.metadata.get("namespace") == namespace)
        ]
        if len(matches) != 1:
            raise LookupError(
                f"expected one {kind} {namespace or '*'}/{name}, found {len(matches)}"
            )
        return matches[0]


def runs_in_process() -> int:
    """How many programs this process has run under mocks (started, whether or not they failed).

    Before the first run our modules hold nothing a run left behind, so a caller that runs one
    program per process (the preview) can skip the purge and the second import it costs.
    """
    return _runs


def _purge_our_modules() -> None:
    for module in list(sys.modules):
        if module.split(".")[0] in OUR_PACKAGES:
            del sys.modules[module]


def run_under_mocks(
    program: Callable[[], T],
    *,
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str] | None = None,
    project: str = PROJECT,
    fresh_modules: bool = True,
    mocks: Mocks | None = None,
    root_directory: Path | None = None,
) -> MockRun[T]:
    """Run ``program`` (which imports what it needs) as ``pulumi up`` would, with mocks.

    ``root_directory`` is the project folder the engine would report (``Pulumi.yaml``'s, the
    stack file's: workload files are read from it); default the working directory. The SDK's
    mocks leave a placeholder there.

    ``preview=False`` so every ``apply`` runs: a preview leaves values unknown and lets
    assertions pass vacuously. ``mocks`` replaces :class:`PlatformMocks` (e.g. to give a
    generated password a known value that tests can then search for).
    """
    global _runs
    if fresh_modules:
        _purge_our_modules()
    _runs += 1
    root = root_directory or Path.cwd()
    with collector_paused(), _no_source_positions():
        return _run(program, stack, config, secret_keys, project, mocks or PlatformMocks(), root)


@contextmanager
def heap_frozen() -> Iterator[None]:
    """The collector leaves alone everything alive on entry, until the block ends.

    Why: after a run, the preview's steps read its resources and make little that outlives
    them, but the policy step's allocations start full collections that rescan the whole run:
    1.5 s of a 1,000-workload preview's render step (docs/performance.md).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _empty_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


@contextmanager
def _no_source_positions() -> Iterator[None]:
    """Registrations carry no source position during the run.

    Why: at each registration the SDK walks the whole Python stack and turns every frame into a
    file URI, to tell the engine where the resource was declared; the mock monitor drops it.
    The SDK function is private: ``tests/test_mockrun.py`` fails when a release renames it.
    """
    original = getattr(sdk_resource, STACK_TRACE_FUNCTION, None)
    if original is None:
        yield
        return
    setattr(sdk_resource, STACK_TRACE_FUNCTION, _empty_stack_trace)
    try:
        yield
    finally:
        setattr(sdk_resource, STACK_TRACE_FUNCTION, original)


def _give_thread_a_loop(made: list[asyncio.AbstractEventLoop]) -> None:
    """An executor thread's event loop, remembered so the run can close it.

    Why: the SDK's mock monitor makes one on a thread's first call and never closes it. Left
    open, a loop is closed by the collector whenever it finds it, and if its self-pipe socket
    was finalized first, that close fails inside ``__del__`` ("exception ignored", printed in
    whatever runs at that moment).
    """
    thread_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(thread_loop)
    made.append(thread_loop)


def _run(
    program: Callable[[], T],
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str] | None,
    project: str,
    mocks: Mocks,
    root_directory: Path,
) -> MockRun[T]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    # The mock monitor answers on the loop's executor threads, and each of those needs an event
    # loop of its own: made here, so that they can be closed with the run (below).
    thread_loops: list[asyncio.AbstractEventLoop] = []
    loop.set_default_executor(
        ThreadPoolExecutor(
            thread_name_prefix="asyncio", initializer=_give_thread_a_loop, initargs=(thread_loops,)
        )
    )
    monitor = CapturingMonitor(mocks)
    try:
        pulumi.runtime.set_mocks(
            mocks, project=project, stack=stack, preview=False, monitor=monitor
        )
        pulumi.runtime.settings.SETTINGS.root_directory = str(root_directory)
        pulumi.runtime.set_all_config(dict(config), secret_keys or [])
        box: list[T] = []

        def run() -> None:
            box.append(program())

        from pulumi.runtime.stack import run_pulumi_func

        loop.run_until_complete(run_pulumi_func(run))
        return MockRun(resources=list(monitor.captured), value=box[0])
    finally:
        pulumi.runtime.settings.reset_options()
        loop.run_until_complete(loop.shutdown_default_executor())
        for thread_loop in thread_loops:
            thread_loop.close()
        asyncio.set_event_loop(None)
        loop.close()
