"""The mock-runtime harness leaves nothing behind that could fail later, outside the run."""

from __future__ import annotations

import asyncio
import gc

from tools.mockrun import run_under_mocks


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
