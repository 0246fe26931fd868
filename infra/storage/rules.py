"""Cross-field rules of storage classes: unique names, data kept where the stack protects it,
one default.

Each reads only what ``StoragePlatform`` declares.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from ..config.errors import ConfigIssue
from ..config.partial import repeats
from ..config.views import HasCluster, HasStorage


class StoragePlatform(HasCluster, HasStorage, Protocol):
    """What the storage class rules read."""


def storage_classes_are_consistent(config: StoragePlatform) -> Iterator[ConfigIssue]:
    classes = config.storage.classes
    for index, _ in repeats([sc.name for sc in classes]):
        yield ConfigIssue(
            ("storage", "classes", index, "name"),
            f"duplicate storage class {classes[index].name!r}",
        )
    for index, sc in enumerate(classes):
        if config.cluster.protects_data and sc.reclaim_policy == "Delete":
            yield ConfigIssue(
                ("storage", "classes", index, "reclaimPolicy"),
                "must be Retain when the stack protects data (prod): Delete destroys the volume "
                "with its claim",
            )
    defaults = [index for index, sc in enumerate(classes) if sc.default]
    if len(defaults) != 1:
        found = ", ".join(repr(classes[i].name) for i in defaults) or "none"
        yield ConfigIssue(
            ("storage", "classes"),
            f"exactly one storage class must set default: true, found {found}",
        )


RULES = (storage_classes_are_consistent,)
"""The storage class rules, in the order they report."""
