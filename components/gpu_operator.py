"""GpuOperator: the NVIDIA GPU Operator (driver, toolkit, device plugin, GFD, DCGM exporter).

Installed from NVIDIA's Helm chart into its own namespace. That namespace enforces the
``privileged`` Pod Security level: the driver and toolkit daemonsets load kernel modules and
write to the host, which is the platform's documented exception to ``restricted``.

The device plugin reads one config entry per node pool from a ConfigMap
(``devicePlugin.config.name``); each pool labels its nodes with
``nvidia.com/device-plugin.config=<pool>`` to pick its entry (time-slicing replicas, MIG
strategy). Nodes outside every pool get the ``default`` entry: whole GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

import pulumi

from . import kube
from .charts import GPU_OPERATOR, Chart, ChartImage, chart_image_values, merge_values
from .constants import (
    DEVICE_PLUGIN_CONFIGMAP,
    DEVICE_PLUGIN_DEFAULT_CONFIG,
    GPU_OPERATOR_NAMESPACE,
    GPU_OPERATOR_RELEASE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    PSA_PRIVILEGED,
)
from .frozen import frozen
from .gpu_node_pool import GpuSharing, device_plugin_config_yaml
from .labels import platform_labels
from .network_policies import PolicySpec, SystemNetwork, gpu_operator_policies
from .platform_chart import ChartInstall, PlatformChartArgs

_CONTROL_PLANE_TOLERATIONS: tuple[dict[str, str], ...] = (
    {
        "key": "node-role.kubernetes.io/master",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
    {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    },
)
"""The chart's own NFD worker tolerations, kept when we add the pools' taints."""

_NVIDIA = "nvcr.io/nvidia"
_CLOUD_NATIVE = f"{_NVIDIA}/cloud-native"
_K8S = f"{_NVIDIA}/k8s"
CHART_IMAGES: tuple[ChartImage, ...] = (
    *(
        ChartImage(path, f"{repository}/{image}", "prefix")
        for path, repository, image in (
            (("validator",), _NVIDIA, "gpu-operator"),
            (("operator",), _NVIDIA, "gpu-operator"),
            (("operator", "initContainer"), _NVIDIA, "cuda"),
            (("driver",), _NVIDIA, "driver"),
            (("driver", "manager"), _CLOUD_NATIVE, "k8s-driver-manager"),
            (("toolkit",), _K8S, "container-toolkit"),
            (("devicePlugin",), _NVIDIA, "k8s-device-plugin"),
            (("dcgm",), _CLOUD_NATIVE, "dcgm"),
            (("dcgmExporter",), _K8S, "dcgm-exporter"),
            (("gfd",), _NVIDIA, "k8s-device-plugin"),
            (("migManager",), _CLOUD_NATIVE, "k8s-mig-manager"),
            (("nodeStatusExporter",), _NVIDIA, "gpu-operator"),
            (("gds",), _CLOUD_NATIVE, "nvidia-fs"),
            (("gdrcopy",), _CLOUD_NATIVE, "gdrdrv"),
            (("vgpuManager", "driverManager"), _CLOUD_NATIVE, "k8s-driver-manager"),
            (("vgpuDeviceManager",), _CLOUD_NATIVE, "vgpu-device-manager"),
            (("vfioManager",), _NVIDIA, "cuda"),
            (("vfioManager", "driverManager"), _CLOUD_NATIVE, "k8s-driver-manager"),
            (("kataManager",), _CLOUD_NATIVE, "k8s-kata-manager"),
            (("sandboxDevicePlugin",), _NVIDIA, "kubevirt-gpu-device-plugin"),
            (("ccManager",), _CLOUD_NATIVE, "k8s-cc-manager"),
        )
    ),
    ChartImage(
        ("node-feature-discovery", "image"),
        "registry.k8s.io/nfd/node-feature-discovery",
        "repository",
    ),
)
"""Every image the GPU operator chart (and its NFD subchart) can deploy, for a registry mirror.
Not the vGPU manager: the chart has no default for it (each site builds its own driver image)."""


@frozen
class GpuOperatorArgs(PlatformChartArgs):
    """Inputs of a GpuOperator. Defaults install everything, as on bare GPU nodes."""

    chart: Chart = GPU_OPERATOR
    namespace: str = GPU_OPERATOR_NAMESPACE
    device_plugin_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Pool name → device plugin config entry (``GpuSharing.device_plugin_config()``)."""
    node_tolerations: Sequence[Mapping[str, str]] = ()
    """Tolerations for the pools' extra taints: the operator's daemonsets must reach every GPU."""
    driver: bool = True
    """Install the NVIDIA driver. False where node images ship it (EKS GPU AMIs, lab images)."""
    toolkit: bool = True
    """Install the NVIDIA container toolkit. False where node images ship it."""
    gpu_feature_discovery: bool = True
    """Label nodes with GPU product, memory, count, MIG and sharing facts."""
    dcgm_exporter: bool = True
    """Export GPU metrics (utilisation, memory, XID errors) for Prometheus."""
    service_monitor: bool = False
    """Create the DCGM exporter's ServiceMonitor (needs the Prometheus operator CRDs)."""
    node_feature_discovery: bool = True
    """Deploy NFD with the operator; false when the cluster already runs NFD."""
    mig_strategy: str = "single"
    """Cluster-wide MIG strategy of the operator (``single`` or ``mixed``)."""
    mig_manager: bool = False
    """Run the MIG manager, which partitions GPUs per ``nvidia.com/mig.config``."""
    timeout_seconds: int = 600
    """Helm waits this long for the operator; driver builds happen later, in its daemonsets."""


def _dedupe(items: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = []
    for item in items:
        if dict(item) not in seen:
            seen.append(dict(item))
    return seen


def chart_values(args: GpuOperatorArgs) -> dict[str, Any]:
    """Helm values of the gpu-operator chart (keys as in its values.yaml)."""
    tolerations = _dedupe(
        [
            {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": GPU_TAINT_EFFECT},
            *args.node_tolerations,
        ]
    )
    values = {
        "driver": {"enabled": args.driver},
        "toolkit": {"enabled": args.toolkit},
        "nfd": {"enabled": args.node_feature_discovery},
        "gfd": {"enabled": args.gpu_feature_discovery},
        "mig": {"strategy": args.mig_strategy},
        "migManager": {"enabled": args.mig_manager},
        "devicePlugin": {
            "enabled": True,
            "config": {
                "create": False,
                "name": DEVICE_PLUGIN_CONFIGMAP,
                "default": DEVICE_PLUGIN_DEFAULT_CONFIG,
            },
        },
        "dcgmExporter": {
            "enabled": args.dcgm_exporter,
            "serviceMonitor": {"enabled": args.dcgm_exporter and args.service_monitor},
        },
        "daemonsets": {"tolerations": tolerations},
        "node-feature-discovery": {
            "worker": {"tolerations": _dedupe([*_CONTROL_PLANE_TOLERATIONS, *tolerations])}
        },
    }
    return merge_values(values, chart_image_values(CHART_IMAGES, args.registry_mirror))


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU stack: namespace, device plugin configs and the operator's Helm release."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        namespace_name: str
        release_name: str

    def __init__(
        self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:gpu:GpuOperator", name, None, opts)

        def policies(namespace: str, network: SystemNetwork) -> list[PolicySpec]:
            return gpu_operator_policies(namespace, network, args.dcgm_exporter)

        install = ChartInstall(self, name, args, policies, pod_security=PSA_PRIVILEGED)
        entries = {DEVICE_PLUGIN_DEFAULT_CONFIG: GpuSharing().device_plugin_config()}
        entries.update({pool: dict(config) for pool, config in args.device_plugin_configs.items()})
        config_map = kube.ConfigMap(
            f"{name}-device-plugin-config",
            metadata={
                "name": DEVICE_PLUGIN_CONFIGMAP,
                "namespace": args.namespace,
                "labels": platform_labels(),
            },
            data={entry: device_plugin_config_yaml(config) for entry, config in entries.items()},
            opts=install.inside,
        )
        install.release(GPU_OPERATOR_RELEASE, chart_values(args), after=[config_map])
        self.namespace_name = args.namespace
        self.release_name = GPU_OPERATOR_RELEASE
        self.register_outputs({"namespace": self.namespace_name, "release": self.release_name})
