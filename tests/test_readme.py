"""The README's instructions work as written: its "adding a team" entry previews clean in dev
and prod (with the ``# prod:`` names in prod), and its deploy commands run the policy pack."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import ROOT
from tools import preview

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


def _blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def team_entries(stack: str) -> list[dict[str, Any]]:
    """The README's team entry, with the ``# prod: <name>`` substitutions applied in prod."""
    (text,) = _blocks(_section("Adding a team"), "yaml")
    if stack == "prod":
        text = re.sub(r"(\w+): (\S+)(\s+)# prod: (\S+)", r"\1: \4\3#", text)
    entries: list[dict[str, Any]] = yaml.safe_load(text)["ai-platform:teams"]
    return entries


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_team_example_previews_clean(stack: str, tmp_path: Path) -> None:
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    document["config"]["ai-platform:teams"] += team_entries(stack)
    stack_file = tmp_path / f"Pulumi.{stack}.yaml"
    stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
    out = tmp_path / "out"
    argv = ["--stack", stack, "--stack-file", str(stack_file), "--out", str(out), "--quiet"]
    assert preview.main(argv) == 0
    report = json.loads((out / stack / "report.json").read_text())
    assert report["policy"]["violations"] == []
    namespaces = {
        r["inputs"]["metadata"]["name"]
        for r in report["resources"]
        if r["name"] == "recsys-namespace"
    }
    assert namespaces == {"recsys"}


def test_the_example_differs_between_stacks_only_where_it_says() -> None:
    dev, prod = team_entries("dev"), team_entries("prod")
    assert dev != prod
    assert prod[0]["queue"]["pools"][0]["pool"] == "l4-inference"
    assert (prod[0]["quota"]["gpus"], prod[0]["quota"]["migSlices"]) == (4, {"1g.10gb": 0})
    assert prod[0]["volumes"][0]["storageClass"] == "datasets-efs"


def test_deploying_runs_the_policy_pack() -> None:
    commands = "".join(_blocks(_section("Deploying to a real cluster"), "sh"))
    for verb in ("preview", "up"):
        (line,) = [line for line in commands.splitlines() if line.startswith(f"pulumi {verb} ")]
        assert "--policy-pack policies --policy-pack-config policies/config/" in line, line


def _component_classes() -> set[str]:
    """Every ComponentResource the components package defines (by class name)."""
    import ast

    names: set[str] = set()
    for path in sorted((ROOT / "components").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).endswith("ComponentResource") for base in node.bases
            ):
                names.add(node.name)
    return names


def test_the_architecture_diagram_shows_every_component() -> None:
    (diagram,) = [b for b in _blocks(README, "mermaid") if "infra/stack.py" in b]
    components = _component_classes()
    assert {"TeamNamespace", "Keda", "KubeRayOperator", "TeamRedis", "WorkerPool"} <= components
    assert sorted(name for name in components if name not in diagram) == []
