"""The benchmark's inputs stay valid as the config rules evolve; no timings are asserted here."""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from bench.floor import PROVIDER_TYPE, floor_resources, run_floor_program
from bench.measure import COMPILED_SOURCES, PROJECT_ROOT, BenchError, compile_sources
from bench.policy_load import repeat_records
from bench.synthetic import synthetic_config, team_count, write_stack_file
from components.constants import PROJECT
from infra.config import StackFile, validate_platform_config


@pytest.mark.parametrize("workloads", [1, 10, 25])
def test_synthetic_configs_validate(workloads: int) -> None:
    config = validate_platform_config(synthetic_config(workloads), f"bench{workloads}")
    assert len(config.workloads) == workloads
    assert len(config.teams) == team_count(workloads)
    kinds = Counter(w.kind for w in config.workloads)
    if workloads % 10 == 0:
        assert kinds["training"] == kinds["inference"] == workloads // 2
        assert any(w.gpus is None for w in config.workloads)
        assert any(w.gpus is not None for w in config.workloads)
    for team in config.teams:
        assert team.queue is not None and team.volumes


def test_stack_file_round_trips(tmp_path) -> None:
    path = write_stack_file(tmp_path, "bench12", synthetic_config(12))
    assert path.name == "Pulumi.bench12.yaml"
    assert set(yaml.safe_load(path.read_text())["config"]) >= {f"{PROJECT}:teams"}
    assert len(StackFile(path).platform_config().workloads) == 12


def _records() -> list[dict]:
    head = "urn:pulumi:prod::ai-platform::"
    provider = f"{head}pulumi:providers:kubernetes::p"
    parent = f"{head}aiplatform:tenancy:TeamNamespace::team"
    child = f"{head}aiplatform:tenancy:TeamNamespace$kubernetes:core/v1:Namespace::ns"
    options = {"provider": f"{provider}::id", "dependsOn": [parent]}
    return [
        {"urn": provider, "type": PROVIDER_TYPE, "name": "p", "custom": True, "inputs": {}},
        {"urn": parent, "type": "aiplatform:tenancy:TeamNamespace", "name": "team"},
        {
            "urn": child,
            "type": "kubernetes:core/v1:Namespace",
            "name": "ns",
            "custom": True,
            "parent": parent,
            "inputs": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
            "options": options,
            "propertyDependencies": {"metadata": [parent]},
        },
    ]


def test_repeated_records_are_distinct_and_self_consistent() -> None:
    records = repeat_records(_records(), 8)
    urns = [r["urn"] for r in records]
    assert len(records) == 8 and len(set(urns)) == 8
    known = set(urns)
    for record in records:
        refs = [record.get("parent"), *record.get("options", {}).get("dependsOn", [])]
        refs += [u for us in record.get("propertyDependencies", {}).values() for u in us]
        provider = record.get("options", {}).get("provider")
        if provider:
            refs.append(provider.rpartition("::")[0])
        assert all(ref in known for ref in refs if ref), record["urn"]
        suffix = record["urn"].rpartition("::")[2].removeprefix(record["name"])
        assert all(ref.endswith(suffix) for ref in refs if ref)


def test_floor_keeps_kubernetes_objects_and_the_provider() -> None:
    kept = floor_resources(_records())
    assert [r.type for r in kept] == [PROVIDER_TYPE, "kubernetes:core/v1:Namespace"]


def _tree_records() -> list[dict]:
    """A component with two children, one after the other, and an edge to a resource dropped."""
    head = "urn:pulumi:prod::ai-platform::"
    team = f"{head}aiplatform:tenancy:TeamNamespace::team"
    inside = f"{head}aiplatform:tenancy:TeamNamespace$kubernetes:core/v1"
    password = f"{head}random:index/randomPassword:RandomPassword::pw"

    def child(kind: str, name: str, after: list[str]) -> dict:
        return {
            "urn": f"{inside}:{kind}::{name}",
            "type": f"kubernetes:core/v1:{kind}",
            "name": name,
            "custom": True,
            "parent": team,
            "inputs": {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}},
            "options": {"dependsOn": after},
        }

    return [
        {"urn": team, "type": "aiplatform:tenancy:TeamNamespace", "name": "team"},
        {
            "urn": password,
            "type": "random:index/randomPassword:RandomPassword",
            "name": "pw",
            "custom": True,
        },
        child("Namespace", "ns", []),
        child("ConfigMap", "cm", [f"{inside}:Namespace::ns", password]),
    ]


def _shape(resources: list) -> dict[str, tuple[str, list[str]]]:
    """Name -> (parent's name, names depended on), from what the mock runtime captured."""

    def name(urn: str) -> str:
        return urn.rpartition("::")[2]

    return {
        r.name: (name(r.parent), sorted(name(u) for u in r.options["dependsOn"])) for r in resources
    }


def test_floor_replays_the_tree_and_edges_only_when_asked() -> None:
    """The breakdown's replay registers the same parents and edges as the report (by name)."""
    stack = "ai-platform-floor"
    bare = _shape(run_floor_program(floor_resources(_tree_records()), "floor"))
    assert bare == {"ns": (stack, []), "cm": (stack, [])}
    tree = floor_resources(_tree_records(), components=True, dependencies=True)
    assert _shape(run_floor_program(tree, "floor")) == {
        "team": (stack, []),
        "ns": ("team", []),
        "cm": ("team", ["ns"]),
    }


def test_makefile_compiles_what_the_bench_compiles() -> None:
    """`make preview` and the bench load the same precompiled modules (docs/performance.md)."""
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    line = next(line for line in makefile.splitlines() if line.startswith("BYTECODE "))
    assert tuple(line.split(":=", 1)[1].split()) == COMPILED_SOURCES
    assert all((PROJECT_ROOT / name).exists() for name in COMPILED_SOURCES)


def test_compile_sources_writes_bytecode_and_refuses_broken_files(tmp_path) -> None:
    for name in COMPILED_SOURCES:
        if name.endswith(".py"):
            (tmp_path / name).write_text("VALUE = 1\n", encoding="utf-8")
        else:
            (tmp_path / name).mkdir()
            (tmp_path / name / "module.py").write_text("VALUE = 2\n", encoding="utf-8")
    compile_sources(tmp_path)
    assert list((tmp_path / "infra" / "__pycache__").glob("module.*.pyc"))
    assert list((tmp_path / "__pycache__").glob("__main__.*.pyc"))
    (tmp_path / "tools" / "broken.py").write_text("def (:\n", encoding="utf-8")
    with pytest.raises(BenchError, match="tools"):
        compile_sources(tmp_path)
