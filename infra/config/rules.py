"""The cross-field rules of every domain, in the order they run and so report.

Each domain's ``rules.py`` holds its rules (what no single field can check), each reading a
structurally valid ``PlatformConfig`` through a Protocol of the fields it uses and yielding
``ConfigIssue``s with the exact key path of the offending value; users see every problem at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..autoscaling import rules as autoscaling
from ..gpu import rules as gpu
from ..manifests import rules as manifests
from ..monitoring import rules as monitoring
from ..queueing import rules as queueing
from ..ray import rules as ray
from ..redis import rules as redis
from ..scheduling import rules as scheduling
from ..storage import rules as storage
from ..tenancy import rules as tenancy
from ..workloads import rules as workloads
from .charts import CHART_RULES
from .errors import ConfigIssue
from .partial import SkippedCheck, run_rules
from .root import PlatformConfig

Rule = Callable[[PlatformConfig], Iterator[ConfigIssue]]

ALL_RULES: tuple[Rule, ...] = (
    *tenancy.RULES,
    *scheduling.RULES,
    *storage.RULES,
    *gpu.RULES,
    *queueing.RULES,
    *autoscaling.RULES,
    *workloads.RULES,
    *ray.RULES,
    *redis.RULES,
    *monitoring.RULES,
    *manifests.RULES,
    *CHART_RULES,
    *tenancy.GUARDRAIL_RULES,
)
"""Every cross-field rule, run in this order after the models validate."""


def cross_field_check(
    config: PlatformConfig, partial: bool = False
) -> tuple[list[ConfigIssue], list[SkippedCheck]]:
    """Every rule's issues, and the checks that did not run because their input did not parse
    (``partial``: the config is :func:`partial_config`'s)."""
    return run_rules(ALL_RULES, config, partial)


def cross_field_issues(config: PlatformConfig) -> list[ConfigIssue]:
    return cross_field_check(config)[0]
