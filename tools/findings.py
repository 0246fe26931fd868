"""Policy violations for people: by level, then policy, each with its resource and the stack
config entry it came from, so the console says what is wrong and where to change it.

    MANDATORY (1)
      gpu-limits-match-requests (1): GPU and MIG requests are whole numbers and equal their limits.
        Job research/rogue-job, from ai-platform:extraManifests[0]
          container "x" requests 2 nvidia.com/gpu but its limit is 4; ...

``report.json`` keeps every violation as the policy driver wrote it, plus ``configKey``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from infra.config import PlatformConfig
from infra.config.errors import PathPart, named_key_path

from .mockrun import CapturedResource
from .policy_driver import Violation

LEVELS = ("mandatory", "advisory")
"""What the console lists, in this order: what blocks a deployment first."""


def resource_label(resource: CapturedResource | None, urn: str) -> str:
    """``Job research/llama-eval``, ``StorageClass datasets-nfs``, ``Release logging/fluent-bit``;
    ``the stack`` for findings about the stack as a whole."""
    if resource is None:
        return urn or "the stack"
    kind = resource.type.rsplit(":", 1)[-1]
    # A Kubernetes object's metadata; a Helm release's own name and namespace inputs.
    where = resource.metadata if resource.is_kubernetes_object else resource.inputs
    name, namespace = where.get("name") or resource.name, where.get("namespace")
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def config_keys(resources: Sequence[CapturedResource], config: PlatformConfig) -> dict[str, str]:
    """URN → the stack config entry the resource came from, for resources that came from one:
    the nearest component (or object written in the config) up its parent chain. Entries are
    named as in the config, defaults included (``priorityClasses[normal]``)."""
    from infra.sources import config_sources, object_key

    components, objects = config_sources(config)
    written = config.model_dump(mode="json", by_alias=True)
    by_urn = {resource.urn: resource for resource in resources}
    found: dict[str, tuple[PathPart, ...] | None] = {}

    def source(urn: str) -> tuple[PathPart, ...] | None:
        if urn in found:
            return found[urn]
        found[urn] = None  # a parent cycle ends here
        resource = by_urn.get(urn)
        path: tuple[PathPart, ...] | None = None
        if resource is not None:
            if resource.is_kubernetes_object:
                path = objects.get(object_key(resource.inputs))
            if path is None and not resource.custom:
                path = components.get((resource.type.rsplit(":", 1)[-1], resource.name))
            if path is None and resource.parent:
                path = source(resource.parent)
        found[urn] = path
        return path

    keys = {}
    for resource in resources:
        path = source(resource.urn)
        if path is not None:
            keys[resource.urn] = named_key_path(written, path)
    return keys


@dataclass(frozen=True)
class Finding:
    level: str
    policy: str
    description: str
    resource: str
    config_key: str | None
    message: str
    """What is wrong with this resource (the SDK's copy of the description taken off)."""


def findings(
    violations: Iterable[Violation],
    resources: Sequence[CapturedResource],
    keys: Mapping[str, str],
) -> list[Finding]:
    by_urn = {resource.urn: resource for resource in resources}
    return [
        Finding(
            level=v.enforcement_level,
            policy=v.policy_name,
            description=v.description,
            resource=resource_label(by_urn.get(v.urn), v.urn),
            config_key=keys.get(v.urn),
            message=v.message.removeprefix(f"{v.description}\n") if v.description else v.message,
        )
        for v in violations
    ]


def format_findings(found: Sequence[Finding], levels: Sequence[str] = LEVELS) -> list[str]:
    """Grouped by level (in ``levels`` order), then by policy name; resources in report order."""
    lines: list[str] = []
    for level in levels:
        at_level = [f for f in found if f.level == level]
        if not at_level:
            continue
        lines.append(f"{level.upper()} ({len(at_level)})")
        for policy in sorted({f.policy for f in at_level}):
            of_policy = [f for f in at_level if f.policy == policy]
            about = f": {of_policy[0].description}" if of_policy[0].description else ""
            lines.append(f"  {policy} ({len(of_policy)}){about}")
            for finding in of_policy:
                where = f", from {finding.config_key}" if finding.config_key else ""
                lines.append(f"    {finding.resource}{where}")
                lines.extend(f"      {line}" for line in finding.message.splitlines() or [""])
    return lines
