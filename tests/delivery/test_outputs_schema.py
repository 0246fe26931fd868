"""The versioned outputs schema: current with the model, met by the stacks, never broken in place.

Consumers pin schema/stack-outputs.v<N>.schema.json; these tests keep that promise.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from infra.outputs import OUTPUTS_VERSION
from tools import gen_outputs_schema
from tools.gen_outputs_schema import breaking_changes, build_schema, render, schema_path

REGENERATE = "run: python -m tools.gen_outputs_schema (make schema)"


def _checked_in() -> dict[str, Any]:
    path = schema_path()
    assert path.exists(), f"{path.name} is missing; {REGENERATE}"
    return json.loads(path.read_text())


def test_schema_file_is_current():
    assert schema_path().read_text() == render(), REGENERATE


def test_schema_file_is_a_valid_draft_2020_12_schema():
    schema = _checked_in()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith(f"/stack-outputs.v{OUTPUTS_VERSION}.schema.json")
    assert schema["additionalProperties"] is False  # extra="forbid"
    assert all(d["additionalProperties"] is False for d in schema["$defs"].values())


def test_model_does_not_break_the_released_contract():
    problems = breaking_changes(_checked_in(), build_schema())
    assert not problems, (
        f"breaking change to outputs contract v{OUTPUTS_VERSION}: {problems}; bump "
        "OUTPUTS_VERSION in infra/outputs.py and add a note to docs/upgrading.md"
    )


@pytest.mark.parametrize("fixture", ["dev_run", "prod_run"])
def test_stack_exports_validate_against_the_schema(fixture, request):
    outputs = request.getfixturevalue(fixture).value.model_dump(mode="json")
    jsonschema.validate(outputs, _checked_in(), cls=jsonschema.Draft202012Validator)


def test_schema_rejects_another_major_version_and_unknown_outputs(prod_run):
    schema = _checked_in()
    outputs = prod_run.value.model_dump(mode="json")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**outputs, "outputsVersion": OUTPUTS_VERSION + 1}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**outputs, "surprise": 1}, schema)


# --- The compatibility check itself, on edited copies of the current schema ---------------------


def _team_props(schema: dict[str, Any]) -> dict[str, Any]:
    return schema["$defs"]["TeamOutputs"]["properties"]


def test_additions_are_compatible():
    current = build_schema()
    extended = copy.deepcopy(current)
    _team_props(extended)["serviceDns"] = {"type": "object", "additionalProperties": {}}
    extended["$defs"]["TeamOutputs"]["required"].append("serviceDns")
    extended["properties"]["newOutput"] = {"type": "string"}
    assert breaking_changes(current, extended) == []


def test_removed_or_renamed_property_is_breaking():
    current = build_schema()
    renamed = copy.deepcopy(current)
    _team_props(renamed)["namespaceName"] = _team_props(renamed).pop("namespace")
    assert breaking_changes(current, renamed) == ["teams.*.namespace: removed or renamed"]


def test_changed_type_is_breaking():
    current = build_schema()
    changed = copy.deepcopy(current)
    changed["$defs"]["GpuPoolOutputs"]["properties"]["gpusPerNode"] = {"type": "string"}
    changed["$defs"]["TeamOutputs"]["properties"]["serviceAccount"] = {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert breaking_changes(current, changed) == [
        "gpuPools.*.gpusPerNode: type changed from integer to string",
        "teams.*.serviceAccount: type changed from string to null|string",
    ]


def test_newly_required_is_breaking():
    current = build_schema()
    stricter = copy.deepcopy(current)
    stricter["required"].append("gpuPools")
    assert breaking_changes(current, stricter) == ["gpuPools: newly required"]


def test_generator_refuses_to_overwrite_a_released_file_with_a_breaking_change(
    tmp_path, monkeypatch, capsys
):
    released = copy.deepcopy(build_schema())
    released["properties"]["retiredOutput"] = {"type": "string"}
    monkeypatch.setattr(gen_outputs_schema, "SCHEMA_DIR", tmp_path)
    target = schema_path()
    target.write_text(json.dumps(released))
    assert gen_outputs_schema.main([]) == 1
    assert "retiredOutput: removed or renamed" in capsys.readouterr().err
    assert json.loads(target.read_text()) == released  # untouched
