"""Counting instructions (``bench.instructions``): only the marked run is counted, a dump that
does not bracket exactly one run is refused, and the count is judged against the same target
as the CPU ratio. No count or timing is asserted beyond what the protocol guarantees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import instructions
from bench.floor import main as floor_main
from bench.measure import BenchError
from bench.report import PROGRAM_OVER_FLOOR, evaluate
from bench.stats import spread


def _part(number: int, totals: int) -> str:
    return f"# callgrind format\nversion: 1\npart: {number}\nsummary: {totals}\ntotals: {totals}\n"


def test_the_run_is_the_part_between_the_two_marks(tmp_path: Path) -> None:
    prefix = tmp_path / "callgrind.out"
    prefix.write_text(_part(3, 7), encoding="utf-8")  # after the second mark: the exit
    (tmp_path / "callgrind.out.1").write_text(_part(1, 2_000), encoding="utf-8")  # the imports
    (tmp_path / "callgrind.out.2").write_text(_part(2, 900), encoding="utf-8")  # the run
    # Another run's files in the same folder do not count towards this one.
    (tmp_path / "callgrind.outer.2").write_text(_part(2, 1), encoding="utf-8")
    assert instructions.run_part_instructions(instructions.read_dumps(prefix)) == 900


@pytest.mark.parametrize("parts", [[3], [1, 3], [1, 2, 3, 4]])
def test_a_run_not_marked_exactly_twice_is_refused(parts: list[int]) -> None:
    with pytest.raises(BenchError, match="exactly twice"):
        instructions.run_part_instructions({n: _part(n, 10) for n in parts})


def test_floor_marks_its_timed_run_once_on_each_side(monkeypatch, capsys) -> None:
    events: list[str] = []
    monkeypatch.setattr(os, "sched_yield", lambda: events.append("mark"))
    from bench import floor

    timed = floor._timed

    def recording(run, mark=None):
        def wrapped() -> int:
            events.append("run")
            return run()

        return timed(wrapped, mark)

    monkeypatch.setattr(floor, "_timed", recording)
    assert floor_main(["--configmaps", "3", "--mark"]) == 0
    assert events == ["mark", "run", "mark"]
    assert '"resources": 3' in capsys.readouterr().out
    events.clear()
    assert floor_main(["--configmaps", "3"]) == 0
    assert events == ["run"]


def test_the_counted_ratio_is_judged_like_the_timed_one() -> None:
    ratios = [1.1] * 12

    def entry(program: int) -> dict:
        return {
            "resources": 200,
            "programOverFloor": 1.1,
            "programOverFloorSpread": spread(ratios),
            "programCpuSeconds": 1.1,
            "floorCpuSeconds": 1.0,
            "cpuSeconds": 3.0,
            "stepsCpu": {"program": 1.0},
            "instructions": {
                "instructions": {"floor": 1_000, "program": program},
                "overFloor": {"floor": 1.0, "program": program / 1_000},
            },
        }

    passed = {
        round(PROGRAM_OVER_FLOOR * 1_000) - 1: True,
        round(PROGRAM_OVER_FLOOR * 1_000) + 1: False,
    }
    for program, verdict in passed.items():
        results = {"stacks": {"dev": entry(program)}, "scaling": []}
        (target,) = [t for t in evaluate(results) if "instructions" in t.name]
        assert target.passed is verdict, target.line()


@pytest.mark.skipif(instructions.valgrind() is None, reason="valgrind is not installed")
def test_callgrind_counts_only_the_marked_run(tmp_path: Path) -> None:
    """End to end under valgrind (about 40 s): the run's part is a small share of the process,
    whose imports come before the first mark."""
    counted = instructions.count(["--configmaps", "5"], tmp_path, "configmaps")
    dumps = instructions.read_dumps(tmp_path / "configmaps" / "callgrind.out")
    whole = sum(instructions.part_totals(text) for text in dumps.values())
    assert 0 < counted < whole / 4
