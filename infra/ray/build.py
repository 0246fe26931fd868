"""KubeRay: config -> ``KubeRayOperatorArgs`` -> the operator component."""

from __future__ import annotations

import pulumi

from components.kuberay import KubeRayOperator, KubeRayOperatorArgs
from components.network_policies import SystemNetwork

from ..chart_fields import chart_fields
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
        **chart_fields(config, network),
        service_monitor=ray.service_monitor,
        namespace=ray.namespace,
    )
    return KubeRayOperator(KUBERAY, args, opts)
