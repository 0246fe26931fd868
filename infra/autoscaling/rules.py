"""Cross-field rules of ``ai-platform:autoscaling``: none of its own yet; what needs KEDA
(autoscaled worker pools) is checked where it is configured (``workloads/rules.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..config.errors import ConfigIssue

RULES: tuple[Callable[[Any], Iterator[ConfigIssue]], ...] = ()
