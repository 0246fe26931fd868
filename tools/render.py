"""Turn captured resources into manifest files, one per Kubernetes object."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .mockrun import CapturedResource


def manifest_file_name(manifest: dict[str, Any]) -> str:
    """``<Kind>_<namespace>_<name>.yaml``, or ``<Kind>_<name>.yaml`` when cluster-scoped.

    Kubernetes names never contain ``_``, so the parts are unambiguous.
    """
    meta = manifest.get("metadata") or {}
    parts = [str(manifest.get("kind", "Unknown"))]
    if meta.get("namespace"):
        parts.append(str(meta["namespace"]))
    parts.append(str(meta.get("name", "unnamed")))
    return "_".join(parts) + ".yaml"


_HEAD = ("apiVersion", "kind", "metadata")


def ordered(manifest: dict[str, Any]) -> dict[str, Any]:
    """``apiVersion``, ``kind``, ``metadata`` first, as people write manifests."""
    head = {key: manifest[key] for key in _HEAD if key in manifest}
    return {**head, **{k: v for k, v in manifest.items() if k not in head}}


def write_manifests(resources: list[CapturedResource], directory: Path) -> dict[str, str]:
    """Write every Kubernetes object; return ``urn → file name``. Clears stale files first."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.yaml"):
        stale.unlink()
    files: dict[str, str] = {}
    for resource in resources:
        if not resource.is_kubernetes_object:
            continue
        name = manifest_file_name(resource.inputs)
        if name in files.values():
            raise ValueError(f"two resources render to the same manifest {name}")
        (directory / name).write_text(
            yaml.safe_dump(ordered(resource.inputs), sort_keys=False, default_flow_style=False),
            encoding="utf-8",
        )
        files[resource.urn] = name
    return files
