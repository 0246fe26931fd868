"""The per-stack policy config files (``policies/config/<stack>.json``) and how they resolve.

The files use the format of ``pulumi preview --policy-pack-config``: policy name → level string,
or → ``{"enforcementLevel": ..., <properties>}``; the key ``all`` sets every policy's level. This
module resolves them the way the CLI does (a policy's own level wins over ``all``, which wins over
the policy's default) so docs, tests and the gRPC driver agree on what a stack enforces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi_policy import EnforcementLevel

from .registry import REGISTRY

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"


@dataclass(frozen=True)
class Effective:
    """What one policy does in one stack."""

    level: EnforcementLevel
    properties: dict[str, Any] = field(default_factory=dict)
    """Properties set by the file (defaults from the schema are not merged in)."""


def load(stack: str, directory: Path = CONFIG_DIR) -> dict[str, Any]:
    """The raw JSON config of a stack (``dev``, ``prod``)."""
    data = json.loads((directory / f"{stack}.json").read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{stack}.json must hold a JSON object")
    return data


def resolve(config: dict[str, Any]) -> dict[str, Effective]:
    """Every policy's effective level and properties under ``config``."""
    everything = config.get("all")
    result: dict[str, Effective] = {}
    for name, meta in REGISTRY.items():
        entry = config.get(name)
        level: str | None = None
        properties: dict[str, Any] = {}
        if isinstance(entry, str):
            level = entry
        elif isinstance(entry, dict):
            level = entry.get("enforcementLevel")
            properties = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        if level is None and isinstance(everything, str):
            level = everything
        result[name] = Effective(
            EnforcementLevel(level) if level else meta.default_level, properties
        )
    return result
