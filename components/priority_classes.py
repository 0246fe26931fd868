"""PriorityClasses: the scheduling priorities of the platform, one object per class."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pulumi

from . import kube
from .frozen import frozen
from .labels import platform_labels
from .predicates import global_default


@frozen
class PriorityClassSpec:
    """One PriorityClass."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"
    """``Never``: the class waits for capacity instead of evicting running pods."""
    description: str = ""


@frozen
class PriorityClassesArgs:
    """Inputs of the PriorityClasses component."""

    classes: Sequence[PriorityClassSpec]
    """At most one may be ``global_default`` (the API server admits one); the stack config
    requires exactly one."""

    def __post_init__(self) -> None:
        defaults = [spec.name for spec in self.classes if spec.global_default]
        if len(defaults) > 1:
            raise ValueError(f"PriorityClasses: more than one global default: {defaults}")


class PriorityClasses(pulumi.ComponentResource):
    """Cluster-wide PriorityClasses; outputs their names and the default one."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        names: list[str]
        default_name: str | None

    def __init__(
        self, name: str, args: PriorityClassesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:scheduling:PriorityClasses", name, None, opts)
        for spec in args.classes:
            kube.PriorityClass(
                f"{name}-{spec.name}",
                metadata={"name": spec.name, "labels": platform_labels()},
                value=spec.value,
                # Unset rather than false: the provider drops a false globalDefault (the API
                # omits it), and what we render must be what it sends.
                global_default=spec.global_default or None,
                preemption_policy=spec.preemption_policy,
                description=spec.description,
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.names = [spec.name for spec in args.classes]
        self.default_name = global_default(args.classes)
        self.register_outputs({"names": self.names, "default": self.default_name})
