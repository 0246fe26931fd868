"""The marks a resource record writes, and the engine's spelling of an unknown, are the ones the
SDK and the engine use."""

from __future__ import annotations

from pulumi.runtime import rpc

from tools.records import ENGINE_UNKNOWN, PLACEHOLDERS, SECRET_MARK, UNKNOWN_MARK


def test_the_engine_unknown_is_the_sdks() -> None:
    assert rpc.UNKNOWN == ENGINE_UNKNOWN


def test_the_placeholders_are_the_two_marks() -> None:
    assert {SECRET_MARK, UNKNOWN_MARK} == PLACEHOLDERS
    assert ENGINE_UNKNOWN not in PLACEHOLDERS
