"""The values we pass are keys the pinned charts know: a moved pin that renamed one fails here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.charts.conftest import RELEASE, RELEASES, effective_values
from tools.mockrun import MockRun

FREE_FORM: frozenset[str] = frozenset(
    {
        "prometheus-node-exporter.podLabels",
        "grafana.podLabels",
        "podSecurityContext.operator",
        "podSecurityContext.metricServer",
        "podSecurityContext.webhooks",
    }
)
"""Maps whose keys are ours (labels, KEDA's pod security contexts, which its templates write as
given), however the chart's values.yaml seeds them."""
TEMPLATE_ONLY: frozenset[str] = frozenset(
    {
        "alertmanager.alertmanagerSpec.configSecret",
        "kube-state-metrics.fullnameOverride",
        "grafana.fullnameOverride",
        "grafana.persistence.storageClassName",
        "loki.storage.bucketNames",
        "loki.limits_config.retention_period",
        "resources.requests",
        "resources.limits",
        "podSecurityContext.runAsNonRoot",
        "podSecurityContext.seccompProfile",
    }
)
"""Keys the charts' templates read that their values.yaml does not list (checked by hand)."""


def _unknown(ours: Mapping[str, Any], theirs: Any, path: str = "") -> Iterator[str]:
    for key, value in ours.items():
        dotted = f"{path}.{key}" if path else key
        if dotted in FREE_FORM or dotted in TEMPLATE_ONLY:
            continue
        if not isinstance(theirs, Mapping) or key not in theirs:
            yield dotted
        elif isinstance(value, Mapping) and isinstance(theirs[key], Mapping) and theirs[key]:
            yield from _unknown(value, theirs[key], dotted)


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_values_are_keys_of_the_pinned_chart(
    release: str, dev_run: MockRun[Any], prod_run: MockRun[Any], shared_charts: Path
) -> None:
    chart, _ = RELEASES[release]
    known = effective_values(shared_charts / chart.name / chart.version)
    for run in (dev_run, prod_run):
        [inputs] = [r.inputs for r in run.by_type(RELEASE) if r.inputs["name"] == release]
        assert list(_unknown(inputs["values"], known)) == []
