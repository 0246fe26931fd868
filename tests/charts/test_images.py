"""The mirror rewrite, and that each chart's image table covers every image the chart can deploy."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from components import kueue
from components.charts import ChartImage, chart_image_values, merge_values
from components.constants import KUEUE_RELEASE
from components.images import mirrored, split_image
from components.monitoring import values as monitoring_values
from tests.charts.conftest import RELEASES, effective_values

MIRROR = "harbor.example.com/mirror"


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("nvcr.io/nvidia/pytorch:25.01-py3", f"{MIRROR}/nvcr.io/nvidia/pytorch:25.01-py3"),
        ("redis:7.4", f"{MIRROR}/docker.io/library/redis:7.4"),
        ("grafana/loki:3.6.7", f"{MIRROR}/docker.io/grafana/loki:3.6.7"),
        ("docker.io/busybox", f"{MIRROR}/docker.io/library/busybox"),
        ("index.docker.io/library/redis:7", f"{MIRROR}/docker.io/library/redis:7"),
        ("localhost:5000/team/app:1", f"{MIRROR}/localhost:5000/team/app:1"),
        (
            "ghcr.io/acme/app:1.2@sha256:" + "a" * 64,
            f"{MIRROR}/ghcr.io/acme/app:1.2@sha256:" + "a" * 64,
        ),
        ("quay.io/app@sha256:" + "b" * 64, f"{MIRROR}/quay.io/app@sha256:" + "b" * 64),
        (f"{MIRROR}/nvcr.io/nvidia/cuda:12", f"{MIRROR}/nvcr.io/nvidia/cuda:12"),
    ],
)
def test_mirror_prefixes_and_keeps_the_original_registry(reference: str, expected: str) -> None:
    assert mirrored(reference, MIRROR) == expected
    assert mirrored(expected, MIRROR) == expected  # idempotent
    assert mirrored(reference, None) == reference


def test_image_blocks_in_each_layout() -> None:
    assert ChartImage(("i",), "quay.io/prometheus/prometheus").values(MIRROR) == {
        "registry": f"{MIRROR}/quay.io",
        "repository": "prometheus/prometheus",
    }
    assert ChartImage(("i",), "docker.io/library/busybox").values("localhost:5000") == {
        "registry": "localhost:5000/docker.io",
        "repository": "library/busybox",
    }
    assert ChartImage(("i",), "registry.k8s.io/kueue/kueue", "repository").values(MIRROR) == {
        "repository": f"{MIRROR}/registry.k8s.io/kueue/kueue"
    }
    assert ChartImage(("i",), "nvcr.io/nvidia/k8s/dcgm-exporter", "prefix").values(MIRROR) == {
        "repository": f"{MIRROR}/nvcr.io/nvidia/k8s"
    }


def test_no_mirror_no_values_and_values_merge_key_by_key() -> None:
    assert chart_image_values(kueue.CHART_IMAGES, None) == {}
    images = chart_image_values(monitoring_values.FLUENT_BIT_IMAGES, MIRROR)
    merged = merge_values({"image": {"pullPolicy": "Always"}, "kind": "DaemonSet"}, images)
    assert merged["image"] == {
        "pullPolicy": "Always",
        "repository": f"{MIRROR}/cr.fluentbit.io/fluent/fluent-bit",
    }
    assert merged["kind"] == "DaemonSet"


# --- The tables against the charts themselves --------------------------------------------------


def _image_blocks(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, Mapping):
        if isinstance(value.get("repository"), str) and value["repository"]:
            yield path, value
        for key, item in value.items():
            yield from _image_blocks(item, (*path, str(key)))
    elif isinstance(value, list):
        for item in value:
            yield from _image_blocks(item, path)


def _as_table(path: tuple[str, ...], block: Mapping[str, Any]) -> ChartImage:
    """The entry a chart's image block calls for, read the way its templates read it."""
    if "registry" in block:
        name = f"{block['registry']}/{block['repository']}" if block["registry"] else ""
        return ChartImage(path, split_image(name or block["repository"]).repository)
    if isinstance(block.get("image"), str):
        default = f"{block['repository']}/{block['image']}"
        return ChartImage(path, split_image(default).repository, "prefix")
    return ChartImage(path, split_image(block["repository"]).repository, "repository")


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_each_table_lists_every_image_of_its_pinned_chart(
    release: str, shared_charts: Path
) -> None:
    chart, table = RELEASES[release]
    values = effective_values(shared_charts / chart.name / chart.version)
    expected = sorted((_as_table(p, b) for p, b in _image_blocks(values)), key=lambda i: i.path)
    if release == KUEUE_RELEASE:
        # Kueue's chart as tagged in its source names a staging registry; the platform sets the
        # released images itself (components/kueue.py), same paths and names.
        expected = [
            ChartImage(i.path, f"registry.k8s.io/kueue/{i.default.rpartition('/')[2]}", i.layout)
            for i in expected
        ]
    listed = sorted(
        (ChartImage(i.path, split_image(i.default).repository, i.layout) for i in table),
        key=lambda i: i.path,
    )
    assert listed == expected
