"""Image references through a registry mirror: the one rewrite every deployed image goes through.

Private clouds pull from a mirror, not from the internet. The convention (that of mirrors serving
several upstream registries, one project or path per upstream, named after it): the mirror is a
prefix, and the original registry stays as the first path segment below it::

    nvcr.io/nvidia/pytorch:25.01-py3  ->  harbor.example.com/mirror/nvcr.io/nvidia/pytorch:25.01-py3
    redis:7.4                         ->  harbor.example.com/mirror/docker.io/library/redis:7.4

A reference is normalised first, the way container runtimes resolve it: without a registry host
it is a Docker Hub image, and a one-segment Docker Hub name is ``library/<name>``. Tags and
digests are kept as written. An image already under the mirror is left as it is, so stacks may
name mirrored images directly.
"""

from __future__ import annotations

import re

from .frozen import frozen

DOCKER_HUB = "docker.io"
_DOCKER_HUB_ALIASES = frozenset({"index.docker.io", "registry-1.docker.io"})

_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PREFIX = re.compile(rf"^(?P<host>{_HOST})(?::[0-9]{{1,5}})?(?:/{_COMPONENT})*$")


def is_registry_host(segment: str) -> bool:
    """Whether runtimes read a reference's first segment as a registry host, not a Hub namespace."""
    return "." in segment or ":" in segment or segment == "localhost"


def registry_prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot be a mirror (``host[:port][/path]``), or None when it can."""
    match = _PREFIX.match(prefix)
    if match is None:
        return (
            "must be a registry host with an optional path, such as "
            f"'harbor.example.com/mirror' or 'localhost:5000', got {prefix!r}"
        )
    if not is_registry_host(prefix.partition("/")[0]):
        return (
            f"must start with a registry host (a name with a '.' or a port, or 'localhost'), got "
            f"{prefix!r}: container runtimes would read {match['host']!r} as a Docker Hub namespace"
        )
    return None


@frozen
class ImageName:
    """An image reference split as runtimes resolve it."""

    registry: str
    """``docker.io`` when the reference names none."""
    path: str
    """Repository path below the registry (``library/redis`` for Hub's official images)."""
    suffix: str = ""
    """``:tag``, ``@digest`` or both, as written; empty for a bare repository."""

    @property
    def repository(self) -> str:
        """``registry/path``: what a chart's single ``repository`` value holds."""
        return f"{self.registry}/{self.path}"

    def __str__(self) -> str:
        return f"{self.repository}{self.suffix}"


def split_image(reference: str) -> ImageName:
    """Split a reference (with or without tag and digest) into registry, path and suffix."""
    name, at, digest = reference.partition("@")
    suffix = f"{at}{digest}"
    colon = name.rfind(":")
    if colon > name.rfind("/"):
        name, suffix = name[:colon], name[colon:] + suffix
    first, slash, rest = name.partition("/")
    if slash and is_registry_host(first):
        registry, path = first, rest
    else:
        registry, path = DOCKER_HUB, name
    if registry in _DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
    if registry == DOCKER_HUB and "/" not in path:
        path = f"library/{path}"
    return ImageName(registry, path, suffix)


def mirrored(reference: str, mirror: str | None) -> str:
    """``reference`` pulled through ``mirror``; unchanged without one or when already under it."""
    if mirror is None or reference.startswith(f"{mirror}/"):
        return reference
    return f"{mirror}/{split_image(reference)}"


REDIS_IMAGE = "public.ecr.aws/docker/library/redis:7.4.2-alpine"
"""The team Redis: Docker's official image, from its public-registry copy (the allowed
registries hold it; Docker Hub is not one of them)."""
REDIS_EXPORTER_IMAGE = "quay.io/oliver006/redis_exporter:v1.67.0"
"""The team Redis' metrics sidecar (redis_exporter, one binary, runs as any non-root user)."""
