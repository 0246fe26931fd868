"""Write schema/stack-outputs.v<N>.schema.json: the outputs contract as a versioned JSON Schema.

Why: teams that read the stack outputs with a ``StackReference`` (in any language) validate what
they read, or generate types from it, without importing this project. N is ``OUTPUTS_VERSION``;
one file per major version stays checked in, so a consumer pins the file of the version it knows.

A released file may only gain properties. Removing or renaming a property, changing its type or
making an optional one required is a breaking change: bump ``OUTPUTS_VERSION`` (and add a note to
docs/upgrading.md), which writes a new file. This generator refuses to overwrite the current
version's file with a breaking change, and a test fails while the file is stale or incompatible.

Run: ``python -m tools.gen_outputs_schema`` (``--check`` writes nothing, exits 1 when stale).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.outputs import OUTPUTS_VERSION, StackOutputs
from infra.schema_docs import DocumentedJsonSchema

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
ID_BASE = "https://github.com/ai-platform/ai-platform/schema/"
"""Same base as schema/stack-config.schema.json's ``$id``."""


def schema_path(version: int = OUTPUTS_VERSION) -> Path:
    return SCHEMA_DIR / f"stack-outputs.v{version}.schema.json"


def build_schema(version: int = OUTPUTS_VERSION) -> dict[str, Any]:
    """The model's schema (camelCase, as exported) with an ``$id`` naming its version."""
    model = StackOutputs.model_json_schema(
        by_alias=True, ref_template="#/$defs/{model}", schema_generator=DocumentedJsonSchema
    )
    # A v<N> document must say it is v<N>: a consumer validating with this file rejects another
    # major version instead of misreading it.
    model["properties"]["outputsVersion"]["const"] = version
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{ID_BASE}{schema_path(version).name}",
        **model,
        "title": f"ai-platform stack outputs, contract v{version}",
        "description": (
            "The stack outputs of ai-platform as a StackReference reads them (docs/outputs.md). "
            "Generated from infra/outputs.py by tools/gen_outputs_schema.py; do not edit."
        ),
    }


def render(version: int = OUTPUTS_VERSION) -> str:
    return json.dumps(build_schema(version), indent=2, sort_keys=True) + "\n"


@dataclass(frozen=True)
class Slot:
    """One property path of the contract: its JSON type(s) and whether it must be present."""

    type: str
    required: bool


def contract_shape(schema: Mapping[str, Any]) -> dict[str, Slot]:
    """Every property path → Slot. Paths: ``teams``, ``teams.*`` (map value), ``x[]`` (item).

    Types are JSON types after resolving ``$ref``; unions join sorted (``null|string``), so
    ``str`` becoming ``str | None`` is a type change.
    """
    defs: Mapping[str, Any] = schema.get("$defs", {})
    shape: dict[str, Slot] = {}

    def resolve(node: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in node:
            node = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
        return node

    def kind(node: Mapping[str, Any]) -> str:
        node = resolve(node)
        for union in ("anyOf", "oneOf"):
            if union in node:
                return "|".join(sorted({kind(member) for member in node[union]}))
        declared = node.get("type")
        if isinstance(declared, list):
            return "|".join(sorted(declared))
        if declared == "object" and isinstance(node.get("additionalProperties"), dict):
            return "map" if not node.get("properties") else "object"
        return str(declared) if declared else "any"

    def walk(node: Mapping[str, Any], path: str) -> None:
        node = resolve(node)
        for union in ("anyOf", "oneOf"):
            for member in node.get(union, ()):
                walk(member, path)
        required = set(node.get("required", ()))
        for name, sub in node.get("properties", {}).items():
            child = f"{path}.{name}" if path else name
            shape[child] = Slot(kind(sub), name in required)
            walk(sub, child)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            shape[f"{path}.*"] = Slot(kind(extra), False)
            walk(extra, f"{path}.*")
        items = node.get("items")
        if isinstance(items, dict):
            shape[f"{path}[]"] = Slot(kind(items), False)
            walk(items, f"{path}[]")

    walk(schema, "")
    return shape


def breaking_changes(released: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What ``current`` breaks for readers of ``released``; additions are not breaking."""
    old, new = contract_shape(released), contract_shape(current)
    problems = []
    for path, slot in sorted(old.items()):
        if path not in new:
            problems.append(f"{path}: removed or renamed")
        elif new[path].type != slot.type:
            problems.append(f"{path}: type changed from {slot.type} to {new[path].type}")
        elif new[path].required and not slot.required:
            problems.append(f"{path}: newly required")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when stale")
    args = parser.parse_args(argv)
    path, text = schema_path(), render()
    if path.exists():
        problems = breaking_changes(json.loads(path.read_text()), json.loads(text))
        if problems:
            print(
                f"{path.name}: the outputs model breaks contract v{OUTPUTS_VERSION}:\n  "
                + "\n  ".join(problems)
                + "\nBump OUTPUTS_VERSION in infra/outputs.py and add a note to "
                "docs/upgrading.md (a new schema file is written), or undo the change.",
                file=sys.stderr,
            )
            return 1
        if path.read_text() == text:
            print(f"{path.name} is current")
            return 0
    if args.check:
        print(f"{path.name} is stale: run python -m tools.gen_outputs_schema", file=sys.stderr)
        return 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
