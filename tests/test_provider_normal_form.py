"""What the platform renders is what the Kubernetes provider sends: no field the provider's Check
drops (a false or empty value the API omits), or the offline preview would differ from
``pulumi preview`` (make e2e compares them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

DROPPED_WHEN_EMPTY = {
    "NetworkPolicy": ("spec.ingress", "spec.egress"),
    "PriorityClass": ("globalDefault",),
    "ValidatingAdmissionPolicy": ("spec.variables",),
}
"""Fields the provider omits at their zero value (``omitempty`` in the API's types), as the real
preview showed."""


def _at(document: dict[str, Any], path: str) -> Iterator[Any]:
    node: Any = document
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return
        node = node[part]
    yield node


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_no_rendered_field_is_one_the_provider_drops(stack, dev_run, prod_run):
    run = {"dev": dev_run, "prod": prod_run}[stack]
    found = [
        f"{r.kind} {r.metadata.get('name')}: {path} = {value!r}"
        for r in run.kubernetes_objects()
        for path in DROPPED_WHEN_EMPTY.get(r.kind, ())
        for value in _at(r.inputs, path)
        if value in (False, [], {})
    ]
    assert found == []
