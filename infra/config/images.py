"""``ai-platform:images``: pull every image the platform deploys through a registry mirror.

One prefix rewrites all of them (``components.images.mirrored``): team workloads and their
preflight and dependency containers, and every image of every chart (through each chart's image
values). ``extraManifests`` are applied as written: name mirrored images there yourself.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, WithJsonSchema

from components.images import registry_prefix_problem

from .base import ConfigModel


def _registry_prefix(value: str) -> str:
    problem = registry_prefix_problem(value)
    if problem:
        raise ValueError(problem)
    return value


RegistryPrefix = Annotated[
    str,
    AfterValidator(_registry_prefix),
    # For editors; the validator gives the exact rules and the messages.
    WithJsonSchema({"type": "string", "pattern": r"^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*$"}),
]


class ImagesConfig(ConfigModel):
    """Where container images are pulled from."""

    registry_mirror: RegistryPrefix | None = None
    """``host[:port][/path]`` every image is pulled through, the original registry kept as the
    first path segment below it: ``nvcr.io/nvidia/pytorch:25.01-py3`` becomes
    ``<mirror>/nvcr.io/nvidia/pytorch:25.01-py3`` (Docker Hub images: ``<mirror>/docker.io/...``).
    Default: none, images as written and as the charts pin them."""
