"""Render a set of preview reports and diff two sets: proof that a refactoring changed nothing.

    python -m tools.report_diff render OUT [--root TREE] [--sizes 10,100,1000]
    python -m tools.report_diff diff BEFORE AFTER

``render`` previews the dev and prod stacks and the synthetic bench stacks (bench/synthetic.py)
of the checkout at ``--root`` (default: this one) into ``OUT/<stack>/report.json``; the synthetic
stack files are written once, into ``OUT/stacks``, from this checkout's bench module, so that two
trees render the same input. ``diff`` compares what the program declared (every resource with its
inputs, options, dependencies and manifest, the stack outputs, the policy findings and the
reachability matrix) and prints nothing when the two sets are identical; timings and paths are
ignored, and so is the order of registration, of dependency lists and of what the preview lists
per resource, which differ between two runs of one commit (``_normal``, ``_unordered``). Exit
code 1 when they differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parent.parent
IGNORED_KEYS = frozenset({"timings", "stackFile", "crdSchemas", "configFile"})
"""Report keys that say how and where it ran, not what the program declared."""
PROSE_KEYS = frozenset({"reason"})
"""A reachability flow's explanation: it names the policies in the order they were registered;
whether the flow is allowed, and by which rules, is compared."""


def _stacks(out: Path, root: Path, sizes: list[int]) -> list[tuple[str, Path, bool]]:
    """``(name, stack file, synthetic)`` of every stack to render."""
    from bench.synthetic import synthetic_config, write_stack_file

    stacks = [(name, root / f"Pulumi.{name}.yaml", False) for name in ("dev", "prod")]
    for size in sizes:
        name = f"bench{size}"
        path = out / "stacks" / f"Pulumi.{name}.yaml"
        if not path.exists():
            write_stack_file(out / "stacks", name, synthetic_config(size))
        stacks.append((name, path, True))
    return stacks


def render(out: Path, root: Path, sizes: list[int], crd_schemas: str | None) -> int:
    for name, stack_file, synthetic in _stacks(out, root, sizes):
        command = [sys.executable, "-m", "tools.preview", "--stack", name, "--out", str(out)]
        command += ["--quiet", "--stack-file", str(stack_file)]
        if synthetic:
            # As the benchmark renders them: the larger ones pass more config than one engine
            # run can take, which is the benchmark's point, not a deployable stack.
            command.append("--ignore-engine-limits")
        if crd_schemas:
            command += ["--crd-schemas", crd_schemas]
        run = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if run.returncode not in (0, 1) or not (out / name / "report.json").exists():
            print(f"{name}: preview exited {run.returncode}\n{run.stdout}{run.stderr}")
            return 2
        print(f"{name}: {out / name / 'report.json'}", file=sys.stderr)
    return 0


def _normal(resource: dict[str, Any]) -> dict[str, Any]:
    """The resource with its dependency lists sorted: the SDK registers a program's resources
    and expands a component's dependencies as its coroutines finish, so two runs of one commit
    list them in different orders; the engine treats each list as a set."""
    options = dict(resource.get("options") or {})
    if isinstance(options.get("dependsOn"), list):
        options["dependsOn"] = sorted(options["dependsOn"])
    dependencies = {
        key: sorted(value) if isinstance(value, list) else value
        for key, value in (resource.get("propertyDependencies") or {}).items()
    }
    return {**resource, "options": options, "propertyDependencies": dependencies}


def _unordered(value: Any) -> Any:
    """``value`` without the order of its lists or its ignored keys: what the preview derives
    from the resources (schema results, policy findings, reachability) lists them in the order
    they were registered."""
    if isinstance(value, dict):
        skip = IGNORED_KEYS | PROSE_KEYS
        return {k: _unordered(v) for k, v in value.items() if k not in skip}
    if isinstance(value, list):
        return sorted(
            (_unordered(item) for item in value), key=lambda i: json.dumps(i, sort_keys=True)
        )
    return value


def _resources(report: dict[str, Any]) -> dict[str, Any]:
    return {resource["urn"]: _normal(resource) for resource in report.get("resources", [])}


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
    for urn in sorted(set(old) & set(new)):
        _describe(old[urn], new[urn], urn, lines)
    for key in sorted((set(before) | set(after)) - IGNORED_KEYS - {"resources"}):
        _describe(_unordered(before.get(key)), _unordered(after.get(key)), key, lines)
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
