"""Values are checked as they are rendered: a duration, size or quantity with a space around it
is a config error, not a value the API server refuses halfway through ``pulumi up``.

Found by the e2e's faults section (docs/e2e.md, "Day two: faults"): the checks used to strip
what they parsed, while the program renders the value as written, so ``retention: "7d "``
passed the offline preview and the Prometheus CRD refused it in the middle of the
kube-prometheus-stack upgrade.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from infra.config import ConfigError, validate_platform_config
from tests.harness import engine_config, stack_config
from tools.mockrun import run_under_mocks

AS_WRITTEN = [
    (
        ("monitoring", "prometheus", "retention"),
        "7d ",
        "ai-platform:monitoring.prometheus.retention",
    ),
    (
        ("monitoring", "prometheus", "scrapeInterval"),
        " 30s",
        "ai-platform:monitoring.prometheus.scrapeInterval",
    ),
    (
        ("monitoring", "prometheus", "retentionSize"),
        "18GiB\n",
        "ai-platform:monitoring.prometheus.retentionSize",
    ),
    (("monitoring", "loki", "retention"), "3d ", "ai-platform:monitoring.loki.retention"),
    (("monitoring", "loki", "storageSize"), "20Gi ", "ai-platform:monitoring.loki.storageSize"),
    (("teams", 0, "quota", "cpu"), " 66", "ai-platform:teams[research].quota.cpu"),
]


def _with(
    path: tuple[str | int, ...], value: str, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    config = stack_config("dev") if config is None else config
    target: Any = config
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return config


@pytest.mark.parametrize(("path", "value", "key"), AS_WRITTEN, ids=[k for _, _, k in AS_WRITTEN])
def test_a_value_with_spaces_is_a_config_error_on_its_key(
    path: tuple[str | int, ...], value: str, key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_platform_config(_with(path, value), "Pulumi.dev.yaml")
    assert [issue.key_path for issue in caught.value.issues] == [key]
    assert repr(value) in caught.value.issues[0].message


def test_the_same_values_without_spaces_pass() -> None:
    config = stack_config("dev")
    for path, value, _ in AS_WRITTEN:
        _with(path, value.strip(), config)
    validate_platform_config(config, "Pulumi.dev.yaml")


def test_the_program_registers_nothing_for_a_retention_with_a_space() -> None:
    """Under mocks, as ``pulumi up`` runs it: the run ends with the config error, before any
    resource (the Helm release among them) is registered."""

    def program() -> Any:
        from infra.program import run

        return run()

    config = _with(("monitoring", "prometheus", "retention"), "7d ")
    with pytest.raises(pulumi.RunError) as failure:
        run_under_mocks(program, stack="dev", config=engine_config(config))
    assert "ai-platform:monitoring.prometheus.retention" in str(failure.value)
    assert "'7d '" in str(failure.value)
