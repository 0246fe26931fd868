"""The ``ai-platform:monitoring`` blocks of the checked-in stack files, as the program sees them
(``secure:`` values replaced by the offline placeholder, exactly as ``StackFile`` does)."""

from __future__ import annotations

from typing import Any

from tests.harness import stack_config


def dev_monitoring() -> dict[str, Any]:
    return dict(stack_config("dev")["monitoring"])


def prod_monitoring() -> dict[str, Any]:
    return dict(stack_config("prod")["monitoring"])
