"""``ai-platform:charts``: where the Helm charts come from, the public repositories or a mirror.

Private clouds install from a mirror: ``source: directory`` reads every chart from a local
directory laid out ``<chart>/<version>/`` (``Chart.yaml`` there, dependencies unpacked under
``charts/``), the layout ``helm pull --untar`` writes per version. The rule at the end checks, at
config time, that the directory holds every chart the stack installs at its pinned version, so a
mirror that lags behind fails the preview instead of the deploy.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Literal, Protocol

import yaml
from pydantic import Field

from components.charts import (
    GPU_OPERATOR,
    KEDA,
    KUBERAY,
    KUEUE,
    METRICS_SERVER,
    MONITORING_CHARTS,
    PROMETHEUS_ADAPTER,
    Chart,
    ChartSource,
)
from components.yaml_text import load_yaml

from ..autoscaling.config import AutoscalingConfig
from ..gpu.config import GpuStackConfig
from ..monitoring.config import MonitoringConfig
from ..queueing.config import QueueingConfig
from ..ray.config import RayConfig
from .base import ConfigModel
from .errors import ConfigIssue

Source = Literal["repositories", "directory"]


class ChartsConfig(ConfigModel):
    """Where every Helm release of the stack reads its chart."""

    source: Source = "repositories"
    """``repositories``: each chart's public Helm repository or OCI registry. ``directory``: a
    local mirror directory (``directory``), for clusters without internet access."""
    directory: str | None = Field(default=None, min_length=1)
    """The mirror, laid out ``<chart>/<version>/Chart.yaml``; only with ``source: directory``.
    A relative path is relative to the project root (where Pulumi runs the program and the
    Kubernetes provider) and stays relative in the releases' inputs."""

    @property
    def chart_source(self) -> ChartSource:
        return ChartSource(directory=self.directory if self.source == "directory" else None)


class ChartedPlatform(Protocol):
    """What the rule reads: the chart source and which components install charts."""

    @property
    def charts(self) -> ChartsConfig: ...

    @property
    def gpu_stack(self) -> GpuStackConfig: ...

    @property
    def queueing(self) -> QueueingConfig: ...

    @property
    def monitoring(self) -> MonitoringConfig: ...

    @property
    def autoscaling(self) -> AutoscalingConfig: ...

    @property
    def ray(self) -> RayConfig: ...


_DIRECTORY = ("charts", "directory")


def installed_charts(config: ChartedPlatform) -> list[Chart]:
    """The charts the stack installs, at their pinned versions."""
    charts = [GPU_OPERATOR] if config.gpu_stack.enabled else []
    if config.queueing.enabled:
        charts.append(KUEUE)
    if config.autoscaling.keda.enabled:
        charts.append(KEDA)
    if config.ray.enabled:
        charts.append(KUBERAY)
    if config.autoscaling.metrics_server.enabled:
        charts.append(METRICS_SERVER)
    if config.autoscaling.prometheus_adapter.enabled:
        charts.append(PROMETHEUS_ADAPTER)
    if config.monitoring.enabled:
        charts.extend(MONITORING_CHARTS)
    return charts


def _chart_problem(chart: Chart, folder: Path) -> str | None:
    manifest = folder / "Chart.yaml"
    wanted = f"{chart.name} {chart.version}"
    try:
        metadata = load_yaml(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{wanted} is missing: no {manifest}"
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return f"{wanted}: {manifest} is not a readable YAML file"
    if not isinstance(metadata, dict):
        return f"{wanted}: {manifest} is not a YAML mapping"
    found = (str(metadata.get("name")), str(metadata.get("version")))
    if found != (chart.name, chart.version):
        # The provider installs what Chart.yaml says and records its version: it must be the pin.
        return f"{wanted}: {manifest} is {found[0]} {found[1]}"
    return None


def chart_directory_holds_installed_charts(config: ChartedPlatform) -> Iterator[ConfigIssue]:
    """``source: directory`` names an existing directory with every installed chart's pin."""
    charts = config.charts
    if charts.source == "repositories":
        if charts.directory is not None:
            yield ConfigIssue(_DIRECTORY, "only used with source: directory")
        return
    if charts.directory is None:
        yield ConfigIssue(_DIRECTORY, "required when source is 'directory'")
        return
    # Pulumi runs the program in the project root, and so do `make preview` and the tests.
    root = Path(charts.directory)
    resolved = root if root.is_absolute() else (Path.cwd() / root).resolve()
    if not resolved.is_dir():
        where = "" if root.is_absolute() else f" (relative to the project root: {resolved})"
        yield ConfigIssue(_DIRECTORY, f"{charts.directory!r} is not a directory{where}")
        return
    for chart in installed_charts(config):
        problem = _chart_problem(chart, resolved / chart.name / chart.version)
        if problem:
            yield ConfigIssue(_DIRECTORY, problem)


CHART_RULES = (chart_directory_holds_installed_charts,)
