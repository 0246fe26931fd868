"""``ai-platform:priorityClasses``: the scheduling priorities teams may use."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config.base import ConfigModel, DnsSubdomain

PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]


class PriorityClassConfig(ConfigModel):
    """One PriorityClass (and, when queueing is on, its Kueue WorkloadPriorityClass)."""

    name: DnsSubdomain
    """Object name; teams and workloads refer to it. Names starting ``system-`` are reserved."""
    value: int = Field(ge=-2_147_483_648, le=1_000_000_000)
    """Priority; values above 1e9 are reserved for Kubernetes' own system classes."""
    global_default: bool = False
    """The class pods without ``priorityClassName`` get. Exactly one class must set it."""
    preemption_policy: PreemptionPolicy = "PreemptLowerPriority"
    """``Never`` lets the class queue ahead of others without evicting running pods."""
    description: str = ""
    """Shown by ``kubectl get priorityclass``: say who should use it."""


DEFAULT_PRIORITY_CLASSES: tuple[PriorityClassConfig, ...] = (
    PriorityClassConfig.model_validate(
        {
            "name": "critical",
            "value": 100000,
            "description": "Production inference and platform services.",
        }
    ),
    PriorityClassConfig.model_validate(
        {"name": "high", "value": 10000, "description": "Deadline-bound training and evaluation."}
    ),
    PriorityClassConfig.model_validate(
        {
            "name": "normal",
            "value": 1000,
            "globalDefault": True,
            "description": "Default for all work.",
        }
    ),
    PriorityClassConfig.model_validate(
        {
            "name": "batch-low",
            "value": 100,
            "preemptionPolicy": "Never",
            "description": "Opportunistic batch work; waits for capacity and never preempts.",
        }
    ),
)
"""Used when a stack sets no ``priorityClasses``."""
