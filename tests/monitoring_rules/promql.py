"""A small PromQL tokenizer: just enough to list the metric names an expression reads.

Not a parser. It skips string literals, label matchers inside ``{...}`` (but reads a
``__name__="..."`` matcher), ranges and subquery steps inside ``[...]``, the label lists of
``by``/``without``/``on``/``ignoring``/``group_left``/``group_right``, keywords, numbers,
durations, functions and aggregations (an identifier followed by ``(``) and Grafana variables
(``$var``, ``${var}``, ``[[var]]``). Every other identifier is a metric name.
"""

from __future__ import annotations

import re
from typing import NamedTuple

KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "offset",
        "bool",
        "atan2",
        "inf",
        "nan",
    }
)
"""Binary operators and modifiers spelled as words; matched case-insensitively like Prometheus."""

LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
"""Keywords that may be followed by a parenthesised list of label names."""

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<variable>\$\{[^}]*\}|\$[A-Za-z0-9_]+|\[\[[A-Za-z0-9_:.]+\]\])
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+)(?![A-Za-z0-9_:])
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<identifier>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<symbol>=~|!~|!=|==|<=|>=|[-+*/%^(){}\[\],=<>@!])
    """,
    re.VERBOSE,
)


class Token(NamedTuple):
    kind: str
    text: str


class PromQLSyntaxError(ValueError):
    """The expression has a character the tokenizer does not know or unbalanced brackets."""


def tokenize(expr: str) -> list[Token]:
    """The tokens of ``expr``, whitespace and comments dropped."""
    tokens: list[Token] = []
    position = 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None:
            raise PromQLSyntaxError(f"unexpected {expr[position]!r} at {position} in {expr!r}")
        kind = match.lastgroup
        assert kind is not None
        if kind not in ("space", "comment"):
            tokens.append(Token(kind, match.group()))
        position = match.end()
    return tokens


def _unquote(literal: str) -> str:
    return literal[1:-1]


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` selects, e.g. ``{"up"}`` for ``sum by (job) (up == 0)``."""
    tokens = tokenize(expr)
    names: set[str] = set()
    braces = 0
    brackets = 0
    index = 0

    def next_text(i: int) -> str | None:
        return tokens[i + 1].text if i + 1 < len(tokens) else None

    while index < len(tokens):
        kind, text = tokens[index]
        if text == "{":
            braces += 1
        elif text == "}":
            braces -= 1
        elif text == "[":
            brackets += 1
        elif text == "]":
            brackets -= 1
        elif braces < 0 or brackets < 0:
            break
        elif braces:
            # Inside a selector only `__name__="metric"` names a metric.
            if (
                kind == "identifier"
                and text == "__name__"
                and next_text(index) == "="
                and index + 2 < len(tokens)
                and tokens[index + 2].kind == "string"
            ):
                names.add(_unquote(tokens[index + 2].text))
        elif brackets:
            pass
        elif kind == "identifier":
            lowered = text.lower()
            if lowered in LABEL_LIST_KEYWORDS and next_text(index) == "(":
                closing = _closing_paren(tokens, index + 1)
                index = closing
            elif lowered in KEYWORDS or _opens_call(next_text(index)):
                pass  # operator, modifier, function or aggregation (`sum by (x) (...)`)
            else:
                names.add(text)
        index += 1
    if braces or brackets:
        raise PromQLSyntaxError(f"unbalanced braces or brackets in {expr!r}")
    return names


def _opens_call(following: str | None) -> bool:
    return following is not None and following.lower() in {"(", "by", "without"}


def _closing_paren(tokens: list[Token], opening: int) -> int:
    depth = 0
    for index in range(opening, len(tokens)):
        if tokens[index].text == "(":
            depth += 1
        elif tokens[index].text == ")":
            depth -= 1
            if depth == 0:
                return index
    raise PromQLSyntaxError("unclosed label list")


_KSM_LABEL = re.compile(r"\blabel_[A-Za-z0-9_]+\b")
_NOT_KSM_LABELS = frozenset({"label_replace", "label_join", "label_values"})


def ksm_labels(expr: str) -> set[str]:
    """kube-state-metrics ``label_*`` names ``expr`` uses anywhere (matchers, lists, strings)."""
    return set(_KSM_LABEL.findall(expr)) - _NOT_KSM_LABELS


def label_matcher_values(expr: str, label: str) -> set[str]:
    """Values ``expr`` matches ``label`` against; a regex alternation counts as each branch."""
    pattern = re.compile(rf"\b{re.escape(label)}\s*(=~|!~|!=|=)\s*\"([^\"]*)\"")
    values: set[str] = set()
    for _operator, value in pattern.findall(expr):
        values.update(value.split("|"))
    return values


GRAFANA_VARIABLE = re.compile(
    r"\$\{([A-Za-z_]\w*)(?::[^}]*)?\}|\$([A-Za-z_]\w*)|\[\[([A-Za-z_]\w*)"
)
"""Grafana's variable syntaxes; ``$1`` (a label_replace group reference) is not a variable."""


def grafana_variables(expr: str) -> set[str]:
    """Names of the Grafana variables ``expr`` interpolates (``$x``, ``${x}``, ``[[x]]``)."""
    return {next(group for group in match if group) for match in GRAFANA_VARIABLE.findall(expr)}
