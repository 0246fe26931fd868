"""Fixtures of the MonitoringStack tests: mock runs with known secrets, and a moto S3 server."""

from __future__ import annotations

import copy
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto.server import ThreadedMotoServer
from pulumi.runtime.mocks import MockResourceArgs

from tests.monitoring.stack_blocks import dev_monitoring, prod_monitoring
from tools import mockrun
from tools.mockrun import CapturedResource, MockRun, PlatformMocks, run_under_mocks

KNOWN_PASSWORD = "S3cr3t-known-value"
"""What the mocked RandomPassword returns as ``result``: it must appear in no captured input."""
SLACK_URL = "https://hooks.slack.com/services/T0000/B0000/known-slack-secret"
PAGERDUTY_KEY = "known-pagerduty-routing-key-0123456789"
RANDOM_PASSWORD_TYPE = "random:index/randomPassword:RandomPassword"
RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


class KnownSecretsMocks(PlatformMocks):
    """PlatformMocks whose RandomPassword has a known ``result``, as the provider would."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        if args.typ == RANDOM_PASSWORD_TYPE:
            state = {**state, "result": KNOWN_PASSWORD}
        return resource_id, state


def render_monitoring(
    monitoring: dict[str, Any],
    *,
    stack: str = "dev",
    cluster_name: str = "lab",
    **mapping: Any,
) -> MockRun[dict[str, Any]]:
    """Validate ``ai-platform:monitoring`` and build a MonitoringStack from it under mocks.

    ``mapping`` goes to ``monitoring_stack_args`` (``gpu_stack_enabled``, ...).
    """

    def program() -> dict[str, Any]:
        from components.monitoring.stack import MonitoringStack
        from infra.monitoring.build import monitoring_stack_args
        from infra.monitoring.config import MonitoringConfig

        config = MonitoringConfig.model_validate(monitoring)
        component = MonitoringStack(
            "monitoring", monitoring_stack_args(config, cluster_name=cluster_name, **mapping)
        )
        return {
            "monitoring_namespace": component.monitoring_namespace,
            "logging_namespace": component.logging_namespace,
            "grafana_url": component.grafana_url,
            "grafana_admin_secret_name": component.grafana_admin_secret_name,
            "prometheus_url": component.prometheus_url,
            "alertmanager_url": component.alertmanager_url,
            "loki_push_url": component.loki_push_url,
            "dcgm_counters_config_map_name": component.dcgm_counters_config_map_name,
        }

    return run_args_program(program, stack=stack)


def run_args_program(program: Callable[[], Any], *, stack: str = "dev") -> MockRun[Any]:
    """``run_under_mocks`` with :class:`KnownSecretsMocks` (patched only for this run)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mockrun, "PlatformMocks", KnownSecretsMocks)
        return run_under_mocks(program, stack=stack, config={})


def prod_with_known_secrets() -> dict[str, Any]:
    """The prod block with real-looking credentials in place of the offline placeholder."""
    monitoring = copy.deepcopy(prod_monitoring())
    for receiver in monitoring["alertmanager"]["receivers"]:
        if receiver["type"] == "pagerduty":
            receiver["routingKey"] = PAGERDUTY_KEY
        if receiver["type"] == "slack":
            receiver["url"] = SLACK_URL
    return monitoring


@pytest.fixture(scope="session")
def dev_monitoring_run() -> MockRun[dict[str, Any]]:
    return render_monitoring(dev_monitoring(), stack="dev", cluster_name="lab")


@pytest.fixture(scope="session")
def prod_monitoring_run() -> MockRun[dict[str, Any]]:
    return render_monitoring(prod_with_known_secrets(), stack="prod", cluster_name="gpu-prod")


def release_values(run: MockRun[Any], chart: str) -> dict[str, Any]:
    """The Helm values of the release of ``chart``."""
    [release] = [r for r in run.by_type(RELEASE_TYPE) if r.inputs["chart"] == chart]
    values = release.inputs["values"]
    assert isinstance(values, dict), f"values of {chart} are not plain data: {values!r}"
    return values


def kinds(run: MockRun[Any], kind: str) -> list[CapturedResource]:
    return [r for r in run.kubernetes_objects() if r.kind == kind]


# --- moto's S3 server -----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """A real S3 HTTP endpoint on 127.0.0.1 (moto server mode), for the whole session."""
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture
def s3_endpoint(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The moto endpoint, emptied before each test, with dummy AWS_* credentials set."""
    import urllib.request

    request = urllib.request.Request(f"{moto_server}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    yield moto_server
