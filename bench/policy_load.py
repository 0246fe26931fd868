"""Policy analyzer throughput: a stack's records repeated to any count, driven end to end.

Why repeat a real stack: the records keep the prod mix of kinds and payload sizes, so the
figure is resources per second of *our* pack, not of an artificial one. Each copy gets its own
URNs and logical names (parents, dependencies and provider references rewritten to match), so the
driver and stack policies see that many distinct resources.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_RECORD_KEYS = ("urn", "type", "name", "custom", "parent", "inputs", "options")


def _rename_urn(urn: str, suffix: str) -> str:
    head, sep, name = urn.rpartition("::")
    return f"{head}{sep}{name}{suffix}" if sep else urn


def repeat_records(records: Sequence[Mapping[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` records: copies of ``records`` (``report.json`` resources) with unique URNs.

    Copy 0 keeps the original URNs; copy ``k`` appends ``-r<k>`` to every logical name and
    rewrites every URN reference (parent, dependsOn, provider, property dependencies) to the
    URNs of the same copy.
    """
    base = [
        {key: r[key] for key in (*_RECORD_KEYS, "propertyDependencies") if key in r}
        for r in records
    ]
    if not base:
        raise ValueError("no records to repeat")
    out: list[dict[str, Any]] = []
    copy_index = 0
    while len(out) < count:
        suffix = f"-r{copy_index}" if copy_index else ""
        mapping = {r["urn"]: _rename_urn(r["urn"], suffix) for r in base}

        def rename(urn: str, mapping: dict[str, str] = mapping) -> str:
            return mapping.get(urn, urn)

        for record in base:
            if len(out) == count:
                break
            new = copy.deepcopy(record)
            new["urn"] = rename(record["urn"])
            new["name"] = f"{record['name']}{suffix}"
            if new.get("parent"):
                new["parent"] = rename(new["parent"])
            options = new.get("options") or {}
            options["dependsOn"] = [rename(u) for u in options.get("dependsOn") or []]
            provider = options.get("provider")
            if provider:
                urn, sep, ident = provider.rpartition("::")
                options["provider"] = f"{rename(urn)}{sep}{ident}" if urn in mapping else provider
            new["propertyDependencies"] = {
                key: [rename(u) for u in urns]
                for key, urns in (new.get("propertyDependencies") or {}).items()
            }
            out.append(new)
        copy_index += 1
    return out


@dataclass(frozen=True)
class PolicyLoadResult:
    """One end-to-end run of the pack over ``resources`` records."""

    resources: int
    seconds: float
    violations: int

    @property
    def per_second(self) -> float:
        return self.resources / self.seconds if self.seconds else 0.0


def run_policy_load(
    project_root: Path, records: Sequence[Mapping[str, Any]], config: Path | None, stack: str
) -> PolicyLoadResult:
    """``run_policy_pack`` over ``records``, timed from before the pack starts to its stop."""
    from tools.policy_driver import run_policy_pack
    from tools.policy_step import PACK_DIR

    start = time.perf_counter()
    result = run_policy_pack(project_root / PACK_DIR, records, config_path=config, stack=stack)
    seconds = time.perf_counter() - start
    return PolicyLoadResult(len(records), seconds, len(result.violations))
