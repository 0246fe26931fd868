"""Fixtures of the hardening proofs, and the policy pack importable in-process.

The proofs reuse the pack's Pod Security checks and its self-description, importable the way
``policies/__main__.py`` arranges it; they never import ``policies/__main__.py`` (constructing the
PolicyPack starts a server and blocks). ``dev_run`` and ``prod_run`` come from tests/conftest.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hardening.stacks import Preview, project, run_preview, run_with_known_secrets
from tools.mockrun import MockRun

PACK_DIR = Path(__file__).resolve().parents[2] / "policies"
for _path in (PACK_DIR, PACK_DIR / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


@pytest.fixture(scope="session")
def prod_secrets_run() -> MockRun[Any]:
    """Prod with known receiver credentials (secret config) and a known generated password."""
    return run_with_known_secrets("prod")


@pytest.fixture(scope="session")
def prod_preview(tmp_path_factory: pytest.TempPathFactory) -> Preview:
    """``make preview STACK=prod`` on a copy of Pulumi.prod.yaml, with known secrets."""
    tmp_path = tmp_path_factory.mktemp("prod-preview")
    return run_preview(project(tmp_path, "prod"), tmp_path / "out", "prod")
