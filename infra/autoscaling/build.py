"""KEDA: config -> ``KedaArgs`` -> the ``Keda`` component."""

from __future__ import annotations

import pulumi

from components.keda import Keda, KedaArgs
from components.network_policies import SystemNetwork

from ..chart_fields import chart_fields
from ..config.root import PlatformConfig
from ..sources import KEDA


def keda(
    config: PlatformConfig, network: SystemNetwork, opts: pulumi.ResourceOptions
) -> Keda | None:
    """KEDA in its own namespace, if enabled."""
    settings = config.autoscaling.keda
    if not settings.enabled:
        return None
    args = KedaArgs(
        **chart_fields(config, network),
        operator_replicas=settings.operator_replicas,
        metrics_server_replicas=settings.metrics_server_replicas,
        webhook_replicas=settings.webhook_replicas,
        webhook_failure_policy=settings.webhook_failure_policy,
    )
    return Keda(KEDA, args, opts)
