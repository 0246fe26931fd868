"""From stack config (the Pulumi runtime's, or a ``Pulumi.<stack>.yaml`` file) to a validated model.

Both paths end in ``validate_platform_config``, so the offline preview and ``pulumi up`` accept
and reject exactly the same input.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.collector import collector_paused
from components.constants import PROJECT
from components.yaml_text import SAFE_LOADER

from .errors import ConfigError, ConfigIssue, issues_from_validation_error, name_items
from .partial import describe_skipped, partial_config
from .root import PlatformConfig
from .rules import cross_field_check
from .workload_files import WORKLOAD_FILES_KEY, attribute_all, include_workload_files

OFFLINE_SECRET_PLACEHOLDER = "offline-preview-secret"
"""Stands in for ``secure:`` values, which only the Pulumi CLI can decrypt."""

_PREFIX = f"{PROJECT}:"

ENVIRONMENT_STRING_LIMIT = 131_072
"""Linux's ``MAX_ARG_STRLEN``: the longest single environment string (``NAME=value`` and its NUL)
a process may be started with. The Pulumi engine hands the whole stack config, secrets decrypted,
to the program and to each policy pack as one variable, ``PULUMI_CONFIG``: a stack file past the
limit fails ``pulumi preview`` and ``pulumi up`` before the program starts."""
ENGINE_CONFIG_VARIABLE = "PULUMI_CONFIG"


def engine_config_bytes(values: Mapping[str, Any]) -> int:
    """Bytes of the ``PULUMI_CONFIG=...`` string the engine builds from these config values (compact
    JSON of every value as a string, structured ones as JSON text)."""
    wire = {
        key: value if isinstance(value, str) else _compact(value) for key, value in values.items()
    }
    return len(f"{ENGINE_CONFIG_VARIABLE}={_compact(wire)}".encode()) + 1


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def engine_limit_issues(values: Mapping[str, Any]) -> list[ConfigIssue]:
    """The stack config too large for the engine to pass to the program, at its largest key."""
    size = engine_config_bytes(values)
    if size <= ENVIRONMENT_STRING_LIMIT:
        return []
    sizes = {key: engine_config_bytes({key: value}) for key, value in values.items()}
    largest = max(sizes, key=lambda key: sizes[key])
    top = largest[len(_PREFIX) :] if largest.startswith(_PREFIX) else largest
    return [
        ConfigIssue(
            (top,),
            f"the stack config is {size:,} bytes as the Pulumi engine passes it to the program and "
            f"to each policy pack (one environment variable, {ENGINE_CONFIG_VARIABLE}), over the "
            f"{ENVIRONMENT_STRING_LIMIT:,} bytes Linux allows one: pulumi preview and pulumi up "
            f"would fail before the program starts; this key is {sizes[largest]:,} bytes of it. "
            "move the workloads into files beside the stack file, named by "
            f"{_PREFIX}{WORKLOAD_FILES_KEY} (the program reads them itself), or split the stack",
        )
    ]


def stack_file_name(stack: str) -> str:
    return f"Pulumi.{stack}.yaml"


def validate_platform_config(
    raw: Mapping[str, Any],
    source: str,
    found: Sequence[ConfigIssue] = (),
    project: Path | None = None,
) -> PlatformConfig:
    """Validate ``ai-platform:`` keys (prefix stripped); ``ConfigError`` lists every issue,
    ``found`` (what the loader found in the same input: misplaced secrets) first.

    ``project`` is the folder ``workloadFiles`` are relative to (the stack file's, where the
    engine runs the program); without it, the files are not read.
    The cross-field rules run even when the models reject part of the input, on what parsed
    (``partial.py``): one run reports every error, and names the checks it could not run.
    """
    issues = list(found)
    included = None
    if project is not None:
        included = include_workload_files(raw, project, parse_yaml)
        raw, issues = included.raw, [*issues, *included.issues]
    partial = False
    try:
        config = PlatformConfig.model_validate(dict(raw))
    except ValidationError as exc:
        issues += issues_from_validation_error(exc, PlatformConfig)
        config, partial = partial_config(PlatformConfig, raw, exc), True
    broken, skipped = cross_field_check(config, partial)
    issues += broken
    if issues:
        named = attribute_all(included, name_items(raw, issues))
        raise ConfigError(source, named, describe_skipped(raw, skipped))
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


def _credential_paths(top: str, value: Any) -> Iterator[tuple[str | int, ...]]:
    """Every path under ``ai-platform:<top>`` that holds a credential (a ``SECRET_FIELD_PATHS``
    match with a value), as ``(top, ...)``."""
    for pattern in SECRET_FIELD_PATHS:
        if pattern[0] != top:
            continue
        nodes: list[tuple[tuple[str | int, ...], Any]] = [((top,), value)]
        for want in pattern[1:]:
            found: list[tuple[tuple[str | int, ...], Any]] = []
            for path, node in nodes:
                if want == "*" and isinstance(node, list):
                    found += [((*path, index), item) for index, item in enumerate(node)]
                elif want != "*" and isinstance(node, dict) and want in node:
                    found.append(((*path, want), node[want]))
            nodes = found
        yield from (path for path, node in nodes if node is not None)


def plain_credential_issue(path: tuple[str | int, ...]) -> ConfigIssue:
    """A credential written as plain text: it would sit in git and in every preview log."""
    where = ConfigIssue(path, "").key_path
    return ConfigIssue(
        path,
        "a credential must be a Pulumi secret, not plain text: pulumi config set --secret "
        f"--path '{where}' <value>",
    )


def load_from_pulumi_runtime(stack: str) -> PlatformConfig:
    """Read every ``ai-platform:`` key the engine passed: unknown top-level keys are caught too."""
    from pulumi.runtime import config as runtime_config
    from pulumi.runtime import settings as runtime_settings

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
    raw = project_keys(flat)
    # A key without any secure value holds its credentials in plain text. (A key with one is
    # secret as a whole, so a plain credential beside a secure one is caught offline only.)
    misplaced += [
        plain_credential_issue(path)
        for top in sorted(_SECRET_TOP_LEVEL_KEYS)
        if f"{_PREFIX}{top}" not in secret_keys
        for path in _credential_paths(top, raw.get(top))
    ]
    # Workload files are relative to the project root (Pulumi.yaml's folder, the stack file's);
    # under mocks the runtime knows none, and the working directory stands in.
    root = runtime_settings.get_root_directory()
    return validate_platform_config(raw, source, misplaced, project=Path(root or Path.cwd()))


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


class _StackFileLoader(SAFE_LOADER):  # type: ignore[misc, valid-type]
    """YAML as the Pulumi CLI reads stack files: duplicate keys are errors, merge keys (``<<``)
    merge as its YAML library merges them (a key written beside them wins, then the earlier of
    several merged mappings), and dates stay the strings the engine would pass (PyYAML would
    turn ``2024-01-01`` into a ``date``)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._flattened: set[int] = set()

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        """Check the keys written in ``node``, then put the merged pairs before them (the last
        assignment wins when the mapping is built). PyYAML's own lets a later merged mapping
        win over an earlier one, the reverse of the CLI."""
        if id(node) in self._flattened:
            return
        self._flattened.add(id(node))
        written = [(key, value) for key, value in node.value if key.tag != _MERGE_TAG]
        seen: set[Any] = set()
        for key_node, _ in written:
            key = self.construct_object(key_node)
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            if isinstance(key, Hashable):
                seen.add(key)
        sources: list[yaml.MappingNode] = []
        for key_node, value in node.value:
            if key_node.tag != _MERGE_TAG:
                continue
            found = value.value if isinstance(value, yaml.SequenceNode) else [value]
            for source in found:
                if not isinstance(source, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"a merge key (<<) takes mappings, found a {source.id}",
                        source.start_mark,
                    )
                sources.append(source)
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for source in reversed(sources):
            self.flatten_mapping(source)
            merged += source.value
        node.value = merged + written


_MERGE_TAG = "tag:yaml.org,2002:merge"
_StackFileLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

MAX_EXPANDED_NODES = 1_000_000
"""Most YAML nodes a stack file may stand for once its aliases and merge keys are expanded.

Why: an alias is a pointer, so a few hundred bytes of nested aliases stand for billions of
values; the config step copies every one of them (secure values, JSON for the engine, the
models) and ran for minutes before a MemoryError. The CLI's YAML library refuses such files too.
A 1,000-workload stack file (650 KB, docs/performance.md) is about 60,000 nodes."""
MAX_EXPANDED_BYTES = 64 * 2**20
"""Most bytes of scalar text a stack file may stand for once expanded (64 MiB)."""


class _TooLargeError(Exception):
    """The document expands past the bounds; the message says which."""


def _expanded_size(root: yaml.Node) -> None:
    """Raise ``_TooLargeError`` if ``root`` expands past the bounds, or refers to itself.

    Counts each node as often as it is reached through aliases and merge keys (so an alias bomb
    counts what it would expand to), in time linear in the number of distinct nodes: the sizes
    of shared nodes are computed once. Iterative: nesting depth is bounded later by the parser.
    """
    sizes: dict[int, tuple[int, int]] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            nodes, text = 1, 0
            for child in _children(node):
                child_nodes, child_text = sizes[id(child)]
                nodes, text = nodes + child_nodes, text + child_text
            if isinstance(node, yaml.ScalarNode):
                text += len(node.value.encode("utf-8"))
            if nodes > MAX_EXPANDED_NODES:
                raise _TooLargeError(
                    f"the file's aliases and merge keys expand to more than {MAX_EXPANDED_NODES:,} "
                    "values; write the values out or share fewer nested anchors"
                )
            if text > MAX_EXPANDED_BYTES:
                raise _TooLargeError(
                    "the file's aliases and merge keys expand to more than "
                    f"{MAX_EXPANDED_BYTES // 2**20} MiB of text; write the values out or share "
                    "fewer nested anchors"
                )
            sizes[key] = (nodes, text)
            continue
        if key in sizes:
            continue
        if key in on_path:
            mark = node.start_mark
            raise _TooLargeError(
                f"an alias refers to a value that contains it (line {mark.line + 1}, column "
                f"{mark.column + 1}); the value would be infinite"
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _parse(text: str) -> Any:
    """The document in ``text``, composed, bounded (``_expanded_size``), then constructed."""
    loader = _StackFileLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "*" in text:  # without an alias, every node is written out: the file is its size
            _expanded_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _one_line(text: str) -> str:
    return " ".join(text.split())


class UnreadableYamlError(ValueError):
    """A YAML text the config cannot be read from; the message says why, for the user."""


def parse_yaml(text: str) -> Any:
    """A stack file's or a workload file's document, read as the CLI reads stack files and
    bounded (``_expanded_size``); ``UnreadableYamlError`` says what is wrong and where."""
    try:
        with collector_paused():
            return _parse(text)
    except _TooLargeError as exc:
        raise UnreadableYamlError(str(exc)) from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise UnreadableYamlError(f"not valid YAML{at}: {_one_line(problem)}") from None
    except RecursionError:
        raise UnreadableYamlError("YAML nested too deeply") from None
    except ValueError as exc:  # e.g. integers past Python's digit limit
        raise UnreadableYamlError(f"not valid YAML: {_one_line(str(exc))}") from None


class StackFile:
    """A parsed ``Pulumi.<stack>.yaml``: its config as the engine would pass it to the program."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = path.name
        try:
            document = parse_yaml(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(self.name, [ConfigIssue((), "stack file not found")]) from None
        except UnicodeDecodeError as exc:
            raise ConfigError(
                self.name, [ConfigIssue((), f"not UTF-8 text (byte {exc.start})")]
            ) from None
        except UnreadableYamlError as exc:
            raise ConfigError(self.name, [ConfigIssue((), str(exc))]) from None
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
                secure = {(top, *path) for path in found}
                misplaced += [
                    plain_credential_issue(path)
                    for path in _credential_paths(top, value)
                    if path not in secure
                ]
        self.issues = misplaced
        """Secrets in the wrong place or in plain text: reported with every other error by
        :meth:`platform_config`, which must pass before the program runs."""

    def engine_config(self) -> dict[str, str]:
        """Config in the engine's wire form: every value a string, structured values as JSON."""
        return {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in self.values.items()
        }

    def platform_config(self, engine_limits: bool = True) -> PlatformConfig:
        """The validated model. ``engine_limits=False`` skips the engine's config size limit:
        only for benchmarks of the program beyond what one stack can deploy."""
        found = [*self.issues, *(engine_limit_issues(self.values) if engine_limits else [])]
        return validate_platform_config(
            project_keys(self.values), self.name, found, project=self.path.parent
        )
