"""Kubernetes objects as the kubernetes provider's resources, without its generated classes.

Why: importing pulumi-kubernetes's typed classes (``k8s.core.v1.Namespace`` and the rest) builds
thousands of TypedDicts and annotated argument classes, about 0.8 CPU-s: a fifth of an offline
preview, and as much of every real ``pulumi preview`` and ``pulumi up``. What a typed class adds
to the registration is small and fixed: its type token, ``apiVersion`` and ``kind``, the
provider's version, aliases to the kind's older API versions and, for a Secret, its data as
secrets. :data:`KINDS` writes that down for the kinds the platform creates, and
``tests/components/test_kube.py`` registers every one of them both ways and requires the same
request, so a pulumi-kubernetes release that changes a class fails there. A kind not listed
(say, a raw manifest's DaemonSet) has no class here: :func:`resource_class` answers None and
the caller uses the typed class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pulumi
from pulumi_kubernetes import _utilities as k8s_utilities

from .frozen import frozen


@frozen
class Kind:
    """What the typed class of one kind puts into its registration."""

    api_version: str
    kind: str
    fields: tuple[str, ...] = ("metadata", "spec")
    """Its top-level fields besides ``apiVersion`` and ``kind``, as arguments (snake_case)."""
    outputs: tuple[str, ...] = ()
    """Fields only the provider sets (``status``): declared, so they are outputs."""
    older: tuple[str, ...] = ()
    """Older API versions of the kind (``v1beta1``; ``group/version`` in another group): their
    type tokens are its aliases, so that state written under them still maps to it."""
    secrets: tuple[str, ...] = ()
    """Fields (snake_case) always secret: wrapped on the way in and marked on the way out."""
    token_kind: str = ""
    """The kind in the type token when it differs from ``kind`` (``NodePatch`` of a ``Node``)."""

    @property
    def token(self) -> str:
        group, _, version = self.api_version.rpartition("/")
        return f"kubernetes:{group or 'core'}/{version}:{self.token_kind or self.kind}"

    @property
    def aliases(self) -> tuple[str, ...]:
        group = self.api_version.rpartition("/")[0]
        return tuple(
            f"kubernetes:{v if '/' in v else f'{group}/{v}'}:{self.kind}" for v in self.older
        )


def camel_case(name: str) -> str:
    """``string_data`` → ``stringData``: an argument as the manifest field it sets."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


KINDS: dict[str, type[KubeObject]] = {}
"""Type token → class, for every kind this module registers itself (each subclass below)."""


class KubeObject(pulumi.CustomResource):
    """One Kubernetes object of a kind in :data:`KINDS`, registered as its typed class would."""

    KIND: ClassVar[Kind]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        KINDS[cls.KIND.token] = cls

    def __init__(
        self, resource_name: str, opts: pulumi.ResourceOptions | None = None, **fields: Any
    ) -> None:
        spec = self.KIND
        unknown = sorted(set(fields) - set(spec.fields))
        if unknown:
            raise TypeError(f"{spec.kind} has no field {', '.join(unknown)}")
        props: dict[str, Any] = {"apiVersion": spec.api_version, "kind": spec.kind}
        for name in spec.fields:
            value = fields.get(name)
            if name in spec.secrets and value is not None:
                value = pulumi.Output.secret(value)
            props[camel_case(name)] = value
        props.update(dict.fromkeys(spec.outputs))
        merged = pulumi.ResourceOptions.merge(k8s_utilities.get_resource_opts_defaults(), opts)
        if spec.aliases:
            aliases: list[Any] = [pulumi.Alias(type_=token) for token in spec.aliases]
            merged = pulumi.ResourceOptions.merge(merged, pulumi.ResourceOptions(aliases=aliases))
        if spec.secrets:
            secret_outputs = [camel_case(name) for name in spec.secrets]
            merged = pulumi.ResourceOptions.merge(
                merged, pulumi.ResourceOptions(additional_secret_outputs=secret_outputs)
            )
        super().__init__(spec.token, resource_name, props, merged)

    @property
    def metadata(self) -> pulumi.Output[Mapping[str, Any]]:
        """The object's metadata as the provider returns it (a dict, camelCase keys)."""
        return self.__dict__["metadata"]


_APPS = ("v1beta1", "v1beta2")
_STATUS = ("status",)


class Namespace(KubeObject):
    KIND = Kind("v1", "Namespace", outputs=_STATUS)


class ConfigMap(KubeObject):
    KIND = Kind("v1", "ConfigMap", fields=("binary_data", "data", "immutable", "metadata"))


class Secret(KubeObject):
    KIND = Kind(
        "v1",
        "Secret",
        fields=("data", "immutable", "metadata", "string_data", "type"),
        secrets=("data", "string_data"),
    )


class Service(KubeObject):
    KIND = Kind("v1", "Service", outputs=_STATUS)


class PersistentVolumeClaim(KubeObject):
    KIND = Kind("v1", "PersistentVolumeClaim", outputs=_STATUS)


class ResourceQuota(KubeObject):
    KIND = Kind("v1", "ResourceQuota", outputs=_STATUS)


class LimitRange(KubeObject):
    KIND = Kind("v1", "LimitRange")


class ServiceAccount(KubeObject):
    KIND = Kind(
        "v1",
        "ServiceAccount",
        fields=("automount_service_account_token", "image_pull_secrets", "metadata", "secrets"),
    )


class NodePatch(KubeObject):
    KIND = Kind("v1", "Node", outputs=_STATUS, token_kind="NodePatch")


class Deployment(KubeObject):
    KIND = Kind("apps/v1", "Deployment", outputs=_STATUS, older=(*_APPS, "extensions/v1beta1"))


class StatefulSet(KubeObject):
    KIND = Kind("apps/v1", "StatefulSet", outputs=_STATUS, older=_APPS)


class Job(KubeObject):
    KIND = Kind("batch/v1", "Job", outputs=_STATUS)


class NetworkPolicy(KubeObject):
    KIND = Kind(
        "networking.k8s.io/v1", "NetworkPolicy", outputs=_STATUS, older=("extensions/v1beta1",)
    )


class PodDisruptionBudget(KubeObject):
    KIND = Kind("policy/v1", "PodDisruptionBudget", outputs=_STATUS, older=("v1beta1",))


_RBAC = "rbac.authorization.k8s.io/v1"


class Role(KubeObject):
    KIND = Kind(_RBAC, "Role", fields=("metadata", "rules"), older=("v1alpha1", "v1beta1"))


class RoleBinding(KubeObject):
    KIND = Kind(
        _RBAC,
        "RoleBinding",
        fields=("metadata", "role_ref", "subjects"),
        older=("v1alpha1", "v1beta1"),
    )


class StorageClass(KubeObject):
    KIND = Kind(
        "storage.k8s.io/v1",
        "StorageClass",
        fields=(
            "allow_volume_expansion",
            "allowed_topologies",
            "metadata",
            "mount_options",
            "parameters",
            "provisioner",
            "reclaim_policy",
            "volume_binding_mode",
        ),
        older=("v1beta1",),
    )


class PriorityClass(KubeObject):
    KIND = Kind(
        "scheduling.k8s.io/v1",
        "PriorityClass",
        fields=("description", "global_default", "metadata", "preemption_policy", "value"),
        older=("v1alpha1", "v1beta1"),
    )


_ADMISSION = "admissionregistration.k8s.io/v1"


class ValidatingAdmissionPolicy(KubeObject):
    KIND = Kind(
        _ADMISSION, "ValidatingAdmissionPolicy", outputs=_STATUS, older=("v1alpha1", "v1beta1")
    )


class ValidatingAdmissionPolicyBinding(KubeObject):
    KIND = Kind(_ADMISSION, "ValidatingAdmissionPolicyBinding", older=("v1alpha1", "v1beta1"))


class HorizontalPodAutoscaler(KubeObject):
    KIND = Kind(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        outputs=_STATUS,
        older=("v1", "v2beta1", "v2beta2"),
    )


def resource_class(api_version: str, kind: str) -> type[KubeObject] | None:
    """The class here for a manifest's ``apiVersion`` and ``kind``, or None."""
    return KINDS.get(Kind(api_version, kind).token)
