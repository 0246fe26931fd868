"""Turn captured resources into manifest files, one per Kubernetes object.

YAML is written with libyaml's emitter when PyYAML has it (every PyYAML wheel does): the
pure-Python emitter took 2.5 ms per manifest, as long as the whole program run per resource
(docs/performance.md). Both emit the same data; they differ only in where long quoted strings
are folded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.yaml_text import SAFE_DUMPER

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
    written: set[str] = set()
    for resource in resources:
        if not resource.is_kubernetes_object:
            continue
        name = manifest_file_name(resource.inputs)
        if name in written:
            raise ValueError(f"two resources render to the same manifest {name}")
        written.add(name)
        text = yaml.dump(
            ordered(resource.inputs), Dumper=SAFE_DUMPER, sort_keys=False, default_flow_style=False
        )
        (directory / name).write_text(text, encoding="utf-8")
        files[resource.urn] = name
    return files
