"""Every Kubernetes object the platform declares is applied with force: its declared fields are
the platform's, whoever changed them since.

Why: the Kubernetes provider applies with server-side apply, and without force the API server
refuses to change a field another field manager owns. Two day-two situations make that happen,
and both left ``pulumi up`` unable to converge (the e2e's faults section, docs/e2e.md):

- an out-of-band edit: ``kubectl scale statefulset`` makes ``kubectl`` (subresource ``scale``)
  the owner of ``spec.replicas``, and the next ``pulumi up`` fails with "Server-Side Apply field
  conflict detected" instead of restoring the declared count;
- an interrupted ``pulumi up``: an object whose create the killed run had already sent keeps
  that run's (random) field manager as co-owner of every field. The recovering run applies the
  same values under a new manager, and the first later change of any of those fields conflicts
  with the dead run's manager.

The annotation ``pulumi.com/patchForce: "true"`` makes the provider force its apply. Force
moves only the fields the platform declares: what a resource lists in ``ignoreChanges`` (a
queued Job's ``spec.suspend``, Kueue's) is dropped from the apply when another manager owns
it, and what the platform does not declare (an HPA's replica count, a bound claim's volume) is
never sent. Not forced: Helm releases (no object of their own), rendered YAML, and ``*Patch``
resources, which apply a few fields to objects that others own as a whole (a Node's taints).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

PATCH_FORCE_ANNOTATION = "pulumi.com/patchForce"
NOT_FORCED_PREFIXES = ("kubernetes:helm.sh/", "kubernetes:yaml/", "pulumi:providers:")


def is_forced(resource_type: str) -> bool:
    """Whether resources of this type get :data:`PATCH_FORCE_ANNOTATION`."""
    return (
        resource_type.startswith("kubernetes:")
        and not resource_type.startswith(NOT_FORCED_PREFIXES)
        and not resource_type.endswith("Patch")
    )


def with_force(metadata: Any) -> Any:
    """``metadata`` (a mapping, an ``ObjectMetaArgs``, an output or nothing) with the force
    annotation added; a value the program declared for it wins."""
    if metadata is None:
        return {"annotations": _forced_annotations(None)}
    if isinstance(metadata, pulumi.Output):
        return metadata.apply(with_force)
    if isinstance(metadata, Mapping):
        return {**metadata, "annotations": _forced(metadata.get("annotations"))}
    pulumi.set(metadata, "annotations", _forced(pulumi.get(metadata, "annotations")))
    return metadata


def _forced(annotations: Any) -> Any:
    if isinstance(annotations, pulumi.Output):
        return annotations.apply(_forced_annotations)
    return _forced_annotations(annotations)


def _forced_annotations(annotations: Mapping[str, Any] | None) -> dict[str, Any]:
    return {PATCH_FORCE_ANNOTATION: "true", **dict(annotations or {})}


def force_declared_fields(
    args: pulumi.ResourceTransformationArgs,
) -> pulumi.ResourceTransformationResult | None:
    """The stack transformation: the force annotation on every Kubernetes object it applies to."""
    if not is_forced(args.type_):
        return None
    props = args.props
    fields: Any = props if isinstance(props, dict) else getattr(props, "__dict__", None)
    if fields is None:
        return None
    fields["metadata"] = with_force(fields.get("metadata"))
    return pulumi.ResourceTransformationResult(props, args.opts)


def register() -> None:
    """Apply :func:`force_declared_fields` to every resource registered from now on."""
    pulumi.runtime.register_stack_transformation(force_declared_fields)
