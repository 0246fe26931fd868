"""The stack file parse pauses the garbage collector and always gives it back as it found it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

import infra.config.load as load
from infra.config import ConfigError, StackFile


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "Pulumi.gc.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_collector_is_paused_during_the_parse_and_enabled_after(tmp_path, monkeypatch) -> None:
    seen: list[bool] = []
    real_parse = load._parse

    def spying_parse(*args, **kwargs):
        seen.append(gc.isenabled())
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(load, "_parse", spying_parse)
    stack = StackFile(_write(tmp_path, "config:\n  ai-platform:cluster:\n    name: x\n"))
    assert seen == [False]
    assert gc.isenabled()
    assert stack.engine_config()


def test_collector_is_enabled_again_after_a_bad_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        StackFile(_write(tmp_path, "config: [unclosed\n"))
    assert gc.isenabled()
    with pytest.raises(ConfigError, match="duplicate key"):
        StackFile(_write(tmp_path, "config:\n  a: 1\n  a: 2\n"))
    assert gc.isenabled()


def test_a_caller_that_disabled_the_collector_keeps_it_disabled(tmp_path) -> None:
    gc.disable()
    try:
        StackFile(_write(tmp_path, "config: {}\n"))
        assert not gc.isenabled()
    finally:
        gc.enable()
