"""``python -m tools.policy_driver``: the driver on the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .analyzer import run_policy_pack
from .errors import PackLayoutError, PolicyConfigError, PolicyDriverError, RecordsError
from .records import load_records
from .results import format_violations

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
