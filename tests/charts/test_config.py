"""``ai-platform:charts`` and ``ai-platform:images``: good settings pass, bad ones name the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.charts import (
    KEDA,
    KUBERAY,
    KUEUE,
    METRICS_SERVER,
    MONITORING_CHARTS,
    PROMETHEUS_ADAPTER,
)
from infra.config import ConfigError, PlatformConfig, validate_platform_config
from tests.charts.conftest import write_mirror
from tests.harness import stack_config


def _validate(charts: Any = None, images: Any = None, **changes: Any) -> PlatformConfig:
    config = stack_config("dev")
    if charts is not None:
        config["charts"] = charts
    if images is not None:
        config["images"] = images
    config.update(changes)
    return validate_platform_config(config, "Pulumi.dev.yaml")


def _errors(charts: Any = None, images: Any = None, **changes: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        _validate(charts, images, **changes)
    return [f"{caught.value.source}: {i.key_path}: {i.message}" for i in caught.value.issues]


def test_checked_in_stacks_keep_the_public_repositories_and_no_mirror() -> None:
    for stack in ("dev", "prod"):
        config = validate_platform_config(stack_config(stack), f"Pulumi.{stack}.yaml")
        assert config.charts.source == "repositories"
        assert config.charts.chart_source.directory is None
        assert config.images.registry_mirror is None


def test_a_complete_mirror_directory_is_accepted(mirror: Path) -> None:
    config = _validate({"source": "directory", "directory": str(mirror)})
    assert config.charts.chart_source.directory == str(mirror)


def test_the_shared_chart_mirror_holds_every_pin(shared_charts: Path) -> None:
    for stack in ("dev", "prod"):
        config = stack_config(stack)
        config["charts"] = {"source": "directory", "directory": str(shared_charts)}
        validate_platform_config(config, f"Pulumi.{stack}.yaml")


def test_relative_directories_resolve_against_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_mirror(tmp_path / "mirror" / "charts")
    monkeypatch.chdir(tmp_path)  # Pulumi runs the program in the project root
    config = _validate({"source": "directory", "directory": "mirror/charts"})
    # Kept as written: the provider runs in the project root too, and the state stays portable.
    assert config.charts.chart_source.directory == "mirror/charts"
    assert _errors({"source": "directory", "directory": "charts"}) == [
        "Pulumi.dev.yaml: ai-platform:charts.directory: 'charts' is not a directory (relative to "
        f"the project root: {tmp_path.resolve() / 'charts'})"
    ]


def test_only_the_charts_the_stack_installs_must_be_there(tmp_path: Path) -> None:
    folder = write_mirror(tmp_path / "charts", [KUEUE, KEDA, KUBERAY, METRICS_SERVER])
    config = stack_config("dev")
    config["autoscaling"]["prometheusAdapter"] = {"enabled": False}
    for workload in config["workloads"]:
        (workload.get("inference") or {}).pop("customMetric", None)
    _validate(
        {"source": "directory", "directory": str(folder)},
        gpuStack={"enabled": False},
        monitoring={"enabled": False},
        autoscaling=config["autoscaling"],
        workloads=config["workloads"],
    )


def test_every_missing_chart_is_named_with_its_version(tmp_path: Path) -> None:
    folder = write_mirror(tmp_path / "charts", MONITORING_CHARTS)
    assert _errors({"source": "directory", "directory": str(folder)}) == [
        f"Pulumi.dev.yaml: ai-platform:charts.directory: gpu-operator v25.10.1 is missing: no "
        f"{folder}/gpu-operator/v25.10.1/Chart.yaml",
        f"Pulumi.dev.yaml: ai-platform:charts.directory: kueue {KUEUE.version} is missing: no "
        f"{folder}/kueue/{KUEUE.version}/Chart.yaml",
        f"Pulumi.dev.yaml: ai-platform:charts.directory: keda {KEDA.version} is missing: no "
        f"{folder}/keda/{KEDA.version}/Chart.yaml",
        f"Pulumi.dev.yaml: ai-platform:charts.directory: kuberay-operator {KUBERAY.version} is "
        f"missing: no {folder}/kuberay-operator/{KUBERAY.version}/Chart.yaml",
        f"Pulumi.dev.yaml: ai-platform:charts.directory: metrics-server {METRICS_SERVER.version} "
        f"is missing: no {folder}/metrics-server/{METRICS_SERVER.version}/Chart.yaml",
        "Pulumi.dev.yaml: ai-platform:charts.directory: prometheus-adapter "
        f"{PROMETHEUS_ADAPTER.version} is missing: no "
        f"{folder}/prometheus-adapter/{PROMETHEUS_ADAPTER.version}/Chart.yaml",
    ]


def test_a_chart_whose_chart_yaml_disagrees_with_its_folder_is_refused(mirror: Path) -> None:
    manifest = mirror / "kueue" / KUEUE.version / "Chart.yaml"
    manifest.write_text("apiVersion: v2\nname: kueue\nversion: 0.19.5\n", encoding="utf-8")
    (mirror / "loki" / "6.55.0" / "Chart.yaml").write_text("name: [loki\n", encoding="utf-8")
    assert _errors({"source": "directory", "directory": str(mirror)}) == [
        f"Pulumi.dev.yaml: ai-platform:charts.directory: kueue {KUEUE.version}: {manifest} is "
        "kueue 0.19.5",
        "Pulumi.dev.yaml: ai-platform:charts.directory: loki 6.55.0: "
        f"{mirror}/loki/6.55.0/Chart.yaml is not a readable YAML file",
    ]


@pytest.mark.parametrize(
    ("charts", "expected"),
    [
        ({"source": "directory"}, "charts.directory: required when source is 'directory'"),
        ({"directory": "charts"}, "charts.directory: only used with source: directory"),
        (
            {"source": "directory", "directory": "/nonexistent/charts"},
            "charts.directory: '/nonexistent/charts' is not a directory",
        ),
        (
            {"source": "mirror"},
            "charts.source: must be one of 'repositories' or 'directory', got 'mirror'",
        ),
        ({"source": "directory", "directory": ""}, "charts.directory: must not be empty, got ''"),
        (
            {"source": "directory", "directry": "x"},
            "charts.directry: unknown key; did you mean 'directory'?",
        ),
    ],
)
def test_bad_chart_settings(charts: dict[str, Any], expected: str) -> None:
    assert _errors(charts) == [f"Pulumi.dev.yaml: ai-platform:{expected}"]


@pytest.mark.parametrize(
    "mirror",
    [
        "harbor.example.com",
        "harbor.example.com/mirror",
        "harbor.example.com:8443/platform/mirror",
        "localhost:5000",
        "localhost/mirror",
        "10.0.0.5:5000/mirror",
    ],
)
def test_good_registry_mirrors(mirror: str) -> None:
    assert _validate(images={"registryMirror": mirror}).images.registry_mirror == mirror


_FORM = "must be a registry host with an optional path, such as 'harbor.example.com/mirror' or "
_FORM += "'localhost:5000', got"


@pytest.mark.parametrize(
    ("mirror", "expected"),
    [
        ("https://harbor.example.com", f"{_FORM} 'https://harbor.example.com'"),
        ("harbor.example.com/", f"{_FORM} 'harbor.example.com/'"),
        ("harbor.example.com/Mirror", f"{_FORM} 'harbor.example.com/Mirror'"),
        ("harbor.example.com/mirror:1.0", f"{_FORM} 'harbor.example.com/mirror:1.0'"),
        ("", f"{_FORM} ''"),
        (
            "mirror/platform",
            "must start with a registry host (a name with a '.' or a port, or 'localhost'), got "
            "'mirror/platform': container runtimes would read 'mirror' as a Docker Hub namespace",
        ),
    ],
)
def test_bad_registry_mirrors(mirror: str, expected: str) -> None:
    assert _errors(images={"registryMirror": mirror}) == [
        f"Pulumi.dev.yaml: ai-platform:images.registryMirror: {expected}"
    ]


def test_unknown_images_key() -> None:
    assert _errors(images={"mirror": "harbor.example.com"}) == [
        "Pulumi.dev.yaml: ai-platform:images.mirror: unknown key; allowed keys: registryMirror"
    ]
