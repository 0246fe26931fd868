"""Aliases and merge keys load within bounds; past them, a one-line config error naming the file.

The fuzz generates alias graphs (anchors whose items are scalars, aliases of earlier anchors, or
merge keys of earlier mapping anchors), writes them as a stack file and loads it with the bound
lowered, so generated graphs fall on both sides of it. The expected verdict comes from a model of
the graph (how many values it stands for once expanded), not from the loader: the file must load
exactly when the expansion fits, and then load to the value the model builds.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from infra.config import ConfigError, StackFile, validate_platform_config
from infra.config import load as loader
from tests.hardening.mutations import put
from tests.harness import ROOT, stack_config
from tools import preview

FILE = "Pulumi.bounds.yaml"
SMALL_BOUND = 400
"""The node bound during the fuzz: generated graphs expand to a few values up to millions."""


@dataclass(frozen=True)
class Anchor:
    """One anchored value: a sequence or a mapping of items (scalars or earlier anchors)."""

    kind: str  # "seq" | "map"
    items: tuple[int | None, ...]
    """Per item: the index of an earlier anchor it aliases, or None for a scalar."""
    merges: tuple[int, ...] = ()
    """Earlier mapping anchors merged in with ``<<`` (maps only)."""


@st.composite
def alias_graphs(draw: st.DrawFn) -> list[Anchor]:
    anchors: list[Anchor] = []
    for index in range(draw(st.integers(1, 9))):
        earlier = st.one_of(st.none(), st.integers(0, index - 1)) if index else st.none()
        items = tuple(draw(st.lists(earlier, min_size=1, max_size=8)))
        kind = draw(st.sampled_from(["seq", "map"]))
        maps = [i for i, a in enumerate(anchors) if a.kind == "map"]
        merges = (
            tuple(draw(st.lists(st.sampled_from(maps), max_size=2, unique=True)))
            if kind == "map" and maps
            else ()
        )
        anchors.append(Anchor(kind, items, merges))
    return anchors


def _item(anchor: int | None, position: int) -> str:
    return f"s{position}" if anchor is None else f"*a{anchor}"


def render(anchors: list[Anchor]) -> str:
    """The graph as a stack file: anchor i under ``other:k<i>``, aliases as flow collections."""
    lines = ["config:"]
    for index, anchor in enumerate(anchors):
        if anchor.kind == "seq":
            body = ", ".join(_item(a, p) for p, a in enumerate(anchor.items))
            lines.append(f"  other:k{index}: &a{index} [{body}]")
            continue
        lines.append(f"  other:k{index}: &a{index}")
        if anchor.merges:
            merged = ", ".join(f"*a{m}" for m in anchor.merges)
            lines.append(f"    <<: [{merged}]")
        lines += [f"    f{p}: {_item(a, p)}" for p, a in enumerate(anchor.items)]
    return "\n".join(lines) + "\n"


def expanded_size(anchors: list[Anchor]) -> int:
    """Values the file stands for: each node counted as often as aliases reach it (the
    ``config`` mapping, its keys, and every anchor's expansion)."""
    sizes: list[int] = []
    for anchor in anchors:
        items = sum(1 if a is None else sizes[a] for a in anchor.items)
        if anchor.kind == "seq":
            sizes.append(1 + items)
        else:
            merged = (1 + (1 + sum(sizes[m] for m in anchor.merges))) if anchor.merges else 0
            sizes.append(1 + merged + len(anchor.items) + items)
    # The document mapping, its "config" key, the config mapping, and one key per anchor.
    return 3 + sum(1 + size for size in sizes)


def expected_values(anchors: list[Anchor]) -> dict[str, Any]:
    """What the file loads to: YAML's alias and merge-key semantics, written out."""
    built: list[Any] = []
    for anchor in anchors:
        items = [
            f"s{p}" if a is None else copy.deepcopy(built[a]) for p, a in enumerate(anchor.items)
        ]
        if anchor.kind == "seq":
            built.append(items)
            continue
        value: dict[str, Any] = {}
        for merged in reversed(anchor.merges):  # the first merged mapping wins
            value.update(copy.deepcopy(built[merged]))
        value.update({f"f{p}": item for p, item in enumerate(items)})
        built.append(value)
    return {f"other:k{index}": value for index, value in enumerate(built)}


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(loader, "MAX_EXPANDED_NODES", SMALL_BOUND)
    return SMALL_BOUND


def load(tmp_path: Path, text: str) -> StackFile:
    path = tmp_path / FILE
    path.write_text(text, encoding="utf-8")
    return StackFile(path)


def only_file_issue(error: ConfigError) -> str:
    """The error is one line about the file as a whole, and names the file."""
    lines = error.render().splitlines()
    assert len(lines) == 2, error.render()
    assert lines[1].startswith(f"  {FILE}: ai-platform:: "), lines[1]
    return lines[1]


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(graph=alias_graphs())
def test_alias_graphs_load_exactly_when_they_fit(
    tmp_path: Path, small_bound: int, graph: list[Anchor]
) -> None:
    text = render(graph)
    size = expanded_size(graph)
    note(f"{size} values:\n{text}")
    started = time.monotonic()
    try:
        stack = load(tmp_path, text)
    except ConfigError as error:
        assert size > small_bound, f"refused a file of {size} values: {error}"
        assert "expand to more than 400 values" in only_file_issue(error)
    else:
        assert size <= small_bound, f"loaded a file of {size} values"
        assert stack.values == expected_values(graph)
    assert time.monotonic() - started < 2, "bounded files must be refused quickly"


def test_the_generator_reaches_both_sides_of_the_bound() -> None:
    """Not vacuous: the model's sizes of small and exponential graphs straddle the bound."""
    flat = [Anchor("seq", (None, None))]
    chain = [Anchor("seq", (None,) * 8)] + [Anchor("seq", (i,) * 8) for i in range(8)]
    assert expanded_size(flat) < SMALL_BOUND < expanded_size(chain)
    assert expanded_size(chain) > 8**8


def test_the_model_counts_what_the_loader_counts(tmp_path: Path, small_bound: int) -> None:
    """At the bound: a file of exactly the bound loads, one more value is refused."""
    base = [Anchor("seq", (None,) * 10), Anchor("map", (0, 0, None), merges=())]
    filler = SMALL_BOUND - expanded_size(base) - 2  # one more anchor: its key and its node
    fits = [*base, Anchor("seq", (None,) * filler)]
    assert expanded_size(fits) == SMALL_BOUND
    load(tmp_path, render(fits))
    over = [*base, Anchor("seq", (None,) * (filler + 1))]
    with pytest.raises(ConfigError):
        load(tmp_path, render(over))


BILLION_LAUGHS = (
    "config:\n  other:l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + "".join(f"  other:l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))
)
"""Nine levels of nine aliases, under 600 bytes: 9^9 values once expanded."""


def test_an_alias_bomb_is_refused_fast_by_the_preview(tmp_path: Path, capsys) -> None:
    assert len(BILLION_LAUGHS.encode()) < 600
    root = tmp_path / "project"
    root.mkdir()
    (root / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (root / FILE).write_text(BILLION_LAUGHS)
    started = time.monotonic()
    code = preview.main(
        ["--stack", "bounds", "--project-root", str(root), "--out", str(tmp_path / "out")]
    )
    assert code == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{FILE}: ai-platform:: the file's aliases and merge keys expand to more than" in err


@pytest.mark.parametrize(
    "text",
    ["config:\n  other:x: &a [1, *a]\n", "config:\n  other:x: &a {k: *a}\n"],
    ids=["sequence", "mapping"],
)
def test_recursive_aliases_are_config_errors(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError) as error:
        load(tmp_path, text)
    assert "an alias refers to a value that contains it (line 2" in only_file_issue(error.value)


def test_merge_keys_load_as_the_cli_reads_them(tmp_path: Path) -> None:
    """A team written with a shared anchor and an override validates like the expanded file."""
    document = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    teams = document["config"]["ai-platform:teams"]
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    anchored = text.replace(
        "  ai-platform:teams:\n",
        '  other:quota: &quota {cpu: "66", memory: 514Gi, gpus: 8, storage: 4Ti}\n'
        "  ai-platform:teams:\n",
    ).replace(
        '      quota:\n        cpu: "66"\n        memory: 514Gi\n        gpus: 8\n'
        "        storage: 4Ti\n",
        "      quota:\n        <<: *quota\n        gpus: 8\n",
    )
    assert anchored != text
    stack = load(tmp_path, anchored)
    assert stack.values["ai-platform:teams"] == teams
    assert stack.platform_config() == StackFile(ROOT / "Pulumi.dev.yaml").platform_config()


def test_an_explicit_duplicate_beside_a_merge_key_is_still_an_error(tmp_path: Path) -> None:
    text = "config:\n  other:b: &b {x: 1}\n  other:m:\n    <<: *b\n    y: 1\n    y: 2\n"
    with pytest.raises(ConfigError, match="duplicate key 'y'"):
        load(tmp_path, text)


def test_the_bound_leaves_room_for_the_largest_stack_benchmarked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tenth of the bound still holds the 1,000-workload stack of docs/performance.md: the
    bound refuses bombs, never a real stack file."""
    from bench.synthetic import synthetic_config, write_stack_file

    monkeypatch.setattr(loader, "MAX_EXPANDED_NODES", loader.MAX_EXPANDED_NODES // 10)
    path = write_stack_file(tmp_path, "bounds", synthetic_config(1000))
    text = path.read_text(encoding="utf-8")
    # An alias, so the whole file is counted (a file without "*" skips the count).
    aliased = text.rstrip("\n") + "\n  other:anchor: &one 1\n  other:alias: *one\n"
    (tmp_path / FILE).write_text(aliased, encoding="utf-8")
    assert len(StackFile(tmp_path / FILE).values["ai-platform:workloads"]) == 1000


def test_text_that_expands_past_the_byte_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(loader, "MAX_EXPANDED_BYTES", 1000)
    word = "x" * 100
    fits = f"config:\n  other:a: &w {word}\n  other:b: [{', '.join(['*w'] * 8)}]\n"
    assert load(tmp_path, fits).values["other:b"] == [word] * 8
    over = f"config:\n  other:a: &w {word}\n  other:b: [{', '.join(['*w'] * 9)}]\n"
    with pytest.raises(ConfigError) as error:
        load(tmp_path, over)
    assert "expand to more than" in only_file_issue(error.value)
    assert "of text" in only_file_issue(error.value)


@pytest.mark.parametrize(
    "path",
    [
        ("teams", 0, "quota", "gpus"),
        ("teams", 0, "quota", "pods"),
        ("teams", 0, "quota", "persistentVolumeClaims"),
        ("teams", 1, "quota", "migSlices", "1g.10gb"),
        ("teams", 0, "queue", "pools", 0, "gpus"),
        ("teams", 0, "queue", "pools", 0, "borrowingLimit", "gpus"),
    ],
    ids=lambda path: ".".join(str(p) for p in path),
)
def test_integer_quotas_are_bounded_like_quantities(path: tuple[Any, ...]) -> None:
    """10^30 GPUs once rendered; the bound is a quantity's (2^63-1), and it is inclusive."""
    config = stack_config("dev")
    put(config, path, 10**30)
    with pytest.raises(ConfigError) as error:
        validate_platform_config(config, "Pulumi.dev.yaml")
    assert f"must be <= {2**63 - 1}, got {10**30}" in str(error.value)
    put(config, path, -1)
    with pytest.raises(ConfigError, match="must be >= 0, got -1"):
        validate_platform_config(config, "Pulumi.dev.yaml")
