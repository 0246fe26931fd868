"""StorageClasses: where datasets, checkpoints and models live."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

import pulumi

from . import kube
from .constants import VOLUME_PURPOSE_LABEL
from .frozen import frozen
from .labels import platform_labels

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


@frozen
class StorageClassSpec:
    """One StorageClass."""

    name: str
    provisioner: str
    """CSI driver, e.g. ``ebs.csi.aws.com``, ``nfs.csi.k8s.io``, ``rancher.io/local-path``."""
    purpose: str = "general"
    parameters: Mapping[str, str] = field(default_factory=dict)
    default: bool = False
    reclaim_policy: str = "Delete"
    """``Retain`` keeps the volume when its claim goes: what prod wants."""
    volume_binding_mode: str = "WaitForFirstConsumer"
    allow_volume_expansion: bool = True
    mount_options: Sequence[str] = ()


@frozen
class StorageClassesArgs:
    """Inputs of the StorageClasses component."""

    classes: Sequence[StorageClassSpec]
    retain_on_delete: bool = False
    """Leave the classes in the cluster when the stack drops them (prod)."""


class StorageClasses(pulumi.ComponentResource):
    """Cluster-wide StorageClasses; outputs their names and the default one."""

    if TYPE_CHECKING:  # attribute types, not runtime annotations (components/__init__.py)
        names: list[str]
        default_name: str | None

    def __init__(
        self, name: str, args: StorageClassesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:storage:StorageClasses", name, None, opts)
        for spec in args.classes:
            kube.StorageClass(
                f"{name}-{spec.name}",
                metadata={
                    "name": spec.name,
                    "labels": platform_labels({VOLUME_PURPOSE_LABEL: spec.purpose}),
                    "annotations": {DEFAULT_CLASS_ANNOTATION: str(spec.default).lower()},
                },
                provisioner=spec.provisioner,
                parameters=dict(spec.parameters) or None,
                reclaim_policy=spec.reclaim_policy,
                volume_binding_mode=spec.volume_binding_mode,
                allow_volume_expansion=spec.allow_volume_expansion,
                mount_options=list(spec.mount_options) or None,
                opts=pulumi.ResourceOptions(parent=self, retain_on_delete=args.retain_on_delete),
            )
        self.names = [spec.name for spec in args.classes]
        self.default_name = next((s.name for s in args.classes if s.default), None)
        self.register_outputs({"names": self.names, "default": self.default_name})
