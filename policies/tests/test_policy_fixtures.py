"""Kyverno/Gatekeeper-style cases: every fixture runs its policy and must report exactly the
messages it expects (none for ``allowed-*``)."""

from __future__ import annotations

import pytest

from aiplatform_policies import REGISTRY
from aiplatform_policies.harness import Fixture, all_fixtures, run

FIXTURES = all_fixtures()


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_fixture(fixture: Fixture) -> None:
    assert fixture.policy in REGISTRY, f"fixture folder names no policy: {fixture.policy}"
    if fixture.allowed:
        assert not fixture.expect, "allowed fixtures expect no messages"
    else:
        assert fixture.expect, "disallowed fixtures must list the exact messages they expect"
    messages = run(REGISTRY[fixture.policy].policy, fixture)
    assert messages == fixture.expect
