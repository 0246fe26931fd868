"""Invariants of NetworkPolicy semantics over random clusters and random policies.

The docs examples pin individual cases; these properties pin the algebra: isolation comes only
from a selecting policy of the right type, policies only ever add allowances to an isolated pod,
and an allow-all policy can never take reachability away.
"""

from __future__ import annotations

import ipaddress
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.netpol import Cluster, Endpoint, IPBlock, LabelSelector, PolicyPort, Verdict

NAMESPACES = ("a", "b", "c")
PROBES = ((80, "TCP"), (53, "UDP"), (8080, "TCP"), (443, "TCP"), (9000, "SCTP"))
CONTAINER_PORTS = (
    {"containerPort": 80, "name": "http"},
    {"containerPort": 53, "name": "dns", "protocol": "UDP"},
    {"containerPort": 8080, "name": "alt"},
)
EXTERNAL_IPS = ("10.0.0.5", "10.0.1.5", "192.168.1.1", "8.8.8.8")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

label_sets = st.fixed_dictionaries(
    {},
    optional={"app": st.sampled_from(["web", "db", "job"]), "tier": st.sampled_from(["fe", "be"])},
)
ns_label_sets = st.fixed_dictionaries(
    {}, optional={"env": st.sampled_from(["prod", "dev"]), "team": st.sampled_from(["x", "y"])}
)
keys = st.sampled_from(["app", "tier", "env", "team", "kubernetes.io/metadata.name"])
values = st.lists(
    st.sampled_from(["web", "db", "fe", "prod", "x", "a", "b"]), min_size=1, max_size=2
)
expressions = st.one_of(
    st.builds(lambda k, v: {"key": k, "operator": "In", "values": v}, keys, values),
    st.builds(lambda k, v: {"key": k, "operator": "NotIn", "values": v}, keys, values),
    st.builds(lambda k: {"key": k, "operator": "Exists"}, keys),
    st.builds(lambda k: {"key": k, "operator": "DoesNotExist"}, keys),
)
selectors = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.one_of(label_sets, ns_label_sets),
        "matchExpressions": st.lists(expressions, max_size=2),
    },
)
ip_blocks = st.sampled_from(
    [
        {"cidr": "10.0.0.0/16", "except": ["10.0.1.0/24"]},
        {"cidr": "0.0.0.0/0"},
        {"cidr": "192.168.0.0/16"},
    ]
)
peers = st.one_of(
    st.builds(lambda p: {"podSelector": p}, selectors),
    st.builds(lambda n: {"namespaceSelector": n}, selectors),
    st.builds(lambda n, p: {"namespaceSelector": n, "podSelector": p}, selectors, selectors),
    st.builds(lambda b: {"ipBlock": b}, ip_blocks),
)
policy_ports = st.builds(
    lambda proto, port: {**proto, **port},
    st.sampled_from([{}, {"protocol": "TCP"}, {"protocol": "UDP"}, {"protocol": "SCTP"}]),
    st.sampled_from(
        [
            {},
            {"port": 80},
            {"port": 53},
            {"port": "http"},
            {"port": "dns"},
            {"port": 50, "endPort": 9000},
        ]
    ),
)
rules = st.fixed_dictionaries(
    {},
    optional={"peers": st.lists(peers, max_size=3), "ports": st.lists(policy_ports, max_size=2)},
)


def _rule(raw: dict[str, Any], key: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "peers" in raw:
        out[key] = raw["peers"]
    if "ports" in raw:
        out["ports"] = raw["ports"]
    return out


@st.composite
def policies(draw: st.DrawFn, name: str = "p") -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": draw(selectors)}
    types = draw(st.sampled_from([None, ["Ingress"], ["Egress"], ["Ingress", "Egress"]]))
    if types is not None:
        spec["policyTypes"] = types
    ingress = draw(st.none() | st.lists(rules, max_size=2))
    if ingress is not None:
        spec["ingress"] = [_rule(r, "from") for r in ingress]
    egress = draw(st.none() | st.lists(rules, max_size=2))
    if egress is not None:
        spec["egress"] = [_rule(r, "to") for r in egress]
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": f"{name}-{draw(st.integers(0, 10**6))}",
            "namespace": draw(st.sampled_from(NAMESPACES)),
        },
        "spec": spec,
    }


@st.composite
def worlds(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[Endpoint]]:
    manifests: list[dict[str, Any]] = [
        {"kind": "Namespace", "metadata": {"name": n, "labels": draw(ns_label_sets)}}
        for n in NAMESPACES
    ]
    for i in range(draw(st.integers(1, 4))):
        ports = draw(
            st.lists(st.sampled_from(CONTAINER_PORTS), max_size=3, unique_by=lambda p: p["name"])
        )
        manifests.append(
            {
                "kind": "Deployment",
                "metadata": {"name": f"w{i}", "namespace": draw(st.sampled_from(NAMESPACES))},
                "spec": {
                    "template": {
                        "metadata": {"labels": draw(label_sets)},
                        "spec": {"containers": [{"name": "c", "ports": ports}]},
                    }
                },
            }
        )
    manifests.extend(draw(st.lists(policies(), max_size=4)))
    ips = draw(st.lists(st.sampled_from(EXTERNAL_IPS), max_size=2, unique=True))
    return manifests, [Endpoint.external(ip) for ip in ips]


def all_verdicts(cluster: Cluster) -> dict[tuple[str, str, int, str], Verdict]:
    out = {}
    for s in cluster.endpoints:
        for d in cluster.endpoints:
            if s.is_external and d.is_external:
                continue
            for port, proto in PROBES:
                v = cluster.can_connect(s, d, port, proto)
                out[(v.src, v.dst, port, proto)] = v
    return out


def allow_all(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-all", "namespace": namespace},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{}],
            "egress": [{}],
        },
    }


def oracle_isolated(manifests: list[dict[str, Any]], ep: Endpoint, direction: str) -> bool:
    """Isolation straight from the API text, independent of the evaluator's own bookkeeping."""
    for m in manifests:
        if m.get("kind") != "NetworkPolicy" or m["metadata"]["namespace"] != ep.namespace:
            continue
        spec = m["spec"]
        types = spec.get("policyTypes") or ["Ingress", *(["Egress"] if spec.get("egress") else [])]
        if direction in types and LabelSelector.parse(spec["podSelector"], "o").matches(ep.labels):
            return True
    return False


@SETTINGS
@given(worlds())
def test_unselected_pods_are_not_isolated(
    world: tuple[list[dict[str, Any]], list[Endpoint]],
) -> None:
    manifests, extras = world
    c = Cluster.from_manifests(manifests, extras)
    verdicts = all_verdicts(c)
    for v in verdicts.values():
        src, dst = c.endpoint(v.src), c.endpoint(v.dst)
        assert v.egress.isolated == (
            not src.is_external and oracle_isolated(manifests, src, "Egress")
        )
        assert v.ingress.isolated == (
            not dst.is_external and oracle_isolated(manifests, dst, "Ingress")
        )
        for side in (v.egress, v.ingress):
            if not side.isolated:
                assert side.allowed and not side.policies
            assert side.allowed == bool(side.matches) or not side.isolated
        assert v.allowed == (v.egress.allowed and v.ingress.allowed)


@SETTINGS
@given(worlds(), st.sampled_from(NAMESPACES))
def test_allow_all_never_removes_reachability(
    world: tuple[list[dict[str, Any]], list[Endpoint]], namespace: str
) -> None:
    manifests, extras = world
    before = all_verdicts(Cluster.from_manifests(manifests, extras))
    after_cluster = Cluster.from_manifests([*manifests, allow_all(namespace)], extras)
    after = all_verdicts(after_cluster)
    assert before.keys() == after.keys()
    for key, v in after.items():
        if before[key].allowed:
            assert v.allowed, (before[key].reason, v.reason)
        src, dst = after_cluster.endpoint(v.src), after_cluster.endpoint(v.dst)
        if src.namespace == namespace:
            assert v.egress.allowed
        if dst.namespace == namespace:
            assert v.ingress.allowed


@SETTINGS
@given(worlds(), policies(name="extra"))
def test_policies_only_add_to_already_isolated_pods(
    world: tuple[list[dict[str, Any]], list[Endpoint]], extra: dict[str, Any]
) -> None:
    manifests, extras = world
    before = all_verdicts(Cluster.from_manifests(manifests, extras))
    after = all_verdicts(Cluster.from_manifests([*manifests, extra], extras))
    for key, v in after.items():
        old = before[key]
        # A new policy may newly isolate a side; it never shrinks what an isolated side allows.
        if old.egress.isolated and old.egress.allowed:
            assert v.egress.allowed
        if old.ingress.isolated and old.ingress.allowed:
            assert v.ingress.allowed
        if not v.egress.isolated:
            assert not old.egress.isolated


@SETTINGS
@given(worlds(), st.randoms(use_true_random=False))
def test_order_of_manifests_is_irrelevant(
    world: tuple[list[dict[str, Any]], list[Endpoint]], rnd: random.Random
) -> None:
    manifests, extras = world
    shuffled = list(manifests)
    rnd.shuffle(shuffled)
    a = all_verdicts(Cluster.from_manifests(manifests, extras))
    b = all_verdicts(Cluster.from_manifests(shuffled, extras))
    assert {k: v.allowed for k, v in a.items()} == {k: v.allowed for k, v in b.items()}


@SETTINGS
@given(worlds())
def test_without_policies_everything_is_reachable(
    world: tuple[list[dict[str, Any]], list[Endpoint]],
) -> None:
    manifests, extras = world
    bare = [m for m in manifests if m["kind"] != "NetworkPolicy"]
    assert all(v.allowed for v in all_verdicts(Cluster.from_manifests(bare, extras)).values())


@given(st.integers(1, 65535), st.integers(0, 2000), st.integers(1, 65535))
def test_end_port_range_is_inclusive(start: int, width: int, port: int) -> None:
    end = min(start + width, 65535)
    spec = PolicyPort.parse({"port": start, "endPort": end}, "t")
    dst = Endpoint("d", "n")
    assert spec.matches(dst, port, "TCP") == (start <= port <= end)
    assert not spec.matches(dst, port, "UDP")


@given(label_sets, keys, values)
def test_in_and_notin_are_complements(labels: dict[str, str], key: str, vals: list[str]) -> None:
    def one(op: str) -> bool:
        expr = {"key": key, "operator": op, "values": vals}
        return LabelSelector.parse({"matchExpressions": [expr]}, "t").matches(labels)

    assert one("In") != one("NotIn")
    exists = LabelSelector.parse({"matchExpressions": [{"key": key, "operator": "Exists"}]}, "t")
    absent = LabelSelector.parse(
        {"matchExpressions": [{"key": key, "operator": "DoesNotExist"}]}, "t"
    )
    assert exists.matches(labels) != absent.matches(labels)


@given(st.integers(0, 2**32 - 1), st.integers(8, 24), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_ip_block_is_cidr_minus_except(addr: int, prefix: int, deeper: int, probe: int) -> None:
    cidr = ipaddress.ip_network(f"{ipaddress.IPv4Address(addr)}/{prefix}", strict=False)
    hole = ipaddress.ip_network(f"{ipaddress.IPv4Address(addr)}/{prefix + deeper}", strict=False)
    block = IPBlock.parse({"cidr": str(cidr), "except": [str(hole)]}, "t")
    ip = ipaddress.IPv4Address(probe)
    assert block.contains(str(ip)) == (ip in cidr and ip not in hole)
    assert not block.contains(str(ipaddress.IPv4Address(addr)))
    assert not block.contains("::1")
