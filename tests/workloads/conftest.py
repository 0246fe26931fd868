"""Render workload components alone under mocks, and the pool contracts tests hand them.

``render`` keeps the already-imported modules (``fresh_modules=False``) so args built in a test
and the component that reads them come from the same classes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from aiplatform_policies import REGISTRY, harness
from aiplatform_policies.stackconfig import load, resolve
from components.constants import GPU_RESOURCE, MIG_RESOURCE_PREFIX, NODE_POOL_LABEL
from components.gpu_node_pool import GPU_TAINT
from components.scheduling_contract import SchedulingContract, Taint
from tools.mockrun import CapturedResource, MockRun, run_under_mocks


def mandatory_violations(
    resources: Iterable[CapturedResource], *, stack_policies: bool = True
) -> list[str]:
    """Every message of every policy mandatory in policies/config/prod.json over ``resources``
    (``stack_policies=False``: per-resource policies only, for a program without the platform)."""
    records = [
        harness.Resource(type=r.type, name=r.name, inputs=r.inputs, protect=r.options["protect"])
        for r in resources
    ]
    messages = []
    for name, effective in resolve(load("prod")).items():
        meta = REGISTRY[name]
        if effective.level.value != "mandatory" or (meta.stack and not stack_policies):
            continue
        fixture = harness.Fixture(
            path=Path(f"{name}.yaml"),
            policy=name,
            allowed=True,
            resources=records,
            config=effective.properties,
        )
        messages += [f"{name}: {m}" for m in harness.run(meta.policy, fixture)]
    return messages


def render(build: Callable[[], Any]) -> MockRun[Any]:
    """Run ``build`` (which registers components) as a one-off program under mocks."""
    return run_under_mocks(build, stack="test", config={}, fresh_modules=False)


def only(run: MockRun[Any], kind: str) -> CapturedResource:
    """The single Kubernetes object of ``kind`` the run registered."""
    found = [r for r in run.kubernetes_objects() if r.kind == kind]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def kinds(run: MockRun[Any]) -> list[str]:
    return sorted(r.kind for r in run.kubernetes_objects())


def pod_spec(resource: CapturedResource) -> dict[str, Any]:
    return resource.inputs["spec"]["template"]["spec"]


def container(resource: CapturedResource, name: str, section: str = "containers") -> dict[str, Any]:
    found = [c for c in pod_spec(resource).get(section, []) if c["name"] == name]
    assert len(found) == 1, name
    return found[0]


def env_of(container_spec: dict[str, Any]) -> dict[str, Any]:
    """name → value (or the valueFrom mapping)."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container_spec.get("env", [])}


def h100() -> SchedulingContract:
    return SchedulingContract(
        pool="h100-training",
        product="NVIDIA-H100-80GB-HBM3",
        capacity_type="reserved",
        gpu_resource=GPU_RESOURCE,
        gpus_per_node=8,
        resources_per_node=8,
        node_selector={NODE_POOL_LABEL: "h100-training"},
        taints=(GPU_TAINT,),
    )


def mig_slices() -> SchedulingContract:
    return SchedulingContract(
        pool="a100-mig",
        product="NVIDIA-A100-SXM4-80GB",
        capacity_type="on-demand",
        gpu_resource=f"{MIG_RESOURCE_PREFIX}1g.10gb",
        gpus_per_node=4,
        resources_per_node=28,
        sharing="mig",
        node_selector={NODE_POOL_LABEL: "a100-mig"},
        taints=(GPU_TAINT, Taint("aiplatform.io/preemptible", "true")),
    )


@pytest.fixture
def contract() -> SchedulingContract:
    return h100()
