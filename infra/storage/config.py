"""``ai-platform:storage``: storage classes for datasets and checkpoints (rules in ``rules.py``,
the mapping to ``StorageClasses`` and teams' ``DataVolume``s in ``build.py``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..config.base import ConfigModel, DnsSubdomain

VolumePurpose = Literal["datasets", "checkpoints", "models", "general"]
ReclaimPolicy = Literal["Retain", "Delete"]
BindingMode = Literal["WaitForFirstConsumer", "Immediate"]


class StorageClassConfig(ConfigModel):
    """One StorageClass backed by any CSI driver (cloud disks, NFS, local-path)."""

    name: DnsSubdomain
    """Object name; PVCs and workloads refer to it."""
    purpose: VolumePurpose
    """What it is for: ``checkpoints`` (fast single writer), ``datasets`` (shared many-reader),
    ``models`` or ``general``. Recorded as a label; policies and docs use it."""
    provisioner: str = Field(min_length=1)
    """CSI driver name, e.g. ``ebs.csi.aws.com``, ``nfs.csi.k8s.io``, ``rancher.io/local-path``."""
    parameters: dict[str, str] = {}
    """Driver parameters, passed through unchanged."""
    default: bool = False
    """Mark as the cluster default. Exactly one class must set it."""
    reclaim_policy: ReclaimPolicy | None = None
    """Default: ``Retain`` when the stack protects data (prod), else ``Delete``."""
    volume_binding_mode: BindingMode = "WaitForFirstConsumer"
    """``WaitForFirstConsumer`` provisions in the zone of the pod that uses the volume."""
    allow_volume_expansion: bool = True
    """Let PVCs grow in place when a dataset outgrows its claim."""
    mount_options: list[str] = []
    """Mount options, e.g. ``nfsvers=4.1``."""

    def reclaim_policy_for(self, protects_data: bool) -> ReclaimPolicy:
        """``reclaimPolicy`` as set, else its default for a stack that protects data or not."""
        if self.reclaim_policy is not None:
            return self.reclaim_policy
        return "Retain" if protects_data else "Delete"


class StorageConfig(ConfigModel):
    """All storage the platform provides."""

    classes: list[StorageClassConfig] = Field(min_length=1)
    """The storage classes. At least one; exactly one ``default``."""
