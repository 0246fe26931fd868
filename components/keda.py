"""Keda: event-driven autoscaling, so worker pools scale on the length of their queue.

KEDA's chart (``keda``, its own namespace) installs three processes: the operator, which reads
each ScaledObject's triggers (a Celery queue in the team Redis) and keeps an HPA for its target;
the metrics API server behind the ``v1beta1.external.metrics.k8s.io`` APIService, where those
HPAs read the values; and the admission webhooks that validate ScaledObjects and
TriggerAuthentications. The namespace enforces ``restricted`` Pod Security and denies all
traffic but what each process needs (``network_policies.keda_policies``).

Why the values below: images are pulled ``IfNotPresent`` (they are pinned, the chart's default is
``Always``); the chart's own NetworkPolicies stay off (ours open each path by name); the
operator's Prometheus port is on, for the backlog alert; the webhooks refuse what they cannot
check when down (``failurePolicy: Fail``, as Kueue's), so an invalid ScaledObject never slips in
while KEDA restarts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import pulumi
import pulumi_kubernetes as k8s

from .charts import KEDA, Chart, ChartImage, chart_image_values, merge_values
from .constants import (
    KEDA_NAMESPACE,
    KEDA_OPERATOR,
    KEDA_OPERATOR_METRICS_PORT,
    KEDA_RELEASE,
    KEDA_WEBHOOKS,
)
from .frozen import frozen
from .network_policies import keda_policies
from .platform_chart import ChartInstall, PlatformChartArgs

FailurePolicy = Literal["Fail", "Ignore"]

CHART_IMAGES: tuple[ChartImage, ...] = (
    ChartImage(("image", "keda"), "ghcr.io/kedacore/keda"),
    ChartImage(("image", "metricsApiServer"), "ghcr.io/kedacore/keda-metrics-apiserver"),
    ChartImage(("image", "webhooks"), "ghcr.io/kedacore/keda-admission-webhooks"),
)
"""Every image the KEDA chart deploys (its values.yaml), for a registry mirror."""

_POD_SECURITY = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
"""Pod-level ``restricted`` settings; the chart's containers already drop every capability,
forbid privilege escalation and run on a read-only root."""


@frozen
class KedaArgs(PlatformChartArgs):
    """Inputs of the Keda component."""

    chart: Chart = KEDA
    namespace: str = KEDA_NAMESPACE
    operator_replicas: int = 1
    """Operator replicas; one leads, the others stand by (KEDA does not shard the work)."""
    metrics_server_replicas: int = 1
    webhook_replicas: int = 1
    webhook_failure_policy: FailurePolicy = "Fail"
    """What the API server does with a ScaledObject while the webhooks are down."""

    def __post_init__(self) -> None:
        for what in ("operator_replicas", "metrics_server_replicas", "webhook_replicas"):
            if getattr(self, what) < 1:
                raise ValueError(f"KedaArgs.{what} must be >= 1")


def chart_values(args: KedaArgs) -> dict[str, Any]:
    """Helm values of the KEDA chart (keys as in its values.yaml)."""
    values: dict[str, Any] = {
        "crds": {"install": True},
        "image": {"pullPolicy": "IfNotPresent"},
        "operator": {"name": KEDA_OPERATOR, "replicaCount": args.operator_replicas},
        "metricsServer": {"replicaCount": args.metrics_server_replicas},
        "webhooks": {
            "enabled": True,
            "name": KEDA_WEBHOOKS,
            "replicaCount": args.webhook_replicas,
            "failurePolicy": args.webhook_failure_policy,
        },
        "podSecurityContext": {
            part: dict(_POD_SECURITY) for part in ("operator", "metricServer", "webhooks")
        },
        "networkPolicy": {"enabled": False},
        "prometheus": {"operator": {"enabled": True, "port": KEDA_OPERATOR_METRICS_PORT}},
    }
    return merge_values(values, chart_image_values(CHART_IMAGES, args.registry_mirror))


class Keda(pulumi.ComponentResource):
    """The KEDA operator, metrics API server and admission webhooks, in their own namespace."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace_name: str
        release: k8s.helm.v3.Release
        """Order ScaledObjects and TriggerAuthentications after it: it installs their CRDs and
        the webhooks that validate them."""

    def __init__(
        self, name: str, args: KedaArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:autoscaling:Keda", name, None, opts)
        install = ChartInstall(self, name, args, keda_policies)
        # Awaited: the webhooks validate every ScaledObject ordered after the release.
        self.release = install.release(KEDA_RELEASE, chart_values(args))
        self.namespace_name = args.namespace
        self.register_outputs({"namespace": self.namespace_name})
