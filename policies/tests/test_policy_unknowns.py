"""During ``pulumi preview`` any input may be unknown. Policies must then either pass or let the
SDK's ``UnknownValueError`` through (the SDK turns it into an advisory "can't run during
preview" diagnostic); any other exception would fail the whole preview.

Every node of every fixture manifest is replaced, one at a time, by the sentinel of its type, and
every policy runs on the result.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy import StackValidationArgs, StackValidationPolicy
from pulumi_policy.proxy import (
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

from aiplatform_policies import METAS
from aiplatform_policies.harness import (
    Fixture,
    all_fixtures,
    iter_paths,
    policy_resource,
    resource_args,
    wire,
)

FIXTURES = all_fixtures()


def sentinel(value: Any) -> str:
    if isinstance(value, dict):
        return UNKNOWN_OBJECT_VALUE
    if isinstance(value, list):
        return UNKNOWN_ARRAY_VALUE
    if isinstance(value, bool):
        return UNKNOWN_BOOLEAN_VALUE
    if isinstance(value, int | float):
        return UNKNOWN_NUMBER_VALUE
    return UNKNOWN_STRING_VALUE


def with_unknown(inputs: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any]:
    result = copy.deepcopy(inputs)
    node: Any = result
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = sentinel(node[path[-1]])
    return result


def _ignore(message: str, urn: str | None = None) -> None:
    return None


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.id for f in FIXTURES])
def test_unknown_values_never_crash_a_policy(fixture: Fixture) -> None:
    wired = [wire(r.inputs) for r in fixture.resources]
    unknown_reported = 0
    for index, resource in enumerate(fixture.resources):
        for path in iter_paths(wired[index]):
            variant = with_unknown(wired[index], path)
            args = resource_args(resource, {}, variant)
            stack = StackValidationArgs(
                [
                    policy_resource(r, variant if i == index else wired[i])
                    for i, r in enumerate(fixture.resources)
                ],
                None,
            )
            for meta in METAS:
                policy = meta.policy
                try:
                    if isinstance(policy, StackValidationPolicy):
                        policy.validate(stack, _ignore)
                    else:
                        policy.validate(args, _ignore)
                except UnknownValueError:
                    unknown_reported += 1
                except Exception as exc:  # pragma: no cover - the failure being tested for
                    raise AssertionError(
                        f"{meta.name} raised {type(exc).__name__}: {exc} with "
                        f"{'.'.join(map(str, path))} unknown in {resource.name}"
                    ) from exc
    assert unknown_reported, "no policy read an unknown value: the fixture exercises nothing"
