"""Checks the platform makes in more than one place, each written once and free of resources.

The stack config's rules call them and add the key path of the offending value; the components'
argument checks call them for library users. Nothing here registers a resource or reads config.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Literal, Protocol

DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
"""A Service name: lower-case letters, digits and '-', starting with a letter."""
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""A name the kubelet accepts for an environment variable and a shell can read."""


def is_dns1035_label(value: str, max_length: int = 63) -> bool:
    """Whether ``value`` is a DNS-1035 label of at most ``max_length`` characters."""
    return len(value) <= max_length and DNS1035_LABEL.match(value) is not None


def is_env_name(key: str) -> bool:
    """Whether ``key`` is a valid environment variable name."""
    return ENV_NAME.match(key) is not None


def opens_everything(cidr: str) -> bool:
    """Whether ``cidr`` is a whole address family (``0.0.0.0/0``, ``::/0``): the internet."""
    return ipaddress.ip_network(cidr, strict=False).prefixlen == 0


class PriorityClassLike(Protocol):
    """A priority class as the config and the component describe it."""

    @property
    def name(self) -> str: ...
    @property
    def global_default(self) -> bool: ...


def global_default(classes: Iterable[PriorityClassLike]) -> str | None:
    """The class pods without a ``priorityClassName`` get: the one that sets ``globalDefault``.
    None unless exactly one does (the API server admits one global default)."""
    defaults = [pc.name for pc in classes if pc.global_default]
    return defaults[0] if len(defaults) == 1 else None


def env_var_prefix(name: str) -> str:
    """``model-cache`` → ``MODEL_CACHE``: dependency names as environment variable prefixes."""
    return name.upper().replace("-", "_")


def dependency_env(names: Iterable[str]) -> frozenset[str]:
    """What an inference service sets for its stateful dependencies: ``<NAME>_HOST`` and
    ``<NAME>_PORT`` each; a user's environment may not shadow them."""
    return frozenset(f"{env_var_prefix(n)}_{suffix}" for n in names for suffix in ("HOST", "PORT"))


InferenceConflict = Literal["replicas", "budget-both", "budget-blocks-drains", "ports", "no-metric"]


def inference_conflicts(
    *,
    port: int,
    metrics_port: int,
    min_replicas: int,
    max_replicas: int,
    has_metric: bool,
    min_available: int | None,
    max_unavailable: int | None,
) -> list[InferenceConflict]:
    """How an inference service's serving settings contradict each other: more minimum than
    maximum replicas, a disruption budget set both ways or keeping every replica (it blocks
    node drains), the metrics port on the serving port (the monitoring namespace may reach the
    metrics port only), an autoscaler without a metric."""
    found: list[InferenceConflict] = []
    if min_replicas > max_replicas:
        found.append("replicas")
    if min_available is not None and max_unavailable is not None:
        found.append("budget-both")
    elif min_available is not None and min_available >= min_replicas:
        found.append("budget-blocks-drains")
    if metrics_port == port:
        found.append("ports")
    if not has_metric:
        found.append("no-metric")
    return found
