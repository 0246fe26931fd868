"""``make e2e-day2``: day two on the real engine, section by section, each on a cluster of its own.

    python -m tools.e2e day2 --stack dev [--section kueue --section faults ...]

A section is a module of this package with ``run_section(e2e)``: it deploys what it needs through
the :class:`~tools.e2e.run.E2E` it is given (inside ``e2e.session()``) and records each of its
checks with ``e2e.step(name, action)``. Every section has its own work folder,
``build/e2e/<stack>-day2-<section>/``, with its report; the summary is
``build/e2e/<stack>-day2/report.json``. Exit 0 only if every step of every section passes.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
from collections.abc import Sequence
from typing import Protocol

from .run import E2E, WORK_ROOT

SECTIONS: dict[str, tuple[str, str | None]] = {
    "kueue": ("tools.e2e.day2_kueue", None),
    "faults": ("tools.e2e.day2_faults", None),
    "destroy": ("tools.e2e.day2_destroy", "prod"),
}
"""Section name -> (module, the stack it needs, None: the one asked for); in the order they run.
Destroy needs a stack that protects its data: the prod stack file."""


class Section(Protocol):
    def run_section(self, e2e: E2E) -> None: ...


def run(stack: str, sections: Sequence[str]) -> int:
    summary: dict[str, object] = {}
    codes = []
    for name in sections:
        module_name, needs = SECTIONS[name]
        module: Section = importlib.import_module(module_name)
        section_stack = needs or stack
        e2e = E2E(section_stack, work_dir=WORK_ROOT / f"{section_stack}-day2-{name}")
        code = e2e.run(functools.partial(module.run_section, e2e))
        codes.append(code)
        summary[name] = e2e.report.to_dict()
        if code == 130:
            break
    out = WORK_ROOT / f"{stack}-day2" / "report.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    passed = bool(codes) and all(code == 0 for code in codes)
    out.write_text(json.dumps({"stack": stack, "passed": passed, "sections": summary}, indent=2))
    print(f"e2e day two {stack}: {'PASS' if passed else 'FAIL'} ({out})")
    return 130 if 130 in codes else (0 if passed else 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.e2e day2", description=__doc__)
    parser.add_argument("--stack", default="dev", help="reads Pulumi.<stack>.yaml (default: dev)")
    parser.add_argument(
        "--section",
        action="append",
        choices=sorted(SECTIONS),
        help="run only these sections (repeatable; default: all, in order)",
    )
    args = parser.parse_args(argv)
    return run(args.stack, args.section or list(SECTIONS))
