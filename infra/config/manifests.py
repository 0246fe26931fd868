"""``ai-platform:extraManifests``: raw Kubernetes objects the platform applies as they are.

Free-form by nature, so the model is a list of mappings; ``extra_manifest_issues`` checks what
the program needs to register them (kind, name, a typed resource to map to) with exact paths.
Whether they are *good* objects is the policy pack's and the schema validation's job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from components.raw_manifests import (
    custom_resource_extra_fields,
    is_builtin,
    resource_class,
)

from .errors import ConfigIssue

ExtraManifests = list[dict[str, Any]]


def extra_manifest_issues(manifests: ExtraManifests) -> Iterator[ConfigIssue]:
    seen: dict[tuple[str, str, str], int] = {}
    for index, manifest in enumerate(manifests):
        path: tuple[str | int, ...] = ("extraManifests", index)
        api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
        meta = manifest.get("metadata")
        problems = False
        for field_name, value in (("apiVersion", api_version), ("kind", kind)):
            if not isinstance(value, str) or not value:
                yield ConfigIssue((*path, field_name), "required key is missing or not a string")
                problems = True
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            yield ConfigIssue((*path, "metadata", "name"), "required key is missing")
            problems = True
        if problems:
            continue
        assert isinstance(api_version, str) and isinstance(kind, str) and isinstance(meta, dict)
        if is_builtin(api_version) and resource_class(api_version, kind) is None:
            yield ConfigIssue(
                (*path, "kind"), f"{api_version} has no kind {kind!r} in pulumi-kubernetes"
            )
        elif not is_builtin(api_version):
            for field in custom_resource_extra_fields(manifest):
                yield ConfigIssue(
                    (*path, field),
                    "custom resources can carry only apiVersion, kind, metadata and spec",
                )
        identity = (kind, str(meta.get("namespace", "")), str(meta["name"]))
        if identity in seen:
            yield ConfigIssue(
                (*path, "metadata", "name"),
                f"{kind} {'/'.join(p for p in identity[1:] if p)} is already declared by "
                f"extraManifests[{seen[identity]}]",
            )
        else:
            seen[identity] = index
