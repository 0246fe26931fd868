"""The project is installed code: no module edits ``sys.path`` or puts the checkout on
``PYTHONPATH`` for another process; the packages pyproject.toml declares are the ones there."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tests.harness import ROOT

CODE = ("__main__.py", "infra", "components", "tools", "bench", "policies", "examples")
"""What runs as the platform, its tools, the pack and the examples (tests set up their own
processes, and may give a test's own app a path)."""
PATH_EDIT = re.compile(r"sys\.path\s*(\[[^\]]*\]\s*=|=|\.(insert|append|extend)\()|PYTHONPATH")


def _python_files() -> list[Path]:
    files: list[Path] = []
    for entry in CODE:
        path = ROOT / entry
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [f for f in files if "tests" not in f.relative_to(ROOT).parts]


def path_edits(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if PATH_EDIT.search(line)]


def test_no_code_edits_the_import_path() -> None:
    found = {
        str(f.relative_to(ROOT)): edits
        for f in _python_files()
        if (edits := path_edits(f.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_check_sees_an_edit() -> None:
    assert path_edits("sys.path.insert(0, here)\nimport x\n") == ["sys.path.insert(0, here)"]
    assert path_edits("sys.path[:] = kept") == ["sys.path[:] = kept"]
    assert path_edits('env = {"PYTHONPATH": root}') == ['env = {"PYTHONPATH": root}']
    assert path_edits("print(sys.path)") == []


def test_every_package_is_declared() -> None:
    """Each folder of Python code the tools import is in a package pyproject.toml finds."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["packages"]["find"]
    include = {pattern.rstrip("*") for pattern in find["include"]}
    assert {"infra", "components", "tools", "bench", "aiplatform_policies"} <= include
    assert (ROOT / "policies" / "aiplatform_policies" / "__init__.py").is_file()
