"""``@frozen``: the project's immutable value classes, with their methods written once.

Why not ``@dataclass(frozen=True)``: it writes and compiles six methods per class (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``) each time the module is
imported, which was two thirds of the instructions the program spent importing our modules
(docs/performance.md, "Our program against the SDK floor"). ``@frozen`` still lets
``dataclasses`` collect the fields, so ``dataclasses.fields``, ``replace`` and ``is_dataclass``
work and type checkers read a frozen dataclass (``dataclass_transform``), and gives every class
the same methods, defined here. What a class gets is what ``@dataclass(frozen=True)`` gives:
``__init__`` taking the fields in order, positionally or by keyword, then ``__post_init__`` if
the class has one; assignment refused with ``FrozenInstanceError``; equality and hash over the
fields' values; a ``repr`` naming them. ``InitVar`` and keyword-only fields are not supported:
such a class is refused when it is defined.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from typing import Any, NamedTuple, TypeVar, dataclass_transform

_T = TypeVar("_T")

_PLAN = "__frozen_plan__"
"""The class attribute holding its ``_Plan``."""


class _Plan(NamedTuple):
    """What the shared methods need of a class's fields, read once when it is defined."""

    positional: tuple[str, ...]
    """The fields ``__init__`` takes, in order."""
    accepted: frozenset[str]
    required: frozenset[str]
    defaults: dict[str, Any]
    """Plain defaults, of fields ``__init__`` takes and of those it does not."""
    factories: tuple[tuple[str, Callable[[], Any]], ...]
    """``default_factory`` by field, called when the field is not given."""
    compared: tuple[str, ...]
    hashed: tuple[str, ...]
    shown: tuple[str, ...]


def _init(self: Any, *args: Any, **kwargs: Any) -> None:
    """The given values over the defaults, checked and stored with a few dictionary operations:
    this runs for every argument object a stack builds (tens of thousands at 1,000 workloads)."""
    plan: _Plan = getattr(type(self), _PLAN)
    if args:
        kwargs = _by_name(type(self).__name__, plan, args, kwargs)
    if not kwargs.keys() <= plan.accepted:
        unknown = ", ".join(repr(key) for key in kwargs if key not in plan.accepted)
        raise TypeError(f"{type(self).__name__}() got unexpected keyword arguments {unknown}")
    if not kwargs.keys() >= plan.required:
        missing = ", ".join(
            repr(name) for name in plan.positional if name in plan.required - kwargs.keys()
        )
        raise TypeError(f"{type(self).__name__}() missing required arguments {missing}")
    values = {**plan.defaults, **kwargs}
    for name, factory in plan.factories:
        if name not in kwargs:
            values[name] = factory()
    self.__dict__.update(values)
    post_init = getattr(self, "__post_init__", None)
    if post_init is not None:
        post_init()


def _by_name(
    cls: str, plan: _Plan, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Positional arguments as keywords, refused as a generated ``__init__`` refuses them."""
    if len(args) > len(plan.positional):
        raise TypeError(
            f"{cls}() takes {len(plan.positional)} positional arguments but {len(args)} were given"
        )
    for name, value in zip(plan.positional, args, strict=False):
        if name in kwargs:
            raise TypeError(f"{cls}() got multiple values for {name!r}")
        kwargs[name] = value
    return kwargs


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = getattr(type(self), _PLAN).compared
    return tuple(getattr(self, name) for name in compared) == tuple(
        getattr(other, name) for name in compared
    )


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, name) for name in getattr(type(self), _PLAN).hashed))


def _repr(self: Any) -> str:
    shown = ", ".join(
        f"{name}={getattr(self, name)!r}" for name in getattr(type(self), _PLAN).shown
    )
    return f"{type(self).__qualname__}({shown})"


def _make_plan(cls: type) -> _Plan:
    declared: tuple[Field[Any], ...] = dataclasses.fields(cls)
    unsupported = [f.name for f in declared if f.kw_only is True]
    unsupported += [
        name
        for name, f in cls.__dict__["__dataclass_fields__"].items()
        if f._field_type is dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]
    ]
    if unsupported:
        raise TypeError(
            f"@frozen {cls.__name__}: InitVar and kw_only fields are not supported: {unsupported}"
        )
    init = [f for f in declared if f.init]
    for before, after in itertools.pairwise(init):
        if _has_default(before) and not _has_default(after):
            raise TypeError(
                f"@frozen {cls.__name__}: field {after.name!r} without a default follows "
                f"{before.name!r}, which has one"
            )
    return _Plan(
        positional=tuple(f.name for f in init),
        accepted=frozenset(f.name for f in init),
        required=frozenset(f.name for f in init if not _has_default(f)),
        defaults={f.name: f.default for f in declared if f.default is not MISSING},
        factories=tuple(
            (f.name, f.default_factory) for f in declared if f.default_factory is not MISSING
        ),
        compared=tuple(f.name for f in declared if f.compare),
        hashed=tuple(f.name for f in declared if (f.compare if f.hash is None else f.hash)),
        shown=tuple(f.name for f in declared if f.repr),
    )


def _has_default(field: Field[Any]) -> bool:
    return field.default is not MISSING or field.default_factory is not MISSING


@dataclass_transform(frozen_default=True, eq_default=True, field_specifiers=(dataclasses.field,))
def frozen(cls: type[_T]) -> type[_T]:
    """The class as a frozen dataclass whose methods are the shared ones above."""
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    setattr(cls, _PLAN, _make_plan(cls))
    methods: dict[str, Callable[..., Any]] = {
        "__init__": _init,
        "__setattr__": _setattr,
        "__delattr__": _delattr,
        "__eq__": _eq,
        "__hash__": _hash,
        "__repr__": _repr,
    }
    own = cls.__dict__
    if "__setattr__" in own or "__delattr__" in own:
        raise TypeError(
            f"@frozen {cls.__name__}: a frozen class cannot define __setattr__ or __delattr__"
        )
    for name, method in methods.items():
        explicit = name in own and not (
            name == "__hash__" and own[name] is None and "__eq__" in own
        )
        if not explicit:
            setattr(cls, name, method)
    return cls
