"""schema/stack-config.schema.json is current, and it accepts/rejects what the models do."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from bench.synthetic import synthetic_config
from tests.harness import ROOT
from tools.gen_config_schema import (
    SCHEMA_PATH,
    WORKLOAD_FILE_SCHEMA_PATH,
    render,
    render_workload_file,
)


def test_schema_file_is_current():
    assert SCHEMA_PATH.read_text() == render(), "run: python -m tools.gen_config_schema"


def test_workload_file_schema_is_current():
    assert WORKLOAD_FILE_SCHEMA_PATH.read_text() == render_workload_file(), (
        "run: python -m tools.gen_config_schema"
    )


def test_workload_file_schema_accepts_workloads_and_nothing_else():
    schema = json.loads(WORKLOAD_FILE_SCHEMA_PATH.read_text())
    jsonschema.validate({"workloads": synthetic_config(4)["workloads"]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"workloads": [], "teams": []}, schema)


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
