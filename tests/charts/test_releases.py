"""The program under mocks with each chart source, and with a registry mirror: every Release reads
its chart where the stack says, and every image the platform deploys goes through the mirror."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aiplatform_policies import REGISTRY, harness
from aiplatform_policies.workload import DEFAULT_REGISTRIES
from components.charts import KUEUE, chart_image_values, merge_values
from components.constants import (
    GPU_OPERATOR_RELEASE,
    KUEUE_CHART_REPO,
    KUEUE_RELEASE,
)
from components.images import mirrored as mirrored_reference
from components.monitoring.constants import KPS_RELEASE
from tests.charts.conftest import RELEASE, RELEASES, write_mirror
from tests.harness import run_stack, stack_config
from tools.mockrun import CapturedResource, MockRun

MIRROR = "harbor.example.com/mirror"
PREFLIGHT_IMAGE = "python:3.12-slim"


def _releases(run: MockRun[Any]) -> dict[str, dict[str, Any]]:
    return {r.inputs["name"]: r.inputs for r in run.by_type(RELEASE)}


@pytest.fixture(scope="module")
def mirrored_run(tmp_path_factory: pytest.TempPathFactory) -> MockRun[Any]:
    """The dev stack from a relative mirror directory, with a registry mirror and a preflight
    image of its own (so each kind of container is there)."""
    project = tmp_path_factory.mktemp("project")
    write_mirror(project / "mirror" / "charts")
    config = stack_config("dev")
    config["charts"] = {"source": "directory", "directory": "mirror/charts"}
    config["images"] = {"registryMirror": MIRROR}
    config["workloads"][0]["training"]["preflight"] = {"image": PREFLIGHT_IMAGE}
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)  # Pulumi runs the program in the project root
        return run_stack(config)


def test_releases_read_the_public_repositories_by_default(dev_run: MockRun[Any]) -> None:
    releases = _releases(dev_run)
    assert sorted(releases) == sorted(RELEASES)
    for name, (chart, _) in RELEASES.items():
        inputs = releases[name]
        assert inputs["version"] == chart.version, name
        if chart is KUEUE:  # an OCI chart: the reference says it all
            assert inputs["chart"] == f"{KUEUE_CHART_REPO}/{chart.name}"
            assert "repositoryOpts" not in inputs
        else:
            assert inputs["chart"] == chart.name, name
            assert inputs["repositoryOpts"] == {"repo": chart.repository}, name


def test_releases_read_the_mirror_directory_as_written(mirrored_run: MockRun[Any]) -> None:
    releases = _releases(mirrored_run)
    assert sorted(releases) == sorted(RELEASES)
    for name, (chart, _) in RELEASES.items():
        inputs = releases[name]
        assert inputs["chart"] == f"mirror/charts/{chart.name}/{chart.version}", name
        assert inputs["version"] == chart.version, name
        assert "repositoryOpts" not in inputs, name


def _block(values: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        values = values.get(key, {}) if isinstance(values, dict) else {}
    return values


def test_without_a_mirror_no_chart_image_is_overridden(dev_run: MockRun[Any]) -> None:
    """Charts deploy their own images; only Kueue's are named, with the chart's own release (the
    chart as tagged in Kueue's source names a staging registry)."""
    for name, (_, images) in RELEASES.items():
        values = _releases(dev_run)[name]["values"]
        for image in images:
            block = _block(values, image.path)
            if name == KUEUE_RELEASE:
                assert block == {
                    "repository": image.default,
                    "tag": f"v{KUEUE.version}",
                    "pullPolicy": "IfNotPresent",
                }
                continue
            assert "registry" not in block and "repository" not in block, (name, image.path)


def test_every_chart_image_goes_through_the_mirror(
    dev_run: MockRun[Any], mirrored_run: MockRun[Any]
) -> None:
    """The mirrored values are the plain ones plus the image values of every table entry."""
    plain, mirrored = _releases(dev_run), _releases(mirrored_run)
    for name, (_, images) in RELEASES.items():
        expected = merge_values(plain[name]["values"], chart_image_values(images, MIRROR))
        assert mirrored[name]["values"] == expected, name
    kps = mirrored[KPS_RELEASE]["values"]
    assert kps["prometheus"]["prometheusSpec"]["image"] == {
        "registry": f"{MIRROR}/quay.io",
        "repository": "prometheus/prometheus",
    }
    assert "global" not in kps  # global.imageRegistry would drop the original registry
    assert mirrored[KUEUE_RELEASE]["values"]["controllerManager"]["manager"]["image"] == {
        "repository": f"{MIRROR}/registry.k8s.io/kueue/kueue",
        "tag": f"v{KUEUE.version}",
        "pullPolicy": "IfNotPresent",
    }
    assert mirrored[GPU_OPERATOR_RELEASE]["values"]["dcgmExporter"] == {
        "enabled": False,
        "serviceMonitor": {"enabled": False},
        "repository": f"{MIRROR}/nvcr.io/nvidia/k8s",
    }


def _containers(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("containers", "initContainers") and isinstance(item, list):
                yield from item
            else:
                yield from _containers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _containers(item)


def _images(run: MockRun[Any]) -> dict[tuple[str, str, str], str]:
    """``(kind, object, container)`` → image, for every container the platform renders."""
    found = {}
    for resource in run.kubernetes_objects():
        for container in _containers(resource.inputs.get("spec", {})):
            found[(resource.kind, resource.metadata["name"], container["name"])] = container[
                "image"
            ]
    return found


def test_every_component_image_goes_through_the_mirror(
    dev_run: MockRun[Any], mirrored_run: MockRun[Any]
) -> None:
    """Each container's image is the plain run's, rewritten once (the rewrite: test_images.py)."""
    plain, mirrored = _images(dev_run), _images(mirrored_run)
    assert {"Job", "Deployment", "StatefulSet"} <= {kind for kind, _, _ in mirrored}
    own_preflight = ("Job", "llama-finetune", "preflight")
    expected = {key: mirrored_reference(image, MIRROR) for key, image in plain.items()}
    expected[own_preflight] = f"{MIRROR}/docker.io/library/{PREFLIGHT_IMAGE}"
    assert mirrored == expected
    assert mirrored[("Job", "llama-eval", "trainer")] == (
        f"{MIRROR}/nvcr.io/nvidia/pytorch:25.01-py3"
    )
    assert mirrored[("StatefulSet", "llm-chat-redis", "redis")] == (
        f"{MIRROR}/public.ecr.aws/docker/library/redis:7.4-alpine"
    )


def _registry_violations(resources: list[CapturedResource], allowed: list[str] | None) -> list[str]:
    meta = REGISTRY["image-registry-allowed"]
    fixture = harness.Fixture(
        path=Path("image-registry-allowed.yaml"),
        policy=meta.name,
        allowed=True,
        resources=[harness.Resource(r.type, r.name, r.inputs) for r in resources],
        config={} if allowed is None else {"allowedRegistries": allowed},
    )
    return harness.run(meta.policy, fixture)


def test_the_registry_policy_passes_mirrored_images_when_the_mirror_is_allowed(
    mirrored_run: MockRun[Any],
) -> None:
    resources = mirrored_run.kubernetes_objects()
    # What a user adds to policies/config/<stack>.json: the mirror, or (stricter) the allowed
    # registries below it.
    assert _registry_violations(resources, [MIRROR]) == []
    below = [f"{MIRROR}/{registry}" for registry in (*DEFAULT_REGISTRIES, "docker.io/library")]
    assert _registry_violations(resources, below) == []
    refused = _registry_violations(resources, None)
    assert refused and all("comes from harbor.example.com" in message for message in refused)
