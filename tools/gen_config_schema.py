"""Write schema/stack-config.schema.json, the JSON Schema of ``Pulumi.<stack>.yaml``, and
schema/workload-file.schema.json, that of the workload files ``ai-platform:workloadFiles`` names.

Editors (yaml-language-server) validate stack files and workload files with them; a test keeps
them current.
Run: ``python -m tools.gen_config_schema``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from components.constants import PROJECT
from infra.config import PlatformConfig
from infra.config.workload_files import WORKLOADS_KEY
from infra.schema_docs import DocumentedJsonSchema

SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
SCHEMA_PATH = SCHEMA_DIR / "stack-config.schema.json"
WORKLOAD_FILE_SCHEMA_PATH = SCHEMA_DIR / "workload-file.schema.json"
_ID_BASE = "https://github.com/ai-platform/ai-platform/schema/"


def _model_schema() -> dict[str, Any]:
    return PlatformConfig.model_json_schema(
        by_alias=True, ref_template="#/$defs/{model}", schema_generator=DocumentedJsonSchema
    )


def build_workload_file_schema() -> dict[str, Any]:
    """A workload file: one key, ``workloads``, as ``ai-platform:workloads`` is in a stack file."""
    model = _model_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{_ID_BASE}{WORKLOAD_FILE_SCHEMA_PATH.name}",
        "title": "ai-platform workload file (named by ai-platform:workloadFiles)",
        "description": "Generated from infra/config by tools/gen_config_schema.py; do not edit.",
        "type": "object",
        "properties": {WORKLOADS_KEY: model["properties"][WORKLOADS_KEY]},
        "additionalProperties": False,
        "$defs": model.get("$defs", {}),
    }


def build_schema() -> dict[str, Any]:
    model = _model_schema()
    defs = model.pop("$defs", {})
    keys = {f"{PROJECT}:{name}": schema for name, schema in model["properties"].items()}
    required = [f"{PROJECT}:{name}" for name in model.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{_ID_BASE}{SCHEMA_PATH.name}",
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


def render_workload_file() -> str:
    return json.dumps(build_workload_file_schema(), indent=2, sort_keys=True) + "\n"


def main() -> int:
    SCHEMA_DIR.mkdir(parents=True, exist_ok=True)
    written = ((SCHEMA_PATH, render()), (WORKLOAD_FILE_SCHEMA_PATH, render_workload_file()))
    for path, text in written:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
