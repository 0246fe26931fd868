"""docs/policies.md is generated from the pack and the stack config files; it must be current."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_policy_docs_are_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "gen_policy_docs", ROOT / "tools" / "gen_policy_docs.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    expected = module.render()
    current = (
        (ROOT / "docs" / "policies.md").read_text()
        if (ROOT / "docs" / "policies.md").exists()
        else ""
    )
    assert current == expected, "docs/policies.md is stale: run `python tools/gen_policy_docs.py`"
