"""Fixtures of the hardening proofs, and the policy pack importable in-process.

The proofs reuse the pack's Pod Security checks and its self-description, importable the way
``policies/__main__.py`` arranges it; they never import ``policies/__main__.py`` (constructing the
PolicyPack starts a server and blocks). ``dev_run`` and ``prod_run`` come from tests/conftest.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.hardening.stacks import Preview, project, run_preview, run_with_known_secrets
from tools.mockrun import MockRun


@pytest.fixture(scope="session")
def prod_secrets_run() -> MockRun[Any]:
    """Prod with known receiver credentials (secret config) and a known generated password."""
    return run_with_known_secrets("prod")


@pytest.fixture(scope="session")
def prod_preview(tmp_path_factory: pytest.TempPathFactory) -> Preview:
    """``make preview STACK=prod`` on a copy of Pulumi.prod.yaml, with known secrets."""
    tmp_path = tmp_path_factory.mktemp("prod-preview")
    return run_preview(project(tmp_path, "prod"), tmp_path / "out", "prod")
