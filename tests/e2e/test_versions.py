"""The product ships the versions the e2e runs: the SDK pins, the chart pins and the stacks'
cluster version agree with what tools/e2e/build.py builds."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from components.constants import KUEUE_CHART_VERSION
from infra.config import StackFile
from tools.e2e import build

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for requirement in project["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][0-9.]*)", requirement)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def _release(tool: str) -> tuple[int, ...]:
    version = build.versions()[tool]
    return tuple(int(part) for part in version.lstrip("v").split(".")[:3])


def test_provider_sdks_are_pinned_at_the_providers_the_e2e_builds():
    pins = _pins()
    assert pins["pulumi-kubernetes"] == build.KUBERNETES_PROVIDER_VERSION
    assert pins["pulumi-random"] == build.RANDOM_PROVIDER_VERSION


def test_the_cli_is_never_older_than_the_sdk():
    sdk = tuple(int(part) for part in _pins()["pulumi"].split("."))
    assert _release("pulumi") >= sdk


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_api_server_is_the_stacks_kubernetes_version(stack: str):
    config = StackFile(ROOT / f"Pulumi.{stack}.yaml").platform_config()
    assert ".".join(map(str, _release("kubernetes")[:2])) == config.cluster.kubernetes_version


def test_kueue_chart_and_controller_are_one_release():
    assert build.versions()["kueue"] == f"v{KUEUE_CHART_VERSION}"
