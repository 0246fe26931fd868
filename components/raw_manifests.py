"""RawManifests: Kubernetes objects the platform does not model, applied as typed resources.

The escape hatch platform teams always need (a legacy DaemonSet, a vendor's ConfigMap). Each
object becomes the typed pulumi-kubernetes resource for its kind, so it goes through the stack's
provider, shows up in previews and diffs like any other resource, and the policy pack judges it
exactly as it judges what our components render. Objects of API groups Kubernetes does not
ship become ``CustomResource``s, which carry ``spec`` only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

BUILTIN_GROUP_MODULES: dict[str, str] = {
    "": "core",
    "apps": "apps",
    "batch": "batch",
    "autoscaling": "autoscaling",
    "policy": "policy",
    "rbac.authorization.k8s.io": "rbac",
    "networking.k8s.io": "networking",
    "scheduling.k8s.io": "scheduling",
    "storage.k8s.io": "storage",
    "coordination.k8s.io": "coordination",
    "discovery.k8s.io": "discovery",
    "node.k8s.io": "node",
    "admissionregistration.k8s.io": "admissionregistration",
    "certificates.k8s.io": "certificates",
}
"""API groups served by Kubernetes itself → the pulumi-kubernetes module that types them."""

_CUSTOM_RESOURCE_FIELDS = frozenset({"apiVersion", "kind", "metadata", "spec"})


def split_api_version(api_version: str) -> tuple[str, str]:
    """``apps/v1`` → ``("apps", "v1")``; ``v1`` → ``("", "v1")``."""
    group, _, version = api_version.rpartition("/")
    return group, version


def is_builtin(api_version: str) -> bool:
    return split_api_version(api_version)[0] in BUILTIN_GROUP_MODULES


def custom_resource_extra_fields(manifest: Mapping[str, Any]) -> list[str]:
    """Top-level fields a ``CustomResource`` cannot carry (it has ``spec`` only)."""
    return sorted(set(manifest) - _CUSTOM_RESOURCE_FIELDS)


def snake_case(name: str) -> str:
    """``storageClassName`` → ``storage_class_name``: a manifest field as a typed-class argument."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def resource_class(api_version: str, kind: str) -> type[pulumi.CustomResource] | None:
    """The typed resource class for a built-in kind, or None when pulumi-kubernetes has none."""
    group, version = split_api_version(api_version)
    module_name = BUILTIN_GROUP_MODULES.get(group)
    if module_name is None:
        return None
    module = getattr(getattr(k8s, module_name, None), version, None)
    found = getattr(module, kind, None) if module is not None else None
    return found if isinstance(found, type) else None


@dataclass(frozen=True)
class RawManifestsArgs:
    manifests: Sequence[Mapping[str, Any]]
    """Complete manifests: ``apiVersion``, ``kind``, ``metadata.name`` (and ``namespace`` for
    namespaced kinds). Nested keys stay camelCase, exactly as in kubectl YAML."""
    depends_on: Sequence[pulumi.Resource] = ()
    """What every object waits for (the namespaces it may live in). Children do not inherit a
    component's ``depends_on``, so it is passed to each of them."""


class RawManifests(pulumi.ComponentResource):
    """Registers each manifest as its typed resource; the logical name is kind, namespace, name."""

    def __init__(
        self, name: str, args: RawManifestsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("aiplatform:raw:RawManifests", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        for manifest in args.manifests:
            api_version, kind = str(manifest["apiVersion"]), str(manifest["kind"])
            meta = manifest.get("metadata") or {}
            parts = [kind.lower(), meta.get("namespace"), meta.get("name")]
            logical = "-".join([name, *(str(p) for p in parts if p)])
            cls = resource_class(api_version, kind)
            if cls is not None:
                fields = {
                    snake_case(key): value
                    for key, value in manifest.items()
                    if key not in ("apiVersion", "kind")
                }
                cls(logical, opts=child, **fields)
            else:
                k8s.apiextensions.CustomResource(
                    logical,
                    api_version=api_version,
                    kind=kind,
                    metadata=meta,
                    spec=manifest.get("spec"),
                    opts=child,
                )
        self.register_outputs({"count": len(args.manifests)})
