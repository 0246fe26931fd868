"""What a run found: the pack's policies as it describes them, its violations, remediations and
not-applicable notes, and how they print."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .records import urn_name, urn_type

ENFORCEMENT_LEVELS = ("advisory", "mandatory", "remediate", "disabled")
"""Valid levels, spelled as in config files and the CLI (apitype.EnforcementLevel)."""

# Printing order: what blocks a deployment first.
_LEVEL_ORDER = ("mandatory", "advisory", "remediate", "disabled")


@dataclass(frozen=True)
class PolicyConfig:
    """One policy's effective configuration, as sent to the pack in `Configure`."""

    enforcement_level: str
    properties: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PolicyInfo:
    """A policy as the pack describes it (GetAnalyzerInfo), plus the configuration it was given."""

    name: str
    description: str
    enforcement_level: str
    """The pack's own default level (policy level, else pack level)."""
    display_name: str = ""
    policy_type: str = "unknown"
    severity: str | None = None
    config_schema: Mapping[str, Any] | None = None
    """`{"properties": {...}, "required": [...]}` or None when the policy declares no schema."""
    configured_level: str | None = None
    """The level after applying initial config and the config file (None before Configure)."""
    config: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for report.json."""
        return {
            "name": self.name,
            "displayName": self.display_name,
            "description": self.description,
            "type": self.policy_type,
            "severity": self.severity,
            "defaultEnforcementLevel": self.enforcement_level,
            "enforcementLevel": self.configured_level or self.enforcement_level,
            "configSchema": _plain(self.config_schema),
            "config": _plain(self.config),
        }


@dataclass(frozen=True)
class AnalyzerInfo:
    """The pack's self-description (GetAnalyzerInfo + GetPluginInfo + PulumiPolicy.yaml)."""

    name: str
    version: str
    policies: tuple[PolicyInfo, ...]
    display_name: str = ""
    description: str = ""
    supports_config: bool = True
    initial_config: Mapping[str, PolicyConfig | Mapping[str, Any]] = field(default_factory=dict)
    plugin_version: str = ""

    def policy(self, name: str) -> PolicyInfo:
        """Look a policy up by name (KeyError if absent)."""
        return self._by_name[name]

    @functools.cached_property
    def _by_name(self) -> dict[str, PolicyInfo]:
        return {p.name: p for p in self.policies}

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for report.json."""
        return {
            "name": self.name,
            "version": self.version,
            "displayName": self.display_name,
            "description": self.description,
            "pluginVersion": self.plugin_version,
            "policies": [p.to_dict() for p in self.policies],
        }


@dataclass(frozen=True)
class Violation:
    """One policy diagnostic, with the resource it is about resolved from the records."""

    policy_name: str
    policy_pack_name: str
    message: str
    enforcement_level: str
    urn: str
    resource_type: str = ""
    resource_name: str = ""
    description: str = ""
    severity: str | None = None
    policy_pack_version: str = ""
    stack_policy: bool = False
    """True when reported by AnalyzeStack (urn may then be empty: the stack as a whole)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for report.json."""
        return {
            "policyName": self.policy_name,
            "policyPackName": self.policy_pack_name,
            "policyPackVersion": self.policy_pack_version,
            "enforcementLevel": self.enforcement_level,
            "severity": self.severity,
            "urn": self.urn,
            "resourceType": self.resource_type,
            "resourceName": self.resource_name,
            "description": self.description,
            "message": self.message,
            "stackPolicy": self.stack_policy,
        }


@dataclass(frozen=True)
class Remediation:
    """A remediate-level policy rewrote a resource's inputs (the engine analyzes the result)."""

    policy_name: str
    policy_pack_name: str
    urn: str
    description: str
    properties: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for report.json."""
        return {
            "policyName": self.policy_name,
            "policyPackName": self.policy_pack_name,
            "urn": self.urn,
            "description": self.description,
            "properties": _plain(self.properties),
        }


@dataclass(frozen=True)
class NotApplicable:
    """A policy declared itself not applicable to a resource (or to the stack when urn is '')."""

    policy_name: str
    urn: str
    reason: str


@dataclass
class PolicyRunResult:
    """Everything one policy run produced."""

    analyzer: AnalyzerInfo
    violations: list[Violation]
    stack: str
    project: str
    resources_analyzed: int
    remediations: list[Remediation] = field(default_factory=list)
    not_applicable: list[NotApplicable] = field(default_factory=list)
    pack_output: str = ""
    """What the pack printed (stdout after the port line, then stderr); the CLI shows it too."""

    @property
    def has_mandatory(self) -> bool:
        """True when the CLI would fail the preview."""
        return has_mandatory(self.violations)

    @property
    def mandatory_count(self) -> int:
        """Number of mandatory violations."""
        return sum(v.enforcement_level == "mandatory" for v in self.violations)

    @property
    def advisory_count(self) -> int:
        """Number of advisory violations."""
        return sum(v.enforcement_level == "advisory" for v in self.violations)

    def summary_text(self) -> str:
        """One line for logs and report summaries."""
        return (
            f"policy pack {self.analyzer.name}@v{self.analyzer.version}: "
            f"{self.resources_analyzed} resources, {len(self.violations)} violation(s) "
            f"({self.mandatory_count} mandatory, {self.advisory_count} advisory)"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for report.json (camelCase, like the resource records)."""
        counts = {level: 0 for level in _LEVEL_ORDER}
        for v in self.violations:
            counts[v.enforcement_level] = counts.get(v.enforcement_level, 0) + 1
        return {
            "stack": self.stack,
            "project": self.project,
            "policyPack": self.analyzer.to_dict(),
            "resourcesAnalyzed": self.resources_analyzed,
            "summary": {
                "total": len(self.violations),
                "mandatory": counts["mandatory"],
                "advisory": counts["advisory"],
                "hasMandatory": self.has_mandatory,
            },
            "summaryText": self.summary_text(),
            "violations": [v.to_dict() for v in self.violations],
            "remediations": [r.to_dict() for r in self.remediations],
            "notApplicable": [
                {"policyName": n.policy_name, "urn": n.urn, "reason": n.reason}
                for n in self.not_applicable
            ],
        }


def has_mandatory(violations: Iterable[Violation]) -> bool:
    """True if any violation is mandatory (what makes `pulumi preview` fail)."""
    return any(v.enforcement_level == "mandatory" for v in violations)


def group_violations(violations: Iterable[Violation]) -> dict[str, dict[str, list[Violation]]]:
    """Group as level -> resource URN ('' for the stack as a whole) -> violations.

    Levels come mandatory first; resources keep first-seen order, so output is stable.
    """
    grouped: dict[str, dict[str, list[Violation]]] = {}
    for v in violations:
        grouped.setdefault(v.enforcement_level, {}).setdefault(v.urn, []).append(v)
    order = {level: i for i, level in enumerate(_LEVEL_ORDER)}
    return dict(sorted(grouped.items(), key=lambda kv: order.get(kv[0], len(order))))


def format_violations(violations: Sequence[Violation]) -> str:
    """Human-readable listing grouped by level and resource, like the CLI's policy summary."""
    if not violations:
        return "No policy violations."
    lines: list[str] = []
    for level, by_resource in group_violations(violations).items():
        count = sum(len(vs) for vs in by_resource.values())
        lines.append(f"{level.upper()} ({count})")
        for urn, vs in by_resource.items():
            first = vs[0]
            if urn:
                rtype = first.resource_type or urn_type(urn)
                lines.append(f"  {rtype}  {first.resource_name or urn_name(urn)}")
                lines.append(f"    urn: {urn}")
            else:
                lines.append("  (stack)")
            for v in vs:
                sev = f", {v.severity}" if v.severity else ""
                lines.append(f"    [{v.policy_name}] ({v.policy_pack_name}{sev})")
                for msg_line in v.message.splitlines() or [""]:
                    lines.append(f"      {msg_line}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _plain(value: Any) -> Any:
    """Deep-copy mappings/sequences into plain dicts/lists for JSON."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
