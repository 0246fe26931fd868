"""The policy pack's cost: a stack's records repeated to any count, driven end to end.

Why repeat a real stack: the records keep the prod mix of kinds and payload sizes, so the
figure is the cost per resource of *our* pack, not of an artificial one. Each copy gets its own
URNs and logical names (parents, dependencies and provider references rewritten to match), so the
driver and stack policies see that many distinct resources.

Why a no-op pack beside it (``bench/noop_pack``): the analyzer protocol, the driver and the pack
runtime cost the same whatever the policies do, and that part depends on the machine as much as
ours does; ours against the no-op pack, driven the same way in the same run, is what our policies
cost, on any machine.

    python -m bench.policy_load --report build/prod/report.json --records 5000 [--noop]

runs one measurement in this process and prints one JSON line: wall seconds, CPU seconds (this
process, all threads, plus the pack processes it started and reaped), resources, violations.
"""

from __future__ import annotations

import argparse
import copy
import json
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NOOP_PACK = Path(__file__).resolve().parent / "noop_pack"
PROD_POLICY_CONFIG = PROJECT_ROOT / "policies" / "config" / "prod.json"
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
    cpu_seconds: float = 0.0
    """This process (all threads) and the pack processes it reaped."""

    @property
    def per_second(self) -> float:
        return self.resources / self.seconds if self.seconds else 0.0


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def run_policy_load(
    project_root: Path,
    records: Sequence[Mapping[str, Any]],
    config: Path | None,
    stack: str,
    *,
    pack_dir: Path | None = None,
) -> PolicyLoadResult:
    """``run_policy_pack`` over ``records``, timed from before the pack starts to its stop.

    ``pack_dir`` defaults to the project's pack; the CPU seconds are this process's and those of
    the pack processes, which the driver reaps before it returns.
    """
    from tools.policy_driver import run_policy_pack
    from tools.policy_step import PACK_DIR

    pack = pack_dir or project_root / PACK_DIR
    start, cpu = time.perf_counter(), _cpu()
    result = run_policy_pack(pack, records, config_path=config, stack=stack)
    seconds = time.perf_counter() - start
    return PolicyLoadResult(len(records), seconds, len(result.violations), _cpu() - cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.policy_load", description=__doc__)
    parser.add_argument("--report", required=True, help="a preview's report.json")
    parser.add_argument("--records", type=int, default=5000, help="records to drive")
    parser.add_argument("--noop", action="store_true", help="drive bench/noop_pack instead")
    args = parser.parse_args(argv)
    records = json.loads(Path(args.report).read_text(encoding="utf-8"))["resources"]
    synthesized = repeat_records(records, args.records)
    if args.noop:
        result = run_policy_load(PROJECT_ROOT, synthesized, None, "prod", pack_dir=NOOP_PACK)
    else:
        result = run_policy_load(PROJECT_ROOT, synthesized, PROD_POLICY_CONFIG, "prod")
    print(
        json.dumps(
            {
                "seconds": round(result.seconds, 4),
                "cpuSeconds": round(result.cpu_seconds, 4),
                "resources": result.resources,
                "violations": result.violations,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
