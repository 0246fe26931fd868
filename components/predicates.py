"""Checks the platform makes in more than one place, each written once and free of resources.

The stack config's rules call them and add the key path of the offending value; the components'
argument checks call them for library users. Nothing here registers a resource or reads config.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Protocol

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
