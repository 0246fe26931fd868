"""Chart mirrors for the tests: a fake one per test, and the real one the e2e installs from."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest
import yaml

from components.charts import GPU_OPERATOR, KUEUE, MONITORING_CHARTS, Chart
from tests.harness import ROOT

CHARTS_ENV = "AIPLATFORM_CHARTS"
ALL_CHARTS: tuple[Chart, ...] = (GPU_OPERATOR, KUEUE, *MONITORING_CHARTS)


def write_mirror(root: Path, charts: Iterable[Chart] = ALL_CHARTS) -> Path:
    """A directory with ``<chart>/<version>/Chart.yaml`` for ``charts``: what the rules read."""
    for chart in charts:
        folder = root / chart.name / chart.version
        folder.mkdir(parents=True)
        (folder / "Chart.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v2", "name": chart.name, "version": chart.version}),
            encoding="utf-8",
        )
    return root


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    return write_mirror(tmp_path / "charts")


@pytest.fixture(scope="session")
def shared_charts() -> Path:
    """``$AIPLATFORM_CHARTS`` (must exist when set) or ``../shared/charts``; skipped without
    either: users' pipelines have no chart mirror, ours does."""
    configured = os.environ.get(CHARTS_ENV)
    folder = Path(configured) if configured else ROOT.parent / "shared" / "charts"
    folder = folder if folder.is_absolute() else ROOT / folder
    if not folder.is_dir():
        if configured:
            pytest.fail(f"{CHARTS_ENV}={configured}: not a directory")
        pytest.skip(f"no chart mirror at {folder}; set {CHARTS_ENV} to check against one")
    return folder
