"""Validate custom resources against the shared CRD catalog with ``jsonschema`` directly.

Why not tools/schema_validation.py: it is being written in parallel; these tests only need the
catalog lookup and must report a kind without a schema as a failure, never as valid.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import jsonschema

from tests.harness import ROOT

CRD_SCHEMAS_ENV = "AIPLATFORM_CRD_SCHEMAS"


def crd_location() -> Path:
    """``$AIPLATFORM_CRD_SCHEMAS`` (relative to the project root) or ``../shared/crd-schemas``."""
    configured = os.environ.get(CRD_SCHEMAS_ENV)
    folder = Path(configured) if configured else ROOT.parent / "shared" / "crd-schemas"
    return folder if folder.is_absolute() else ROOT / folder


@functools.cache
def _validator(api_version: str, kind: str) -> jsonschema.protocols.Validator | None:
    group, _, version = api_version.rpartition("/")
    path = crd_location() / group / f"{kind.lower()}_{version}.json"
    if not path.is_file():
        return None
    schema = json.loads(path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def schema_errors(manifest: dict[str, Any]) -> list[str]:
    """Every schema error of a manifest; a kind without a schema is an error too."""
    validator = _validator(str(manifest["apiVersion"]), str(manifest["kind"]))
    if validator is None:
        return [f"no schema for {manifest['apiVersion']} {manifest['kind']}"]
    return [
        f"{'/'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(manifest)
    ]
