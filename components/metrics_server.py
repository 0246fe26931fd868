"""MetricsServer: metrics-server, the resource metrics API (``v1beta1.metrics.k8s.io``) every
CPU and memory HorizontalPodAutoscaler reads, and ``kubectl top``.

Installed from its Helm chart into a namespace of its own that enforces ``restricted`` Pod
Security and starts from default-deny: metrics-server scrapes every kubelet's summary endpoint
(node addresses, port 10250) and calls the API server; only the API server calls it (the
aggregated API), on its secure port.

Why the values below: the chart's image and security context are kept (pinned by the chart,
already ``restricted`` at the container; the pod half is ours); a PodDisruptionBudget with
``maxUnavailable: 1`` only when there is more than one replica, so a drain never waits on it
(the chart would render ``minAvailable`` and ``maxUnavailable`` both if we set the other one
too, which the API server refuses); a memory limit; ``--kubelet-insecure-tls`` only where the
stack says the kubelets' serving certificates are not signed by the cluster CA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import pulumi
import pulumi_kubernetes as k8s

from .charts import METRICS_SERVER, Chart, ChartImage, chart_image_values, merge_values
from .constants import (
    APP_NAME_LABEL,
    METRICS_SERVER_CHART,
    METRICS_SERVER_NAMESPACE,
    METRICS_SERVER_PORT,
    METRICS_SERVER_RELEASE,
)
from .frozen import frozen
from .monitoring.constants import KUBELET_PORT
from .network_policies import (
    PolicySpec,
    SystemNetwork,
    aggregated_api_server,
    controller_namespace,
)
from .network_rules import cidr_peers, ports
from .platform_chart import ChartInstall, PlatformChartArgs

POD_LABELS: Final = {APP_NAME_LABEL: METRICS_SERVER_CHART}
"""What the chart puts on metrics-server's pods: the NetworkPolicies select them."""

CHART_IMAGES: tuple[ChartImage, ...] = (
    ChartImage(("image",), "registry.k8s.io/metrics-server/metrics-server", "repository"),
    ChartImage(
        ("addonResizer", "image"), "registry.k8s.io/autoscaling/addon-resizer", "repository"
    ),
)
"""Every image the metrics-server chart can deploy (its values.yaml; the addon resizer stays
off), for a registry mirror."""

RESOURCE_METRICS_API: Final = "v1beta1.metrics.k8s.io"
"""The APIService the chart registers."""


@frozen
class MetricsServerArgs(PlatformChartArgs):
    """Inputs of the MetricsServer component."""

    chart: Chart = METRICS_SERVER
    namespace: str = METRICS_SERVER_NAMESPACE
    replicas: int = 1
    """Replicas of the API server; two keep the HPAs reading through a node drain."""
    kubelet_insecure_tls: bool = False
    """Skip checking the kubelets' serving certificates (clusters whose kubelets serve
    self-signed ones, kubeadm's default); False verifies them against the cluster CA."""

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError("MetricsServerArgs.replicas must be >= 1")


def chart_values(args: MetricsServerArgs) -> dict[str, Any]:
    """Helm values of the metrics-server chart (keys as in its values.yaml)."""
    values: dict[str, Any] = {
        "replicas": args.replicas,
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "resources": {
            "requests": {"cpu": "100m", "memory": "200Mi"},
            "limits": {"memory": "400Mi"},
        },
        "podDisruptionBudget": {"enabled": args.replicas > 1, "maxUnavailable": 1},
        "metrics": {"enabled": False},
        "serviceMonitor": {"enabled": False},
    }
    if args.kubelet_insecure_tls:
        # After the chart's defaultArgs (cert dir, address types, node status port, 15 s). No
        # empty list otherwise: the provider drops it, and the state would differ from the program.
        values["args"] = ["--kubelet-insecure-tls"]
    return merge_values(values, chart_image_values(CHART_IMAGES, args.registry_mirror))


def metrics_server_policies(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
    """metrics-server reads the kubelets (node addresses) and the API server; the API server
    calls it, nothing else does."""
    return [
        *controller_namespace(namespace, network),
        aggregated_api_server(
            "metrics-server",
            namespace,
            network,
            POD_LABELS,
            METRICS_SERVER_PORT,
            [{"to": cidr_peers(network.node_cidrs), "ports": ports([KUBELET_PORT])}],
        ),
    ]


class MetricsServer(pulumi.ComponentResource):
    """metrics-server and its APIService, in a restricted, default-deny namespace."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace_name: str
        release: k8s.helm.v3.Release

    def __init__(
        self, name: str, args: MetricsServerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:autoscaling:MetricsServer", name, None, opts)
        install = ChartInstall(self, name, args, metrics_server_policies)
        self.release = install.release(METRICS_SERVER_RELEASE, chart_values(args))
        self.namespace_name = args.namespace
        self.register_outputs({"namespace": self.namespace_name})
