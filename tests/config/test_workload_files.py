"""Workloads in files beside the stack file: read as if inline, errors named by their file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.synthetic import synthetic_config, write_stack_file
from infra.config import ConfigError, StackFile
from infra.config.load import ENVIRONMENT_STRING_LIMIT, engine_config_bytes


def _stack(tmp_path: Path, **extra: Any) -> Path:
    """A small valid stack, its inline workloads kept, plus ``extra`` config keys."""
    config = synthetic_config(4)
    config.update(extra)
    return write_stack_file(tmp_path, "files", config)


def _write(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def _errors(stack_file: Path) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        StackFile(stack_file).platform_config()
    return raised.value.issue_lines()


def _moved(tmp_path: Path, name: str = "moved") -> dict[str, Any]:
    """One of the synthetic stack's workloads, renamed, to write into a workload file."""
    workload = dict(synthetic_config(4)["workloads"][0])
    workload["name"] = name
    return workload


def test_a_files_workloads_follow_the_stack_files_own(tmp_path: Path) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["teams/*.yaml"])
    _write(tmp_path / "teams" / "b.yaml", {"workloads": [_moved(tmp_path, "from-b")]})
    _write(tmp_path / "teams" / "a.yaml", {"workloads": [_moved(tmp_path, "from-a")]})
    names = [w.name for w in StackFile(stack_file).platform_config().workloads]
    inline = [w["name"] for w in synthetic_config(4)["workloads"]]
    assert names == [*inline, "from-a", "from-b"]  # a glob's matches in sorted order


def test_the_same_stack_written_with_files_gives_the_same_model(tmp_path: Path) -> None:
    config = synthetic_config(24)
    inline = StackFile(write_stack_file(tmp_path / "inline", "same", config))
    files = StackFile(write_stack_file(tmp_path / "files", "same", config, workload_files=True))
    assert "ai-platform:workloads" not in files.values
    with_files = files.platform_config()
    assert with_files.workloads == inline.platform_config().workloads
    assert with_files.workload_files == ["workloads/*.yaml"]


def test_files_keep_a_large_stack_within_the_engines_limit(tmp_path: Path) -> None:
    config = synthetic_config(400)
    stack_file = write_stack_file(tmp_path, "large", config, workload_files=True)
    parsed = StackFile(stack_file)
    assert engine_config_bytes(parsed.values) < ENVIRONMENT_STRING_LIMIT
    assert len(parsed.platform_config().workloads) == 400


def test_an_error_in_a_file_names_the_file_and_the_path_inside_it(tmp_path: Path) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["workloads/research.yaml"])
    broken = _moved(tmp_path, "broken")
    broken["replicaz"] = 2
    good = _moved(tmp_path, "fine")
    _write(tmp_path / "workloads" / "research.yaml", {"workloads": [good, broken]})
    lines = _errors(stack_file)
    assert len(lines) == 1, lines
    assert lines[0].startswith("workloads/research.yaml: workloads[broken].replicaz: unknown key")


def test_a_cross_field_rule_names_the_file_of_the_workload_it_refuses(tmp_path: Path) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["w.yaml"])
    stray = _moved(tmp_path, "stray")
    stray["team"] = "no-such-team"
    _write(tmp_path / "w.yaml", {"workloads": [stray]})
    lines = _errors(stack_file)
    assert lines, "a workload of an unknown team must be refused"
    assert all(line.startswith("w.yaml: workloads[stray].team: ") for line in lines), lines


def test_a_name_used_inline_and_in_a_file_is_refused(tmp_path: Path) -> None:
    inline = synthetic_config(4)["workloads"][0]
    stack_file = _stack(tmp_path, workloadFiles=["w.yaml"])
    _write(tmp_path / "w.yaml", {"workloads": [dict(inline)]})
    assert any(inline["name"] in line for line in _errors(stack_file))


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("missing/*.yaml", "matches no file"),
        ("/etc/passwd", "must be a path inside the project folder"),
        ("../outside.yaml", "must be a path inside the project folder"),
        ("", "must not be empty"),
    ],
)
def test_an_entry_that_names_no_file_in_the_project_is_refused(
    tmp_path: Path, pattern: str, problem: str
) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["ok.yaml", pattern])
    _write(tmp_path / "ok.yaml", {"workloads": []})
    lines = _errors(stack_file)
    assert len(lines) == 1
    assert lines[0].startswith("Pulumi.files.yaml: ai-platform:workloadFiles[1]: ")
    assert problem in lines[0]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("workloads: [\n", "w.yaml: not valid YAML (line"),
        ("- a\n- b\n", "w.yaml: a workload file must be a YAML mapping"),
        ("workload: []\n", "w.yaml: workload: unknown key; did you mean 'workloads'?"),
        ("workloads: {a: 1}\n", "w.yaml: workloads: must be a list of workloads"),
    ],
)
def test_a_malformed_file_is_named_with_what_is_wrong(
    tmp_path: Path, text: str, problem: str
) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["w.yaml"])
    (tmp_path / "w.yaml").write_text(text, encoding="utf-8")
    lines = _errors(stack_file)
    assert len(lines) == 1 and lines[0].startswith(problem), lines


def test_a_file_matched_twice_is_read_once(tmp_path: Path) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["w.yaml", "*.yaml"])
    _write(tmp_path / "w.yaml", {"workloads": [_moved(tmp_path)]})
    names = [w.name for w in StackFile(stack_file).platform_config().workloads]
    assert names.count("moved") == 1


def test_an_empty_file_adds_nothing(tmp_path: Path) -> None:
    stack_file = _stack(tmp_path, workloadFiles=["w.yaml"])
    (tmp_path / "w.yaml").write_text("", encoding="utf-8")
    assert len(StackFile(stack_file).platform_config().workloads) == 4


def test_the_preview_deploys_a_files_workloads_as_it_would_inline_ones(tmp_path: Path) -> None:
    """The whole offline preview (the program under mocks reads the files again, from the project
    folder the engine reports): the same resources as the stack written inline."""
    import json

    from tools import preview

    config = synthetic_config(4)
    reports = {}
    for layout, files in (("inline", False), ("files", True)):
        stack_file = write_stack_file(tmp_path / layout, "same", config, workload_files=files)
        out = tmp_path / f"out-{layout}"
        args = ["--stack", "same", "--stack-file", str(stack_file), "--out", str(out), "--quiet"]
        assert preview.main(args) == 0, layout
        report = json.loads((out / "same" / "report.json").read_text(encoding="utf-8"))
        reports[layout] = sorted(resource["urn"] for resource in report["resources"])
    last = config["workloads"][-1]
    assert any(urn.endswith(f"::{last['team']}-{last['name']}") for urn in reports["files"])
    assert reports["files"] == reports["inline"]
