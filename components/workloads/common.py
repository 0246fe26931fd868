"""Building blocks every workload kind shares: resources, labels, security, egress.

Why one module: the kinds must agree on what "restricted", "a team's pod" and "external egress"
mean, and so must the policy pack and the tests that read their manifests (DNS egress and the
other NetworkPolicy pieces are ``components.network_rules``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..constants import (
    APP_COMPONENT_LABEL,
    APP_INSTANCE_LABEL,
    APP_NAME_LABEL,
    CLUSTER_DOMAIN,
    WORKLOAD_TYPE_LABEL,
)
from ..frozen import frozen
from ..labels import team_labels
from ..network_rules import cidr_peers, ports
from ..predicates import is_dns1035_label, is_env_name, opens_everything
from ..scheduling_contract import SchedulingContract

TMP_MOUNT_PATH: Final = "/tmp"
SHM_MOUNT_PATH: Final = "/dev/shm"
DATASET_MOUNT_PATH: Final = "/datasets"
CHECKPOINT_MOUNT_PATH: Final = "/checkpoints"
MODEL_MOUNT_PATH: Final = "/models"
"""Mount points; the data paths are the ones the ``training-data-on-pvc`` policy watches."""


def check_name(name: str, what: str, max_length: int) -> None:
    """Names become Service names (DNS-1035 labels) and prefixes of derived object names."""
    if not is_dns1035_label(name, max_length):
        raise ValueError(
            f"{what} {name!r} must be a DNS-1035 label of at most {max_length} characters "
            "(lower-case letters, digits and '-', starting with a letter)"
        )


def check_env(env: Mapping[str, str], reserved: frozenset[str], what: str) -> None:
    """User environment may not shadow what the component sets itself."""
    for key in env:
        if not is_env_name(key):
            raise ValueError(f"{what}: invalid environment variable name {key!r}")
        if key in reserved:
            raise ValueError(f"{what}: environment variable {key!r} is set by the component")


@frozen
class ComputeResources:
    """CPU and memory of one container (Kubernetes quantities)."""

    cpu: str
    """CPU request."""
    memory: str
    """Memory request."""
    cpu_limit: str | None = None
    """Default: the request. Always set: a team's LimitRange default limit (4 CPU) below a
    larger request would make the API server reject the pod."""
    memory_limit: str | None = None
    """Default: the request (no overcommit: an OOM kill loses a training step or a replica)."""

    def requests(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory}

    def limits(self) -> dict[str, str]:
        return {"cpu": self.cpu_limit or self.cpu, "memory": self.memory_limit or self.memory}


@frozen
class EgressAllowance:
    """Cluster-external destinations a workload may open connections to (object storage)."""

    cidrs: tuple[str, ...] = ()
    """IP ranges, e.g. the S3 prefix list of the region. Empty: no external egress."""
    ports: tuple[int, ...] = (443,)
    """TCP ports on those ranges."""

    def __post_init__(self) -> None:
        for cidr in self.cidrs:
            if opens_everything(cidr):
                raise ValueError(f"egress CIDR {cidr} opens the whole internet")


def pod_security_context(run_as_user: int, run_as_group: int, fs_group: int) -> dict[str, Any]:
    """Pod-level half of the ``restricted`` Pod Security Standard, plus volume ownership.

    ``fsGroupChangePolicy: OnRootMismatch`` keeps the kubelet from re-chowning a multi-terabyte
    dataset volume on every pod start.
    """
    return {
        "runAsNonRoot": True,
        "runAsUser": run_as_user,
        "runAsGroup": run_as_group,
        "fsGroup": fs_group,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security_context(read_only_root: bool = True) -> dict[str, Any]:
    """Container-level half of ``restricted``; a read-only root with a writable /tmp emptyDir."""
    return {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": read_only_root,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def workload_labels(
    team: str, name: str, component: str, workload_type: str, instance: str | None = None
) -> dict[str, str]:
    """Standard labels of a workload's objects and pods."""
    return team_labels(
        team,
        {
            APP_NAME_LABEL: name,
            APP_INSTANCE_LABEL: instance or name,
            APP_COMPONENT_LABEL: component,
            WORKLOAD_TYPE_LABEL: workload_type,
        },
    )


def selector_labels(name: str, component: str) -> dict[str, str]:
    """The immutable subset of the labels that selects the workload's pods."""
    return {APP_NAME_LABEL: name, APP_COMPONENT_LABEL: component}


def gpu_resources(contract: SchedulingContract | None, count: int) -> dict[str, str]:
    """The contract's GPU resource, or nothing for CPU-only pods."""
    if contract is None or count == 0:
        return {}
    return contract.gpu_limits(count)


def container_resources(
    compute: ComputeResources, contract: SchedulingContract | None, gpus: int
) -> dict[str, dict[str, str]]:
    """Requests and limits; GPU requests equal limits (extended resources cannot overcommit)."""
    extra = gpu_resources(contract, gpus)
    return {
        "requests": {**compute.requests(), **extra},
        "limits": {**compute.limits(), **extra},
    }


def placement(contract: SchedulingContract | None) -> dict[str, Any]:
    """``nodeSelector`` and ``tolerations`` of the pool, read from its contract (never retyped)."""
    if contract is None:
        return {}
    return {"nodeSelector": dict(contract.node_selector), "tolerations": contract.tolerations}


def cidr_egress_rules(egress: EgressAllowance) -> list[dict[str, Any]]:
    """One rule for the configured external ranges on the configured ports; none if no range."""
    if not egress.cidrs:
        return []
    return [{"to": cidr_peers(egress.cidrs), "ports": ports(egress.ports)}]


def env_list(values: Mapping[str, str]) -> list[dict[str, Any]]:
    """``{"A": "1"}`` → ``[{"name": "A", "value": "1"}]`` in the given order."""
    return [{"name": key, "value": value} for key, value in values.items()]


def service_dns_name(service: str, namespace: str, cluster_domain: str = CLUSTER_DOMAIN) -> str:
    """``<svc>.<ns>.svc.<domain>``: what other namespaces (and the stack outputs) use."""
    return f"{service}.{namespace}.svc.{cluster_domain}"
