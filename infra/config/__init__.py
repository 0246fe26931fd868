"""Typed stack config: the only way data enters the program.

The package is the mechanism (models' base, loading, errors, quantities, the root model and the
rule registry); each domain's models and rules sit in ``infra/<domain>/``. The root model imports
every domain's models, and those import this package's ``base``: so the names below are loaded
on first use, and importing a domain's models first works too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from .load import StackFile, load_from_pulumi_runtime, validate_platform_config
    from .root import PlatformConfig

_LAZY = {
    "PlatformConfig": "root",
    "StackFile": "load",
    "load_from_pulumi_runtime": "load",
    "validate_platform_config": "load",
}

__all__ = [
    "ConfigError",
    "ConfigIssue",
    "PlatformConfig",
    "StackFile",
    "load_from_pulumi_runtime",
    "validate_platform_config",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
