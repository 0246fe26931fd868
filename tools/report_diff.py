"""Render a set of preview reports and diff two sets: proof that a refactoring changed nothing.

    python -m tools.report_diff render OUT [--root TREE] [--sizes 10,100,1000]
    python -m tools.report_diff diff BEFORE AFTER

``render`` previews the dev and prod stacks and the synthetic bench stacks (bench/synthetic.py)
of the checkout at ``--root`` (default: this one) into ``OUT/<stack>/report.json``; the synthetic
stack files are written once, into ``OUT/stacks``, from this checkout's bench module, so that two
trees render the same input. ``diff`` compares what the program declared (every resource with its
inputs, options, dependencies and manifest, the stack outputs, the policy findings and the
reachability matrix) and prints nothing when the two sets are identical; timings and paths are
ignored. Exit code 1 when they differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
IGNORED_KEYS = frozenset({"timings", "stackFile", "crdSchemas"})
"""Report keys that say how and where it ran, not what the program declared."""


def _stacks(out: Path, root: Path, sizes: list[int]) -> list[tuple[str, Path]]:
    from bench.synthetic import synthetic_config, write_stack_file

    stacks = [(name, root / f"Pulumi.{name}.yaml") for name in ("dev", "prod")]
    for size in sizes:
        name = f"bench{size}"
        path = out / "stacks" / f"Pulumi.{name}.yaml"
        if not path.exists():
            write_stack_file(out / "stacks", name, synthetic_config(size))
        stacks.append((name, path))
    return stacks


def render(out: Path, root: Path, sizes: list[int], crd_schemas: str | None) -> int:
    for name, stack_file in _stacks(out, root, sizes):
        command = [sys.executable, "-m", "tools.preview", "--stack", name, "--out", str(out)]
        command += ["--quiet", "--stack-file", str(stack_file)]
        if crd_schemas:
            command += ["--crd-schemas", crd_schemas]
        run = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if run.returncode not in (0, 1) or not (out / name / "report.json").exists():
            print(f"{name}: preview exited {run.returncode}\n{run.stdout}{run.stderr}")
            return 2
        print(f"{name}: {out / name / 'report.json'}", file=sys.stderr)
    return 0


def _resources(report: dict[str, Any]) -> dict[str, Any]:
    return {resource["urn"]: resource for resource in report.get("resources", [])}


def _describe(before: Any, after: Any, path: str, lines: list[str], limit: int = 40) -> None:
    """The paths at which ``before`` and ``after`` differ, one line each (at most ``limit``)."""
    if len(lines) >= limit or before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            if key not in after:
                lines.append(f"  {path}.{key}: removed")
            elif key not in before:
                lines.append(f"  {path}.{key}: added {json.dumps(after[key])[:200]}")
            else:
                _describe(before[key], after[key], f"{path}.{key}", lines, limit)
        return
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for index, (left, right) in enumerate(zip(before, after, strict=True)):
            _describe(left, right, f"{path}[{index}]", lines, limit)
        return
    lines.append(f"  {path}: {json.dumps(before)[:200]} -> {json.dumps(after)[:200]}")


def diff_reports(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    old, new = _resources(before), _resources(after)
    for urn in sorted(set(old) - set(new)):
        lines.append(f"  removed {urn}")
    for urn in sorted(set(new) - set(old)):
        lines.append(f"  added {urn}")
    if [r for r in old if r in new] != [r for r in new if r in old]:
        lines.append("  resources registered in another order")
    for urn in sorted(set(old) & set(new)):
        _describe(old[urn], new[urn], urn, lines)
    for key in sorted((set(before) | set(after)) - IGNORED_KEYS - {"resources"}):
        _describe(before.get(key), after.get(key), key, lines)
    return lines


def diff(before: Path, after: Path) -> int:
    names = sorted(
        {p.parent.name for p in before.glob("*/report.json")}
        | {p.parent.name for p in after.glob("*/report.json")}
    )
    different = False
    for name in names:
        left, right = before / name / "report.json", after / name / "report.json"
        if not left.exists() or not right.exists():
            print(f"{name}: only in {before if left.exists() else after}")
            different = True
            continue
        lines = diff_reports(
            json.loads(left.read_text(encoding="utf-8")),
            json.loads(right.read_text(encoding="utf-8")),
        )
        if lines:
            print(f"{name}:")
            print("\n".join(lines))
            different = True
    return 1 if different else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.report_diff", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    render_parser = commands.add_parser("render", help="preview every stack into OUT")
    render_parser.add_argument("out")
    render_parser.add_argument("--root", default=str(PROJECT_ROOT), help="checkout to render")
    render_parser.add_argument("--sizes", default="10,100,1000", help="synthetic stack sizes")
    render_parser.add_argument("--crd-schemas", help="as tools.preview --crd-schemas")
    diff_parser = commands.add_parser("diff", help="diff two rendered sets; silent when equal")
    diff_parser.add_argument("before")
    diff_parser.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "render":
        sizes = [int(size) for size in args.sizes.split(",") if size]
        out = Path(args.out).resolve()
        return render(out, Path(args.root).resolve(), sizes, args.crd_schemas)
    return diff(Path(args.before), Path(args.after))


if __name__ == "__main__":
    sys.exit(main())
