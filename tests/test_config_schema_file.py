"""schema/stack-config.schema.json is current, and it accepts/rejects what the models do."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from tests.harness import ROOT
from tools.gen_config_schema import SCHEMA_PATH, render


def test_schema_file_is_current():
    assert SCHEMA_PATH.read_text() == render(), "run: python -m tools.gen_config_schema"


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stack_files_validate_against_the_schema(stack):
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text()), schema)


def test_schema_rejects_unknown_project_keys_but_not_other_namespaces():
    schema = json.loads(SCHEMA_PATH.read_text())
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    document["config"]["kubernetes:enableServerSideApply"] = "true"
    jsonschema.validate(document, schema)
    document["config"]["ai-platform:teamz"] = []
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema)
