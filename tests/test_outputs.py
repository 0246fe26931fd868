"""The outputs contract: what the program returns is what docs/outputs.md documents."""

from __future__ import annotations

import re

from pydantic import BaseModel

from infra.outputs import OUTPUTS_VERSION, StackOutputs
from tests.harness import ROOT

DOC = ROOT / "docs" / "outputs.md"


def _contract_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    paths = set()
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        paths.add(key)
        annotation = field.annotation
        args = getattr(annotation, "__args__", (annotation,))
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if models:
            # dict[str, Model] is keyed by name; Model and Model | None are plain objects.
            keyed = getattr(annotation, "__origin__", None) is dict
            paths |= _contract_paths(models[-1], f"{key}.<name>." if keyed else f"{key}.")
    return paths


def _documented_paths() -> set[str]:
    return set(re.findall(r"^\| `([^`]+)` \|", DOC.read_text(), flags=re.MULTILINE))


def test_every_output_is_documented_and_nothing_else():
    assert _documented_paths() == _contract_paths(StackOutputs)


def test_prod_outputs_match_the_stack(prod_run):
    outputs = prod_run.value.model_dump(mode="json")
    assert outputs["outputsVersion"] == OUTPUTS_VERSION
    assert outputs["teams"]["research"] == {
        "namespace": "research",
        "serviceAccount": "workload",
        "envConfigMap": "team-env",
        "volumes": {"datasets": "datasets", "checkpoints": "checkpoints"},
        "localQueue": "gpu-queue",
        "clusterQueue": "team-research",
        "workloads": {
            "llama-finetune": {
                "kind": "training",
                "workloadType": "training",
                "objectName": "llama-finetune",
                "serviceHost": "llama-finetune.research.svc.cluster.local",
                "port": 29500,
                "dependencyHosts": {},
                "checkpointClaim": "llama-finetune-checkpoints",
                "queues": [],
            },
            "llama-eval": {
                "kind": "training",
                "workloadType": "evaluation",
                "objectName": "llama-eval",
                "serviceHost": None,
                "port": None,
                "dependencyHosts": {},
                "checkpointClaim": "checkpoints",
                "queues": [],
            },
        },
        "redis": {
            "service": "team-redis",
            "host": "team-redis.research.svc.cluster.local",
            "secret": "team-redis-auth",
        },
    }
    assert outputs["teams"]["search-serving"]["redis"] is None
    assert outputs["teams"]["search-serving"]["workloads"]["llm-chat"] == {
        "kind": "inference",
        "workloadType": "inference",
        "objectName": "llm-chat",
        "serviceHost": "llm-chat.search-serving.svc.cluster.local",
        "port": 8000,
        "dependencyHosts": {"redis": "llm-chat-redis.search-serving.svc.cluster.local"},
        "checkpointClaim": None,
        "queues": [],
    }
    assert outputs["teams"]["platform"]["workloads"] == {}
    assert outputs["priorityClasses"] == {
        "names": ["critical", "high", "normal", "batch-low"],
        "default": "normal",
    }
    assert outputs["storageClasses"] == {
        "names": ["checkpoints-gp3", "datasets-efs"],
        "default": "checkpoints-gp3",
    }
    # Exported keys are exactly the documented top-level outputs.
    assert set(outputs) == {p for p in _documented_paths() if "." not in p}
