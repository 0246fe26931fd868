"""The examples of the Kubernetes "Network Policies" concept page, as concrete flows.

Each test takes a policy from kubernetes.io/docs/concepts/services-networking/network-policies
and asserts the flows the page says it allows and the ones it must deny, so the evaluator is
pinned to the documented semantics rather than to our reading of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from tools.netpol import Cluster, ContainerPort, Endpoint, kube_dns


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def deployment(
    ns: str, name: str, labels: dict[str, str], ports: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "registry.example/app:1"}
    if ports:
        container["ports"] = ports
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def policy(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


# The page's headline example, verbatim apart from being a dict.
TEST_NETWORK_POLICY = policy(
    "default",
    "test-network-policy",
    {
        "podSelector": {"matchLabels": {"role": "db"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                    {"namespaceSelector": {"matchLabels": {"project": "myproject"}}},
                    {"podSelector": {"matchLabels": {"role": "frontend"}}},
                ],
                "ports": [{"protocol": "TCP", "port": 6379}],
            }
        ],
        "egress": [
            {
                "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                "ports": [{"protocol": "TCP", "port": 5978}],
            }
        ],
    },
)

BASE = [
    namespace("default"),
    namespace("myproject", project="myproject"),
    namespace("other", project="otherproject"),
    deployment("default", "db", {"role": "db"}, [{"containerPort": 6379, "name": "redis"}]),
    deployment("default", "frontend", {"role": "frontend"}, [{"containerPort": 80}]),
    deployment("default", "backend", {"role": "backend"}, [{"containerPort": 8080}]),
    deployment("myproject", "anything", {"app": "anything"}, [{"containerPort": 80}]),
    deployment("other", "frontend", {"role": "frontend"}, [{"containerPort": 80}]),
]
EXTERNALS = [
    Endpoint.external("172.17.0.5", "in-cidr"),
    Endpoint.external("172.17.1.5", "in-except"),
    Endpoint.external("172.18.0.1", "outside"),
    Endpoint.external("10.0.0.7", "egress-target", [ContainerPort(5978)]),
    Endpoint.external("10.0.1.7", "egress-outside"),
]


@pytest.fixture
def example() -> Cluster:
    return Cluster.from_manifests([*BASE, TEST_NETWORK_POLICY], EXTERNALS)


class TestTestNetworkPolicy:
    """``test-network-policy``: role=db isolated both ways; three OR-ed sources on TCP 6379."""

    @pytest.mark.parametrize(
        "src",
        [
            "default/frontend",  # podSelector alone: same namespace as the policy
            "myproject/anything",  # namespaceSelector alone: every pod of the namespace
            "in-cidr",  # 172.17.0.0/16 ...
        ],
    )
    def test_allowed_sources_on_6379(self, example: Cluster, src: str) -> None:
        v = example.can_connect(src, "default/db", 6379)
        assert v.allowed, v.reason
        assert v.ingress.isolated
        assert v.ingress.matches[0].policy == "default/test-network-policy"

    @pytest.mark.parametrize(
        "src",
        [
            "default/backend",  # wrong labels
            "other/frontend",  # right labels, wrong namespace (podSelector is namespace-local)
            "in-except",  # ... except 172.17.1.0/24
            "outside",
        ],
    )
    def test_denied_sources(self, example: Cluster, src: str) -> None:
        v = example.can_connect(src, "default/db", 6379)
        assert not v.allowed
        assert v.ingress.isolated and not v.ingress.allowed
        assert "isolated by default/test-network-policy" in v.reason

    def test_only_tcp_6379(self, example: Cluster) -> None:
        assert example.can_connect("default/frontend", "default/db", 6379)
        assert not example.can_connect("default/frontend", "default/db", 6380)
        assert not example.can_connect("default/frontend", "default/db", 6379, "UDP")
        assert not example.can_connect("default/frontend", "default/db", 6379, "SCTP")

    def test_named_query_port_resolves_on_destination(self, example: Cluster) -> None:
        v = example.can_connect("default/frontend", "default/db", "redis")
        assert v.allowed and v.port == 6379

    def test_egress_only_to_10_0_0_0_24_on_5978(self, example: Cluster) -> None:
        ok = example.can_connect("default/db", "egress-target", 5978)
        assert ok.allowed and ok.egress.isolated
        assert "ipBlock 10.0.0.0/24" in ok.reason
        assert not example.can_connect("default/db", "egress-target", 5979)
        assert not example.can_connect("default/db", "egress-outside", 5978)

    def test_db_cannot_reach_pods(self, example: Cluster) -> None:
        # Egress-isolated and the only egress peer is an ipBlock, which pods never match.
        v = example.can_connect("default/db", "default/frontend", 80)
        assert not v.allowed
        assert not v.egress.allowed and v.ingress.allowed

    def test_other_pods_are_untouched(self, example: Cluster) -> None:
        v = example.can_connect("default/frontend", "default/backend", 8080)
        assert v.allowed
        assert not v.egress.isolated and not v.ingress.isolated
        assert example.can_connect("other/frontend", "outside", 443)
        assert example.can_connect("outside", "default/backend", 8080)


DEFAULT_DENY_INGRESS = policy(
    "default", "default-deny-ingress", {"podSelector": {}, "policyTypes": ["Ingress"]}
)
ALLOW_ALL_INGRESS = policy(
    "default",
    "allow-all-ingress",
    {"podSelector": {}, "ingress": [{}], "policyTypes": ["Ingress"]},
)
DEFAULT_DENY_EGRESS = policy(
    "default", "default-deny-egress", {"podSelector": {}, "policyTypes": ["Egress"]}
)
ALLOW_ALL_EGRESS = policy(
    "default",
    "allow-all-egress",
    {"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]},
)
DEFAULT_DENY_ALL = policy(
    "default", "default-deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
)
ALLOW_EGRESS_DENY_INGRESS = policy(
    "default",
    "allow-egress-deny-ingress",
    {"podSelector": {}, "policyTypes": ["Egress", "Ingress"], "egress": [{}], "ingress": []},
)


def cluster(*policies: dict[str, Any]) -> Cluster:
    return Cluster.from_manifests([*BASE, *policies], EXTERNALS)


class TestDefaultPolicies:
    def test_no_policy_means_everything_is_open(self) -> None:
        c = cluster()
        for src in ("default/frontend", "other/frontend", "outside"):
            v = c.can_connect(src, "default/db", 6379)
            assert v.allowed
            assert "not isolated" in v.ingress.reason

    def test_default_deny_ingress(self) -> None:
        c = cluster(DEFAULT_DENY_INGRESS)
        assert not c.can_connect("default/frontend", "default/backend", 8080)
        assert not c.can_connect("other/frontend", "default/backend", 8080)
        assert not c.can_connect("outside", "default/db", 6379)
        # Egress is untouched, and other namespaces keep accepting traffic.
        assert c.can_connect("default/backend", "other/frontend", 80)
        assert c.can_connect("default/backend", "outside", 443)

    def test_default_allow_all_ingress_overrides_isolation(self) -> None:
        c = cluster(DEFAULT_DENY_INGRESS, ALLOW_ALL_INGRESS)
        for src in ("default/frontend", "other/frontend", "in-except"):
            v = c.can_connect(src, "default/backend", 8080)
            assert v.allowed and v.ingress.isolated
            assert [m.policy for m in v.ingress.matches] == ["default/allow-all-ingress"]
        assert c.can_connect("other/frontend", "default/backend", 1, "SCTP")

    def test_default_deny_egress(self) -> None:
        c = cluster(DEFAULT_DENY_EGRESS)
        v = c.can_connect("default/frontend", "default/backend", 8080)
        assert not v.allowed and not v.egress.allowed and v.ingress.allowed
        assert not c.can_connect("default/db", "outside", 443)
        # Ingress into the namespace is untouched.
        assert c.can_connect("other/frontend", "default/backend", 8080)

    def test_default_allow_all_egress(self) -> None:
        c = cluster(DEFAULT_DENY_EGRESS, ALLOW_ALL_EGRESS)
        assert c.can_connect("default/frontend", "outside", 443)
        assert c.can_connect("default/frontend", "other/frontend", 80, "UDP")

    def test_default_deny_all(self) -> None:
        c = cluster(DEFAULT_DENY_ALL)
        assert not c.can_connect("default/frontend", "default/backend", 8080)
        assert not c.can_connect("default/frontend", "other/frontend", 80)
        assert not c.can_connect("other/frontend", "default/frontend", 80)
        assert not c.can_connect("outside", "default/frontend", 80)
        assert c.can_connect("other/frontend", "myproject/anything", 80)

    def test_allow_all_egress_deny_all_ingress(self) -> None:
        c = cluster(ALLOW_EGRESS_DENY_INGRESS)
        assert c.can_connect("default/frontend", "other/frontend", 80)
        assert c.can_connect("default/frontend", "outside", 443)
        assert not c.can_connect("other/frontend", "default/frontend", 80)
        assert not c.can_connect("default/frontend", "default/backend", 8080)


class TestSelectorsAndVersusOr:
    """The page's warning: one peer with both selectors is AND, two peers are OR."""

    NAMESPACES = [
        namespace("alice-ns", user="alice"),
        namespace("bob-ns", user="bob"),
        namespace("default"),
    ]
    PODS = [
        deployment("default", "server", {"app": "server"}, [{"containerPort": 80}]),
        deployment("default", "local-client", {"role": "client"}),
        deployment("default", "local-other", {"role": "other"}),
        deployment("alice-ns", "alice-client", {"role": "client"}),
        deployment("alice-ns", "alice-other", {"role": "other"}),
        deployment("bob-ns", "bob-client", {"role": "client"}),
    ]

    def build(self, peers: list[dict[str, Any]]) -> Cluster:
        pol = policy(
            "default",
            "selectors",
            {"podSelector": {"matchLabels": {"app": "server"}}, "ingress": [{"from": peers}]},
        )
        return Cluster.from_manifests([*self.NAMESPACES, *self.PODS, pol])

    def test_and_in_one_peer(self) -> None:
        c = self.build(
            [
                {
                    "namespaceSelector": {"matchLabels": {"user": "alice"}},
                    "podSelector": {"matchLabels": {"role": "client"}},
                }
            ]
        )
        allowed = {e.key for e in c.endpoints if c.can_connect(e, "default/server", 80).allowed} - {
            "default/server"
        }
        assert allowed == {"alice-ns/alice-client"}

    def test_or_across_peers(self) -> None:
        c = self.build(
            [
                {"namespaceSelector": {"matchLabels": {"user": "alice"}}},
                {"podSelector": {"matchLabels": {"role": "client"}}},
            ]
        )
        allowed = {e.key for e in c.endpoints if c.can_connect(e, "default/server", 80).allowed} - {
            "default/server"
        }
        assert allowed == {"alice-ns/alice-client", "alice-ns/alice-other", "default/local-client"}
        assert not c.can_connect("bob-ns/bob-client", "default/server", 80)

    def test_empty_namespace_selector_is_every_namespace(self) -> None:
        c = self.build(
            [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"role": "client"}}}]
        )
        for src in ("default/local-client", "alice-ns/alice-client", "bob-ns/bob-client"):
            assert c.can_connect(src, "default/server", 80)
        assert not c.can_connect("alice-ns/alice-other", "default/server", 80)

    def test_policy_types_default_to_ingress_only(self) -> None:
        # No policyTypes and no egress rules: Ingress only, so the server's egress stays open.
        c = self.build([{"podSelector": {}}])
        assert c.policies[0].policy_types == {"Ingress"}
        assert c.can_connect("default/server", "bob-ns/bob-client", 9999)

    def test_namespace_by_name_label(self) -> None:
        # The API server labels every namespace with kubernetes.io/metadata.name.
        c = self.build(
            [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "bob-ns"}}}]
        )
        assert c.can_connect("bob-ns/bob-client", "default/server", 80)
        assert not c.can_connect("alice-ns/alice-client", "default/server", 80)

    def test_multiple_namespaces_by_match_expressions(self) -> None:
        c = self.build(
            [
                {
                    "namespaceSelector": {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/metadata.name",
                                "operator": "In",
                                "values": ["alice-ns", "bob-ns"],
                            }
                        ]
                    }
                }
            ]
        )
        assert c.can_connect("bob-ns/bob-client", "default/server", 80)
        assert c.can_connect("alice-ns/alice-other", "default/server", 80)
        assert not c.can_connect("default/local-client", "default/server", 80)


class TestPortRange:
    """``multi-port-egress``: db may reach 10.0.0.0/24 on TCP 32000-32768 inclusive."""

    MULTI_PORT_EGRESS = policy(
        "default",
        "multi-port-egress",
        {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                    "ports": [{"protocol": "TCP", "port": 32000, "endPort": 32768}],
                }
            ],
        },
    )

    @pytest.mark.parametrize(
        ("port", "protocol", "allowed"),
        [
            (32000, "TCP", True),
            (32400, "TCP", True),
            (32768, "TCP", True),
            (31999, "TCP", False),
            (32769, "TCP", False),
            (32000, "UDP", False),
        ],
    )
    def test_range(self, port: int, protocol: str, allowed: bool) -> None:
        c = cluster(self.MULTI_PORT_EGRESS)
        assert c.can_connect("default/db", "egress-target", port, protocol).allowed is allowed

    def test_outside_cidr_denied(self) -> None:
        assert not cluster(self.MULTI_PORT_EGRESS).can_connect(
            "default/db", "egress-outside", 32000
        )


class TestNamedPorts:
    """A named port matches the destination's container port of that name and protocol."""

    PODS = [
        namespace("serving"),
        deployment(
            "serving",
            "model",
            {"app": "model"},
            [
                {"containerPort": 8080, "name": "http"},
                {"containerPort": 9090, "name": "metrics"},
                {"containerPort": 8081, "name": "grpc", "protocol": "UDP"},
            ],
        ),
        deployment(
            "serving", "gateway", {"app": "gateway"}, [{"containerPort": 80, "name": "http"}]
        ),
        deployment("serving", "client", {"app": "client"}),
    ]

    def test_ingress_named_port(self) -> None:
        pol = policy(
            "serving",
            "model-http",
            {
                "podSelector": {"matchLabels": {"app": "model"}},
                "ingress": [{"ports": [{"port": "http"}, {"port": "grpc"}]}],
            },
        )
        c = Cluster.from_manifests([*self.PODS, pol])
        assert c.can_connect("serving/client", "serving/model", 8080)
        assert not c.can_connect("serving/client", "serving/model", 9090)
        # "grpc" is a UDP port on the pod while the rule's protocol defaults to TCP.
        assert not c.can_connect("serving/client", "serving/model", 8081, "UDP")
        assert not c.can_connect("serving/client", "serving/model", 8081)

    def test_egress_named_port_resolves_per_destination(self) -> None:
        pol = policy(
            "serving",
            "client-egress",
            {
                "podSelector": {"matchLabels": {"app": "client"}},
                "policyTypes": ["Egress"],
                "egress": [{"ports": [{"protocol": "TCP", "port": "http"}]}],
            },
        )
        c = Cluster.from_manifests([*self.PODS, pol], [Endpoint.external("8.8.8.8")])
        assert c.can_connect("serving/client", "serving/model", 8080)
        assert not c.can_connect("serving/client", "serving/model", 80)
        assert c.can_connect("serving/client", "serving/gateway", 80)
        assert not c.can_connect("serving/client", "serving/gateway", 8080)
        # An external IP has no container ports for a name to resolve against.
        assert not c.can_connect("serving/client", "8.8.8.8", 80)


class TestDnsEgress:
    """A default-deny namespace must still reach the synthetic kube-dns pod on 53."""

    def test_dns_allowed_and_nothing_else(self) -> None:
        manifests = [
            namespace("team-a"),
            deployment("team-a", "trainer", {"app": "trainer"}),
            policy(
                "team-a", "default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
            ),
            policy(
                "team-a",
                "allow-dns",
                {
                    "podSelector": {},
                    "policyTypes": ["Egress"],
                    "egress": [
                        {
                            "to": [
                                {
                                    "namespaceSelector": {
                                        "matchLabels": {
                                            "kubernetes.io/metadata.name": "kube-system"
                                        }
                                    },
                                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                                }
                            ],
                            "ports": [
                                {"protocol": "UDP", "port": 53},
                                {"protocol": "TCP", "port": 53},
                            ],
                        }
                    ],
                },
            ),
        ]
        c = Cluster.from_manifests(manifests, [kube_dns(), Endpoint.external("8.8.8.8")])
        assert c.can_connect("team-a/trainer", "kube-system/kube-dns", 53, "UDP")
        assert c.can_connect("team-a/trainer", "kube-system/kube-dns", 53, "TCP")
        assert not c.can_connect("team-a/trainer", "kube-system/kube-dns", 9153)
        assert not c.can_connect("team-a/trainer", "8.8.8.8", 53, "UDP")
