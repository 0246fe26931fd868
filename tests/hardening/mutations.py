"""Hypothesis strategies that break real stack configs in the ways people (and merges) do.

Every strategy starts from the checked-in dev or prod config and applies a few mutations at
random paths: wrong types, missing and unknown keys, negative and enormous quantities, invalid,
duplicate and dangling names, unicode, empty lists and deep random JSON. Starting from a valid
config matters: a config broken everywhere at once only ever exercises the first check.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from hypothesis import strategies as st

from infra.config import ConfigError, PlatformConfig
from infra.config.errors import _allowed_keys
from infra.config.load import validate_platform_config
from tests.harness import stack_config

PathPart = str | int
Path = tuple[PathPart, ...]

STACKS = ("dev", "prod")
BASES = {stack: stack_config(stack) for stack in STACKS}
"""Parsed once; every example deep-copies its base."""

ISSUE_LINE = (
    r"^Pulumi\.{stack}\.yaml: ai-platform:"
    r'(?:[^ "\[]|\[\d+\]|\[[A-Za-z0-9_./:-]+\]|\["(?:[^"\\]|\\.)*"\])+: .+'
)
"""One line: file, key path (list items by position or name, ``[2]`` / ``[research]``; odd keys
and names JSON-quoted in brackets: ``["with space"]``), message."""

EDGE_STRINGS = (
    "",
    " ",
    "\t",
    "UPPER",
    "with space",
    "ünïcødé",
    "名前",
    "emoji-🚀",
    "-leading",
    "trailing-",
    "dot.ted",
    "under_score",
    "a" * 63,
    "a" * 64,
    "a" * 300,
    "0",
    "-1",
    "null",
    "true",
    "default",
    "kube-system",
    "monitoring",
    "system:masters",
    "a/b",
    "*",
    "line\nbreak",
    "nul\x00byte",
    "does-not-exist",
)
"""Names Kubernetes rejects, names the platform reserves, and plain junk."""

EDGE_QUANTITIES = (
    "0",
    "-1",
    "-16Gi",
    "1e3",
    "1E-3",
    "0.000000001m",
    "9" * 60,
    "9" * 60 + "Ei",
    "1e18",
    "1e4000",
    "16GiB",
    "16 Gi",
    "1,5",
    "+1",
    ".5",
    "5.",
    "NaN",
    "Infinity",
)
"""Quantities at and past the edges, far past what Kubernetes accepts (2^63-1) but below 4300
digits: longer ones still end in tracebacks, not config errors (known bugs, pinned in
test_config_fuzz)."""

HUGE = 10**60
"""The largest magnitude generated numbers reach (see EDGE_QUANTITIES)."""

EDGE_NUMBERS = (
    0,
    -1,
    1,
    65535,
    65536,
    2**31,
    2**63,
    HUGE,
    -HUGE,
    0.5,
    -0.0,
    1.0,
    1e-300,
    math.inf,
    -math.inf,
    math.nan,
    True,
    False,
)

keys = st.one_of(
    st.sampled_from(["name", "nmae", "Name", "teamz", "extra", "spec", "quota", "gpus"]),
    st.from_regex(r"[a-z][a-zA-Z0-9]{0,11}", fullmatch=True),
    st.text(st.characters(exclude_categories=("Z", "C")), min_size=1, max_size=8),
)
"""Unknown-key candidates: typos of real keys, plausible camelCase keys, and any non-empty text
without spaces or control characters (empty keys and those characters break the one-line
``file: key path: message`` format: a known bug, pinned in test_config_fuzz)."""

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-HUGE, max_value=HUGE),
    st.floats(min_value=-1e60, max_value=1e60),
    st.text(max_size=20),
    st.sampled_from(EDGE_STRINGS),
    st.sampled_from(EDGE_QUANTITIES),
    st.sampled_from(EDGE_NUMBERS),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=16,
)
"""Deep random JSON-shaped values (NaN and infinities included: YAML can spell them)."""


# --- paths ------------------------------------------------------------------------------------


def nodes(doc: Any) -> list[tuple[Path, Any]]:
    """Every ``(path, value)`` below ``doc``: mappings, lists and leaves (iterative: fast)."""
    found: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any]] = [((), doc)]
    while stack:
        prefix, node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            path = (*prefix, key)
            found.append((path, value))
            if isinstance(value, dict | list):
                stack.append((path, value))
    return found


def get(node: Any, path: Path) -> Any:
    for part in path:
        node = node[part]
    return node


def put(doc: dict[str, Any], path: Path, value: Any) -> None:
    get(doc, path[:-1])[path[-1]] = value


def remove(doc: dict[str, Any], path: Path) -> None:
    del get(doc, path[:-1])[path[-1]]


def _of(found: list[tuple[Path, Any]], kind: type | tuple[type, ...]) -> list[Path]:
    return [p for p, v in found if isinstance(v, kind) and not isinstance(v, bool)]


# --- mutations --------------------------------------------------------------------------------

MUTATIONS = (
    "replace",
    "delete",
    "unknown-key",
    "duplicate",
    "empty-list",
    "edge-number",
    "edge-quantity",
    "bad-name",
    "dangling",
    "swap",
)


def mutate(data: st.DataObject, doc: dict[str, Any]) -> str:
    """Apply one random mutation in place; return what was done (for failure messages)."""
    op = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    found = nodes(doc)
    everything = [path for path, _ in found]
    if op == "unknown-key":
        dicts: list[Path] = [(), *_of(found, dict)]
        where = data.draw(st.sampled_from(dicts), label="at")
        key = data.draw(keys, label="key")
        get(doc, where)[key] = data.draw(json_values, label="value")
        return f"unknown key {key!r} at {where}"
    if op == "duplicate":
        lists = [p for p, v in found if isinstance(v, list) and v]
        if lists:
            where = data.draw(st.sampled_from(lists), label="at")
            items = get(doc, where)
            items.append(copy.deepcopy(data.draw(st.sampled_from(items), label="item")))
            return f"duplicate item in {where}"
    if op == "empty-list":
        lists = _of(found, list)
        if lists:
            where = data.draw(st.sampled_from(lists), label="at")
            put(doc, where, [])
            return f"empty list at {where}"
    if op in ("edge-number", "edge-quantity", "bad-name", "dangling"):
        leaves = _of(found, (str, int, float))
        if leaves:
            where = data.draw(st.sampled_from(leaves), label="at")
            value: Any = {
                "edge-number": st.sampled_from(EDGE_NUMBERS),
                "edge-quantity": st.sampled_from(EDGE_QUANTITIES),
                "bad-name": st.sampled_from(EDGE_STRINGS),
                "dangling": st.just("does-not-exist"),
            }[op]
            put(doc, where, data.draw(value, label="value"))
            return f"{op} at {where}"
    if op == "swap":
        strings = _of(found, str)
        if len(strings) >= 2:
            first, second = data.draw(
                st.lists(st.sampled_from(strings), min_size=2, max_size=2, unique=True),
                label="swap",
            )
            a, b = get(doc, first), get(doc, second)
            put(doc, first, b)
            put(doc, second, a)
            return f"swapped {first} and {second}"
    if op == "delete" and everything:
        where = data.draw(st.sampled_from(everything), label="at")
        remove(doc, where)
        return f"deleted {where}"
    top = [(key,) for key in doc]
    where = data.draw(st.sampled_from(everything or top or [("cluster",)]), label="at")
    put(doc, where, data.draw(json_values, label="value"))
    return f"replaced {where}"


@st.composite
def broken_configs(
    draw: st.DrawFn, max_mutations: int = 4
) -> tuple[str, dict[str, Any], list[str]]:
    """``(stack, config, what-was-done)``: a real config with 1 to ``max_mutations`` mutations."""
    stack = draw(st.sampled_from(STACKS), label="stack")
    doc = copy.deepcopy(BASES[stack])
    data = draw(st.data())
    steps = [mutate(data, doc) for _ in range(draw(st.integers(1, max_mutations)))]
    return stack, doc, steps


# --- the contract -----------------------------------------------------------------------------


def path_is_in_input(raw: dict[str, Any], path: Path) -> bool:
    """Whether ``path`` exists in ``raw``, or continues an existing mapping with keys the schema
    defines there (a missing required key, a key of a defaulted block).

    A union tag (``str``, ``function-after[...]``), an index past a list's end or a key the schema
    does not know would mean the user is pointed at something they never wrote.
    """
    node: Any = raw
    for depth, part in enumerate(path):
        in_list = (
            isinstance(node, list)
            and isinstance(part, int)
            and not isinstance(part, bool)
            and 0 <= part < len(node)
        )
        if in_list or (isinstance(node, dict) and part in node):
            node = node[part]
        else:
            if not isinstance(node, dict):
                return False
            rest = path[depth:]
            return all(
                isinstance(key, str)
                and key in _allowed_keys(PlatformConfig, [*path[:depth], *rest[:i]])
                for i, key in enumerate(rest)
            )
    return True


def check_config(raw: dict[str, Any], stack: str) -> PlatformConfig | ConfigError:
    """Validate; assert a failure is our formatted error and nothing else. Returns either."""
    source = f"Pulumi.{stack}.yaml"
    try:
        return validate_platform_config(raw, source)
    except ConfigError as error:
        check_config_error(error, raw, stack)
        return error


def check_config_error(error: ConfigError, raw: dict[str, Any], stack: str) -> None:
    """Every issue renders as one ``file: key path: message`` line naming a key of the input."""
    assert error.issues, "a ConfigError without issues"
    pattern = re.compile(ISSUE_LINE.format(stack=re.escape(stack)))
    rendered = error.render().splitlines()
    lines = rendered[: len(error.issues) + 1]
    noun = "error" if len(error.issues) == 1 else "errors"
    assert lines[0] == f"{len(error.issues)} stack config {noun}:", lines[0]
    skipped = rendered[len(lines) :]
    assert skipped == (
        ["not checked until the errors above are fixed:", *(f"  - {s}" for s in error.not_checked)]
        if error.not_checked
        else []
    ), f"an issue spans several lines:\n{error.render()}"
    for line, issue in zip(lines[1:], error.issues, strict=True):
        assert line.startswith("  "), line
        assert pattern.match(line[2:]), f"not a formatted config error: {line!r}"
        assert path_is_in_input(raw, issue.path), f"{issue.key_path} is not in the input: {line}"
