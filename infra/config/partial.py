"""Cross-field rules over whatever parsed: every error of a stack file in one run.

When the models reject part of a stack file, the rules still run on the rest. What failed to
parse is replaced by an :class:`Unparsed` stand-in that raises when a rule reads it, so a rule
either never needs the broken part or does not run (and says so); it can never report a problem
it inferred from a value the user did not write. A failed list item is replaced in place, so
positions stay those of the file.

Rules that check list items one by one iterate with :func:`parsed` and look items up with
:class:`ByName`: the broken items are passed over (and noted), the others are checked. Any other
read of a broken item (a set of all names, a sum) stops the rule.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, Literal, NoReturn, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from components.frozen import frozen

from .errors import ITEM_NAME_KEYS, ConfigIssue, PathPart, closest_key, item_name, named_key_path

T = TypeVar("T")
Rule = Callable[[Any], Iterable[ConfigIssue]]


class UnparsedInputError(Exception):
    """A rule read config that failed to parse; the rule's findings are dropped."""

    def __init__(self, path: tuple[PathPart, ...]) -> None:
        super().__init__(path)
        self.path = path


class Unparsed:
    """Stands in for a key or list item that failed to parse: any use of it raises."""

    __slots__ = ("_unparsed_name", "_unparsed_path")

    def __init__(self, path: tuple[PathPart, ...], name: str | None = None) -> None:
        object.__setattr__(self, "_unparsed_path", path)
        object.__setattr__(self, "_unparsed_name", name)

    def _raise(self, *_: object) -> NoReturn:
        raise UnparsedInputError(object.__getattribute__(self, "_unparsed_path"))

    def __getattr__(self, _: str) -> NoReturn:
        self._raise()

    __iter__ = __len__ = __bool__ = __contains__ = __getitem__ = __str__ = __format__ = _raise
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = _raise
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Unparsed({object.__getattribute__(self, '_unparsed_path')!r})"


def unparsed_path(item: object) -> tuple[PathPart, ...] | None:
    return object.__getattribute__(item, "_unparsed_path") if isinstance(item, Unparsed) else None


def unparsed_name(item: Unparsed) -> str | None:
    name: str | None = object.__getattribute__(item, "_unparsed_name")
    return name


# --- Building the partial config --------------------------------------------------------------
@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def _list_item_type(annotation: Any) -> Any:
    """``X`` for a ``list[X]`` field, else None."""
    if getattr(annotation, "__origin__", None) is list:
        return annotation.__args__[0]
    return None


def _intended_key(unknown: str, raw: Mapping[str, Any], aliases: list[str]) -> str | None:
    """The absent key an unknown key was probably meant to be (``monitorng`` → ``monitoring``):
    its value is then unknown too, and the defaults must not be checked in its place."""
    meant = closest_key(unknown, aliases)
    return meant if meant is not None and meant not in raw else None


def partial_config(model: type[BaseModel], raw: Mapping[str, Any], error: ValidationError) -> Any:
    """``model`` built from what parsed in ``raw``; what did not is :class:`Unparsed`.

    Top-level keys and the items of top-level lists are parsed on their own (the models have no
    validators across keys), so one broken team does not hide the other teams from the rules.
    """
    fields = {field.alias or name: (name, field) for name, field in model.model_fields.items()}
    broken_keys: set[str] = set()
    broken_items: dict[str, set[int]] = {}
    bad_names: set[tuple[str, int]] = set()
    for detail in error.errors(include_url=False):
        loc = detail["loc"]
        if not loc:
            continue
        key, index = str(loc[0]), loc[1] if len(loc) > 1 else None
        if key not in fields:
            meant = _intended_key(key, raw, list(fields))
            if meant is not None:
                broken_keys.add(meant)
        elif isinstance(index, int) and _list_item_type(fields[key][1].annotation):
            broken_items.setdefault(key, set()).add(index)
            if len(loc) < 3 or loc[2] in ITEM_NAME_KEYS:
                bad_names.add((key, index))  # not a name others may refer to
        else:
            broken_keys.add(key)
    values: dict[str, Any] = {}
    for alias, (name, field) in fields.items():
        if alias in broken_keys:
            values[name] = Unparsed((alias,))
        elif alias not in raw:
            continue  # the default applies (a missing required key is a broken key)
        elif alias in broken_items:
            item_type = _list_item_type(field.annotation)
            values[name] = [
                Unparsed((alias, index), None if (alias, index) in bad_names else item_name(item))
                if index in broken_items[alias]
                else _adapter(item_type).validate_python(item)
                for index, item in enumerate(raw[alias])
            ]
        else:
            annotation: Any = field.annotation
            values[name] = _adapter(annotation).validate_python(raw[alias])
    return model.model_construct(**values)


# --- Running rules ------------------------------------------------------------------------------
@frozen
class SkippedCheck:
    """A rule that did not run, or did not run for some entries, because ``input`` is broken."""

    check: str
    input: tuple[PathPart, ...]
    scope: Literal["entry", "referrers", "check"]
    """``entry``: the broken entry itself was passed over; ``referrers``: entries that refer to
    it were; ``check``: the rule did not run at all."""


_skips: contextvars.ContextVar[tuple[str, list[SkippedCheck]] | None] = contextvars.ContextVar(
    "skipped_checks", default=None
)


def _note(path: tuple[PathPart, ...], scope: Literal["entry", "referrers"]) -> None:
    current = _skips.get()
    if current is not None:
        check, found = current
        skip = SkippedCheck(check, path, scope)
        if skip not in found:
            found.append(skip)


def check_label(rule: Rule) -> str:
    """How the output names a rule: its function name in words (``unique team names``)."""
    return getattr(rule, "__name__", "a check").replace("_", " ").strip()


def run_rules(
    rules: Sequence[Rule], config: Any, partial: bool = False
) -> tuple[list[ConfigIssue], list[SkippedCheck]]:
    """Every rule's issues; a rule that read unparsed config contributes none and is listed.

    On a ``partial`` config (from :func:`partial_config`) a rule that fails in any other way
    is listed as not run too: broken input must end in the error list, never a traceback.
    """
    issues: list[ConfigIssue] = []
    skipped: list[SkippedCheck] = []
    for rule in rules:
        label = check_label(rule)
        notes: list[SkippedCheck] = []
        token = _skips.set((label, notes))
        try:
            found = list(rule(config))
        except UnparsedInputError as exc:
            notes = [SkippedCheck(label, exc.path, "check")]
            found = []
        except Exception:
            if not partial:
                raise
            notes = [SkippedCheck(label, (), "check")]
            found = []
        finally:
            _skips.reset(token)
        issues += found
        skipped += [note for note in notes if note not in skipped]
    return issues, skipped


def parsed(items: Sequence[T]) -> Iterator[tuple[int, T]]:
    """``enumerate`` over the items that parsed; the others are noted as not checked."""
    for index, item in enumerate(items):
        path = unparsed_path(item)
        if path is None:
            yield index, item
        else:
            _note(path, "entry")


def repeats(names: Iterable[tuple[int, str]] | list[str]) -> Iterator[tuple[int, int]]:
    """``(index, first_index)`` for every name seen before: the first use is not an error.
    Takes names, or ``(index, name)`` pairs of the items that parsed."""
    first: dict[str, int] = {}
    for position, item in enumerate(names):
        index, name = item if isinstance(item, tuple) else (position, item)
        if name in first:
            yield index, first[name]
        else:
            first[name] = index


class Named(Protocol):
    """A config list item with a name (teams, pools, priority classes)."""

    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)


def by_name(items: Sequence[N]) -> ByName[N]:
    """:class:`ByName` of items keyed by their ``name``."""
    return ByName(items, lambda item: item.name)


class ByName(Generic[T]):
    """The first parsed item of each name, by name, and what is known of the broken items.

    A lookup of a broken item's name finds nothing (the caller skips that check, noted as not
    run); membership counts broken items as defined, so no "unknown name" is reported for them.
    While a broken item's own name is invalid, any name might be meant for it: then nothing is
    reported unknown either.
    """

    def __init__(self, items: Sequence[T], key: Callable[[T], str]) -> None:
        self._found: dict[str, tuple[int, T]] = {}
        self._broken: dict[str, tuple[PathPart, ...]] = {}
        self._nameless: list[tuple[PathPart, ...]] = []
        for index, item in enumerate(items):
            if isinstance(item, Unparsed):
                name, path = unparsed_name(item), unparsed_path(item) or ()
                if name is None:
                    self._nameless.append(path)
                else:
                    self._broken.setdefault(name, path)
            else:
                self._found.setdefault(key(item), (index, item))

    def _nameless_match(self) -> bool:
        """Whether a name not found may belong to a broken item with an invalid name."""
        for path in self._nameless:
            _note(path, "referrers")
        return bool(self._nameless)

    def get(self, name: str) -> tuple[int, T] | None:
        found = self._found.get(name)
        if found is None and name in self._broken:
            _note(self._broken[name], "referrers")
        elif found is None:
            self._nameless_match()
        return found

    def __contains__(self, name: object) -> bool:
        return name in self._found or name in self._broken or self._nameless_match()

    def names(self) -> list[str]:
        """Every defined name, sorted, broken items included (for "defined: ..." hints)."""
        return sorted(set(self._found) | set(self._broken))

    def items(self) -> Iterator[tuple[str, tuple[int, T]]]:
        return iter(self._found.items())


def describe_skipped(raw: Mapping[str, Any], skipped: Sequence[SkippedCheck]) -> list[str]:
    """What did not get checked, for people: per broken entry, and per rule that did not run."""

    entries: dict[tuple[PathPart, ...], list[str]] = {}
    checks: dict[tuple[PathPart, ...], list[str]] = {}
    for skip in skipped:
        if skip.scope == "check":
            checks.setdefault(skip.input, []).append(skip.check)
            continue
        referrers = entries.setdefault(skip.input, [])
        if skip.scope == "referrers" and skip.check not in referrers:
            referrers.append(skip.check)
    lines = []
    for path, referrers in entries.items():
        line = f"{named_key_path(raw, path)}: its cross-field checks"
        if referrers:
            line += f", and those of the entries that refer to it ({', '.join(referrers)})"
        lines.append(line)
    for path, labels in checks.items():
        reads = named_key_path(raw, path) if path else "entries with errors"
        lines.append(f"{', '.join(labels)}: not run (reads {reads})")
    return lines
