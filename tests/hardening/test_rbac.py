"""RBAC: a team's groups act only in the team's own namespace, and never on the cluster.

Checked on every Role, ClusterRole, RoleBinding and ClusterRoleBinding the dev and prod stacks
render (extraManifests included): team groups (``adminGroups``/``viewerGroups``) and team service
accounts appear only in RoleBindings of their own namespace, which bind only Roles defined in that
namespace; no ClusterRoleBinding names them; and the Roles they get grant no wildcard, no RBAC or
impersonation power, no write on the objects that enforce isolation (NetworkPolicies, quotas,
limit ranges, RBAC) and nothing cluster-scoped.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from infra.config import ConfigError, validate_platform_config
from tests.harness import stack_config

RBAC_GROUP = "rbac.authorization.k8s.io"
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
POWER_VERBS = frozenset({"escalate", "bind", "impersonate"})
ISOLATION_RESOURCES = frozenset(
    {
        ("networking.k8s.io", "networkpolicies"),
        ("", "resourcequotas"),
        ("", "limitranges"),
        ("", "namespaces"),
        (RBAC_GROUP, "roles"),
        (RBAC_GROUP, "rolebindings"),
        (RBAC_GROUP, "clusterroles"),
        (RBAC_GROUP, "clusterrolebindings"),
    }
)
"""What a team must not change: it would undo its own isolation or quota."""
CLUSTER_SCOPED = frozenset(
    {
        "nodes",
        "namespaces",
        "persistentvolumes",
        "storageclasses",
        "priorityclasses",
        "clusterroles",
        "clusterrolebindings",
        "customresourcedefinitions",
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
        "certificatesigningrequests",
        "csidrivers",
        "csinodes",
        "volumeattachments",
        "runtimeclasses",
        "ingressclasses",
        "apiservices",
        "clusterqueues",
        "resourceflavors",
        "cohorts",
        "workloadpriorityclasses",
        "nodepools",
        "nodeclaims",
        "ec2nodeclasses",
    }
)


@dataclass(frozen=True)
class Tenancy:
    """Which namespace each team owns and which groups each team names."""

    groups: dict[str, frozenset[str]]
    """Group → namespaces of the teams that list it."""
    namespaces: frozenset[str]


def tenancy(config: dict[str, Any]) -> Tenancy:
    groups: dict[str, set[str]] = {}
    namespaces = set()
    for team in config["teams"]:
        namespace = team.get("namespace") or team["name"]
        namespaces.add(namespace)
        for group in [*team.get("adminGroups", []), *team.get("viewerGroups", [])]:
            groups.setdefault(group, set()).add(namespace)
    return Tenancy({g: frozenset(ns) for g, ns in groups.items()}, frozenset(namespaces))


def team_subject(
    subject: dict[str, Any], binding_ns: str | None, tenants: Tenancy
) -> tuple[str, frozenset[str]] | None:
    """``(what it is, namespaces it may be bound in)`` for a team's subject, else None."""
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    if kind == "Group" and name in tenants.groups:
        return f"team group {name}", tenants.groups[name]
    accounts_of = name.removeprefix("system:serviceaccounts:")
    if kind == "Group" and accounts_of != name and accounts_of in tenants.namespaces:
        return f"service accounts group {name}", frozenset({accounts_of})
    sa_namespace = subject.get("namespace") or binding_ns
    if kind == "ServiceAccount" and sa_namespace in tenants.namespaces:
        return f"service account {sa_namespace}/{name}", frozenset({sa_namespace})
    return None


def rule_problems(rule: dict[str, Any]) -> Iterable[str]:
    groups = set(rule.get("apiGroups") or [])
    resources = set(rule.get("resources") or [])
    verbs = set(rule.get("verbs") or [])
    if "*" in groups | resources | verbs or rule.get("nonResourceURLs"):
        yield f"wildcard or non-resource rule {rule}"
    if verbs & POWER_VERBS:
        yield f"grants {sorted(verbs & POWER_VERBS)}"
    if verbs & WRITE_VERBS:
        base = {r.split("/")[0] for r in resources}
        for group in groups:
            touched = {r for r in base if (group, r) in ISOLATION_RESOURCES}
            if touched:
                yield f"may write {sorted(touched)} ({group or 'core'})"
        if base & CLUSTER_SCOPED:
            yield f"may write cluster-scoped {sorted(base & CLUSTER_SCOPED)}"


def rbac_problems(manifests: list[dict[str, Any]], tenants: Tenancy) -> list[str]:
    """Every way the rendered RBAC lets a team act outside its namespace (empty: none)."""
    roles = {
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m
        for m in manifests
        if m.get("kind") in ("Role", "ClusterRole")
    }
    problems: list[str] = []
    for binding in (m for m in manifests if m.get("kind") in ("RoleBinding", "ClusterRoleBinding")):
        namespace = binding["metadata"].get("namespace")
        where = f"{binding['kind']} {namespace or ''}/{binding['metadata']['name']}"
        for subject in binding.get("subjects") or []:
            found = team_subject(subject, namespace, tenants)
            if found is None:
                continue
            why, own = found
            if binding["kind"] == "ClusterRoleBinding":
                problems.append(f"{where} binds {why} cluster-wide")
                continue
            if namespace not in own:
                problems.append(f"{where} binds {why} outside its own namespace")
            ref = binding.get("roleRef") or {}
            role = roles.get((ref.get("kind"), namespace, ref.get("name")))
            if ref.get("kind") != "Role" or role is None:
                problems.append(f"{where} binds {ref} for {why}: not a Role of {namespace}")
                continue
            problems.extend(f"{where} -> Role {ref['name']}: {p}" for p in _role_rules(role))
    return problems


def _role_rules(role: dict[str, Any]) -> Iterable[str]:
    for rule in role.get("rules") or []:
        yield from rule_problems(rule)


@pytest.fixture(params=["dev", "prod"])
def stack(request: pytest.FixtureRequest, dev_run, prod_run) -> tuple[Any, dict[str, Any]]:
    run = dev_run if request.param == "dev" else prod_run
    return run, stack_config(request.param)


def test_team_groups_act_only_in_their_namespace(stack) -> None:
    run, config = stack
    manifests = [r.inputs for r in run.kubernetes_objects()]
    assert not rbac_problems(manifests, tenancy(config))


def test_every_team_group_is_bound_in_its_namespace(stack) -> None:
    """Not vacuous: each configured group has a RoleBinding in its team's namespace."""
    run, config = stack
    tenants = tenancy(config)
    bound = {
        (r.metadata.get("namespace"), s["name"])
        for r in run.kubernetes_objects()
        if r.kind == "RoleBinding"
        for s in r.inputs.get("subjects") or []
        if s.get("kind") == "Group"
    }
    for group, namespaces in tenants.groups.items():
        for namespace in namespaces:
            assert (namespace, group) in bound, (namespace, group)


def test_the_checker_catches_escapes(prod_run) -> None:
    """Not vacuous: bindings that leak a team out of its namespace are all reported."""
    tenants = tenancy(stack_config("prod"))
    manifests = [copy.deepcopy(r.inputs) for r in prod_run.kubernetes_objects()]
    group = {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "ml-research-leads"}
    manifests += [
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "oops"},
            "roleRef": {"kind": "ClusterRole", "name": "view", "apiGroup": RBAC_GROUP},
            "subjects": [group],
        },
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "peek", "namespace": "search-serving"},
            "roleRef": {"kind": "Role", "name": "team-viewer", "apiGroup": RBAC_GROUP},
            "subjects": [group],
        },
        {
            "apiVersion": f"{RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "sa", "namespace": "platform"},
            "roleRef": {"kind": "Role", "name": "team-admin", "apiGroup": RBAC_GROUP},
            "subjects": [{"kind": "ServiceAccount", "name": "workload", "namespace": "research"}],
        },
    ]
    admin = next(
        m for m in manifests if m["kind"] == "Role" and m["metadata"]["name"] == "team-admin"
    )
    admin["rules"].append(
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["create"]}
    )
    problems = rbac_problems(manifests, tenants)
    assert any("ClusterRoleBinding /oops" in p for p in problems)
    assert any("search-serving/peek" in p and "outside" in p for p in problems)
    assert any("platform/sa" in p and "outside" in p for p in problems)
    assert any("networkpolicies" in p for p in problems)


@pytest.mark.parametrize(
    "group", ["system:authenticated", "system:serviceaccounts", "system:masters"]
)
def test_reserved_groups_are_config_errors(group: str) -> None:
    config = stack_config("prod")
    config["teams"][0]["adminGroups"] = [group]
    with pytest.raises(ConfigError):
        validate_platform_config(config, "Pulumi.prod.yaml")
