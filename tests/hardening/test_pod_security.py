"""Pod Security: every workload meets the ``restricted`` profile; the exceptions are pinned.

The checks are the policy pack's own pss-baseline and pss-restricted (restricted = both),
run in-process on the rendered pod templates with nothing exempt. The pack exempts no namespace
as such, only known components (``exemptComponents``: namespace and service account or pod
labels), and that list is pinned here. In the cluster, Pod Security Admission can only label
namespaces: the documented system namespaces (``PRIVILEGED_SYSTEM_NAMESPACES``) are the only
ones rendered with a non-restricted ``enforce`` label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aiplatform_policies import REGISTRY
from aiplatform_policies.harness import Fixture, Resource, run
from aiplatform_policies.podspec import pod_view
from aiplatform_policies.scope import EXEMPT_COMPONENTS_DEFAULT, components, exempt_component
from components.constants import (
    KUBE_SYSTEM_NAMESPACE,
    PRIVILEGED_SYSTEM_NAMESPACES,
    PSA_ENFORCE_LABEL,
    PSA_RESTRICTED,
    TEAM_LABEL,
)
from tests.hardening.pack import pack_info
from tools import policy_driver as pd
from tools.mockrun import CapturedResource, MockRun
from tools.netpol import WORKLOAD_KINDS

EXEMPT = frozenset({KUBE_SYSTEM_NAMESPACE, *PRIVILEGED_SYSTEM_NAMESPACES})
"""Namespaces Pod Security Admission does not restrict (kube-system is the cluster's own)."""
HOST_ACCESS_POLICIES = ("pss-baseline", "pss-restricted", "gpu-no-privileged-device-access")
CONFIG_DIR = Path(__file__).resolve().parents[2] / "policies" / "config"


def restricted_violations(resources: list[Resource]) -> list[str]:
    """What pss-baseline and pss-restricted report, with nothing exempt."""
    fixture = Fixture(
        path=Path("hardening"),
        policy="pss",
        allowed=True,
        resources=resources,
        config={"exemptComponents": []},
    )
    return [
        f"{name}: {message}"
        for name in ("pss-baseline", "pss-restricted")
        for message in run(REGISTRY[name].policy, fixture)
    ]


def as_resource(captured: CapturedResource) -> Resource:
    return Resource(type=captured.type, name=captured.name, inputs=captured.inputs)


def pod_templates(run_: MockRun[Any]) -> list[CapturedResource]:
    return [r for r in run_.kubernetes_objects() if r.kind in WORKLOAD_KINDS]


def namespace_labels(run_: MockRun[Any]) -> dict[str, dict[str, str]]:
    return {
        r.metadata["name"]: dict(r.metadata.get("labels") or {})
        for r in run_.kubernetes_objects()
        if r.kind == "Namespace"
    }


@pytest.fixture(params=["dev", "prod"])
def stack_run(request: pytest.FixtureRequest, dev_run, prod_run) -> MockRun[Any]:
    return dev_run if request.param == "dev" else prod_run


def test_every_team_workload_is_restricted(stack_run: MockRun[Any]) -> None:
    teams = {n for n, labels in namespace_labels(stack_run).items() if TEAM_LABEL in labels}
    workloads = [r for r in pod_templates(stack_run) if r.metadata.get("namespace") in teams]
    assert workloads, "no team workload rendered: nothing proved"
    for workload in workloads:
        assert not restricted_violations([as_resource(workload)]), workload.name


def test_only_known_components_run_unrestricted_pods(stack_run: MockRun[Any]) -> None:
    """Any pod template that is not a known component must be restricted, in whatever
    namespace: a platform namespace exempts nothing by itself."""
    known = components({"exemptComponents": list(EXEMPT_COMPONENTS_DEFAULT)}, "exemptComponents")
    for workload in pod_templates(stack_run):
        view = pod_view(workload.type, workload.inputs)
        assert view is not None
        if exempt_component(view, known) is None:
            assert not restricted_violations([as_resource(workload)]), workload.name


def test_non_restricted_namespaces_are_exactly_the_documented_ones(
    stack_run: MockRun[Any],
) -> None:
    labels = namespace_labels(stack_run)
    assert all(PSA_ENFORCE_LABEL in ns_labels for ns_labels in labels.values()), labels
    unrestricted = {n for n, ns in labels.items() if ns[PSA_ENFORCE_LABEL] != PSA_RESTRICTED}
    # kube-system is the cluster's own: exempt but never rendered by us.
    assert unrestricted == EXEMPT - {KUBE_SYSTEM_NAMESPACE}
    teams = {n for n, ns in labels.items() if TEAM_LABEL in ns}
    assert teams and not teams & EXEMPT


@pytest.mark.parametrize("config", sorted(CONFIG_DIR.glob("*.json")), ids=lambda p: p.name)
def test_policy_configs_exempt_exactly_the_known_components(config: Path) -> None:
    """The pack's effective exemptComponents (file or schema default) are the pinned list, and
    no namespace-wide exemption is left in any of the host-access policies."""
    effective = pd.reconcile_policy_config(pack_info(), pd.load_policy_pack_config(config), config)
    for name in HOST_ACCESS_POLICIES:
        properties = effective[name].properties
        assert properties["exemptComponents"] == list(EXEMPT_COMPONENTS_DEFAULT), name
        assert "exemptNamespaces" not in properties, name


def test_the_exception_list_is_pinned() -> None:
    """Growing it is a security decision: change this test and docs/security.md with it."""
    assert [(c["name"], c["namespace"]) for c in EXEMPT_COMPONENTS_DEFAULT] == [
        ("node-exporter", "monitoring"),
        ("fluent-bit", "logging"),
        ("gpu-operator", "gpu-operator"),
    ]
    assert all("serviceAccount" in c or "labels" in c for c in EXEMPT_COMPONENTS_DEFAULT)


def test_a_namespace_alone_exempts_nothing() -> None:
    """An entry that names only a namespace is dropped: it would exempt every pod there."""
    assert components({"exemptComponents": [{"name": "x", "namespace": "monitoring"}]}, "e") == ()
    assert components({"e": [{"name": "x", "namespace": "monitoring"}]}, "e") == ()


# --- the checker itself ---------------------------------------------------------------------------


def _pod(container: dict[str, Any], pod_security: dict[str, Any] | None = None) -> Resource:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "x:1", **container}]}
    if pod_security is not None:
        spec["securityContext"] = pod_security
    return Resource(
        type="kubernetes:core/v1:Pod",
        name="pod",
        inputs={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "pod", "namespace": "research"},
            "spec": spec,
        },
    )


GOOD_CONTAINER = {
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
}


def test_a_restricted_pod_passes() -> None:
    assert restricted_violations([_pod(GOOD_CONTAINER)]) == []
    pod_level = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    container = {
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    }
    assert restricted_violations([_pod(container, pod_level)]) == []


@pytest.mark.parametrize(
    "change",
    [
        {"privileged": True},
        {"allowPrivilegeEscalation": True},
        {"runAsNonRoot": False},
        {"runAsUser": 0},
        {"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}},
        {"capabilities": {"drop": ["NET_RAW"]}},
        {"seccompProfile": {"type": "Unconfined"}},
    ],
    ids=lambda c: json.dumps(c),
)
def test_an_unrestricted_container_fails(change: dict[str, Any]) -> None:
    container = {"securityContext": {**GOOD_CONTAINER["securityContext"], **change}}
    assert restricted_violations([_pod(container)])


def test_host_access_fails() -> None:
    pod = _pod(GOOD_CONTAINER)
    pod.inputs["spec"]["hostNetwork"] = True
    pod.inputs["spec"]["volumes"] = [{"name": "root", "hostPath": {"path": "/"}}]
    found = restricted_violations([pod])
    assert any("hostNetwork" in f for f in found) and any("hostPath" in f for f in found)
