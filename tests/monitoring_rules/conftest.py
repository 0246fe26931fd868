"""Fixtures of the monitoring rule and dashboard tests."""

from __future__ import annotations

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def promtool() -> str:
    """The promtool binary: skipped without it on a workstation, a failure in CI (CI is set)."""
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(
                "promtool is not installed; CI must install it: apt-get install -y prometheus"
            )
        pytest.skip("promtool not installed (apt-get install -y prometheus); CI fails instead")
    return path
