"""Where Helm charts come from, and how the images they deploy follow a registry mirror.

Every chart the platform installs is pinned once (the versions in ``constants.py`` and
``monitoring/constants.py``, gathered here as :class:`Chart` values). A :class:`ChartSource`
decides where a Release reads it: the chart's public repository (the default), or a local
directory laid out ``<chart>/<version>/`` (``Chart.yaml`` there, dependencies unpacked under
``charts/``), which is how private clouds install from a mirror. The pulumi-kubernetes Release
takes such a directory as ``chart`` and fetches nothing.

Images: each component lists the images its chart can deploy as :class:`ChartImage` values (the
values key and the chart's default, as in the pinned chart's values.yaml), and
:func:`chart_image_values` turns them into values that pull every one through the mirror
(:func:`components.images.mirrored`, the same rewrite as our own workloads get).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pulumi_kubernetes as k8s

from .constants import (
    GPU_OPERATOR_CHART,
    GPU_OPERATOR_CHART_REPO,
    GPU_OPERATOR_CHART_VERSION,
    KEDA_CHART,
    KEDA_CHART_REPO,
    KEDA_CHART_VERSION,
    KUBERAY_CHART,
    KUBERAY_CHART_REPO,
    KUBERAY_CHART_VERSION,
    KUEUE_CHART,
    KUEUE_CHART_REPO,
    KUEUE_CHART_VERSION,
    METRICS_SERVER_CHART,
    METRICS_SERVER_CHART_REPO,
    METRICS_SERVER_CHART_VERSION,
    PROMETHEUS_ADAPTER_CHART,
    PROMETHEUS_ADAPTER_CHART_REPO,
    PROMETHEUS_ADAPTER_CHART_VERSION,
)
from .frozen import frozen
from .images import mirrored, split_image
from .monitoring.constants import (
    FLUENT_BIT_CHART,
    FLUENT_BIT_CHART_REPO,
    FLUENT_BIT_CHART_VERSION,
    KPS_CHART,
    KPS_CHART_REPO,
    KPS_CHART_VERSION,
    LOKI_CHART,
    LOKI_CHART_REPO,
    LOKI_CHART_VERSION,
)

_OCI = "oci://"


@frozen
class Chart:
    """A pinned chart."""

    name: str
    """``Chart.yaml`` name: the chart in its repository and its folder in a mirror directory."""
    version: str
    repository: str
    """A Helm repository URL, or the ``oci://`` registry path the chart sits under."""


GPU_OPERATOR = Chart(GPU_OPERATOR_CHART, GPU_OPERATOR_CHART_VERSION, GPU_OPERATOR_CHART_REPO)
KUEUE = Chart(KUEUE_CHART, KUEUE_CHART_VERSION, KUEUE_CHART_REPO)
KEDA = Chart(KEDA_CHART, KEDA_CHART_VERSION, KEDA_CHART_REPO)
KUBERAY = Chart(KUBERAY_CHART, KUBERAY_CHART_VERSION, KUBERAY_CHART_REPO)
METRICS_SERVER = Chart(
    METRICS_SERVER_CHART, METRICS_SERVER_CHART_VERSION, METRICS_SERVER_CHART_REPO
)
PROMETHEUS_ADAPTER = Chart(
    PROMETHEUS_ADAPTER_CHART, PROMETHEUS_ADAPTER_CHART_VERSION, PROMETHEUS_ADAPTER_CHART_REPO
)
KUBE_PROMETHEUS_STACK = Chart(KPS_CHART, KPS_CHART_VERSION, KPS_CHART_REPO)
LOKI = Chart(LOKI_CHART, LOKI_CHART_VERSION, LOKI_CHART_REPO)
FLUENT_BIT = Chart(FLUENT_BIT_CHART, FLUENT_BIT_CHART_VERSION, FLUENT_BIT_CHART_REPO)
MONITORING_CHARTS: tuple[Chart, ...] = (KUBE_PROMETHEUS_STACK, LOKI, FLUENT_BIT)


@frozen
class ChartSource:
    """Where every Release of the stack reads its chart."""

    directory: str | None = None
    """A mirror directory holding ``<chart>/<version>/``; None: the public repositories.

    Relative paths are relative to the project root, where Pulumi runs both the program and the
    Kubernetes provider; they stay relative in the Release's inputs, so the state does not
    change with where a checkout lives."""

    def chart_path(self, chart: Chart) -> str:
        """The chart's folder in the mirror directory (``<directory>/<name>/<version>``)."""
        if self.directory is None:
            raise ValueError("the public repositories have no chart folders")
        return f"{self.directory.rstrip('/')}/{chart.name}/{chart.version}"

    def release_args(self, chart: Chart) -> dict[str, Any]:
        """``chart``, ``version`` and ``repository_opts`` of a ``helm.v3.Release``.

        A mirror folder still gets ``version``: the provider ignores it for local charts, but
        sets it from ``Chart.yaml`` when it checks the inputs, so passing the pin keeps the
        program's inputs and the checked ones equal (the config rules made sure they agree).
        """
        if self.directory is not None:
            return {"chart": self.chart_path(chart), "version": chart.version}
        if chart.repository.startswith(_OCI):
            return {"chart": f"{chart.repository}/{chart.name}", "version": chart.version}
        return {
            "chart": chart.name,
            "version": chart.version,
            "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=chart.repository),
        }


PUBLIC_REPOSITORIES = ChartSource()
"""The default source: each chart's public repository."""


ImageLayout = Literal["registry", "repository", "prefix"]


@frozen
class ChartImage:
    """One image a chart can deploy: the values block that sets it, and the chart's default."""

    path: tuple[str, ...]
    """Values path of the image's block, e.g. ``("prometheus", "prometheusSpec", "image")``."""
    default: str
    """The chart's default image, registry included, without tag."""
    layout: ImageLayout = "registry"
    """How the block spells the image: ``registry`` + ``repository`` (kube-prometheus-stack,
    Grafana, Loki); ``repository`` with the registry in it (Kueue, Fluent Bit); or ``prefix``:
    ``repository`` is registry and path, ``image`` the last segment (GPU operator)."""

    def values(self, mirror: str) -> dict[str, str]:
        """The block's keys that pull this image through ``mirror``."""
        if self.layout == "registry":
            name = split_image(self.default)
            return {"registry": f"{mirror}/{name.registry}", "repository": name.path}
        repository = mirrored(self.default, mirror)
        if self.layout == "prefix":
            repository = repository.rpartition("/")[0]
        return {"repository": repository}


def merge_values(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``extra`` merged in, mappings key by key (as Helm merges values files)."""
    merged = dict(base)
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            merged[key] = merge_values(current, value)
        else:
            merged[key] = value
    return merged


def chart_image_values(images: Iterable[ChartImage], mirror: str | None) -> dict[str, Any]:
    """Values that pull every image of ``images`` through ``mirror``; none without a mirror."""
    values: dict[str, Any] = {}
    if mirror is None:
        return values
    for image in images:
        block: dict[str, Any] = values
        for key in image.path:
            block = block.setdefault(key, {})
        block.update(image.values(mirror))
    return values
