"""Where a policy finding came from: every resource the stack config produces maps back to the
entry that produced it, named as in the config; the console groups findings by level, policy."""

from __future__ import annotations

from typing import Any

from infra.config import validate_platform_config
from tests.harness import run_stack, stack_config
from tools.findings import Finding, config_keys, format_findings, resource_label
from tools.mockrun import MockRun


def _key(run: MockRun[Any], keys: dict[str, str], kind: str, name: str) -> str | None:
    (urn,) = [
        r.urn
        for r in run.resources
        if (r.kind or r.type.rsplit(":", 1)[-1]) == kind and r.metadata.get("name", r.name) == name
    ]
    return keys.get(urn)


def test_resources_map_back_to_their_config_entries(dev_run: MockRun[Any]) -> None:
    keys = config_keys(dev_run.resources, validate_platform_config(stack_config("dev"), "dev"))
    expected = {
        ("Namespace", "search-serving"): "ai-platform:teams[search-serving]",
        ("ClusterQueue", "team-research"): "ai-platform:teams[research].queue",
        ("ClusterQueue", "default-research"): "ai-platform:teams[research]",
        ("Job", "llama-eval"): "ai-platform:workloads[llama-eval]",
        ("Deployment", "llm-chat"): "ai-platform:workloads[llm-chat]",
        ("StatefulSet", "llm-chat-redis"): "ai-platform:workloads[llm-chat]",
        ("StorageClass", "datasets-nfs"): "ai-platform:storage.classes[datasets-nfs]",
        ("PriorityClass", "normal"): "ai-platform:priorityClasses[normal]",  # a default
        ("Node", "gpu-node-03"): "ai-platform:nodePools[lab-a100-mig]",
        ("Release", "monitoring-fluent-bit"): "ai-platform:monitoring",
        ("Release", "kueue-release"): "ai-platform:queueing",
    }
    for (kind, name), key in expected.items():
        assert _key(dev_run, keys, kind, name) == key, (kind, name)
    research_pvcs = {
        keys.get(r.urn)
        for r in dev_run.resources
        if r.kind == "PersistentVolumeClaim" and r.metadata.get("namespace") == "research"
    }
    assert "ai-platform:teams[research].volumes[datasets]" in research_pvcs
    assert "ai-platform:workloads[llama-finetune]" in research_pvcs  # its checkpoint claim


def test_extra_manifests_map_to_their_position() -> None:
    config = stack_config("dev")
    config["extraManifests"] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "research"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "b", "namespace": "research"},
        },
    ]
    run = run_stack(config)
    keys = config_keys(run.resources, validate_platform_config(config, "dev"))
    assert _key(run, keys, "ConfigMap", "b") == "ai-platform:extraManifests[1]"


def test_findings_group_by_level_then_policy() -> None:
    def finding(level: str, policy: str, resource: str) -> Finding:
        return Finding(level, policy, f"{policy} says.", resource, None, f"{resource} is wrong")

    lines = format_findings(
        [
            finding("advisory", "b-policy", "Job x"),
            finding("mandatory", "z-policy", "Job y"),
            finding("advisory", "a-policy", "Job z"),
            finding("advisory", "b-policy", "Job w"),
        ]
    )
    assert lines == [
        "MANDATORY (1)",
        "  z-policy (1): z-policy says.",
        "    Job y",
        "      Job y is wrong",
        "ADVISORY (3)",
        "  a-policy (1): a-policy says.",
        "    Job z",
        "      Job z is wrong",
        "  b-policy (2): b-policy says.",
        "    Job x",
        "      Job x is wrong",
        "    Job w",
        "      Job w is wrong",
    ]
    assert format_findings([finding("advisory", "a", "Job z")], ("mandatory",)) == []


def test_resource_labels(dev_run: MockRun[Any]) -> None:
    by_name = {r.name: r for r in dev_run.resources}
    assert resource_label(by_name["research-namespace"], "") == "Namespace research"
    assert resource_label(by_name["monitoring-fluent-bit"], "") == "Release logging/fluent-bit"
    assert resource_label(None, "") == "the stack"
