"""The ``--policy-pack-config`` file: read, checked, and reconciled with the pack's policies as
the CLI does (more strictly: unknown policy names and property keys are errors)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from .errors import PolicyConfigError
from .results import ENFORCEMENT_LEVELS, AnalyzerInfo, PolicyConfig, PolicyInfo


@dataclass(frozen=True)
class PolicyConfigEntry:
    """One key of a config file: an optional level and the properties given for the policy."""

    enforcement_level: str | None
    properties: Mapping[str, Any]


def load_policy_pack_config(path: str | os.PathLike[str]) -> dict[str, PolicyConfigEntry]:
    """Parse and syntax-check a policy-pack-config JSON file (no pack needed).

    Mirrors the CLI's parsePolicyPackConfig: each key maps to a level string or to an object
    with an optional `enforcementLevel` plus the policy's properties; an empty file is no config.
    Stricter than the CLI on purpose: `all` may only carry a level.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyConfigError(f"{p}: cannot read policy pack config: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise PolicyConfigError(f"{p}: not UTF-8 text (byte {e.start})") from e
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except RecursionError as e:
        raise PolicyConfigError(f"{p}: invalid JSON: nested too deeply") from e
    except ValueError as e:  # JSONDecodeError, or integers past Python's digit limit
        raise PolicyConfigError(f"{p}: invalid JSON: {e}") from e
    if not isinstance(raw, dict):
        raise PolicyConfigError(
            f"{p}: must be a JSON object mapping policy names to an enforcement level or an "
            f"object, got {type(raw).__name__}"
        )
    entries: dict[str, PolicyConfigEntry] = {}
    for key, value in raw.items():
        where = f"{p}: key {key!r}"
        if isinstance(value, str):
            entries[key] = PolicyConfigEntry(_check_level(value, where), {})
        elif isinstance(value, dict):
            props = dict(value)
            level = None
            if "enforcementLevel" in props:
                lv = props.pop("enforcementLevel")
                if not isinstance(lv, str):
                    raise PolicyConfigError(
                        f"{where}: enforcementLevel must be a string, got {json.dumps(lv)}"
                    )
                level = _check_level(lv, where)
            if key == "all" and props:
                raise PolicyConfigError(
                    f"{where}: 'all' only sets the enforcement level of every policy; "
                    f"unexpected properties {sorted(props)}"
                )
            entries[key] = PolicyConfigEntry(level, props)
        else:
            raise PolicyConfigError(
                f"{where}: {json.dumps(value)} is not a valid value; must be an enforcement "
                f"level string or an object"
            )
    return entries


def _check_level(level: str, where: str) -> str:
    if level not in ENFORCEMENT_LEVELS:
        raise PolicyConfigError(
            f"{where}: {level!r} is not a valid enforcement level "
            f"(expected one of {', '.join(ENFORCEMENT_LEVELS)})"
        )
    return level


def reconcile_policy_config(
    analyzer: AnalyzerInfo,
    file_config: Mapping[str, PolicyConfigEntry],
    config_path: str | os.PathLike[str] = "<config>",
) -> dict[str, PolicyConfig]:
    """Compute what `Configure` receives, as the CLI's ReconcilePolicyPackConfig does.

    Start from each policy's default level and its schema defaults, apply the pack's initial
    config, then the file (`all` first, then per-policy entries), then validate properties
    against each policy's config schema. Unknown policy names and unknown property keys are
    errors here (the CLI silently passes them on; a typo would silently fall back to defaults).
    """
    known = {p.name: p for p in analyzer.policies}
    for key in file_config:
        if key != "all" and key not in known:
            raise PolicyConfigError(
                f"{config_path}: key {key!r}: unknown policy; pack {analyzer.name!r} has "
                f"{', '.join(sorted(known)) or 'no policies'}"
            )
    result: dict[str, tuple[str, dict[str, Any]]] = {}
    for p in analyzer.policies:
        props = {
            k: v["default"]
            for k, v in ((p.config_schema or {}).get("properties") or {}).items()
            if isinstance(v, Mapping) and "default" in v
        }
        result[p.name] = (p.enforcement_level, props)

    initial: dict[str, PolicyConfigEntry] = {}
    for k, v in analyzer.initial_config.items():
        if isinstance(v, PolicyConfig):
            initial[k] = PolicyConfigEntry(v.enforcement_level, dict(v.properties))
        else:
            initial[k] = PolicyConfigEntry(
                v.get("enforcementLevel"), dict(v.get("properties") or {})
            )
    for layer in (initial, file_config):
        all_entry = layer.get("all")
        if all_entry is not None and all_entry.enforcement_level:
            result = {n: (all_entry.enforcement_level, pr) for n, (_, pr) in result.items()}
        for name, entry in layer.items():
            if name == "all" or name not in result:
                continue
            level, props = result[name]
            result[name] = (entry.enforcement_level or level, {**props, **entry.properties})

    for name, (_, props) in result.items():
        _validate_properties(known[name], props, config_path)
    return {n: PolicyConfig(level, props) for n, (level, props) in result.items()}


def _validate_properties(policy: PolicyInfo, props: Mapping[str, Any], config_path: Any) -> None:
    schema = policy.config_schema or {}
    declared = schema.get("properties") or {}
    unknown = sorted(set(props) - set(declared))
    if unknown:
        allowed = ", ".join(sorted(declared)) or "none"
        noun = "property" if len(unknown) == 1 else "properties"
        raise PolicyConfigError(
            f"{config_path}: key {policy.name!r}: unknown {noun} {', '.join(unknown)} "
            f"(policy accepts: {allowed})"
        )
    if not schema:
        return
    full = {"type": "object", "properties": dict(declared)}
    if schema.get("required"):
        full["required"] = list(schema["required"])
    validator = jsonschema.Draft7Validator(full)
    errors = sorted(validator.iter_errors(dict(props)), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(
            f"{'.'.join(str(x) for x in e.absolute_path) or '(root)'}: {e.message}" for e in errors
        )
        raise PolicyConfigError(
            f"{config_path}: key {policy.name!r}: invalid policy config: {details}"
        )
