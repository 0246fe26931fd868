"""What the platform renders is what the Kubernetes provider sends: no field the provider's Check
drops (a false or empty value the API omits), or the offline preview would differ from
``pulumi preview`` (make e2e compares them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

_CONTAINER_PORTS = "spec.template.spec.containers.*.ports"
DROPPED_WHEN_EMPTY = {
    "NetworkPolicy": ("spec.ingress", "spec.egress"),
    "Deployment": (_CONTAINER_PORTS,),
    "StatefulSet": (_CONTAINER_PORTS,),
    "Job": (_CONTAINER_PORTS,),
    "PriorityClass": ("globalDefault",),
    "ValidatingAdmissionPolicy": ("spec.variables",),
}
"""Fields the provider omits at their zero value (``omitempty`` in the API's types), as the real
preview showed."""


def _at(document: Any, path: str) -> Iterator[Any]:
    """The values at ``path``; a ``*`` part stands for every item of a list."""
    part, _, rest = path.partition(".")
    if part == "*":
        items = document if isinstance(document, list) else []
    elif isinstance(document, dict) and part in document:
        items = [document[part]]
    else:
        return
    for item in items:
        yield from _at(item, rest) if rest else [item]


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
