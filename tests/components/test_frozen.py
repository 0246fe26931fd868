"""``@frozen`` behaves as ``@dataclass(frozen=True)`` does, and the project's classes use it."""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import FrozenInstanceError, InitVar, field
from pathlib import Path
from typing import Any

import pytest

from components.frozen import frozen

ROOT = Path(__file__).resolve().parents[2]


def _define(decorator: Any) -> tuple[type, type]:
    """The same two classes (a base and a subclass) under ``decorator``."""

    class Base:
        """A base with required, defaulted and factory fields."""

        name: str
        size: int = 1
        tags: list[str] = field(default_factory=list)
        note: str = field(default="", compare=False)

        def __post_init__(self) -> None:
            if self.size < 0:
                raise ValueError("size must not be negative")

    base: Any = decorator(Base)

    class Child(base):
        """A subclass adding a field."""

        extra: str = "x"

    return base, decorator(Child)


FROZEN_DATACLASS = dataclasses.dataclass(frozen=True)


def _outcome(call: Any) -> Any:
    """What a call gives: its value, or the type of what it raised."""
    try:
        return call()
    except Exception as exc:  # the exception's type is the outcome compared
        return type(exc)


CASES: dict[str, Any] = {
    "repr": lambda b, c: repr(c("n", 2, ["a"])).replace(c.__qualname__, "C"),
    "equal": lambda b, c: b("n", 2) == b("n", 2),
    "equal ignores compare=False": lambda b, c: b("n", note="a") == b("n", note="b"),
    "unequal": lambda b, c: b("n", 2) == b("n", 3),
    "other class": lambda b, c: b("n") == c("n"),
    "hash": lambda b, c: hash(b("n", 2)) == hash(b("n", 2, note="other")),
    "unhashable field": lambda b, c: hash(b("n", tags=["a"])),
    "keywords": lambda b, c: dataclasses.astuple(c(extra="e", name="n")),
    "fresh factory": lambda b, c: b("n").tags is not b("n").tags,
    "replace": lambda b, c: dataclasses.astuple(dataclasses.replace(c("n", 2), size=5)),
    "fields": lambda b, c: [f.name for f in dataclasses.fields(c)],
    "assign": lambda b, c: setattr(b("n"), "size", 3),
    "assign new": lambda b, c: setattr(b("n"), "other", 3),
    "delete": lambda b, c: delattr(b("n"), "size"),
    "missing": lambda b, c: b(),
    "twice": lambda b, c: b("n", name="m"),
    "unknown": lambda b, c: b("n", colour="red"),
    "too many": lambda b, c: b("n", 1, [], "", "more"),
    "post_init": lambda b, c: c("n", -1),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_frozen_matches_a_frozen_dataclass(case: str) -> None:
    ours = _outcome(lambda: CASES[case](*_define(frozen)))
    theirs = _outcome(lambda: CASES[case](*_define(FROZEN_DATACLASS)))
    assert ours == theirs


def test_a_frozen_instance_is_refused_assignment() -> None:
    base, _ = _define(frozen)
    with pytest.raises(FrozenInstanceError):
        base("n").size = 2


def test_a_field_without_default_after_one_with_is_refused() -> None:
    class Bad:
        first: int = 1
        second: int

    with pytest.raises(TypeError, match="'second' without a default follows 'first'"):
        frozen(Bad)


@pytest.mark.parametrize(
    "namespace",
    [
        {"__annotations__": {"value": InitVar[int]}},
        {"__annotations__": {"value": int}, "value": field(default=0, kw_only=True)},
    ],
    ids=["InitVar", "kw_only"],
)
def test_unsupported_fields_are_refused(namespace: dict[str, Any]) -> None:
    with pytest.raises(TypeError, match="not supported"):
        frozen(type("Bad", (), namespace))


def test_project_classes_use_frozen_not_a_frozen_dataclass() -> None:
    """A frozen dataclass compiles six methods when its module is imported: the import cost the
    program is measured by (docs/performance.md)."""
    offenders = []
    for path in sorted([*ROOT.glob("infra/**/*.py"), *ROOT.glob("components/**/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                for decorator in node.decorator_list:
                    if isinstance(decorator, ast.Call) and any(
                        k.arg == "frozen" for k in decorator.keywords
                    ):
                        offenders.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert offenders == []
