"""PriorityClasses: defaults when unset, batch-low never preempts, one global default."""

from __future__ import annotations

from tests.harness import run_stack


def test_defaults_apply_when_stack_sets_none(dev_run):
    classes = {
        r.metadata["name"]: r.inputs
        for r in dev_run.kubernetes_objects()
        if r.kind == "PriorityClass"
    }
    assert {name: c["value"] for name, c in classes.items()} == {
        "critical": 100000,
        "high": 10000,
        "normal": 1000,
        "batch-low": 100,
    }
    assert [n for n, c in classes.items() if c.get("globalDefault")] == ["normal"]
    # The others leave it unset, as the provider sends them (it drops a false one).
    assert [n for n, c in classes.items() if "globalDefault" in c] == ["normal"]
    assert classes["batch-low"]["preemptionPolicy"] == "Never"
    assert classes["critical"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_custom_classes_replace_defaults_and_reach_outputs(dev_config):
    dev_config["priorityClasses"] = [
        {"name": "urgent", "value": 5000},
        {"name": "standard", "value": 10, "globalDefault": True},
    ]
    for team in dev_config["teams"]:
        team.pop("priorityClasses", None)
        team.get("redis", {}).pop("priorityClass", None)
    for workload in dev_config["workloads"]:  # the old class names are gone
        workload.pop("priorityClass", None)
    run = run_stack(dev_config)
    names = sorted(
        r.metadata["name"] for r in run.kubernetes_objects() if r.kind == "PriorityClass"
    )
    assert names == ["standard", "urgent"]
    assert run.value.priority_classes.default == "standard"
