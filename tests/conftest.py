from __future__ import annotations

import os

import pytest

from tests.harness import run_stack, stack_config
from tools import schema_validation as sv


@pytest.fixture(scope="session")
def dev_run():
    return run_stack("dev")


@pytest.fixture(scope="session")
def prod_run():
    return run_stack("prod")


@pytest.fixture
def dev_config():
    return stack_config("dev")


@pytest.fixture
def prod_config():
    return stack_config("prod")


@pytest.fixture(scope="session", autouse=True)
def schema_check_cache(tmp_path_factory):
    """The suite's previews (in process and as child processes) keep their CRD schema check
    verdicts in a folder of the run, not in the user's cache."""
    if sv.SCHEMA_CHECK_CACHE_ENV in os.environ:
        yield
        return
    os.environ[sv.SCHEMA_CHECK_CACHE_ENV] = str(tmp_path_factory.mktemp("schema-checks"))
    try:
        yield
    finally:
        del os.environ[sv.SCHEMA_CHECK_CACHE_ENV]
