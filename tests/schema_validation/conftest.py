"""Fixtures: the shared CRD catalog and a validator for the platform's default Kubernetes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.schema_validation import ManifestValidator, default_crd_location

KUBERNETES_VERSION = "1.33"
"""The default of ``ClusterConfig.kubernetes_version``."""


@pytest.fixture(scope="session")
def crd_dir() -> Path:
    """``$AIPLATFORM_CRD_SCHEMAS`` or ``<project root>/../shared/crd-schemas``; never copied."""
    folder = Path(default_crd_location())
    if not (folder / "karpenter.sh" / "nodepool_v1.json").is_file():
        pytest.fail(f"CRD schema catalog not found at {folder}; set AIPLATFORM_CRD_SCHEMAS")
    return folder


@pytest.fixture(scope="session")
def validator(crd_dir: Path) -> ManifestValidator:
    return ManifestValidator(KUBERNETES_VERSION, crd_dir)
