"""The pack's contract: names, documentation, config schemas, fixtures and stack config files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from aiplatform_policies import METAS, PACK_NAME, POLICIES, REGISTRY
from aiplatform_policies.harness import FIXTURES
from aiplatform_policies.registry import PolicyMeta

PACK_DIR = Path(__file__).resolve().parent.parent
CONFIG_DIR = PACK_DIR / "config"
LEVELS = {level.value for level in EnforcementLevel}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
IDS = [m.name for m in METAS]


def test_pack_shape() -> None:
    assert PACK_NAME == "ai-platform-policies"
    assert len(POLICIES) >= 25
    names = [p.name for p in POLICIES]
    assert len(names) == len(set(names)), "policy names must be unique"
    assert set(names) == set(REGISTRY)


@pytest.mark.parametrize("meta", METAS, ids=IDS)
def test_policy_is_documented(meta: PolicyMeta) -> None:
    policy = meta.policy
    assert KEBAB.match(policy.name), "policy names are kebab-case"
    assert policy.description and policy.description.endswith("."), "one-sentence description"
    assert policy.severity is not None and policy.severity == meta.severity
    assert policy.remediation_steps and len(policy.remediation_steps) > 40
    assert policy.enforcement_level is not None
    assert policy.tags == [meta.category.value]
    assert isinstance(policy, StackValidationPolicy if meta.stack else ResourceValidationPolicy)


@pytest.mark.parametrize("meta", METAS, ids=IDS)
def test_config_schema_is_valid_json_schema(meta: PolicyMeta) -> None:
    schema = meta.policy.config_schema
    if schema is None:
        return
    assert schema.properties, "a config schema without properties should be omitted"
    assert "enforcementLevel" not in schema.properties
    whole = {"type": "object", "properties": schema.properties, "additionalProperties": False}
    jsonschema.Draft7Validator.check_schema(whole)
    for key, prop in schema.properties.items():
        assert re.match(r"^[a-z][A-Za-z0-9]*$", key), f"{key}: camelCase knob names"
        jsonschema.Draft7Validator.check_schema(prop)
        assert prop.get("description"), f"{key}: every knob is described"
        assert "default" in prop, f"{key}: every knob has a default"
        jsonschema.validate(prop["default"], prop)


@pytest.mark.parametrize("meta", METAS, ids=IDS)
def test_policy_has_both_fixture_kinds(meta: PolicyMeta) -> None:
    folder = FIXTURES / meta.name
    assert list(folder.glob("allowed-*.yaml")), f"no allowed fixture in {folder}"
    assert list(folder.glob("disallowed-*.yaml")), f"no disallowed fixture in {folder}"


def test_fixture_folders_name_policies() -> None:
    for folder in FIXTURES.iterdir():
        if not folder.is_dir():
            continue
        assert folder.name in REGISTRY, f"fixture folder for unknown policy: {folder.name}"
        for file in folder.iterdir():
            assert re.match(r"^(allowed|disallowed)-[a-z0-9-]+\.yaml$", file.name), file


def _load(stack: str) -> dict[str, Any]:
    data = json.loads((CONFIG_DIR / f"{stack}.json").read_text())
    assert isinstance(data, dict)
    return data


def _level(entry: Any) -> str | None:
    return entry if isinstance(entry, str) else entry.get("enforcementLevel")


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_stack_config_names_real_policies_and_valid_properties(stack: str) -> None:
    config = _load(stack)
    for name, entry in config.items():
        if name == "all":
            assert entry in LEVELS
            continue
        assert name in REGISTRY, f"{stack}.json configures unknown policy {name!r}"
        assert isinstance(entry, str | dict)
        level = _level(entry)
        assert level is None or level in LEVELS, f"{name}: bad level {level!r}"
        if isinstance(entry, dict):
            props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
            schema = REGISTRY[name].policy.config_schema
            properties = schema.properties if schema else {}
            jsonschema.validate(
                props, {"type": "object", "properties": properties, "additionalProperties": False}
            )


def test_stack_configs_cover_every_policy() -> None:
    for stack in ("dev", "prod"):
        config = _load(stack)
        missing = set(REGISTRY) - set(config)
        assert not missing, f"{stack}.json does not set a level for {sorted(missing)}"


ADVICE = frozenset({"log-level-shipped"})
"""Policies that advise, in every stack: what they find wastes effort but endangers nothing
(a log level whose lines are dropped), so it must never block a deployment."""


def test_dev_is_mostly_advisory_and_prod_mandatory() -> None:
    dev, prod = _load("dev"), _load("prod")
    dev_levels = [_level(dev[name]) for name in REGISTRY]
    soft = sum(level in ("advisory", "disabled") for level in dev_levels)
    assert soft >= 0.75 * len(dev_levels), "dev.json should be mostly advisory"
    for name in REGISTRY:
        expected = "advisory" if name in ADVICE else "mandatory"
        assert _level(prod[name]) == expected, f"prod.json: {name} must be {expected}"
        if name in ADVICE:
            assert _level(dev[name]) == "advisory", f"dev.json: {name} must be advisory"
    assert _level(dev["pss-baseline"]) == "mandatory"
    assert _level(dev["pss-restricted"]) == "advisory"
    assert prod["hpa-replica-bounds"]["minReplicas"] == 2
