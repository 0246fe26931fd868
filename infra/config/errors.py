"""Config errors people can act on: the stack file, the key path, what is wrong."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from components.constants import PROJECT

PathPart = str | int


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_./:-]+$")


def _key(part: str | int) -> str:
    """Keys as written, but quoted (``["with space"]``) when they would break the one-line form."""
    text = str(part)
    return text if _PLAIN_KEY.match(text) else f"[{json.dumps(text)}]"


@dataclass(frozen=True)
class ConfigIssue:
    """One problem at one key path, e.g. ``("teams", 2, "quota", "gpus")``."""

    path: tuple[PathPart, ...]
    message: str

    @property
    def key_path(self) -> str:
        """The path as users write it: ``ai-platform:teams[2].quota.gpus``."""
        if not self.path:
            return f"{PROJECT}:"
        text = f"{PROJECT}:{_key(self.path[0])}"
        for part in self.path[1:]:
            if isinstance(part, int):
                text += f"[{part}]"
            else:
                key = _key(part)
                text += key if key.startswith("[") else f".{key}"
        return text


class ConfigError(Exception):
    """Raised before any resource is registered; lists every issue found at once."""

    def __init__(self, source: str, issues: Sequence[ConfigIssue]) -> None:
        self.source = source
        self.issues = tuple(issues)
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"{self.source}: {issue.key_path}: {issue.message}" for issue in self.issues]
        noun = "error" if len(lines) == 1 else "errors"
        return f"{len(lines)} stack config {noun}:\n" + "\n".join(f"  {line}" for line in lines)


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


def _message(error: ErrorDetails, model: type[BaseModel]) -> str:
    kind = error["type"]
    ctx = error.get("ctx", {})
    value = error.get("input")
    loc = error["loc"]
    if kind == "missing":
        return "required key is missing"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        hint = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        suffix = f"; did you mean '{hint[0]}'?" if hint else ""
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
        ConfigIssue(tuple(error["loc"]), _message(error, model))
        for error in exc.errors(include_url=False)
    ]
