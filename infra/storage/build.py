"""Storage: config -> ``StorageClassesArgs`` and teams' ``DataVolumeArgs`` -> components."""

from __future__ import annotations

import pulumi

from components.data_volume import DataVolume, DataVolumeArgs
from components.storage_classes import StorageClasses, StorageClassesArgs, StorageClassSpec

from ..config.root import PlatformConfig
from ..sources import STORAGE_CLASSES, volume_name
from ..tenancy.config import TeamConfig


def storage_classes(config: PlatformConfig, opts: pulumi.ResourceOptions) -> StorageClasses:
    """Every configured storage class, kept on delete where the stack protects data."""
    protect = config.cluster.protects_data
    classes = [
        StorageClassSpec(
            name=sc.name,
            provisioner=sc.provisioner,
            purpose=sc.purpose,
            parameters=dict(sc.parameters),
            default=sc.default,
            reclaim_policy=sc.reclaim_policy_for(protect),
            volume_binding_mode=sc.volume_binding_mode,
            allow_volume_expansion=sc.allow_volume_expansion,
            mount_options=tuple(sc.mount_options),
        )
        for sc in config.storage.classes
    ]
    args = StorageClassesArgs(classes=classes, retain_on_delete=protect)
    return StorageClasses(STORAGE_CLASSES, args, opts)


def team_volumes(
    team: TeamConfig,
    namespace: pulumi.Input[str],
    config: PlatformConfig,
    opts: pulumi.ResourceOptions,
) -> dict[str, DataVolume]:
    """The team's claims, by name, in ``namespace`` (its TeamNamespace's Output, so each claim
    waits for the namespace)."""
    return {
        volume.name: DataVolume(
            volume_name(team, volume),
            DataVolumeArgs(
                team=team.name,
                namespace=namespace,
                claim_name=volume.name,
                storage_class=volume.storage_class,
                size=volume.size,
                purpose=volume.purpose,
                access_modes=tuple(volume.access_modes),
                protect=config.cluster.protects_data,
            ),
            opts,
        )
        for volume in team.volumes
    }
