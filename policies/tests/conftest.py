"""Make the pack's modules importable the way ``policies/__main__.py`` does, without running it.

``policies/`` gives ``aiplatform_policies``; the project root gives ``components.constants``.
Tests never import ``policies/__main__.py``: constructing the PolicyPack starts a server and blocks.
"""

from __future__ import annotations

import sys
from pathlib import Path

PACK_DIR = Path(__file__).resolve().parent.parent
PROJECT_ROOT = PACK_DIR.parent
for path in (str(PROJECT_ROOT), str(PACK_DIR), str(Path(__file__).resolve().parent)):
    if path not in sys.path:
        sys.path.insert(0, path)
