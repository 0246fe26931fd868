"""The chart mirror the e2e installs from, laid out as ``ai-platform:charts`` reads it.

The shared folder holds every pinned chart but Kueue's: Kueue is pinned at the release whose
controller can be built here, and that release's chart is the one in its own Go module
(``charts/kueue``, version set in its Chart.yaml). The mirror is links, nothing is copied.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from . import build as builds

KUEUE_MODULE = "sigs.k8s.io/kueue"


def kueue_chart() -> Path:
    """The Kueue chart of the module ``tools/e2e/go/kueue`` requires (downloaded if needed)."""
    tool = builds.TOOLS["kueue"]
    return builds.module_dir_of(tool.module_dir, KUEUE_MODULE) / "charts" / "kueue"


def assemble_mirror(target: Path, shared_charts: Path) -> Path:
    """``target`` laid out ``<chart>/<version>/``: every chart of ``shared_charts``, and Kueue's
    from its module. Returns ``target``."""
    sources = [p for p in shared_charts.glob("*/*") if (p / "Chart.yaml").is_file()]
    sources.append(kueue_chart())
    for source in sources:
        chart = yaml.safe_load((source / "Chart.yaml").read_text(encoding="utf-8"))
        link = target / str(chart["name"]) / str(chart["version"])
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(source.resolve(), target_is_directory=True)
    return target
