"""The mock-runtime harness leaves nothing behind that could fail later, outside the run."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from pulumi.runtime.mocks import MockResourceArgs

from tools.mockrun import STACK_TRACE_FUNCTION, PlatformMocks, run_under_mocks


def _open_event_loops() -> list[asyncio.AbstractEventLoop]:
    return [
        o
        for o in gc.get_objects()
        if isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed()
    ]


def _config_maps() -> None:
    import pulumi
    import pulumi_kubernetes as k8s

    provider = k8s.Provider("k8s")
    for index in range(20):  # enough registrations to use several executor threads
        k8s.core.v1.ConfigMap(
            f"cm-{index}",
            metadata={"name": f"cm-{index}", "namespace": "default"},
            data={"key": "value"},
            opts=pulumi.ResourceOptions(provider=provider),
        )


def test_every_event_loop_of_a_run_is_closed_when_it_returns() -> None:
    """The mock monitor answers on executor threads, each with an event loop of its own.

    Why: a loop left open is closed by the collector whenever it finds it, and if its self-pipe
    socket was finalized first that close raises inside ``__del__``: an "exception ignored"
    warning in some unrelated later test. The collector is off here so nothing is closed for us.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        before = {id(loop) for loop in _open_event_loops()}
        run = run_under_mocks(_config_maps, stack="dev", config={})
        assert len(run.kubernetes_objects()) == 20
        left_open = [loop for loop in _open_event_loops() if id(loop) not in before]
    finally:
        if enabled:
            gc.enable()
    assert left_open == []


def test_urns_are_the_engines_the_root_stack_type_is_not_in_its_childrens() -> None:
    """The engine leaves the root stack's type out of its children's URNs (and keeps a component
    parent's): the offline report's URNs must be those ``pulumi up`` records."""
    import pulumi

    def program() -> None:
        parent = pulumi.ComponentResource("aiplatform:test:Parent", "outer")
        pulumi.ComponentResource(
            "aiplatform:test:Child", "inner", opts=pulumi.ResourceOptions(parent=parent)
        )

    run = run_under_mocks(program, stack="dev", config={}, fresh_modules=False)
    urns = sorted(r.urn for r in run.resources)
    assert urns == [
        "urn:pulumi:dev::ai-platform::aiplatform:test:Parent$aiplatform:test:Child::inner",
        "urn:pulumi:dev::ai-platform::aiplatform:test:Parent::outer",
    ]


def _data_of_two_config_maps() -> dict[str, Any]:
    """Two ConfigMaps, one with secret data; their ``data`` outputs as the program sees them."""
    import pulumi
    import pulumi_kubernetes as k8s

    provider = k8s.Provider("k8s")
    seen: dict[str, Any] = {}
    for name, data in (("plain", {"key": "value"}), ("secret", pulumi.Output.secret({"k": "s"}))):
        config_map = k8s.core.v1.ConfigMap(
            name,
            metadata={"name": name},
            data=data,
            opts=pulumi.ResourceOptions(provider=provider),
        )

        def remember(pair: list[Any], name: str = name) -> None:
            seen[name] = pair

        pulumi.Output.all(config_map.data, pulumi.Output.is_secret(config_map.data)).apply(remember)
    return seen


class ChangingMocks(PlatformMocks):
    """A provider that answers the ``plain`` ConfigMap with data of its own."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.name == "plain":
            state = {**state, "data": {"key": "from the provider"}}
        return resource_id, state


def test_outputs_are_what_the_mocks_answer_echoed_or_changed() -> None:
    """Echoed inputs come back from the request itself, changed ones serialized: the program sees
    the mocks' answer in both cases, and a secret input stays a secret output."""
    echoed = run_under_mocks(_data_of_two_config_maps, stack="dev", config={}).value
    assert echoed == {"plain": [{"key": "value"}, False], "secret": [{"k": "s"}, True]}

    changed = run_under_mocks(
        _data_of_two_config_maps, stack="dev", config={}, mocks=ChangingMocks()
    ).value
    assert changed["plain"] == [{"key": "from the provider"}, False]
    assert changed["secret"] == [{"k": "s"}, True]


def test_registrations_walk_no_stack_under_mocks_and_the_sdk_is_restored_after() -> None:
    """The SDK's source-position walk is skipped during a run (the mock monitor drops it) and is
    the SDK's own again afterwards; the function still exists in the pinned SDK release."""
    import traceback

    from pulumi.runtime import resource as sdk_resource

    original = getattr(sdk_resource, STACK_TRACE_FUNCTION)
    walks: list[int] = []
    extract_stack = traceback.extract_stack

    def counted(*args: Any, **kwargs: Any) -> Any:
        walks.append(1)
        return extract_stack(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sdk_resource.traceback, "extract_stack", counted)
        run = run_under_mocks(_config_maps, stack="dev", config={})
    assert len(run.kubernetes_objects()) == 20
    assert walks == []
    assert getattr(sdk_resource, STACK_TRACE_FUNCTION) is original


class _Cycle:
    """An object in a reference cycle with itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_collector_is_off_during_a_run_and_its_garbage_is_collected_later() -> None:
    """No collection runs during a run; afterwards the collector is on again as before, the
    run's objects sit in the oldest generation (no young pass rescans them all at once), and a
    full collection frees the cycles the run left."""
    import weakref

    seen: dict[str, Any] = {}

    def program() -> None:
        cycle = _Cycle()
        seen["cycle"] = weakref.ref(cycle)
        seen["enabled"] = gc.isenabled()
        del cycle
        _config_maps()

    assert gc.isenabled()
    run_under_mocks(program, stack="dev", config={})
    assert seen["enabled"] is False
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 700  # moved out of the youngest generation
    assert seen["cycle"]() is not None  # a cycle: left for the collector
    gc.collect()
    assert seen["cycle"]() is None


def test_a_collector_turned_off_before_a_run_stays_off() -> None:
    gc.disable()
    try:
        run_under_mocks(_config_maps, stack="dev", config={})
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_heap_frozen_hides_what_is_alive_from_the_collector_until_the_block_ends() -> None:
    from tools.mockrun import heap_frozen

    alive = [_Cycle() for _ in range(10)]
    with heap_frozen():
        assert gc.get_freeze_count() >= len(alive)
        assert not any(o is alive[0] for o in gc.get_objects())  # no pass looks at it
    assert gc.get_freeze_count() == 0
    assert any(o is alive[0] for o in gc.get_objects(2))
