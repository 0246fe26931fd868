"""Cross-field rules of priority classes: unique names, none of Kubernetes', one default.

Each reads only what ``ScheduledPlatform`` declares.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from components.predicates import global_default

from ..config.errors import ConfigIssue
from ..config.partial import parsed, repeats
from ..config.views import HasPriorityClasses


class ScheduledPlatform(HasPriorityClasses, Protocol):
    """What the priority class rules read."""


def priority_classes_are_consistent(config: ScheduledPlatform) -> Iterator[ConfigIssue]:
    classes = list(parsed(config.priority_classes))
    for index, _ in repeats([(index, pc.name) for index, pc in classes]):
        yield ConfigIssue(
            ("priorityClasses", index, "name"),
            f"duplicate priority class {config.priority_classes[index].name!r}",
        )
    for index, pc in classes:
        if pc.name.startswith("system-"):
            yield ConfigIssue(
                ("priorityClasses", index, "name"),
                f"names starting with 'system-' are reserved by Kubernetes, got {pc.name!r}",
            )


def one_default_priority_class(config: ScheduledPlatform) -> Iterator[ConfigIssue]:
    classes = config.priority_classes
    if global_default(classes) is None:
        found = ", ".join(repr(pc.name) for pc in classes if pc.global_default) or "none"
        yield ConfigIssue(
            ("priorityClasses",),
            f"exactly one priority class must set globalDefault: true, found {found}",
        )


RULES = (priority_classes_are_consistent, one_default_priority_class)
"""The priority class rules, in the order they report."""
