"""Chart mirrors for the tests: a fake one per test, and the real one the e2e installs from."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import gpu_operator, keda, kuberay, kueue, metrics_server, prometheus_adapter
from components.charts import (
    FLUENT_BIT,
    GPU_OPERATOR,
    KEDA,
    KUBE_PROMETHEUS_STACK,
    KUBERAY,
    KUEUE,
    LOKI,
    METRICS_SERVER,
    PROMETHEUS_ADAPTER,
    Chart,
    ChartImage,
    merge_values,
)
from components.constants import (
    GPU_OPERATOR_RELEASE,
    KEDA_RELEASE,
    KUBERAY_RELEASE,
    KUEUE_RELEASE,
    METRICS_SERVER_RELEASE,
    PROMETHEUS_ADAPTER_RELEASE,
)
from components.monitoring import values as monitoring_values
from components.monitoring.constants import FLUENT_BIT_RELEASE, KPS_RELEASE, LOKI_RELEASE
from tests.harness import ROOT
from tools.e2e.charts import assemble_mirror
from tools.e2e.cluster import shared_dir

CHARTS_ENV = "AIPLATFORM_CHARTS"
RELEASE = "kubernetes:helm.sh/v3:Release"
RELEASES: dict[str, tuple[Chart, tuple[ChartImage, ...]]] = {
    GPU_OPERATOR_RELEASE: (GPU_OPERATOR, gpu_operator.CHART_IMAGES),
    KUEUE_RELEASE: (KUEUE, kueue.CHART_IMAGES),
    KEDA_RELEASE: (KEDA, keda.CHART_IMAGES),
    KUBERAY_RELEASE: (KUBERAY, kuberay.CHART_IMAGES),
    METRICS_SERVER_RELEASE: (METRICS_SERVER, metrics_server.CHART_IMAGES),
    PROMETHEUS_ADAPTER_RELEASE: (PROMETHEUS_ADAPTER, prometheus_adapter.CHART_IMAGES),
    KPS_RELEASE: (KUBE_PROMETHEUS_STACK, monitoring_values.KPS_IMAGES),
    LOKI_RELEASE: (LOKI, monitoring_values.LOKI_IMAGES),
    FLUENT_BIT_RELEASE: (FLUENT_BIT, monitoring_values.FLUENT_BIT_IMAGES),
}
"""Release name → its chart and the chart's image table: every chart the platform installs."""
ALL_CHARTS: tuple[Chart, ...] = tuple(chart for chart, _ in RELEASES.values())


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
def shared_charts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``$AIPLATFORM_CHARTS`` (must exist when set), else the mirror the e2e installs from (the
    shared charts and Kueue's from its Go module, tools/e2e/charts.py); skipped without the
    shared folder: users' pipelines have no chart mirror, ours does."""
    configured = os.environ.get(CHARTS_ENV)
    if configured:
        folder = Path(configured)
        folder = folder if folder.is_absolute() else ROOT / folder
        if not folder.is_dir():
            pytest.fail(f"{CHARTS_ENV}={configured}: not a directory")
        return folder
    shared = shared_dir() / "charts"
    if not shared.is_dir():
        pytest.skip(f"no chart mirror at {shared}; set {CHARTS_ENV} to check against one")
    return assemble_mirror(tmp_path_factory.mktemp("charts"), shared)


def effective_values(folder: Path) -> dict[str, Any]:
    """A chart's values with every subchart's defaults under its key, the parent's on top."""
    values = yaml.safe_load((folder / "values.yaml").read_text(encoding="utf-8")) or {}
    metadata = yaml.safe_load((folder / "Chart.yaml").read_text(encoding="utf-8"))
    for dependency in metadata.get("dependencies") or []:
        key = dependency.get("alias") or dependency["name"]
        sub = effective_values(folder / "charts" / dependency["name"])
        values[key] = merge_values(sub, values.get(key) or {})
    return values
