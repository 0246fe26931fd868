"""A stack config the Pulumi engine cannot hand to the program fails the config step, clearly."""

from __future__ import annotations

import json

import pytest

from bench.synthetic import synthetic_config, write_stack_file
from infra.config import ConfigError, StackFile
from infra.config.load import ENVIRONMENT_STRING_LIMIT, engine_config_bytes
from tools import preview


def test_the_size_is_that_of_the_variable_the_engine_builds() -> None:
    values = {"ai-platform:teams": [{"name": "a", "quota": {"gpus": 2}}], "aws:region": "x"}
    wire = {"ai-platform:teams": '[{"name":"a","quota":{"gpus":2}}]', "aws:region": "x"}
    variable = "PULUMI_CONFIG=" + json.dumps(wire, separators=(",", ":"))
    assert engine_config_bytes(values) == len(variable.encode()) + 1  # and its NUL


@pytest.fixture(scope="module")
def oversized(tmp_path_factory: pytest.TempPathFactory):
    stack_file = write_stack_file(tmp_path_factory.mktemp("stacks"), "big", synthetic_config(300))
    assert engine_config_bytes(StackFile(stack_file).values) > ENVIRONMENT_STRING_LIMIT
    return stack_file


def test_an_oversized_stack_names_the_file_the_largest_key_and_the_limit(oversized) -> None:
    with pytest.raises(ConfigError) as raised:
        StackFile(oversized).platform_config()
    text = raised.value.render()
    assert "Pulumi.big.yaml" in text
    assert "ai-platform:workloads" in text
    assert "PULUMI_CONFIG" in text and f"{ENVIRONMENT_STRING_LIMIT:,} bytes" in text


def test_benchmarks_may_go_past_the_limit(oversized) -> None:
    assert len(StackFile(oversized).platform_config(engine_limits=False).workloads) == 300


def test_a_stack_within_the_limit_passes(tmp_path) -> None:
    stack_file = write_stack_file(tmp_path, "small", synthetic_config(20))
    assert len(StackFile(stack_file).platform_config().workloads) == 20


def test_the_preview_refuses_it_before_the_program_runs(oversized, capsys, tmp_path) -> None:
    code = preview.main(
        ["--stack", "big", "--stack-file", str(oversized), "--out", str(tmp_path), "--quiet"]
    )
    assert code == preview.EXIT_CONFIG
    assert "PULUMI_CONFIG" in capsys.readouterr().err
    assert not (tmp_path / "big" / "report.json").exists()
