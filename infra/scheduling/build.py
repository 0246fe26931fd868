"""Priority classes: config -> ``PriorityClassesArgs`` -> the ``PriorityClasses`` component."""

from __future__ import annotations

import pulumi

from components.priority_classes import PriorityClasses, PriorityClassesArgs, PriorityClassSpec

from ..config.root import PlatformConfig
from ..sources import PRIORITY_CLASSES


def priority_classes(config: PlatformConfig, opts: pulumi.ResourceOptions) -> PriorityClasses:
    """Every configured priority class, the global default among them."""
    classes = [
        PriorityClassSpec(
            name=pc.name,
            value=pc.value,
            global_default=pc.global_default,
            preemption_policy=pc.preemption_policy,
            description=pc.description,
        )
        for pc in config.priority_classes
    ]
    return PriorityClasses(PRIORITY_CLASSES, PriorityClassesArgs(classes=classes), opts)
