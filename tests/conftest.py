from __future__ import annotations

import pytest

from tests.harness import run_stack, stack_config


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
