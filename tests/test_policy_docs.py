"""docs/policies.md is generated from the pack and the stack config files; it must be current."""

from __future__ import annotations

from tools.gen_policy_docs import OUTPUT, render


def test_policy_docs_are_current() -> None:
    current = OUTPUT.read_text() if OUTPUT.exists() else ""
    assert current == render(), "docs/policies.md is stale: run `python tools/gen_policy_docs.py`"
