"""Config errors people can act on: the stack file, the key path, what is wrong."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from components.constants import PROJECT
from components.frozen import frozen

PathPart = str | int


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_./:-]+$")


def _key(part: str | int) -> str:
    """Keys as written, but quoted (``["with space"]``) when they would break the one-line form."""
    text = str(part)
    return text if _PLAIN_KEY.match(text) else f"[{json.dumps(text)}]"


ITEM_NAME_KEYS = ("name", "pool")
"""Keys that name a list item, in order: most items have a ``name``; a team's queue entries are
named by their ``pool``."""


def item_name(item: Any) -> str | None:
    """The name a list item has as written (``name: research``), if any."""
    if isinstance(item, dict):
        for key in ITEM_NAME_KEYS:
            value = item.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _item(name: str) -> str:
    """``[research]``; quoted where the name could read as a position or break the line."""
    plain = _PLAIN_KEY.match(name) and not name.isdigit()
    return f"[{name}]" if plain else f"[{json.dumps(name)}]"


def entry_ref(list_key: str, name: str) -> str:
    """How messages refer to another entry: ``teams[research]``."""
    return f"{list_key}{_item(name)}"


def plural(count: int, noun: str) -> str:
    """``1 node``, ``3 nodes``: counts in messages."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def render_key_path(path: Sequence[PathPart], names: Sequence[str | None] = ()) -> str:
    """``ai-platform:teams[research].quota.gpus``: names where known, positions otherwise."""
    if not path:
        return f"{PROJECT}:"
    text = f"{PROJECT}:{_key(path[0])}"
    for depth, part in enumerate(path[1:], start=1):
        name = names[depth] if depth < len(names) else None
        if isinstance(part, int):
            text += _item(name) if name is not None else f"[{part}]"
        else:
            key = _key(part)
            text += key if key.startswith("[") else f".{key}"
    return text


@frozen
class ConfigIssue:
    """One problem at one key path, e.g. ``("teams", 2, "quota", "gpus")``."""

    path: tuple[PathPart, ...]
    """Positions into lists, as the models and rules see the input."""
    message: str
    names: tuple[str | None, ...] = ()
    """Per part of ``path``, the name of the list item a position points at, where it has one
    (set by :func:`name_items` from the input as written)."""
    source: str | None = None
    """The file the key is written in when it is not the stack file (a workload file), relative
    to the project folder; its keys have no ``ai-platform:`` namespace."""

    @property
    def key_path(self) -> str:
        """The path as users write it: ``ai-platform:teams[research].quota.gpus``."""
        text = render_key_path(self.path, self.names)
        return text if self.source is None else text.removeprefix(f"{PROJECT}:")


def _named(raw: Any, path: Sequence[PathPart]) -> tuple[tuple[str | None, ...], list[str]]:
    """Names along ``path`` in ``raw``, and a note for each name that several items share."""
    names: list[str | None] = [None] * len(path)
    notes: list[str] = []
    node: Any = raw
    for depth, part in enumerate(path):
        if isinstance(node, dict) and not isinstance(part, int) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            name = item_name(node[part])
            if name is not None:
                names[depth] = name
                count = sum(item_name(other) == name for other in node)
                if count > 1:
                    where = render_key_path(path[:depth], names).removeprefix(f"{PROJECT}:")
                    notes.append(f"it is {where}[{part}], one of {count} entries named {name!r}")
            node = node[part]
        else:
            break
    return tuple(names), notes


def named_key_path(raw: Mapping[str, Any], path: Sequence[PathPart]) -> str:
    """``ai-platform:teams[research].queue`` for ``("teams", 0, "queue")`` in ``raw``."""
    return render_key_path(path, _named(raw, path)[0])


def name_items(raw: Mapping[str, Any], issues: Sequence[ConfigIssue]) -> list[ConfigIssue]:
    """Issues whose paths name list items as the user wrote them (``workloads[llama-eval]``),
    positions kept in the message where a name is not unique."""
    named = []
    for issue in issues:
        names, notes = _named(raw, issue.path)
        message = "; ".join([issue.message, *notes])
        named.append(ConfigIssue(issue.path, message, names, issue.source))
    return named


class ConfigError(Exception):
    """Raised before any resource is registered; lists every issue found at once, then the
    checks that could not run because their input is among the issues."""

    def __init__(
        self, source: str, issues: Sequence[ConfigIssue], not_checked: Sequence[str] = ()
    ) -> None:
        self.source = source
        self.issues = tuple(issues)
        self.not_checked = tuple(not_checked)
        super().__init__(self.render())

    def issue_lines(self) -> list[str]:
        """One ``Pulumi.<stack>.yaml: ai-platform:<path>: <problem>`` line per issue (a workload
        file's issue names that file and the path inside it)."""
        return [
            ": ".join(
                part
                for part in (issue.source or self.source, issue.key_path, issue.message)
                if part
            )
            for issue in self.issues
        ]

    def render(self) -> str:
        lines = self.issue_lines()
        noun = "error" if len(lines) == 1 else "errors"
        text = f"{len(lines)} stack config {noun}:\n" + "\n".join(f"  {line}" for line in lines)
        if self.not_checked:
            text += "\nnot checked until the errors above are fixed:\n"
            text += "\n".join(f"  - {line}" for line in self.not_checked)
        return text


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _allowed_keys(model: type[BaseModel], path: Sequence[PathPart]) -> list[str]:
    """The keys a mapping at ``path`` accepts, for did-you-mean hints on typos."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = next(
            (f for name, f in current.model_fields.items() if (f.alias or name) == part), None
        )
        if field is None:
            return []
        current = _model_in(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or n for n, f in current.model_fields.items()]
    return []


def _model_in(annotation: Any) -> Any:
    """Find the model class inside ``list[X]``, ``X | None`` and friends."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def closest_key(key: str, allowed: Sequence[str]) -> str | None:
    """The allowed key a typo most likely meant, if any is close."""
    found = difflib.get_close_matches(key, allowed, n=1)
    return found[0] if found else None


def _message(error: ErrorDetails, model: type[BaseModel]) -> str:
    kind = error["type"]
    ctx = error.get("ctx", {})
    value = error.get("input")
    loc = error["loc"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        hint = closest_key(str(loc[-1]), allowed)
        suffix = f"; did you mean '{hint}'?" if hint else ""
        if allowed and not hint:
            suffix = f"; allowed keys: {', '.join(sorted(allowed))}"
        return f"unknown key{suffix}"
    comparisons = {
        "greater_than_equal": (">=", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("<=", "le"),
        "less_than": ("<", "lt"),
    }
    if kind in comparisons:
        symbol, key = comparisons[kind]
        return f"must be {symbol} {ctx.get(key)}, got {_show(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {_show(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be a whole number, got {_show(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, got {_show(value)}"
    if kind == "string_type":
        return f"must be a string, got {_show(value)}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"must be a mapping, got {_show(value)}"
    if kind == "list_type":
        return f"must be a list, got {_show(value)}"
    if kind == "too_short":
        return f"must have at least {ctx.get('min_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "string_too_short":
        return f"must not be empty, got {_show(value)}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return f"{error['msg'][:1].lower()}{error['msg'][1:]}, got {_show(value)}"


def issues_from_validation_error(exc: ValidationError, model: type[BaseModel]) -> list[ConfigIssue]:
    """Translate pydantic's errors into ours, with camelCase paths and plain messages."""
    return [
        ConfigIssue(_key_path(tuple(error["loc"])), _message(error, model))
        for error in exc.errors(include_url=False)
    ]


def _key_path(loc: tuple[PathPart, ...]) -> tuple[PathPart, ...]:
    """Pydantic marks an invalid key of a map (``kubeReserved: {gpu: 1}``) with a ``[key]``
    part after it; the key path is the key's."""
    return loc[:-1] if loc[-1:] == ("[key]",) else loc
