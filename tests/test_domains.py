"""``infra/`` by domain: each domain's models, rules and build sit together, and a domain's build
is its own: no other domain (nor the config mechanism) imports it; ``infra/stack.py`` composes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

INFRA = Path(__file__).resolve().parent.parent / "infra"
DOMAINS = (
    "tenancy",
    "scheduling",
    "storage",
    "gpu",
    "queueing",
    "autoscaling",
    "ray",
    "workloads",
    "monitoring",
    "manifests",
    "redis",
)


def _imported_modules(text: str, package: list[str]) -> set[str]:
    """Every module ``text`` (a module of ``package``) imports, as an absolute dotted name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _builds(text: str, package: list[str]) -> set[str]:
    modules = _imported_modules(text, package)
    return {m for m in modules if m.startswith("infra.") and m.endswith(".build")}


def _builds_imported(path: Path) -> set[str]:
    package = ["infra", *path.relative_to(INFRA).parent.parts]
    return _builds(path.read_text(encoding="utf-8"), package)


@pytest.mark.parametrize("domain", DOMAINS)
def test_a_domain_has_its_models_rules_and_build(domain: str) -> None:
    assert {"config.py", "rules.py", "build.py"} <= {p.name for p in (INFRA / domain).iterdir()}


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_domain_imports_another_domains_build(domain: str) -> None:
    for path in (INFRA / domain).glob("*.py"):
        others = {m for m in _builds_imported(path) if m != f"infra.{domain}.build"}
        assert not others, f"{path.relative_to(INFRA)} imports {sorted(others)}"


def test_the_config_mechanism_imports_no_build() -> None:
    for path in (INFRA / "config").glob("*.py"):
        assert not _builds_imported(path), f"{path.relative_to(INFRA)} imports a build"


def test_the_check_sees_an_import_of_another_build() -> None:
    """Relative imports are resolved: ``from ..gpu import build`` is seen from a workload module."""
    text = "from ..gpu import build\nfrom ..queueing.build import kueue\nfrom .build import x\n"
    found = _builds(text, ["infra", "workloads"])
    assert found == {"infra.gpu.build", "infra.queueing.build", "infra.workloads.build"}
