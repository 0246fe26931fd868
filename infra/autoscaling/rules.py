"""Cross-field rules of ``ai-platform:autoscaling``: every HPA has its metrics served.

An inference service's custom metric is served only by the Prometheus adapter (it is the one
custom metrics API the platform installs), and the adapter answers from the platform's
Prometheus. What needs KEDA (autoscaled worker pools) is checked where it is configured
(``workloads/rules.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..config.errors import ConfigIssue
from ..config.views import HasAutoscaling, HasMonitoring, HasWorkloads


class AutoscaledPlatform(HasAutoscaling, HasWorkloads, HasMonitoring, Protocol):
    """What the rules read: the autoscaling settings, the workloads and monitoring."""


def custom_metrics_have_an_adapter(config: AutoscaledPlatform) -> Iterator[ConfigIssue]:
    """A workload's ``customMetric`` needs the Prometheus adapter, which serves it."""
    if config.autoscaling.prometheus_adapter.enabled:
        return
    for index, workload in enumerate(config.workloads):
        if workload.kind != "inference":
            continue
        metric = workload.inference_settings.custom_metric
        if metric is None:
            continue
        yield ConfigIssue(
            ("workloads", index, "inference", "customMetric"),
            f"no metrics adapter serves {metric.name!r}, so the HPA could not read it: set "
            "ai-platform:autoscaling.prometheusAdapter.enabled to true (it serves every "
            "customMetric the workloads name, from the platform's Prometheus), or drop "
            "customMetric and scale on CPU and memory",
        )


def adapter_has_prometheus(config: AutoscaledPlatform) -> Iterator[ConfigIssue]:
    """The Prometheus adapter answers from the platform's Prometheus: monitoring must be on."""
    if config.autoscaling.prometheus_adapter.enabled and not config.monitoring.enabled:
        yield ConfigIssue(
            ("autoscaling", "prometheusAdapter", "enabled"),
            "prometheus-adapter answers from the platform's Prometheus, which "
            "ai-platform:monitoring.enabled false does not install: enable monitoring, or turn "
            "the adapter off",
        )


RULES: tuple[Callable[[Any], Iterator[ConfigIssue]], ...] = (
    custom_metrics_have_an_adapter,
    adapter_has_prometheus,
)
