"""KubeRayOperator: the KubeRay operator, which turns the teams' RayCluster and RayJob objects into
Ray head and worker pods.

Installed from its Helm chart into a namespace of its own that enforces ``restricted`` Pod
Security (the operator needs no host access) and starts from default-deny: the operator calls the
API server and the Ray heads' dashboard port in team namespaces (job submission and status), and
Prometheus may scrape its metrics. The chart installs the ``ray.io`` CRDs; Kueue's ``ray.io``
integrations (``components.kueue.KUEUE_FRAMEWORKS``) pick them up once they exist.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import pulumi
import pulumi_kubernetes as k8s

from .charts import KUBERAY, Chart, ChartImage, chart_image_values, merge_values
from .constants import (
    KUBERAY_NAMESPACE,
    KUBERAY_RELEASE,
    RAY_DASHBOARD_PORT,
    RAY_NODE_TYPE_LABEL,
    TEAM_LABEL,
)
from .frozen import frozen
from .network_policies import PolicySpec, SystemNetwork, controller_namespace, prometheus_peer
from .network_rules import labelled_namespaces_peer, pod_selector, ports
from .platform_chart import ChartInstall, PlatformChartArgs

OPERATOR_POD_LABELS: Final = {"app.kubernetes.io/name": KUBERAY_RELEASE}
"""What the chart puts on the operator's pod (``nameOverride``): the NetworkPolicies select it."""
OPERATOR_METRICS_PORT: Final = 8080
"""The operator's metrics port (the chart's ``service.port``)."""

CHART_IMAGES: tuple[ChartImage, ...] = (
    ChartImage(("image",), "quay.io/kuberay/operator", "repository"),
)
"""Every image the KubeRay chart deploys (its values.yaml), for a registry mirror."""


@frozen
class KubeRayOperatorArgs(PlatformChartArgs):
    """Inputs of the KubeRayOperator component."""

    chart: Chart = KUBERAY
    namespace: str = KUBERAY_NAMESPACE
    service_monitor: bool = False
    """Let the chart create the operator's ServiceMonitor (needs the Prometheus operator CRDs)."""


def chart_values(args: KubeRayOperatorArgs) -> dict[str, Any]:
    """Helm values of the KubeRay chart (keys as in its values.yaml): the chart's own image
    (``v<chart version>``), a ``restricted`` pod (the chart sets the container half; the pod
    half is ours), requests equal to the chart's limits, metrics on."""
    values: dict[str, Any] = {
        "podSecurityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {
            "requests": {"cpu": "100m", "memory": "512Mi"},
            "limits": {"cpu": "500m", "memory": "512Mi"},
        },
        "metrics": {"enabled": True, "serviceMonitor": {"enabled": args.service_monitor}},
    }
    return merge_values(values, chart_image_values(CHART_IMAGES, args.registry_mirror))


def kuberay_policies(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
    """The operator calls the API server and the Ray heads' dashboard in team namespaces (RayJob
    submission and status); only Prometheus reaches it, on its metrics port."""
    operator = pod_selector(OPERATOR_POD_LABELS)
    found = [
        *controller_namespace(namespace, network),
        PolicySpec(
            "kuberay-operator-egress",
            namespace,
            {
                "podSelector": operator,
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [
                            {
                                **labelled_namespaces_peer(TEAM_LABEL),
                                "podSelector": pod_selector({RAY_NODE_TYPE_LABEL: "head"}),
                            }
                        ],
                        "ports": ports([RAY_DASHBOARD_PORT]),
                    }
                ],
            },
        ),
    ]
    if network.prometheus_namespace is not None:
        found.append(
            PolicySpec(
                "kuberay-operator-metrics",
                namespace,
                {
                    "podSelector": operator,
                    "policyTypes": ["Ingress"],
                    "ingress": [
                        {
                            "from": [prometheus_peer(network.prometheus_namespace)],
                            "ports": ports([OPERATOR_METRICS_PORT]),
                        }
                    ],
                },
            )
        )
    return found


class KubeRayOperator(pulumi.ComponentResource):
    """The KubeRay operator and the ``ray.io`` CRDs, in a restricted, default-deny namespace."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace_name: str
        release: k8s.helm.v3.Release
        """Ray workloads wait for it: their CRDs come with it."""

    def __init__(
        self, name: str, args: KubeRayOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:ray:KubeRayOperator", name, None, opts)
        install = ChartInstall(self, name, args, kuberay_policies)
        self.release = install.release(KUBERAY_RELEASE, chart_values(args))
        self.namespace_name = args.namespace
        self.register_outputs({"namespace": self.namespace_name})
