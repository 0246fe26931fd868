"""DataVolume: a PersistentVolumeClaim that holds a team's data, protected where it matters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pulumi

from . import kube
from .constants import SKIP_AWAIT_ANNOTATION, VOLUME_PURPOSE_LABEL
from .frozen import frozen
from .labels import team_labels


@frozen
class DataVolumeArgs:
    """Inputs of one team volume claim (datasets, checkpoints, models)."""

    team: str
    namespace: pulumi.Input[str]
    """Pass the namespace's output (``TeamNamespace.namespace``) so the claim waits for it."""
    claim_name: str
    storage_class: str
    size: str
    purpose: str = "general"
    """``datasets``, ``checkpoints``, ``models`` or ``general``."""
    access_modes: Sequence[str] = ("ReadWriteOnce",)
    protect: bool = False
    """Refuse ``pulumi destroy`` and replacement until unprotected (prod)."""


class DataVolume(pulumi.ComponentResource):
    """A PVC. Skips the provider's wait for ``Bound``: with ``WaitForFirstConsumer`` a claim stays
    ``Pending`` until a pod mounts it, and ``pulumi up`` would otherwise hang."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        claim_name: str

    def __init__(
        self, name: str, args: DataVolumeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:storage:DataVolume", name, None, opts)
        kube.PersistentVolumeClaim(
            f"{name}-pvc",
            metadata={
                "name": args.claim_name,
                "namespace": args.namespace,
                "labels": team_labels(args.team, {VOLUME_PURPOSE_LABEL: args.purpose}),
                "annotations": {SKIP_AWAIT_ANNOTATION: "true"},
            },
            spec={
                "accessModes": list(args.access_modes),
                "storageClassName": args.storage_class,
                "resources": {"requests": {"storage": args.size}},
            },
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect),
        )
        self.claim_name = args.claim_name
        self.register_outputs({"claimName": self.claim_name})
