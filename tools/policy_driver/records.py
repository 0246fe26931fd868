"""Resource records (docs/resource-records.md) to the protobuf messages the engine sends."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from ..records import ENGINE_UNKNOWN, UNKNOWN_MARK
from .errors import RecordsError


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
        return ENGINE_UNKNOWN if value == UNKNOWN_MARK else value
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
            if UNKNOWN_MARK in json.dumps(props):
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
