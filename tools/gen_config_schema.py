"""Write schema/stack-config.schema.json: the JSON Schema of ``Pulumi.<stack>.yaml``.

Editors (yaml-language-server) validate stack files with it; a test keeps it current.
Run: ``python -m tools.gen_config_schema``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from components.constants import PROJECT
from infra.config import PlatformConfig
from infra.schema_docs import DocumentedJsonSchema

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "stack-config.schema.json"


def build_schema() -> dict[str, Any]:
    model = PlatformConfig.model_json_schema(
        by_alias=True, ref_template="#/$defs/{model}", schema_generator=DocumentedJsonSchema
    )
    defs = model.pop("$defs", {})
    keys = {f"{PROJECT}:{name}": schema for name, schema in model["properties"].items()}
    required = [f"{PROJECT}:{name}" for name in model.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/ai-platform/ai-platform/schema/stack-config.schema.json",
        "title": "ai-platform stack file (Pulumi.<stack>.yaml)",
        "description": "Generated from infra/config by tools/gen_config_schema.py; do not edit.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": keys,
                "required": required,
                # Unknown ai-platform: keys are errors; other namespaces (pulumi:, ...) pass.
                "propertyNames": {
                    "anyOf": [{"enum": sorted(keys)}, {"not": {"pattern": f"^{PROJECT}:"}}]
                },
            },
            "secretsprovider": {"type": "string"},
            "encryptedkey": {"type": "string"},
            "encryptionsalt": {"type": "string"},
            "environment": {},
        },
        "$defs": defs,
    }


def render() -> str:
    return json.dumps(build_schema(), indent=2, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_PATH.parent.mkdir(parents=True, exist_ok=True)
    SCHEMA_PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {SCHEMA_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
