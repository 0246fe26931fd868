"""From stack config (the Pulumi runtime's, or a ``Pulumi.<stack>.yaml`` file) to a validated model.

Both paths end in ``validate_platform_config``, so the offline preview and ``pulumi up`` accept
and reject exactly the same input.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterator, Mapping
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


SECRET_FIELD_PATHS: tuple[tuple[str, ...], ...] = tuple(
    ("monitoring", "alertmanager", "receivers", "*", field)
    for field in ("url", "routingKey", "authPassword")
)
"""The only config values that may be ``secure:``: the program keeps them secret end to end.
Anywhere else a secret would be rendered as plain text (a ConfigMap, a label), so it is refused;
workloads take their secrets from Kubernetes Secrets instead."""
_SECRET_TOP_LEVEL_KEYS = frozenset(path[0] for path in SECRET_FIELD_PATHS)
_SECURE_ELSEWHERE = (
    "secure values are accepted only for Alertmanager receiver credentials "
    "(monitoring.alertmanager.receivers[].url, routingKey, authPassword); put other secrets in "
    "a Kubernetes Secret"
)


def _is_secret_field(path: tuple[str | int, ...]) -> bool:
    return any(
        len(path) == len(pattern)
        and all(want == "*" or want == str(got) for want, got in zip(pattern, path, strict=True))
        for pattern in SECRET_FIELD_PATHS
    )


def load_from_pulumi_runtime(stack: str) -> PlatformConfig:
    """Read every ``ai-platform:`` key the engine passed: unknown top-level keys are caught too."""
    from pulumi.runtime import config as runtime_config

    flat = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    source = stack_file_name(stack)
    # The engine marks a whole top-level key secret when any value inside it is secure.
    secret_keys = set(runtime_config.get_config_secret_keys_env()) | set(
        runtime_config._SECRET_KEYS.get()
    )
    misplaced = [
        ConfigIssue((key[len(_PREFIX) :],), _SECURE_ELSEWHERE)
        for key in sorted(secret_keys)
        if key.startswith(_PREFIX) and key[len(_PREFIX) :] not in _SECRET_TOP_LEVEL_KEYS
    ]
    if misplaced:
        raise ConfigError(source, misplaced)
    return validate_platform_config(project_keys(flat), source)


def _replace_secure(
    value: Any, found: list[tuple[str | int, ...]], path: tuple[str | int, ...]
) -> Any:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            found.append(path)
            return OFFLINE_SECRET_PLACEHOLDER
        return {k: _replace_secure(v, found, (*path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_secure(v, found, (*path, i)) for i, v in enumerate(value)]
    return value


class _StackFileLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML as the Pulumi CLI reads stack files: duplicate keys are errors, and dates stay the
    strings the engine would pass (PyYAML would turn ``2024-01-01`` into a ``date``)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StackFileLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a stack file is parsed.

    Why: YAML becomes a large tree of new dicts and lists without cycles, and every collection
    during the parse rescans it for nothing: a third of parsing a 650 KB stack file (1,000
    workloads), which made the config step grow faster than the file (docs/performance.md).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class StackFile:
    """A parsed ``Pulumi.<stack>.yaml``: its config as the engine would pass it to the program."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        try:
            with _collector_paused():
                document = yaml.load(path.read_text(encoding="utf-8"), Loader=_StackFileLoader)
        except FileNotFoundError:
            raise ConfigError(self.name, [ConfigIssue((), "stack file not found")]) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                self.name, [ConfigIssue((), f"not UTF-8 text (byte {exc.start})")]
            ) from None
        except yaml.YAMLError as exc:
            where = getattr(exc, "problem_mark", None)
            at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise ConfigError(
                self.name, [ConfigIssue((), f"not valid YAML{at}: {_one_line(problem)}")]
            ) from None
        except RecursionError:
            raise ConfigError(self.name, [ConfigIssue((), "YAML nested too deeply")]) from None
        except ValueError as exc:  # e.g. integers past Python's digit limit
            raise ConfigError(
                self.name, [ConfigIssue((), f"not valid YAML: {_one_line(str(exc))}")]
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
        misplaced: list[ConfigIssue] = []
        for key, value in config.items():
            found: list[tuple[str | int, ...]] = []
            self.values[str(key)] = _replace_secure(value, found, ())
            if found:
                self.secret_keys.append(str(key))
            if str(key).startswith(_PREFIX):
                top = str(key)[len(_PREFIX) :]
                misplaced += [
                    ConfigIssue((top, *path), _SECURE_ELSEWHERE)
                    for path in found
                    if not _is_secret_field((top, *path))
                ]
        if misplaced:
            raise ConfigError(self.name, misplaced)

    def engine_config(self) -> dict[str, str]:
        """Config in the engine's wire form: every value a string, structured values as JSON."""
        return {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in self.values.items()
        }

    def platform_config(self) -> PlatformConfig:
        return validate_platform_config(project_keys(self.values), self.name)
