"""KubeRay: config -> ``KubeRayOperatorArgs`` -> the operator component."""

from __future__ import annotations

import pulumi

from components.kuberay import KubeRayOperator, KubeRayOperatorArgs
from components.network_policies import SystemNetwork

from ..config.root import PlatformConfig
from ..sources import KUBERAY


def kuberay_operator(
    config: PlatformConfig, network: SystemNetwork, opts: pulumi.ResourceOptions
) -> KubeRayOperator | None:
    """The KubeRay operator, if ``ray`` installs it."""
    ray = config.ray
    if not ray.enabled:
        return None
    args = KubeRayOperatorArgs(
        service_monitor=ray.service_monitor,
        chart_source=config.charts.chart_source,
        registry_mirror=config.images.registry_mirror,
        namespace=ray.namespace,
        retain_on_delete=config.cluster.protects_data,
        network=network,
    )
    return KubeRayOperator(KUBERAY, args, opts)
