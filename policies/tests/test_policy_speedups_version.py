"""``speedups`` patches pulumi-policy internals, so it runs only on the release it was verified
against: the one requirements.txt pins, and the one installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pulumi_policy import policy as sdk

from aiplatform_policies import speedups

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"


def test_the_verified_release_is_the_pinned_one() -> None:
    pins = re.findall(r"^pulumi-policy==(\S+)$", REQUIREMENTS.read_text(encoding="utf-8"), re.M)
    assert pins == [speedups.VERIFIED_PULUMI_POLICY]


def test_the_installed_release_is_the_verified_one() -> None:
    """Fails on another pulumi-policy: check speedups against its internals (the analyzer tests
    compare both modes), then move VERIFIED_PULUMI_POLICY and the pin together."""
    assert speedups.sdk_version() == speedups.VERIFIED_PULUMI_POLICY


def test_another_release_keeps_the_sdk_as_it_is_and_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    speedups.uninstall()
    sdk_as_it_is = (sdk._PolicyAnalyzerServicer.Analyze, sdk.deserialize_properties)
    monkeypatch.setattr(speedups, "sdk_version", lambda: "1.99.0")
    assert speedups.install() is False
    assert (sdk._PolicyAnalyzerServicer.Analyze, sdk.deserialize_properties) == sdk_as_it_is
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "1.99.0" in err and speedups.VERIFIED_PULUMI_POLICY in err


def test_the_verified_release_gets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(speedups.ENV_OFF, raising=False)
    try:
        assert speedups.install() is True
        assert sdk._PolicyAnalyzerServicer.Analyze is not speedups._originals["Analyze"]
    finally:
        speedups.uninstall()
