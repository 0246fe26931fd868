"""What every chart component's args take from the stack config (``PlatformChartArgs``'s fields
the stack sets), so each domain's build passes them the same way."""

from __future__ import annotations

from typing import Any

from components.network_policies import SystemNetwork

from .config.root import PlatformConfig


def chart_fields(config: PlatformConfig, network: SystemNetwork) -> dict[str, Any]:
    """The chart source and registry mirror of the stack, its namespaces kept on delete where
    the cluster protects data, and the platform's network."""
    return {
        "chart_source": config.charts.chart_source,
        "registry_mirror": config.images.registry_mirror,
        "retain_on_delete": config.cluster.protects_data,
        "network": network,
    }
