"""``python -m tools.e2e build|cluster|run``: see the package docstring."""

from __future__ import annotations

import sys

from . import build, cluster, compare, day2, run


def main(argv: list[str]) -> int:
    commands = {
        "build": build.main,
        "cluster": cluster.main,
        "run": run.main,
        "day2": day2.main,
        "compare": compare.main,
    }
    if not argv or argv[0] not in commands:
        print(f"usage: python -m tools.e2e {{{'|'.join(commands)}}} ...", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
