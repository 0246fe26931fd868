"""Offline stand-in for `pulumi preview --policy-pack DIR --policy-pack-config FILE`.

There is no Pulumi CLI or engine offline, yet the project's policy pack must be exercised exactly
as the CLI would: as its own process, spoken to over the Analyzer gRPC protocol. This module does
the engine's part of that conversation for a Python policy pack and a list of resource records
(docs/resource-records.md).

How the CLI starts a Python pack (pulumi/pulumi `NewPolicyAnalyzer` in
sdk/go/common/resource/plugin/analyzer_plugin.go, and the `pulumi-analyzer-policy-python` shim in
sdk/python/dist/): python and nodejs packs still use the legacy analyzer shim, run with the pack
directory as working directory and the arguments `<engine-address> .`; the shim runs
`python3 -u -m pulumi.policy <engine-address> .` (or `<virtualenv>/bin/python` when
PulumiPolicy.yaml sets `runtime.options.virtualenv`). `pulumi/policy/__main__.py` configures the
runtime from PULUMI_PROJECT/PULUMI_STACK/PULUMI_DRY_RUN/PULUMI_ORGANIZATION/PULUMI_CONFIG (set by
`constructEnv`) and `runpy`s the pack's `__main__.py`; constructing `PolicyPack` serves the
Analyzer on 127.0.0.1:0, writes the port as the first stdout line and blocks. The engine reads
that line, dials the port, calls Handshake (UNIMPLEMENTED tolerated), ConfigureStack,
GetAnalyzerInfo, reconciles the `--policy-pack-config` file with the policies' defaults and
Configures the pack, then calls Remediate and Analyze per resource and AnalyzeStack at the end.
It stops the plugin by interrupting its process group and killing it after 5 seconds.

Known protocol limits (pulumi 3.272 / pulumi-policy 1.21): `AnalyzerResourceOptions` has no
retainOnDelete and no dependsOn, so a policy can never see those options through the CLI either;
dependsOn reaches stack policies as `dependencies` in AnalyzeStack.

Deliberate differences from the CLI, all for speed or safety: Analyze calls go out concurrently
(the engine sends them as it generates steps); Remediate is only called when some resource
policy is at the remediate level (pulumi_policy's Remediate does nothing otherwise); for 1000+
records a second copy of the pack serves AnalyzeStack while the first serves Analyze
(`processes=1` keeps the CLI's single process); and the config file is checked more strictly
(unknown policy names and property keys are errors, not silently passed on).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import grpc
import jsonschema
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

__all__ = [
    "ENFORCEMENT_LEVELS",
    "AnalyzerInfo",
    "NotApplicable",
    "PackLayoutError",
    "PackStartError",
    "PolicyConfig",
    "PolicyConfigEntry",
    "PolicyConfigError",
    "PolicyDriverError",
    "PolicyInfo",
    "PolicyPackProcess",
    "PolicyRunError",
    "PolicyRunResult",
    "RecordsError",
    "Remediation",
    "Violation",
    "check_records",
    "format_violations",
    "group_violations",
    "has_mandatory",
    "load_policy_pack_config",
    "load_records",
    "main",
    "pack_launch_command",
    "parse_provider_reference",
    "reconcile_policy_config",
    "record_to_analyze_request",
    "record_to_analyzer_resource",
    "run_policy_pack",
    "urn_name",
    "urn_type",
]

ENFORCEMENT_LEVELS = ("advisory", "mandatory", "remediate", "disabled")
"""Valid levels, spelled as in config files and the CLI (apitype.EnforcementLevel)."""

_LEVEL_TO_PROTO = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "remediate": analyzer_pb2.REMEDIATE,
    "disabled": analyzer_pb2.DISABLED,
}
_PROTO_TO_LEVEL = {v: k for k, v in _LEVEL_TO_PROTO.items()}
_SEVERITIES = {
    analyzer_pb2.POLICY_SEVERITY_LOW: "low",
    analyzer_pb2.POLICY_SEVERITY_MEDIUM: "medium",
    analyzer_pb2.POLICY_SEVERITY_HIGH: "high",
    analyzer_pb2.POLICY_SEVERITY_CRITICAL: "critical",
}
_POLICY_TYPES = {
    analyzer_pb2.POLICY_TYPE_RESOURCE: "resource",
    analyzer_pb2.POLICY_TYPE_STACK: "stack",
}
# Printing order: what blocks a deployment first.
_LEVEL_ORDER = ("mandatory", "advisory", "remediate", "disabled")

# The engine marshals unknown values as this sentinel (plugin.UnknownStringValue); pulumi_policy's
# proxy turns it into "can't run during preview". Records spell unknowns "[unknown]".
_UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
_RECORD_UNKNOWN = "[unknown]"

# pulumi.policy's __main__ requires an engine address but never dials it; there is no engine.
_NO_ENGINE_ADDRESS = "127.0.0.1:0"
# Same limit as pulumi_policy's server and the engine's client (400 MiB).
_MAX_MESSAGE = 400 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", _MAX_MESSAGE),
    ("grpc.max_send_message_length", _MAX_MESSAGE),
]
_STDERR_KEEP = 64 * 1024


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class PolicyDriverError(Exception):
    """Base class: anything that stops a policy run from producing a result."""


class PolicyConfigError(PolicyDriverError):
    """The policy-pack-config file is malformed or names unknown policies/levels/properties."""


class RecordsError(PolicyDriverError):
    """The resource records are not in the documented format."""


class PackStartError(PolicyDriverError):
    """The pack process did not come up (crashed before serving, bad port line, timeout)."""


class PackLayoutError(PackStartError):
    """The pack directory is not a runnable Python policy pack (nothing was started)."""


class PolicyRunError(PolicyDriverError):
    """The pack failed while being driven (RPC error, crash, timeout)."""


# --------------------------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Policy pack config file (--policy-pack-config)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyConfigEntry:
    """One key of a config file: an optional level and the properties given for the policy."""

    enforcement_level: str | None
    properties: Mapping[str, Any]


def load_policy_pack_config(path: str | os.PathLike[str]) -> dict[str, PolicyConfigEntry]:
    """Parse and syntax-check a policy-pack-config JSON file (no pack needed).

    Mirrors the CLI's parsePolicyPackConfig: each key maps to a level string or to an object
    with an optional `enforcementLevel` plus the policy's properties; an empty file is no config.
    Stricter than the CLI on purpose: `all` may only carry a level.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise PolicyConfigError(f"{p}: cannot read policy pack config: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise PolicyConfigError(f"{p}: not UTF-8 text (byte {e.start})") from e
    if not text.strip():
        return {}
    try:
        raw = json.loads(text)
    except RecursionError as e:
        raise PolicyConfigError(f"{p}: invalid JSON: nested too deeply") from e
    except ValueError as e:  # JSONDecodeError, or integers past Python's digit limit
        raise PolicyConfigError(f"{p}: invalid JSON: {e}") from e
    if not isinstance(raw, dict):
        raise PolicyConfigError(
            f"{p}: must be a JSON object mapping policy names to an enforcement level or an "
            f"object, got {type(raw).__name__}"
        )
    entries: dict[str, PolicyConfigEntry] = {}
    for key, value in raw.items():
        where = f"{p}: key {key!r}"
        if isinstance(value, str):
            entries[key] = PolicyConfigEntry(_check_level(value, where), {})
        elif isinstance(value, dict):
            props = dict(value)
            level = None
            if "enforcementLevel" in props:
                lv = props.pop("enforcementLevel")
                if not isinstance(lv, str):
                    raise PolicyConfigError(
                        f"{where}: enforcementLevel must be a string, got {json.dumps(lv)}"
                    )
                level = _check_level(lv, where)
            if key == "all" and props:
                raise PolicyConfigError(
                    f"{where}: 'all' only sets the enforcement level of every policy; "
                    f"unexpected properties {sorted(props)}"
                )
            entries[key] = PolicyConfigEntry(level, props)
        else:
            raise PolicyConfigError(
                f"{where}: {json.dumps(value)} is not a valid value; must be an enforcement "
                f"level string or an object"
            )
    return entries


def _check_level(level: str, where: str) -> str:
    if level not in ENFORCEMENT_LEVELS:
        raise PolicyConfigError(
            f"{where}: {level!r} is not a valid enforcement level "
            f"(expected one of {', '.join(ENFORCEMENT_LEVELS)})"
        )
    return level


def reconcile_policy_config(
    analyzer: AnalyzerInfo,
    file_config: Mapping[str, PolicyConfigEntry],
    config_path: str | os.PathLike[str] = "<config>",
) -> dict[str, PolicyConfig]:
    """Compute what `Configure` receives, as the CLI's ReconcilePolicyPackConfig does.

    Start from each policy's default level and its schema defaults, apply the pack's initial
    config, then the file (`all` first, then per-policy entries), then validate properties
    against each policy's config schema. Unknown policy names and unknown property keys are
    errors here (the CLI silently passes them on; a typo would silently fall back to defaults).
    """
    known = {p.name: p for p in analyzer.policies}
    for key in file_config:
        if key != "all" and key not in known:
            raise PolicyConfigError(
                f"{config_path}: key {key!r}: unknown policy; pack {analyzer.name!r} has "
                f"{', '.join(sorted(known)) or 'no policies'}"
            )
    result: dict[str, tuple[str, dict[str, Any]]] = {}
    for p in analyzer.policies:
        props = {
            k: v["default"]
            for k, v in ((p.config_schema or {}).get("properties") or {}).items()
            if isinstance(v, Mapping) and "default" in v
        }
        result[p.name] = (p.enforcement_level, props)

    initial: dict[str, PolicyConfigEntry] = {}
    for k, v in analyzer.initial_config.items():
        if isinstance(v, PolicyConfig):
            initial[k] = PolicyConfigEntry(v.enforcement_level, dict(v.properties))
        else:
            initial[k] = PolicyConfigEntry(
                v.get("enforcementLevel"), dict(v.get("properties") or {})
            )
    for layer in (initial, file_config):
        all_entry = layer.get("all")
        if all_entry is not None and all_entry.enforcement_level:
            result = {n: (all_entry.enforcement_level, pr) for n, (_, pr) in result.items()}
        for name, entry in layer.items():
            if name == "all" or name not in result:
                continue
            level, props = result[name]
            result[name] = (entry.enforcement_level or level, {**props, **entry.properties})

    for name, (_, props) in result.items():
        _validate_properties(known[name], props, config_path)
    return {n: PolicyConfig(level, props) for n, (level, props) in result.items()}


def _validate_properties(policy: PolicyInfo, props: Mapping[str, Any], config_path: Any) -> None:
    schema = policy.config_schema or {}
    declared = schema.get("properties") or {}
    unknown = sorted(set(props) - set(declared))
    if unknown:
        allowed = ", ".join(sorted(declared)) or "none"
        noun = "property" if len(unknown) == 1 else "properties"
        raise PolicyConfigError(
            f"{config_path}: key {policy.name!r}: unknown {noun} {', '.join(unknown)} "
            f"(policy accepts: {allowed})"
        )
    if not schema:
        return
    full = {"type": "object", "properties": dict(declared)}
    if schema.get("required"):
        full["required"] = list(schema["required"])
    validator = jsonschema.Draft7Validator(full)
    errors = sorted(validator.iter_errors(dict(props)), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(
            f"{'.'.join(str(x) for x in e.absolute_path) or '(root)'}: {e.message}" for e in errors
        )
        raise PolicyConfigError(
            f"{config_path}: key {policy.name!r}: invalid policy config: {details}"
        )


# --------------------------------------------------------------------------------------------
# Resource records -> protobuf
# --------------------------------------------------------------------------------------------


def load_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read records from a JSON list, or from report.json's `resources` key, and check them."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise RecordsError(f"{p}: cannot read records: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise RecordsError(f"{p}: invalid JSON: {e}") from e
    if isinstance(data, dict) and "resources" in data:
        data = data["resources"]
    if not isinstance(data, list):
        raise RecordsError(f"{p}: expected a JSON list of records (or {{'resources': [...]}})")
    check_records(data, source=str(p))
    return data


def check_records(records: Sequence[Mapping[str, Any]], source: str = "records") -> None:
    """Validate the shape the driver relies on; a clear error beats a confusing RPC failure."""
    seen: set[str] = set()
    for i, r in enumerate(records):
        where = f"{source}: record {i}"
        if not isinstance(r, Mapping):
            raise RecordsError(f"{where}: expected an object, got {type(r).__name__}")
        urn = r.get("urn")
        if not isinstance(urn, str) or not urn.startswith("urn:pulumi:") or urn.count("::") < 3:
            raise RecordsError(f"{where}: 'urn' must be a Pulumi URN, got {urn!r}")
        if urn in seen:
            raise RecordsError(f"{where}: duplicate urn {urn}")
        seen.add(urn)
        if not isinstance(r.get("type"), str) or not r["type"]:
            raise RecordsError(f"{where} ({urn}): 'type' must be a non-empty string")
        for key in ("inputs", "options", "propertyDependencies"):
            if r.get(key) is not None and not isinstance(r[key], Mapping):
                raise RecordsError(f"{where} ({urn}): {key!r} must be an object")
        opts = r.get("options") or {}
        for key in ("dependsOn", "ignoreChanges", "aliases", "additionalSecretOutputs"):
            val = opts.get(key)
            if val is not None and (
                not isinstance(val, list) or not all(isinstance(x, str) for x in val)
            ):
                raise RecordsError(f"{where} ({urn}): options.{key} must be a list of strings")


def urn_name(urn: str) -> str:
    """The resource name part of a URN (Go's URN.Name(): everything after the third '::')."""
    parts = urn.split("::", 3)
    return parts[3] if len(parts) == 4 else ""


def urn_type(urn: str) -> str:
    """The resource type of a URN (last `$`-separated element of the qualified type)."""
    parts = urn.split("::", 3)
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 3 else ""


def _urn_stack_project(urn: str) -> tuple[str, str]:
    parts = urn.split("::", 3)
    if len(parts) < 2 or not parts[0].startswith("urn:pulumi:"):
        return "", ""
    return parts[0][len("urn:pulumi:") :], parts[1]


def parse_provider_reference(ref: str) -> tuple[str, str]:
    """Split a provider reference `<urn>::<id>` at the last '::' (providers.ParseReference)."""
    urn, sep, ident = ref.rpartition("::")
    if not sep or not urn.startswith("urn:pulumi:") or urn.count("::") < 3:
        # A bare URN (no id yet) is still useful for policies.
        return (ref, "") if ref.startswith("urn:pulumi:") and ref.count("::") >= 3 else ("", "")
    return urn, ident


def _wire_value(value: Any) -> Any:
    """Records spell unknowns "[unknown]"; the engine sends the unknown sentinel instead."""
    if isinstance(value, str):
        return _UNKNOWN_SENTINEL if value == _RECORD_UNKNOWN else value
    if isinstance(value, Mapping):
        return {k: _wire_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire_value(v) for v in value]
    return value


def _to_struct(props: Mapping[str, Any] | None, where: str = "inputs") -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    if props:
        try:
            # json.dumps is C code: checking it first avoids a Python walk for the usual case.
            if _RECORD_UNKNOWN in json.dumps(props):
                props = _wire_value(props)
            s.update(props)
        except (ValueError, TypeError) as e:
            raise RecordsError(f"{where} cannot be sent as a protobuf Struct: {e}") from e
    return s


_DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _timeout_seconds(value: Any, where: str) -> float:
    """Custom timeouts arrive as Go durations ("5m", "1h30m") or seconds; the wire wants seconds."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        pos, total = 0, 0.0
        for m in _DURATION_RE.finditer(value):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
            pos = m.end()
        if pos == len(value):
            return total
    raise RecordsError(f"{where}: invalid custom timeout {value!r}")


def _options(record: Mapping[str, Any]) -> analyzer_pb2.AnalyzerResourceOptions:
    opts = record.get("options") or {}
    dbr = opts.get("deleteBeforeReplace")
    # The engine marks it defined only when the program set it; records carry a plain false
    # by default, so only true (or an explicit deleteBeforeReplaceDefined) counts as set.
    dbr_defined = bool(opts.get("deleteBeforeReplaceDefined", dbr is True))
    ct = opts.get("customTimeouts") or {}
    where = f"{record.get('urn')}: options.customTimeouts"
    msg = analyzer_pb2.AnalyzerResourceOptions(
        protect=bool(opts.get("protect", False)),
        ignoreChanges=list(opts.get("ignoreChanges") or []),
        deleteBeforeReplace=bool(dbr),
        deleteBeforeReplaceDefined=dbr_defined,
        additionalSecretOutputs=list(opts.get("additionalSecretOutputs") or []),
        aliases=[a for a in (opts.get("aliases") or []) if isinstance(a, str)],
        parent=record.get("parent") or opts.get("parent") or "",
    )
    if ct:
        msg.customTimeouts.create = _timeout_seconds(ct.get("create"), where)
        msg.customTimeouts.update = _timeout_seconds(ct.get("update"), where)
        msg.customTimeouts.delete = _timeout_seconds(ct.get("delete"), where)
    return msg


def _provider(
    record: Mapping[str, Any],
    by_urn: Mapping[str, Mapping[str, Any]],
    cache: dict[str, analyzer_pb2.AnalyzerProviderResource] | None = None,
) -> analyzer_pb2.AnalyzerProviderResource | None:
    ref = (record.get("options") or {}).get("provider") or record.get("provider")
    if not isinstance(ref, str) or not ref:
        return None
    purn, _ = parse_provider_reference(ref)
    if not purn:
        return None
    if cache is not None and purn in cache:
        return cache[purn]
    prec = by_urn.get(purn) or {}
    msg = analyzer_pb2.AnalyzerProviderResource(
        type=prec.get("type") or urn_type(purn),
        name=urn_name(purn),
        urn=purn,
        properties=_to_struct(prec.get("inputs"), f"{purn}: inputs"),
    )
    if cache is not None:
        cache[purn] = msg
    return msg


def _dependencies(record: Mapping[str, Any]) -> list[str]:
    """dependsOn plus every property dependency: what the SDK registers as `dependencies`."""
    out: dict[str, None] = {}
    for d in record.get("dependencies") or []:
        out[d] = None
    for d in (record.get("options") or {}).get("dependsOn") or []:
        out[d] = None
    for urns in (record.get("propertyDependencies") or {}).values():
        for d in urns or []:
            out[d] = None
    return list(out)


def record_to_analyzer_resource(
    record: Mapping[str, Any],
    by_urn: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    provider_cache: dict[str, analyzer_pb2.AnalyzerProviderResource] | None = None,
) -> analyzer_pb2.AnalyzerResource:
    """Build the AnalyzerResource the engine puts in AnalyzeStack for this record.

    `by_urn` (urn -> record) lets the provider's type and inputs be filled in from its record.
    """
    res = analyzer_pb2.AnalyzerResource(
        type=record["type"],
        properties=_to_struct(record.get("inputs"), f"{record['urn']}: inputs"),
        urn=record["urn"],
        name=record.get("name") or urn_name(record["urn"]),
        options=_options(record),
        parent=record.get("parent") or "",
        dependencies=_dependencies(record),
    )
    provider = _provider(record, by_urn or {}, provider_cache)
    if provider is not None:
        res.provider.CopyFrom(provider)
    for key, urns in (record.get("propertyDependencies") or {}).items():
        if urns:  # the engine skips properties without dependencies
            res.propertyDependencies[key].urns.extend(urns)
    return res


def _analyze_request(res: analyzer_pb2.AnalyzerResource) -> analyzer_pb2.AnalyzeRequest:
    req = analyzer_pb2.AnalyzeRequest(
        type=res.type, urn=res.urn, name=res.name, properties=res.properties, options=res.options
    )
    if res.HasField("provider"):
        req.provider.CopyFrom(res.provider)
    return req


def record_to_analyze_request(
    record: Mapping[str, Any], by_urn: Mapping[str, Mapping[str, Any]] | None = None
) -> analyzer_pb2.AnalyzeRequest:
    """Build the AnalyzeRequest the engine would send for this record (see above)."""
    return _analyze_request(record_to_analyzer_resource(record, by_urn))


# --------------------------------------------------------------------------------------------
# The pack process
# --------------------------------------------------------------------------------------------


def _load_pack_project(pack_dir: Path) -> dict[str, Any]:
    yml = pack_dir / "PulumiPolicy.yaml"
    if not pack_dir.is_dir():
        raise PackLayoutError(f"policy pack directory {pack_dir} does not exist")
    if not yml.is_file():
        raise PackLayoutError(
            f"failed to load Pulumi policy project located at {str(pack_dir)!r}: "
            f"{yml.name} not found"
        )
    try:
        data = yaml.safe_load(yml.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise PackLayoutError(f"{yml}: invalid YAML: {e}") from e
    if not isinstance(data, dict):
        raise PackLayoutError(f"{yml}: expected a mapping")
    runtime = data.get("runtime")
    name = runtime.get("name") if isinstance(runtime, dict) else runtime
    if name != "python":
        raise PackLayoutError(
            f"{yml}: runtime is {name!r}; this driver only runs Python policy packs"
        )
    if not (pack_dir / "__main__.py").is_file():
        raise PackLayoutError(f"policy pack {pack_dir} has no __main__.py")
    return data


def pack_launch_command(
    pack_dir: str | os.PathLike[str], python: str | None = None
) -> tuple[list[str], Path]:
    """The command line and working directory the CLI's shim uses for a Python pack.

    `python3 -u -m pulumi.policy <engine-address> .` run in the pack directory, with the
    virtualenv from `runtime.options.virtualenv` when set. Without one, the CLI runs `python3`
    from PATH; offline the driver's own interpreter is the equivalent (override with `python`).
    Other runtime options are passed as `-key=value`, as NewPolicyAnalyzer does.
    """
    pdir = Path(pack_dir).resolve()
    project = _load_pack_project(pdir)
    runtime = project.get("runtime")
    options = (runtime.get("options") or {}) if isinstance(runtime, dict) else {}
    interpreter = python
    venv = options.get("virtualenv")
    if interpreter is None and venv:
        vdir = Path(venv) if Path(venv).is_absolute() else pdir / venv
        candidate = vdir / "bin" / "python"
        if not candidate.is_file():
            raise PackLayoutError(f"{str(vdir)!r} doesn't appear to be a virtual environment")
        interpreter = str(candidate)
    cmd = [interpreter or sys.executable, "-u", "-m", "pulumi.policy", _NO_ENGINE_ADDRESS, "."]
    cmd += [f"-{k}={v}" for k, v in options.items() if k != "virtualenv" and f"{v}" != ""]
    return cmd, pdir


def polite_stop_signal() -> signal.Signals:
    """SIGINT, as the CLI stops a plugin; SIGTERM when this process ignores SIGINT.

    A shell starts background jobs (``make bench &``, ``nohup``) with SIGINT ignored, and a child
    inherits that: the pack would sit out the whole grace period and then be killed, 5 s per
    preview. SIGTERM is never ignored that way.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return signal.SIGTERM
    return signal.SIGINT


class PolicyPackProcess:
    """A running policy pack: start, read the port, serve a channel, stop without orphans.

    Stop mirrors the CLI's plugin Kill: SIGINT to the process group (pulumi_policy stops its
    server on KeyboardInterrupt; SIGTERM where SIGINT is ignored, see `polite_stop_signal`),
    SIGKILL to the group after `grace` seconds.
    """

    def __init__(
        self,
        pack_dir: str | os.PathLike[str],
        *,
        python: str | None = None,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 30.0,
        grace: float = 5.0,
    ) -> None:
        self.pack_dir = Path(pack_dir)
        self._python = python
        self._extra_env = dict(env or {})
        self._startup_timeout = startup_timeout
        self._grace = grace
        self._proc: subprocess.Popen[bytes] | None = None
        self._stop_signal = signal.SIGINT
        self._stderr = bytearray()
        self._stdout = bytearray()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._port_line: list[bytes] = []
        self._port_ready = threading.Event()
        self.port: int | None = None
        self.channel: grpc.Channel | None = None
        self.project: dict[str, Any] = {}

    @property
    def pid(self) -> int | None:
        """The pack's process id (also its process group id)."""
        return self._proc.pid if self._proc else None

    @property
    def stderr_text(self) -> str:
        """The last 64 KiB the pack wrote to stderr (tracebacks end up here)."""
        with self._lock:
            return self._stderr.decode("utf-8", "replace")

    @property
    def stdout_text(self) -> str:
        """What the pack printed after the port line (the CLI shows it as info)."""
        with self._lock:
            return self._stdout.decode("utf-8", "replace")

    def __enter__(self) -> PolicyPackProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> grpc.Channel:
        """Launch the pack, wait for its port line, open and return the channel."""
        if self._proc is not None:
            raise RuntimeError("PolicyPackProcess.start() called twice")
        cmd, cwd = pack_launch_command(self.pack_dir, self._python)
        self.project = _load_pack_project(cwd)
        env = {**os.environ, **self._extra_env}
        # Decided now: the pack inherits this process's SIGINT disposition at launch.
        self._stop_signal = polite_stop_signal()
        try:
            self._proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group, like cmdutil.RegisterProcessGroup
            )
        except OSError as e:
            raise PackStartError(f"could not launch {cmd[0]}: {e}") from e
        atexit.register(self.close)
        self._spawn(self._read_stderr)
        self._spawn(self._read_stdout)
        try:
            self.port = self._wait_for_port()
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=_CHANNEL_OPTIONS)
            try:
                grpc.channel_ready_future(self.channel).result(timeout=self._startup_timeout)
            except grpc.FutureTimeoutError as e:
                raise PackStartError(
                    self._describe(f"policy pack did not accept connections on port {self.port}")
                ) from e
        except BaseException:
            self.close()
            raise
        return self.channel

    def _spawn(self, target: Callable[[], None]) -> None:
        t = threading.Thread(target=target, daemon=True, name=f"policy-pack-{target.__name__}")
        t.start()
        self._threads.append(t)

    def _read_stderr(self) -> None:
        assert self._proc is not None
        stream = cast(io.BufferedReader, self._proc.stderr)
        for chunk in iter(lambda: stream.read1(65536), b""):
            with self._lock:
                self._stderr += chunk
                del self._stderr[:-_STDERR_KEEP]

    def _read_stdout(self) -> None:
        # Read the first line (the port) then keep draining so a chatty pack never blocks.
        assert self._proc is not None
        stream = cast(io.BufferedReader, self._proc.stdout)
        self._port_line.append(stream.readline())
        self._port_ready.set()
        for chunk in iter(lambda: stream.read1(65536), b""):
            with self._lock:
                self._stdout += chunk
                del self._stdout[:-_STDERR_KEEP]

    def _wait_for_port(self) -> int:
        assert self._proc is not None
        deadline = time.monotonic() + self._startup_timeout
        exited_at: float | None = None
        while not self._port_ready.wait(0.05):
            # A child of the pack may hold stdout open after the pack died: don't wait for EOF.
            if exited_at is None and self._exit_status(0.0) is not None:
                exited_at = time.monotonic()
            if exited_at is not None and time.monotonic() - exited_at > 0.2:
                break
            if time.monotonic() > deadline:
                raise PackStartError(
                    self._describe(
                        f"policy pack did not print its port within {self._startup_timeout:g}s"
                    )
                )
        line = self._port_line[0] if self._port_line else b""
        if not line.endswith(b"\n"):
            # EOF before a full line: the pack exited (or closed stdout) without serving.
            code = self._exit_status(self._grace)
            self._kill_group()  # so the readers see EOF and collect the whole stderr
            self._join_readers(timeout=1.0)
            got = f" (read {line.decode('utf-8', 'replace')!r})" if line else ""
            status = f"exit status {code}" if code is not None else "closed stdout"
            raise PackStartError(self._describe(f"policy pack failed to start: {status}{got}"))
        text = line.decode("utf-8", "replace").strip()
        try:
            port = int(text)
        except ValueError:
            port = -1
        if not 0 < port <= 65535:
            raise PackStartError(
                self._describe(f"policy pack wrote an invalid port to stdout: {text!r}")
            )
        return port

    def _describe(self, what: str) -> str:
        err = self.stderr_text.strip()
        out = self.stdout_text.strip()
        parts = [f"{what} [{self.pack_dir}]"]
        if err:
            parts.append(f"--- pack stderr ---\n{err}")
        if out:
            parts.append(f"--- pack stdout ---\n{out}")
        return "\n".join(parts)

    def describe_failure(self, what: str, wait: float = 0.0) -> str:
        """`what`, plus whatever the pack wrote to stderr/stdout (to explain a failure).

        `wait`: how long to give a pack that is probably dying to exit (for its status).
        """
        code = self._exit_status(wait)
        if code is not None:
            self._kill_group()  # leftovers of a dead pack; lets the readers reach EOF
            self._join_readers(timeout=1.0)
            what += f" (pack exited with status {code})"
        return self._describe(what)

    def _join_readers(self, timeout: float = 5.0) -> None:
        for t in self._threads:
            t.join(timeout)

    def _exit_status(self, timeout: float) -> int | None:
        """Wait up to `timeout` for the pack to exit, without reaping it.

        Leaving the exited leader a zombie keeps its process-group id reserved, so the final
        killpg in close() can never hit an unrelated group that reused the id.
        """
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is not None:
            return proc.returncode
        deadline = time.monotonic() + timeout
        while True:
            try:
                res = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:
                return proc.returncode if proc.returncode is not None else -1
            if res is not None:
                return res.si_status if res.si_code == os.CLD_EXITED else -res.si_status
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def alive(self) -> bool:
        """True while the pack process is running."""
        return self._proc is not None and self._exit_status(0.0) is None

    def close(self) -> None:
        """Close the channel and stop the process group; safe to call repeatedly."""
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        if self._exit_status(0.0) is None:
            self._signal_group(proc, self._stop_signal)
            self._exit_status(self._grace)
        self._kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=self._grace)
        self._join_readers()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    @property
    def returncode(self) -> int | None:
        """The pack's exit status once it has ended (negative: the signal that ended it)."""
        return None if self._proc is None else self._proc.returncode

    def _kill_group(self) -> None:
        # Only while the leader is unreaped (a zombie at worst) does the group id stay ours:
        # then kill anything left in it (the pack if it ignored SIGINT, children it started).
        if self._proc is not None and self._proc.returncode is None:
            self._signal_group(self._proc, signal.SIGKILL)

    @staticmethod
    def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


# --------------------------------------------------------------------------------------------
# Driving the Analyzer
# --------------------------------------------------------------------------------------------


def _analyzer_info(
    info: analyzer_pb2.AnalyzerInfo, project: Mapping[str, Any], plugin_version: str
) -> AnalyzerInfo:
    policies = []
    for p in info.policies:
        schema: dict[str, Any] | None = None
        if p.HasField("configSchema"):
            schema = {"properties": json_format.MessageToDict(p.configSchema.properties)}
            if p.configSchema.required:
                schema["required"] = list(p.configSchema.required)
        policies.append(
            PolicyInfo(
                name=p.name,
                description=p.description,
                enforcement_level=_PROTO_TO_LEVEL.get(p.enforcementLevel, "advisory"),
                display_name=p.displayName,
                policy_type=_POLICY_TYPES.get(p.policy_type, "unknown"),
                severity=_SEVERITIES.get(p.severity),
                config_schema=schema,
            )
        )
    initial = {
        k: PolicyConfig(
            _PROTO_TO_LEVEL.get(v.enforcementLevel, "advisory"),
            json_format.MessageToDict(v.properties),
        )
        for k, v in info.initialConfig.items()
    }
    # As in the CLI, the version in PulumiPolicy.yaml wins over the one the pack reports.
    version = str(project.get("version") or info.version)
    return AnalyzerInfo(
        name=info.name,
        version=version,
        policies=tuple(sorted(policies, key=lambda p: p.name)),
        display_name=info.displayName,
        description=info.description or str(project.get("description") or ""),
        supports_config=info.supportsConfig,
        initial_config=initial,
        plugin_version=plugin_version,
    )


def _rpc_error(pack: PolicyPackProcess, what: str, err: grpc.RpcError) -> PolicyRunError:
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    name = code.name if code is not None else "ERROR"
    # A lost connection usually means the pack is dying: give it a moment to report a status.
    wait = 1.0 if code == grpc.StatusCode.UNAVAILABLE else 0.0
    return PolicyRunError(pack.describe_failure(f"{what} failed: {name}: {details}", wait))


def _call(
    pack: PolicyPackProcess,
    what: str,
    method: Any,
    request: Any,
    timeout: float,
    *,
    tolerate_unimplemented: bool = False,
) -> Any:
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as e:
        if tolerate_unimplemented and e.code() == grpc.StatusCode.UNIMPLEMENTED:
            return None
        raise _rpc_error(pack, what, e) from None


def _handshake(pack: PolicyPackProcess, stub: Any, timeout: float) -> None:
    """Handshake like the engine: retry while UNAVAILABLE, accept UNIMPLEMENTED."""
    pdir = str(pack.pack_dir.resolve())
    req = analyzer_pb2.AnalyzerHandshakeRequest(
        engine_address=_NO_ENGINE_ADDRESS, root_directory=pdir, program_directory=pdir
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            stub.Handshake(req, timeout=max(0.1, deadline - time.monotonic()))
            return
        except grpc.RpcError as e:
            code = e.code()
            if code == grpc.StatusCode.UNIMPLEMENTED:
                return
            if code == grpc.StatusCode.UNAVAILABLE and time.monotonic() < deadline and pack.alive():
                time.sleep(0.01)
                continue
            raise _rpc_error(pack, "Handshake", e) from None


def _violation(
    d: analyzer_pb2.AnalyzeDiagnostic,
    analyzer: AnalyzerInfo,
    urn: str,
    record: Mapping[str, Any] | None,
    *,
    stack_policy: bool = False,
    level: str | None = None,
) -> Violation:
    if level is None:
        level = _PROTO_TO_LEVEL.get(d.enforcementLevel, "advisory")
        # Like the engine: a remediate-level finding that survives remediation (and any
        # stack-policy finding at that level) is reported as mandatory.
        if level == "remediate":
            level = "mandatory"
    try:
        policy_severity = analyzer.policy(d.policyName).severity
    except KeyError:
        policy_severity = None
    rec = record or {}
    return Violation(
        policy_name=d.policyName,
        policy_pack_name=d.policyPackName or analyzer.name,
        policy_pack_version=analyzer.version or d.policyPackVersion,
        message=d.message,
        enforcement_level=level,
        urn=urn,
        resource_type=rec.get("type") or (urn_type(urn) if urn else ""),
        resource_name=rec.get("name") or (urn_name(urn) if urn else ""),
        description=d.description,
        severity=_SEVERITIES.get(d.severity) or policy_severity,
        stack_policy=stack_policy,
    )


@dataclass
class _ResourceOutcome:
    violations: list[Violation] = field(default_factory=list)
    remediations: list[Remediation] = field(default_factory=list)
    not_applicable: list[NotApplicable] = field(default_factory=list)
    remediated: struct_pb2.Struct | None = None


class _Fanout:
    """Remediate (when needed) and Analyze every resource with bounded in-flight RPCs.

    grpc futures on one channel per pack process; requests are built while earlier ones are
    being served, and resources are spread round-robin over the pack processes.
    """

    def __init__(
        self,
        packs: Sequence[PolicyPackProcess],
        analyzer: AnalyzerInfo,
        remediate: bool,
        max_in_flight: int,
        timeout: float,
    ) -> None:
        self.stubs = [analyzer_pb2_grpc.AnalyzerStub(p.channel) for p in packs]
        self.packs = packs
        self.analyzer = analyzer
        self.remediate = remediate
        self.max_in_flight = max(1, max_in_flight)
        self.slots = threading.BoundedSemaphore(self.max_in_flight)
        self.timeout = timeout
        self.error: BaseException | None = None
        self.error_lock = threading.Lock()

    def run(
        self,
        records: Sequence[Mapping[str, Any]],
        resources: Iterable[analyzer_pb2.AnalyzerResource],
    ) -> list[_ResourceOutcome]:
        outcomes = [_ResourceOutcome() for _ in records]
        for i, res in enumerate(resources):
            self.slots.acquire()
            if self.error is not None:
                self.slots.release()
                break
            k = i % len(self.stubs)
            try:
                self._start(k, records[i], _analyze_request(res), outcomes[i])
            except BaseException as e:
                self._fail(e)
                self.slots.release()
                break
        for _ in range(self.max_in_flight):  # wait for everything in flight
            self.slots.acquire()
        if self.error is not None:
            raise self.error
        return outcomes

    def _fail(self, e: BaseException) -> None:
        with self.error_lock:
            if self.error is None:
                self.error = e

    def _start(
        self,
        k: int,
        record: Mapping[str, Any],
        req: analyzer_pb2.AnalyzeRequest,
        out: _ResourceOutcome,
    ) -> None:
        stub = self.stubs[k]
        if self.remediate:
            fut = stub.Remediate.future(req, timeout=self.timeout)
            fut.add_done_callback(lambda f: self._remediated(f, k, record, req, out))
        else:
            self._analyze(k, record, req, out)

    def _analyze(
        self,
        k: int,
        record: Mapping[str, Any],
        req: analyzer_pb2.AnalyzeRequest,
        out: _ResourceOutcome,
    ) -> None:
        fut = self.stubs[k].Analyze.future(req, timeout=self.timeout)
        fut.add_done_callback(lambda f: self._analyzed(f, k, record, out))

    def _remediated(
        self,
        fut: Any,
        k: int,
        record: Mapping[str, Any],
        req: analyzer_pb2.AnalyzeRequest,
        out: _ResourceOutcome,
    ) -> None:
        urn = record["urn"]
        try:
            try:
                resp = fut.result()
            except grpc.RpcError as e:
                raise _rpc_error(self.packs[k], f"Remediate({urn})", e) from None
            for rem in resp.remediations:
                if rem.diagnostic:
                    # The engine reports a failed remediation as an advisory violation.
                    d = analyzer_pb2.AnalyzeDiagnostic(
                        policyName=rem.policyName,
                        policyPackName=rem.policyPackName,
                        policyPackVersion=rem.policyPackVersion,
                        description=rem.description,
                        message=rem.diagnostic,
                    )
                    out.violations.append(
                        _violation(d, self.analyzer, urn, record, level="advisory")
                    )
                elif rem.HasField("properties"):
                    out.remediations.append(
                        Remediation(
                            policy_name=rem.policyName,
                            policy_pack_name=rem.policyPackName,
                            urn=urn,
                            description=rem.description,
                            properties=json_format.MessageToDict(rem.properties),
                        )
                    )
                    # Analyze (and AnalyzeStack) see the remediated inputs, as in the engine.
                    req.properties.CopyFrom(rem.properties)
                    out.remediated = req.properties
            out.not_applicable += [
                NotApplicable(n.policy_name, urn, n.reason) for n in resp.not_applicable
            ]
            if self.error is None:
                self._analyze(k, record, req, out)
                return
        except BaseException as e:
            self._fail(e)
        self.slots.release()

    def _analyzed(self, fut: Any, k: int, record: Mapping[str, Any], out: _ResourceOutcome) -> None:
        urn = record["urn"]
        try:
            try:
                resp = fut.result()
            except grpc.RpcError as e:
                raise _rpc_error(self.packs[k], f"Analyze({urn})", e) from None
            # The engine reports resource diagnostics against its own URN, not the diagnostic's.
            out.violations += [_violation(d, self.analyzer, urn, record) for d in resp.diagnostics]
            out.not_applicable += [
                NotApplicable(n.policy_name, urn, n.reason) for n in resp.not_applicable
            ]
        except BaseException as e:
            self._fail(e)
        finally:
            self.slots.release()


def _with_config(info: AnalyzerInfo, effective: Mapping[str, PolicyConfig]) -> AnalyzerInfo:
    policies = tuple(
        replace(
            p,
            configured_level=effective[p.name].enforcement_level,
            config=dict(effective[p.name].properties),
        )
        if p.name in effective
        else p
        for p in info.policies
    )
    return replace(info, policies=policies)


def _boot(
    pack: PolicyPackProcess,
    stack_req: analyzer_pb2.AnalyzerStackConfigureRequest,
    startup_timeout: float,
    rpc_timeout: float,
) -> AnalyzerInfo:
    """Start one pack and take it through the engine's calls up to GetPluginInfo."""
    pack.start()
    stub = analyzer_pb2_grpc.AnalyzerStub(pack.channel)
    _handshake(pack, stub, startup_timeout)
    _call(
        pack,
        "ConfigureStack",
        stub.ConfigureStack,
        stack_req,
        rpc_timeout,
        tolerate_unimplemented=True,
    )
    raw = _call(pack, "GetAnalyzerInfo", stub.GetAnalyzerInfo, empty_pb2.Empty(), rpc_timeout)
    plugin = _call(
        pack,
        "GetPluginInfo",
        stub.GetPluginInfo,
        empty_pb2.Empty(),
        rpc_timeout,
        tolerate_unimplemented=True,
    )
    return _analyzer_info(raw, pack.project, getattr(plugin, "version", "") or "")


def _default_processes(n_records: int) -> int:
    # A pack serves on one core (the GIL). On big stacks a second copy takes AnalyzeStack
    # while the first serves Analyze; its ~0.3 s boot overlaps the records' conversion.
    return 1 if n_records < 1000 else max(1, min(2, os.cpu_count() or 1))


def run_policy_pack(
    pack_dir: str | os.PathLike[str],
    records: Sequence[Mapping[str, Any]],
    *,
    config_path: str | os.PathLike[str] | None = None,
    stack: str | None = None,
    project: str | None = None,
    organization: str = "",
    dry_run: bool = True,
    stack_config: Mapping[str, str] | None = None,
    stack_tags: Mapping[str, str] | None = None,
    python: str | None = None,
    max_in_flight: int = 16,
    processes: int | None = None,
    startup_timeout: float = 30.0,
    rpc_timeout: float = 120.0,
) -> PolicyRunResult:
    """Run `pack_dir` against `records` as `pulumi preview --policy-pack` would.

    The config file is syntax-checked before the pack starts, and checked against the pack's
    policies (names, property schemas) before any Analyze. `stack`/`project` default to the
    values in the records' URNs. Analyze calls go out concurrently (at most `max_in_flight`
    per run) over one channel per pack process.

    `processes` (default: 1, or 2 for 1000+ records on a multi-core machine) runs that many
    copies of the pack, identically configured: with 2+, AnalyzeStack goes to the last copy
    while the others serve Analyze (unless a policy remediates, as AnalyzeStack must then see
    the remediated inputs). Results are the same as with one process for any pack that keeps
    no state between RPCs (pulumi_policy hands every call fresh arguments); use
    `processes=1` for the CLI's exact single-process order.

    Every pack process is stopped before this returns or raises.
    """
    records = list(records)
    check_records(records)
    file_config = load_policy_pack_config(config_path) if config_path else {}
    urn_stack, urn_project = _urn_stack_project(records[0]["urn"]) if records else ("", "")
    stack = stack or urn_stack or "dev"
    project = project or urn_project or "project"
    n_proc = processes if processes is not None else _default_processes(len(records))
    if n_proc < 1:
        raise ValueError("processes must be >= 1")

    # What the CLI's constructEnv adds to the pack's environment.
    env = {
        "PULUMI_PROJECT": project,
        "PULUMI_STACK": stack,
        "PULUMI_DRY_RUN": "true" if dry_run else "false",
    }
    if organization:
        env["PULUMI_ORGANIZATION"] = organization
    if stack_config:
        env["PULUMI_CONFIG"] = json.dumps(dict(stack_config))
    stack_req = analyzer_pb2.AnalyzerStackConfigureRequest(
        stack=stack,
        project=project,
        organization=organization,
        dry_run=dry_run,
        config=dict(stack_config or {}),
        tags=dict(stack_tags or {}),
    )

    packs = [
        PolicyPackProcess(pack_dir, python=python, env=env, startup_timeout=startup_timeout)
        for _ in range(n_proc)
    ]
    with contextlib.ExitStack() as cleanup:
        for p in packs:
            cleanup.callback(p.close)
        with ThreadPoolExecutor(max_workers=n_proc, thread_name_prefix="pack-boot") as boot:
            booting = [
                boot.submit(_boot, p, stack_req, startup_timeout, rpc_timeout) for p in packs
            ]
            # Convert the records while the packs boot.
            by_urn = {r["urn"]: r for r in records}
            cache: dict[str, analyzer_pb2.AnalyzerProviderResource] = {}
            resources = [
                record_to_analyzer_resource(r, by_urn, provider_cache=cache) for r in records
            ]
            infos = [f.result() for f in booting]  # every copy must come up
            info = infos[0]

        if not info.supports_config:
            if file_config:
                raise PolicyConfigError(
                    f"{config_path}: policy pack {info.name!r} at {pack_dir} does not support "
                    f"config"
                )
        else:
            effective = reconcile_policy_config(info, file_config, config_path or "<defaults>")
            req = analyzer_pb2.ConfigureAnalyzerRequest()
            for name, cfg in effective.items():
                req.policyConfig[name].enforcementLevel = _LEVEL_TO_PROTO[cfg.enforcement_level]
                req.policyConfig[name].properties.update(_wire_value(cfg.properties))
            if effective:
                for p in packs:
                    stub = analyzer_pb2_grpc.AnalyzerStub(p.channel)
                    _call(p, "Configure", stub.Configure, req, rpc_timeout)
            info = _with_config(info, effective)

        # Remediate only does anything for resource policies at the remediate level.
        remediate = any(
            p.policy_type != "stack" and (p.configured_level or p.enforcement_level) == "remediate"
            for p in info.policies
        )
        analyze_packs: Sequence[PolicyPackProcess] = packs
        stack_pack = packs[0]
        stack_future = None
        if n_proc > 1 and not remediate:
            analyze_packs, stack_pack = packs[:-1], packs[-1]
            stub = analyzer_pb2_grpc.AnalyzerStub(stack_pack.channel)
            stack_future = stub.AnalyzeStack.future(
                analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=rpc_timeout
            )

        fanout = _Fanout(analyze_packs, info, remediate, max_in_flight, rpc_timeout)
        outcomes = fanout.run(records, resources)

        violations: list[Violation] = []
        remediations: list[Remediation] = []
        not_applicable: list[NotApplicable] = []
        for res, out in zip(resources, outcomes, strict=True):
            violations += out.violations
            remediations += out.remediations
            not_applicable += out.not_applicable
            if out.remediated is not None:
                res.properties.CopyFrom(out.remediated)

        if stack_future is None:
            stub = analyzer_pb2_grpc.AnalyzerStub(stack_pack.channel)
            stack_future = stub.AnalyzeStack.future(
                analyzer_pb2.AnalyzeStackRequest(resources=resources), timeout=rpc_timeout
            )
        try:
            stack_resp = stack_future.result()
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise _rpc_error(stack_pack, "AnalyzeStack", e) from None
            stack_resp = None
        if stack_resp is not None:
            for d in stack_resp.diagnostics:
                violations.append(_violation(d, info, d.urn, by_urn.get(d.urn), stack_policy=True))
            not_applicable += [
                NotApplicable(n.policy_name, "", n.reason) for n in stack_resp.not_applicable
            ]

    output = "".join(p.stdout_text + p.stderr_text for p in packs)
    return PolicyRunResult(
        analyzer=info,
        violations=violations,
        stack=stack,
        project=project,
        resources_analyzed=len(records),
        remediations=remediations,
        not_applicable=not_applicable,
        pack_output=output,
    )


def _plain(value: Any) -> Any:
    """Deep-copy mappings/sequences into plain dicts/lists for JSON."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

EXIT_OK = 0
EXIT_MANDATORY = 1
EXIT_BAD_INPUT = 2
EXIT_PACK_FAILED = 3


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m tools.policy_driver",
        description="Run a Python policy pack against resource records, offline, the way "
        "`pulumi preview --policy-pack --policy-pack-config` does.",
        epilog="exit status: 0 no mandatory violation, 1 mandatory violation, 2 bad input "
        "(records, config file, pack layout), 3 the pack failed (crash, RPC error, timeout)",
    )
    ap.add_argument("--pack", required=True, help="policy pack directory (has PulumiPolicy.yaml)")
    ap.add_argument("--config", help="policy pack config JSON (--policy-pack-config)")
    ap.add_argument("--records", required=True, help="records JSON (list, or report.json)")
    ap.add_argument("--stack", help="stack name (default: from the records' URNs)")
    ap.add_argument("--project", help="project name (default: from the records' URNs)")
    ap.add_argument("--organization", default="", help="organization name")
    ap.add_argument("--python", help="interpreter for the pack (default: this one)")
    ap.add_argument("--json", dest="json_out", help="also write the result as JSON here")
    ap.add_argument(
        "--max-in-flight", type=_positive_int, default=16, help="concurrent Analyze calls"
    )
    ap.add_argument(
        "--processes",
        type=_positive_int,
        help="copies of the pack to run (default: 1, or 2 for 1000+ records); 1 is the CLI's way",
    )
    ap.add_argument("--timeout", type=float, default=120.0, help="per-RPC timeout (seconds)")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the exit status."""
    args = _parse_args(argv)
    try:
        records = load_records(args.records)
        result = run_policy_pack(
            args.pack,
            records,
            config_path=args.config,
            stack=args.stack,
            project=args.project,
            organization=args.organization,
            python=args.python,
            max_in_flight=args.max_in_flight,
            processes=args.processes,
            rpc_timeout=args.timeout,
        )
    except (PolicyConfigError, RecordsError, PackLayoutError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except PolicyDriverError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_PACK_FAILED

    if result.pack_output.strip():
        print(f"policy pack output:\n{result.pack_output.rstrip()}", file=sys.stderr)
    print(f"stack {result.stack}: {result.summary_text()}")
    print()
    print(format_violations(result.violations), end="")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    return EXIT_MANDATORY if result.has_mandatory else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
