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
from dataclasses import field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from . import kube
from .constants import ESCAPE_HATCH_EXCEPTION_ANNOTATION, RAW_MANIFESTS_TYPE
from .frozen import frozen

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

CLUSTER_SCOPED_KINDS: frozenset[str] = frozenset(
    {
        # Kubernetes 1.33's cluster-scoped kinds, as ``kubectl api-resources --namespaced=false``
        # lists them (review kinds, which nothing stores, left out) ...
        "Namespace",
        "Node",
        "PersistentVolume",
        "ComponentStatus",
        "admissionregistration.k8s.io/MutatingWebhookConfiguration",
        "admissionregistration.k8s.io/ValidatingWebhookConfiguration",
        "admissionregistration.k8s.io/ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io/MutatingAdmissionPolicy",
        "admissionregistration.k8s.io/MutatingAdmissionPolicyBinding",
        "apiextensions.k8s.io/CustomResourceDefinition",
        "apiregistration.k8s.io/APIService",
        "certificates.k8s.io/CertificateSigningRequest",
        "certificates.k8s.io/ClusterTrustBundle",
        "flowcontrol.apiserver.k8s.io/FlowSchema",
        "flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration",
        "networking.k8s.io/IngressClass",
        "networking.k8s.io/IPAddress",
        "networking.k8s.io/ServiceCIDR",
        "node.k8s.io/RuntimeClass",
        "rbac.authorization.k8s.io/ClusterRole",
        "rbac.authorization.k8s.io/ClusterRoleBinding",
        "resource.k8s.io/DeviceClass",
        "resource.k8s.io/ResourceSlice",
        "scheduling.k8s.io/PriorityClass",
        "storage.k8s.io/CSIDriver",
        "storage.k8s.io/CSINode",
        "storage.k8s.io/StorageClass",
        "storage.k8s.io/VolumeAttachment",
        "storage.k8s.io/VolumeAttributesClass",
        # ... and those of the custom resources the platform installs or relies on.
        "karpenter.sh/NodePool",
        "karpenter.sh/NodeClaim",
        "karpenter.k8s.aws/EC2NodeClass",
        "kueue.x-k8s.io/ClusterQueue",
        "kueue.x-k8s.io/ResourceFlavor",
        "kueue.x-k8s.io/WorkloadPriorityClass",
        "kueue.x-k8s.io/Cohort",
        "kueue.x-k8s.io/Topology",
        "kueue.x-k8s.io/AdmissionCheck",
        "kueue.x-k8s.io/MultiKueueCluster",
        "kueue.x-k8s.io/MultiKueueConfig",
        "kueue.x-k8s.io/ProvisioningRequestConfig",
        "nvidia.com/ClusterPolicy",
        "nvidia.com/NVIDIADriver",
        "nfd.k8s-sigs.io/NodeFeatureRule",
    }
)
"""``Kind`` (core group) or ``group/Kind`` of every kind known to be cluster-scoped."""


def group_kind(manifest: Mapping[str, Any]) -> str:
    """``Kind`` for the core group, ``group/Kind`` otherwise (the keys of the tables here)."""
    group, _ = split_api_version(str(manifest.get("apiVersion", "")))
    kind = str(manifest.get("kind", ""))
    return f"{group}/{kind}" if group else kind


def is_cluster_scoped(manifest: Mapping[str, Any]) -> bool:
    """Known cluster-scoped kinds, and any other kind written without a namespace: a custom
    resource of an unknown CRD says its scope only by setting one (or not)."""
    if group_kind(manifest) in CLUSTER_SCOPED_KINDS:
        return True
    meta = manifest.get("metadata") or {}
    return not is_builtin(str(manifest.get("apiVersion", ""))) and not meta.get("namespace")


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
    """The class for a built-in kind: ``components.kube``'s, else pulumi-kubernetes's typed one
    (imported only then); None when pulumi-kubernetes has none."""
    return kube.resource_class(api_version, kind) or typed_class(api_version, kind)


def typed_class(api_version: str, kind: str) -> type[pulumi.CustomResource] | None:
    """pulumi-kubernetes's typed class named ``kind`` in the module of ``api_version``."""
    group, version = split_api_version(api_version)
    module_name = BUILTIN_GROUP_MODULES.get(group)
    if module_name is None:
        return None
    module = getattr(getattr(k8s, module_name, None), version, None)
    found = getattr(module, kind, None) if module is not None else None
    return found if isinstance(found, type) else None


@frozen
class RawManifestsArgs:
    """Inputs of a set of objects registered from complete manifests."""

    manifests: Sequence[Mapping[str, Any]]
    """Complete manifests: ``apiVersion``, ``kind``, ``metadata.name`` (and ``namespace`` for
    namespaced kinds). Nested keys stay camelCase, exactly as in kubectl YAML."""
    depends_on: Sequence[pulumi.Resource] = ()
    """What every object waits for (the namespaces it may live in). Children do not inherit a
    component's ``depends_on``, so it is passed to each of them."""
    exceptions: Mapping[int, str] = field(default_factory=dict)
    """Position in ``manifests`` → the named exception that admits the object past the
    allow-list; the object carries its name (``ESCAPE_HATCH_EXCEPTION_ANNOTATION``)."""


class RawManifests(pulumi.ComponentResource):
    """Registers each manifest as its typed resource; the logical name is kind, namespace, name."""

    def __init__(
        self, name: str, args: RawManifestsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(RAW_MANIFESTS_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        for position, written in enumerate(args.manifests):
            manifest = _with_exception(written, args.exceptions.get(position))
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


def _with_exception(manifest: Mapping[str, Any], exception: str | None) -> Mapping[str, Any]:
    """The manifest as written, plus the annotation naming its exception, if one admits it."""
    if exception is None:
        return manifest
    meta = dict(manifest.get("metadata") or {})
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        ESCAPE_HATCH_EXCEPTION_ANNOTATION: exception,
    }
    return {**manifest, "metadata": meta}
