"""The SDK's floor: the same Kubernetes objects registered bare, with no components or config.

Why: "the program is slow" only means something against what the Pulumi SDK itself costs to
register the same objects under the same mock runtime. This replays the Kubernetes resources of
a preview's ``report.json`` (same kinds, same counts, same manifest bodies, one explicit
provider) with ``tools.mockrun.run_under_mocks``, through the classes the program registers them
with (``components.kube``'s; pulumi-kubernetes's typed ones for the Helm releases and any other
kind). Component resources, parents, config parsing and validation are left out. What our
program costs above this is the price of components, config and validation.

    python -m bench.floor --report build/prod/report.json     # the floor for that stack
    python -m bench.floor --configmaps 1000                     # bare ConfigMaps, for scale
    python -m bench.floor --program Pulumi.prod.yaml --stack prod   # our side, same harness
    python -m bench.floor --report build/prod/report.json --with-components --with-dependencies
                                                    # + our component tree and edges (breakdown)
    python -m bench.instructions --stack-file Pulumi.prod.yaml --stack prod \
        --report build/prod/report.json     # the same runs, counted in instructions (valgrind)

Prints one JSON line: ``{"seconds": ..., "cpuSeconds": ..., "resources": ...}``. Every mode runs
in its own process after importing what ``tools.preview`` imports, and ``--program`` runs our
program exactly as the preview's program step does (``tools.preview.run_stack_program`` after
the config step), so both sides of the ratio pay the same costs and are timed the same way. CPU
time is what the ratio is judged on: it is the cost, and unlike wall time it barely moves when
other work shares the machine.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.raw_manifests import resource_class, snake_case

PROVIDER_TYPE = "pulumi:providers:kubernetes"


@dataclass(frozen=True)
class FloorResource:
    """One resource to register: its type token, logical name and wire-format inputs."""

    type: str
    name: str
    inputs: dict[str, Any]
    urn: str = ""
    parent: str = ""
    component: bool = False
    depends_on: tuple[str, ...] = ()


def floor_resources(
    records: Sequence[dict[str, Any]], *, components: bool = False, dependencies: bool = False
) -> list[FloorResource]:
    """The Kubernetes resources (and the provider) of a report's records; components dropped.

    For the breakdown in docs/performance.md, never part of a target: ``components=True`` keeps
    the component resources too, with the same parents (the floor plus our resource tree);
    ``dependencies=True`` keeps each resource's explicit dependencies on the resources kept
    (the report lists them expanded to custom resources, as the SDK sent them).
    """
    kept = []
    for r in records:
        kubernetes = r.get("custom") and (
            r["type"].startswith("kubernetes:") or r["type"] == PROVIDER_TYPE
        )
        component = components and not r.get("custom")
        if kubernetes or component:
            kept.append(
                FloorResource(
                    r["type"],
                    r["name"],
                    dict(r.get("inputs") or {}) if kubernetes else {},
                    urn=r.get("urn", ""),
                    parent=r.get("parent", "") if components else "",
                    component=bool(component),
                    depends_on=tuple(r.get("options", {}).get("dependsOn", []))
                    if dependencies
                    else (),
                )
            )
    return kept


def configmap_resources(count: int) -> list[FloorResource]:
    """``count`` metadata-only ConfigMaps: what one registration costs with nothing in it."""
    return [
        FloorResource(
            "kubernetes:core/v1:ConfigMap",
            f"cm-{index}",
            {"metadata": {"name": f"cm-{index}", "namespace": "bench"}},
        )
        for index in range(count)
    ]


@functools.cache
def _parameters(cls: type) -> frozenset[str]:
    kind = getattr(cls, "KIND", None)  # components.kube's, as loaded by this run
    if kind is not None:
        return frozenset(kind.fields)
    return frozenset(inspect.signature(cls._internal_init).parameters)  # type: ignore[attr-defined]


def _typed_class(k8s: Any, type_token: str) -> type | None:
    """The typed class for a type token; None for custom resources (CRDs)."""
    _, group_version, kind = type_token.split(":")
    group, _, version = group_version.rpartition("/")
    if group == "helm.sh":  # not a Kubernetes API group: the provider's own Release
        found = getattr(getattr(k8s.helm, version), kind)
        assert isinstance(found, type)
        return found
    return resource_class(version if group == "core" else group_version, kind)


def floor_program(resources: Sequence[FloorResource]) -> Callable[[], int]:
    """A Pulumi program registering ``resources`` with those classes, through one provider."""

    def program() -> int:
        import pulumi
        import pulumi_kubernetes as k8s

        class Component(pulumi.ComponentResource):
            """Like ours, a subclass without annotations of its own.

            Why: the SDK types a component's engine outputs from its class's own annotations
            at every registration; bare ``ComponentResource`` has one, ours have none
            (docs/performance.md), and the breakdown must not charge ours for it.
            """

        provider: pulumi.ProviderResource | None = None
        for resource in resources:
            if resource.type == PROVIDER_TYPE:
                kwargs = {snake_case(k): v for k, v in resource.inputs.items()}
                kwargs = {k: v for k, v in kwargs.items() if k in _parameters(k8s.Provider)}
                provider = k8s.Provider(resource.name, **kwargs)
        made: dict[str, pulumi.Resource] = {}
        for resource in resources:
            if resource.type == PROVIDER_TYPE:
                continue
            parent = made.get(resource.parent)
            after = [made[urn] for urn in resource.depends_on if urn in made] or None
            if resource.component:
                component = Component(
                    resource.type,
                    resource.name,
                    None,
                    pulumi.ResourceOptions(parent=parent, depends_on=after),
                )
                component.register_outputs({})
                made[resource.urn] = component
                continue
            opts = pulumi.ResourceOptions(provider=provider, parent=parent, depends_on=after)
            cls = _typed_class(k8s, resource.type)
            inputs = resource.inputs
            if cls is None:
                made[resource.urn] = k8s.apiextensions.CustomResource(
                    resource.name,
                    api_version=inputs["apiVersion"],
                    kind=inputs["kind"],
                    metadata=inputs.get("metadata"),
                    spec=inputs.get("spec"),
                    opts=opts,
                )
                continue
            accepted = _parameters(cls)
            kwargs = {
                snake_case(k): v
                for k, v in inputs.items()
                if k not in ("apiVersion", "kind") and snake_case(k) in accepted
            }
            made[resource.urn] = cls(resource.name, opts=opts, **kwargs)
        return len(resources)

    return program


@dataclass(frozen=True)
class Timing:
    """Wall and CPU seconds (all threads of this process) of one program run."""

    seconds: float
    cpu_seconds: float
    resources: int

    def to_json(self) -> str:
        return json.dumps(
            {
                "seconds": round(self.seconds, 4),
                "cpuSeconds": round(self.cpu_seconds, 4),
                "resources": self.resources,
            }
        )


def _timed(run: Callable[[], int], mark: Callable[[], None] | None = None) -> Timing:
    """Time ``run``; ``mark`` is called right before and right after it (``bench.instructions``
    counts what runs between the two calls)."""
    if mark:
        mark()
    wall, cpu = time.perf_counter(), time.process_time()
    resources = run()
    timing = Timing(time.perf_counter() - wall, time.process_time() - cpu, resources)
    if mark:
        mark()
    return timing


def run_floor_program(resources: Sequence[FloorResource], stack: str) -> list[Any]:
    """The floor's counterpart of ``tools.preview.run_stack_program``, one frame deep like it.

    Why the same depth: the SDK walks the whole Python stack at every registration (for source
    positions), so an extra harness frame on one side would be charged to that side.
    """
    from tools.mockrun import run_under_mocks

    return run_under_mocks(floor_program(resources), stack=stack, config={}).resources


def run_floor(
    resources: Sequence[FloorResource],
    stack: str = "floor",
    mark: Callable[[], None] | None = None,
) -> Timing:
    """Time the floor program under the same mock runtime the preview uses."""

    def run() -> int:
        captured = run_floor_program(resources, stack)
        if len(captured) != len(resources):
            raise RuntimeError(f"floor registered {len(captured)} of {len(resources)}")
        return len(captured)

    return _timed(run, mark)


def run_program(
    stack_file: Path,
    stack: str,
    mark: Callable[[], None] | None = None,
    imported: bool = False,
) -> Timing:
    """Time our program as the preview's program step runs it, after the same config step.

    ``imported``: our program's modules are imported before the timed run, which then leaves
    their import out (for the breakdown in docs/performance.md; the preview imports them in its
    program step, so no target is judged this way).
    """
    from infra.config import StackFile
    from tools.preview import run_stack_program

    parsed = StackFile(stack_file)
    parsed.platform_config(engine_limits=False)  # the synthetic sizes pass the engine's limit
    if imported:
        import infra.program  # noqa: F401
    return _timed(lambda: len(run_stack_program(parsed, stack).resources), mark)


class Counts:
    """What the SDK does for a run, counted: the figures that say where CPU time goes when
    they differ between our program and the floor, and that do not move between runs.

    Registrations; Outputs created; explicit and property dependencies sent;
    the cyclic collector's passes and the objects they examined; the interpreter's allocated
    memory blocks at their peak (sampled every 100 registrations) and, with ``traced``, the
    peak of the memory tracemalloc saw allocated (slow: a diagnosis, not a figure to time).
    """

    def __init__(self, traced: bool = False) -> None:
        self.traced = traced
        self.values: dict[str, int] = {
            "registrations": 0,
            "outputs": 0,
            "dependencies": 0,
            "propertyDependencies": 0,
            "gcPasses": 0,
            "gcFullPasses": 0,
            "gcExaminedObjects": 0,
            "peakAllocatedBlocks": 0,
        }

    def run(self, run: Callable[[], int]) -> dict[str, int]:
        import gc

        import pulumi

        from tools import mockrun

        values = self.values
        output_init = pulumi.Output.__init__
        register = mockrun.CapturingMonitor.RegisterResource

        def counted_output(output: Any, *args: Any, **kwargs: Any) -> None:
            values["outputs"] += 1
            output_init(output, *args, **kwargs)

        def counted_register(monitor: Any, request: Any) -> Any:
            values["registrations"] += 1
            values["dependencies"] += len(request.dependencies)
            values["propertyDependencies"] += sum(
                len(d.urns) for d in request.propertyDependencies.values()
            )
            if values["registrations"] % 100 == 0:
                blocks = sys.getallocatedblocks()
                values["peakAllocatedBlocks"] = max(values["peakAllocatedBlocks"], blocks)
            return register(monitor, request)

        def collected(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                values["gcPasses"] += 1
                generation = info["generation"]
                values["gcFullPasses"] += generation == 2
                values["gcExaminedObjects"] += sum(
                    gc.get_count()[g] for g in range(generation + 1)
                ) + sum(len(gc.get_objects(g)) for g in range(1, generation + 1))

        patches: list[tuple[Any, str, Any, Any]] = [
            (pulumi.Output, "__init__", counted_output, output_init),
            (mockrun.CapturingMonitor, "RegisterResource", counted_register, register),
        ]
        for owner, attribute, counted, _ in patches:
            setattr(owner, attribute, counted)
        gc.callbacks.append(collected)
        if self.traced:
            import tracemalloc

            tracemalloc.start()
        try:
            run()
        finally:
            if self.traced:
                import tracemalloc

                values["tracedPeakBytes"] = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
            gc.callbacks.remove(collected)
            for owner, attribute, _, original in patches:
                setattr(owner, attribute, original)
        return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--report", help="a preview's report.json: replay its Kubernetes objects")
    source.add_argument("--configmaps", type=int, help="register this many bare ConfigMaps")
    source.add_argument("--program", help="a stack file: time our program on it instead")
    parser.add_argument(
        "--with-components", action="store_true", help="--report: keep the component tree too"
    )
    parser.add_argument(
        "--with-dependencies",
        action="store_true",
        help="--report: keep the explicit dependencies between the resources kept too",
    )
    parser.add_argument("--stack", default="bench", help="stack name for --program")
    parser.add_argument(
        "--counts",
        action="store_true",
        help="count what the SDK does instead of timing it (class Counts); one JSON line",
    )
    parser.add_argument("--traced", action="store_true", help="--counts: with tracemalloc too")
    parser.add_argument(
        "--mark",
        action="store_true",
        help="call os.sched_yield() right before and after the timed run (bench.instructions)",
    )
    parser.add_argument(
        "--imported",
        action="store_true",
        help="--program: import our program's modules before the timed run (breakdown only)",
    )
    args = parser.parse_args(argv)
    mark = os.sched_yield if args.mark else None
    # The same imports the preview has made before its program step starts.
    import tools.preview  # noqa: F401

    run: Callable[[], Timing]
    if args.program:
        program = Path(args.program)
        run = functools.partial(run_program, program, args.stack, mark, args.imported)
    elif args.report:
        report = json.loads(Path(args.report).read_text(encoding="utf-8"))
        kept = floor_resources(
            report["resources"],
            components=args.with_components,
            dependencies=args.with_dependencies,
        )
        run = functools.partial(run_floor, kept, "floor", mark)
    else:
        run = functools.partial(run_floor, configmap_resources(args.configmaps), "floor", mark)
    if args.counts:
        print(json.dumps(Counts(args.traced).run(lambda: run().resources)))
    else:
        print(run().to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
