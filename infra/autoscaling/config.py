"""``ai-platform:autoscaling``: what the autoscalers read, installed by the platform.

``keda``: KEDA, which scales worker pools on the length of their queue. Worker pools
(``workloads[].kind: worker-pool``) autoscale through it: each gets a ScaledObject whose Redis
trigger reads its Celery queue, and KEDA keeps the Deployment's HPA. Off, no worker pool may
autoscale (a rule in ``workloads/rules.py`` says so).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config.base import ConfigModel

FailurePolicy = Literal["Fail", "Ignore"]


class KedaConfig(ConfigModel):
    """The KEDA operator, its external metrics API server and its admission webhooks."""

    enabled: bool = False
    """Install KEDA (namespace ``keda``). Off by default: its operator lists and watches Secrets
    cluster-wide (what TriggerAuthentications reference), so a stack asks for it. Off, worker
    pools run at a fixed replica count."""
    operator_replicas: int = Field(default=1, ge=1, le=3)
    """Operator replicas: one leads, the others stand by, so a failover keeps scaling."""
    metrics_server_replicas: int = Field(default=1, ge=1, le=3)
    """Replicas of the external metrics API server every KEDA-made HPA reads."""
    webhook_replicas: int = Field(default=1, ge=1, le=3)
    webhook_failure_policy: FailurePolicy = "Fail"
    """``Fail``: while the webhooks are down, ScaledObjects are refused rather than admitted
    unchecked. ``Ignore`` admits them (KEDA's chart default)."""


class AutoscalingConfig(ConfigModel):
    """Everything ``ai-platform:autoscaling`` says."""

    keda: KedaConfig = KedaConfig()
    """KEDA (namespace ``keda``), for worker pools. Default: not installed."""
