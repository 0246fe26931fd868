"""From stack config (the Pulumi runtime's, or a ``Pulumi.<stack>.yaml`` file) to a validated model.

Both paths end in ``validate_platform_config``, so the offline preview and ``pulumi up`` accept
and reject exactly the same input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.constants import PROJECT

from .errors import ConfigError, ConfigIssue, issues_from_validation_error
from .root import PlatformConfig
from .rules import cross_field_issues

OFFLINE_SECRET_PLACEHOLDER = "offline-preview-secret"
"""Stands in for ``secure:`` values, which only the Pulumi CLI can decrypt."""

_PREFIX = f"{PROJECT}:"


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def validate_platform_config(raw: Mapping[str, Any], source: str) -> PlatformConfig:
    """Validate ``ai-platform:`` keys (prefix stripped); ``ConfigError`` lists every issue."""
    try:
        config = PlatformConfig.model_validate(dict(raw))
    except ValidationError as exc:
        raise ConfigError(source, issues_from_validation_error(exc, PlatformConfig)) from None
    issues = cross_field_issues(config)
    if issues:
        raise ConfigError(source, issues)
    return config


def _decode(value: Any) -> Any:
    """The engine hands structured config to programs as JSON text; plain strings stay strings."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def project_keys(flat_config: Mapping[str, Any]) -> dict[str, Any]:
    """``{"ai-platform:teams": "<json>"}`` → ``{"teams": [...]}``; other namespaces are ignored."""
    return {
        key[len(_PREFIX) :]: _decode(value)
        for key, value in flat_config.items()
        if key.startswith(_PREFIX)
    }


def load_from_pulumi_runtime(stack: str) -> PlatformConfig:
    """Read every ``ai-platform:`` key the engine passed: unknown top-level keys are caught too."""
    from pulumi.runtime import config as runtime_config

    flat = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return validate_platform_config(project_keys(flat), stack_file_name(stack))


def _replace_secure(value: Any, secret_paths: list[str], path: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            secret_paths.append(path)
            return OFFLINE_SECRET_PLACEHOLDER
        return {k: _replace_secure(v, secret_paths, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_secure(v, secret_paths, path) for v in value]
    return value


class StackFile:
    """A parsed ``Pulumi.<stack>.yaml``: its config as the engine would pass it to the program."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(self.name, [ConfigIssue((), "stack file not found")]) from None
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError(
                self.name, [ConfigIssue((), f"not valid YAML{at}: {problem}")]
            ) from None
        if document is None:
            document = {}
        if not isinstance(document, dict):
            raise ConfigError(self.name, [ConfigIssue((), "the file must be a YAML mapping")])
        config = document.get("config") or {}
        if not isinstance(config, dict):
            raise ConfigError(self.name, [ConfigIssue((), "'config' must be a mapping")])
        self.secret_keys: list[str] = []
        self.values: dict[str, Any] = {}
        for key, value in config.items():
            self.values[str(key)] = _replace_secure(value, self.secret_keys, str(key))

    def engine_config(self) -> dict[str, str]:
        """Config in the engine's wire form: every value a string, structured values as JSON."""
        return {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in self.values.items()
        }

    def platform_config(self) -> PlatformConfig:
        return validate_platform_config(project_keys(self.values), self.name)
