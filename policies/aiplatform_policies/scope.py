"""Which namespaces are team namespaces, which pods are known platform components, and the
knobs policies share for both.

A per-resource policy cannot see the Namespace objects of the stack, so "team namespace" is
decided by exclusion: every namespace that is not a listed system namespace. That errs on the
side of checking: a new system namespace must be listed explicitly (in the policy config),
which makes every exemption visible in review.

Host access is never exempted per namespace: a platform namespace holds more than its agents
(and, through the escape hatch, whatever an exception lets in). Pod Security and device-access
policies exempt a pod only as a known component: its namespace *and* its service account or
pod labels (``exemptComponents``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from .kube import DEFAULT_NAMESPACE, as_map, as_str, effective_namespace
from .registry import str_list, str_map, string_list_schema
from .shared import (
    COMPONENT_FLUENT_BIT,
    COMPONENT_NODE_EXPORTER,
    GPU_OPERATOR_NAMESPACE,
    KEDA_NAMESPACE,
    KUBE_NODE_LEASE_NAMESPACE,
    KUBE_PUBLIC_NAMESPACE,
    KUBE_SYSTEM_NAMESPACE,
    KUBERAY_NAMESPACE,
    KUEUE_NAMESPACE,
    LOGGING_NAMESPACE,
    MONITORING_COMPONENT_LABEL,
    MONITORING_NAMESPACE,
)

SYSTEM_NAMESPACES_DEFAULT: Final[tuple[str, ...]] = (
    KUBE_SYSTEM_NAMESPACE,
    KUBE_PUBLIC_NAMESPACE,
    KUBE_NODE_LEASE_NAMESPACE,
    GPU_OPERATOR_NAMESPACE,
    KUEUE_NAMESPACE,
    KEDA_NAMESPACE,
    KUBERAY_NAMESPACE,
    MONITORING_NAMESPACE,
    LOGGING_NAMESPACE,
)
"""Platform namespaces that are not team namespaces (team rules such as labels do not apply)."""


def system_namespaces_knob() -> dict[str, Any]:
    return string_list_schema(
        "Platform namespaces that are not team namespaces; the policy skips them.",
        SYSTEM_NAMESPACES_DEFAULT,
    )


def namespaces(raw: Mapping[str, Any], key: str) -> frozenset[str]:
    """A namespace list knob as a set."""
    return frozenset(str_list(raw.get(key)))


def in_namespaces(props: Mapping[str, Any], names: frozenset[str]) -> bool:
    """True if the object's namespace (``default`` when unset) is one of ``names``."""
    return effective_namespace(props) in names


class Component(NamedTuple):
    """A platform component whose pods may have host access: where, and how its pods are known."""

    name: str
    namespace: str
    service_account: str | None
    labels: Mapping[str, str]

    def matches(self, namespace: str, service_account: str, labels: Mapping[str, Any]) -> bool:
        if namespace != self.namespace:
            return False
        if self.service_account is not None and service_account != self.service_account:
            return False
        return all(labels.get(key) == value for key, value in self.labels.items())


EXEMPT_COMPONENTS_DEFAULT: Final[tuple[dict[str, Any], ...]] = (
    {
        "name": "node-exporter",
        "namespace": MONITORING_NAMESPACE,
        "labels": {MONITORING_COMPONENT_LABEL: COMPONENT_NODE_EXPORTER},
    },
    {
        "name": "fluent-bit",
        "namespace": LOGGING_NAMESPACE,
        "labels": {MONITORING_COMPONENT_LABEL: COMPONENT_FLUENT_BIT},
    },
    {"name": "gpu-operator", "namespace": GPU_OPERATOR_NAMESPACE, "serviceAccount": "gpu-operator"},
)
"""The platform's agents that read the host: node-exporter (host network, PID namespace and
root filesystem) and Fluent Bit (the nodes' container logs), by the pod labels our chart values
give them, and the GPU operator by its service account. The operator's own operands (driver,
toolkit, device plugin) are created by it at run time, never rendered by the stack."""


def exempt_components_knob() -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "namespace": {"type": "string", "minLength": 1},
                "serviceAccount": {"type": "string", "minLength": 1},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "required": ["name", "namespace"],
            "additionalProperties": False,
        },
        "default": [dict(c) for c in EXEMPT_COMPONENTS_DEFAULT],
        "description": "Known platform components exempt from this policy because their agents "
        "need host access: a pod is exempt only in the component's namespace and with its "
        "serviceAccount and/or all of its labels (an entry naming neither exempts nothing).",
    }


def components(raw: Mapping[str, Any], key: str) -> tuple[Component, ...]:
    """A components knob, leniently parsed; entries with neither account nor labels dropped."""
    found = []
    value = raw.get(key)
    for entry in value if isinstance(value, list | tuple) else ():
        entry = as_map(entry)
        namespace = as_str(entry.get("namespace"))
        account = as_str(entry.get("serviceAccount"))
        labels = str_map(entry.get("labels"))
        if namespace and (account or labels):
            name = as_str(entry.get("name")) or namespace
            found.append(Component(name, namespace, account, labels))
    return tuple(found)


def exempt_component(view: Any, known: tuple[Component, ...]) -> Component | None:
    """The known component a pod template belongs to, if any (by namespace and account or
    labels, never by namespace alone)."""
    namespace = view.namespace or DEFAULT_NAMESPACE
    account = as_str(view.spec.get("serviceAccountName")) or "default"
    return next((c for c in known if c.matches(namespace, account, view.pod_labels)), None)
