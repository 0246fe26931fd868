"""``ai-platform:ray``: the KubeRay operator, which runs the teams' Ray clusters and Ray jobs.

Off unless a stack turns it on: only stacks whose teams run Ray (``kind: ray-cluster`` or
``kind: ray-job`` workloads) need the operator and its CRDs.
"""

from __future__ import annotations

from components.constants import KUBERAY_NAMESPACE

from ..config.base import ConfigModel, DnsLabel


class RayConfig(ConfigModel):
    """The KubeRay operator for the whole cluster."""

    enabled: bool = False
    """Install the KubeRay operator (and the ``ray.io`` CRDs); Ray workloads need it."""
    namespace: DnsLabel = KUBERAY_NAMESPACE
    """The operator's namespace (restricted Pod Security, default-deny networking)."""
    service_monitor: bool = False
    """Create the operator's ServiceMonitor; needs the Prometheus operator (monitoring)."""
