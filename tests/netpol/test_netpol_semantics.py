"""Edge cases of the NetworkPolicy API the docs examples do not reach, plus parsing and output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tools.netpol import (
    Cluster,
    ContainerPort,
    Endpoint,
    IPBlock,
    LabelSelector,
    ManifestError,
    NetworkPolicy,
    can_connect,
    endpoint_from_workload,
    kube_dns,
    main,
    reachability_matrix,
)


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def pod(
    ns: str, name: str, labels: dict[str, str], ports: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": ports or []}]},
    }


def policy(ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def sel(**kwargs: Any) -> LabelSelector:
    return LabelSelector.parse(kwargs, "test")


class TestLabelSelectors:
    def test_empty_selector_matches_everything(self) -> None:
        assert sel().matches({}) and sel().matches({"a": "b"})
        assert LabelSelector.parse(None, "test").matches({"x": "y"})

    def test_match_labels_and_expressions_are_anded(self) -> None:
        s = sel(
            matchLabels={"app": "web"},
            matchExpressions=[{"key": "tier", "operator": "In", "values": ["a", "b"]}],
        )
        assert s.matches({"app": "web", "tier": "a"})
        assert not s.matches({"app": "web", "tier": "c"})
        assert not s.matches({"app": "db", "tier": "a"})

    @pytest.mark.parametrize(
        ("operator", "values", "labels", "expected"),
        [
            ("In", ["x"], {"k": "x"}, True),
            ("In", ["x"], {"k": "y"}, False),
            ("In", ["x"], {}, False),
            ("NotIn", ["x"], {"k": "x"}, False),
            ("NotIn", ["x"], {"k": "y"}, True),
            ("NotIn", ["x"], {}, True),  # a missing key satisfies NotIn
            ("Exists", [], {"k": ""}, True),
            ("Exists", [], {}, False),
            ("DoesNotExist", [], {}, True),
            ("DoesNotExist", [], {"k": "x"}, False),
        ],
    )
    def test_operators(
        self, operator: str, values: list[str], labels: dict[str, str], expected: bool
    ) -> None:
        s = sel(matchExpressions=[{"key": "k", "operator": operator, "values": values}])
        assert s.matches(labels) is expected

    @pytest.mark.parametrize(
        "expr",
        [
            {"key": "k", "operator": "Equals", "values": ["x"]},
            {"key": "k", "operator": "In", "values": []},
            {"key": "k", "operator": "Exists", "values": ["x"]},
            {"operator": "Exists"},
        ],
    )
    def test_invalid_expressions_rejected(self, expr: dict[str, Any]) -> None:
        with pytest.raises(ManifestError):
            sel(matchExpressions=[expr])


class TestIPBlock:
    def test_cidr_with_except(self) -> None:
        b = IPBlock.parse({"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}, "t")
        assert b.contains("172.17.0.255") and b.contains("172.17.2.0")
        assert not b.contains("172.17.1.1") and not b.contains("172.16.255.255")

    def test_ipv6_and_mixed_families(self) -> None:
        b = IPBlock.parse({"cidr": "2001:db8::/32"}, "t")
        assert b.contains("2001:db8::1")
        assert not b.contains("10.0.0.1")
        assert not IPBlock.parse({"cidr": "0.0.0.0/0"}, "t").contains("2001:db8::1")

    @pytest.mark.parametrize(
        "raw",
        [
            {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]},  # not inside
            {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/8"]},  # not a strict subset
            {"cidr": "not-a-cidr"},
        ],
    )
    def test_invalid_blocks_rejected(self, raw: dict[str, Any]) -> None:
        with pytest.raises(ManifestError):
            IPBlock.parse(raw, "t")

    def test_pods_not_matched_unless_opted_in(self) -> None:
        manifests = [
            {**pod("a", "client", {"app": "c"}), "status": {"podIP": "10.1.0.5"}},
            pod("a", "server", {"app": "s"}, [{"containerPort": 80}]),
            policy(
                "a",
                "from-cidr",
                {
                    "podSelector": {"matchLabels": {"app": "s"}},
                    "ingress": [{"from": [{"ipBlock": {"cidr": "10.1.0.0/16"}}]}],
                },
            ),
        ]
        assert not Cluster.from_manifests(manifests).can_connect("a/client", "a/server", 80)
        opted = Cluster.from_manifests(manifests, ipblock_matches_pod_ips=True)
        assert opted.can_connect("a/client", "a/server", 80)


class TestPolicyParsing:
    def test_policy_types_defaulting(self) -> None:
        def types(spec: dict[str, Any]) -> set[str]:
            return set(NetworkPolicy.from_manifest(policy("n", "p", spec)).policy_types)

        assert types({"podSelector": {}}) == {"Ingress"}
        assert types({"podSelector": {}, "policyTypes": []}) == {"Ingress"}
        assert types({"podSelector": {}, "egress": []}) == {"Ingress"}
        assert types({"podSelector": {}, "egress": [{}]}) == {"Ingress", "Egress"}
        assert types({"podSelector": {}, "policyTypes": ["Egress"]}) == {"Egress"}

    def test_egress_rules_without_egress_type_are_ignored(self) -> None:
        # Explicit policyTypes wins: ingress rules of an Egress-only policy do not isolate.
        manifests = [
            pod("n", "a", {"app": "a"}, [{"containerPort": 80}]),
            pod("n", "b", {"app": "b"}),
            policy(
                "n",
                "egress-only",
                {"podSelector": {}, "policyTypes": ["Egress"], "ingress": [], "egress": [{}]},
            ),
        ]
        v = Cluster.from_manifests(manifests).can_connect("n/b", "n/a", 80)
        assert v.allowed and not v.ingress.isolated and v.egress.isolated

    def test_empty_from_matches_all_sources(self) -> None:
        manifests = [
            pod("n", "server", {"app": "s"}, [{"containerPort": 80}]),
            pod("m", "client", {"app": "c"}),
            policy(
                "n",
                "p",
                {"podSelector": {}, "ingress": [{"from": [], "ports": [{"port": 80}]}]},
            ),
        ]
        c = Cluster.from_manifests(manifests, [Endpoint.external("1.2.3.4")])
        assert c.can_connect("m/client", "n/server", 80)
        assert c.can_connect("1.2.3.4", "n/server", 80)
        assert not c.can_connect("m/client", "n/server", 81)

    def test_port_without_number_matches_every_port_of_its_protocol(self) -> None:
        manifests = [
            pod("n", "server", {"app": "s"}),
            pod("n", "client", {"app": "c"}),
            policy("n", "p", {"podSelector": {}, "ingress": [{"ports": [{"protocol": "UDP"}]}]}),
        ]
        c = Cluster.from_manifests(manifests)
        assert c.can_connect("n/client", "n/server", 1, "UDP")
        assert c.can_connect("n/client", "n/server", 65535, "UDP")
        assert not c.can_connect("n/client", "n/server", 53, "TCP")

    def test_empty_ingress_list_allows_nothing(self) -> None:
        manifests = [
            pod("n", "server", {"app": "s"}),
            pod("n", "client", {"app": "c"}),
            policy("n", "p", {"podSelector": {"matchLabels": {"app": "s"}}, "ingress": []}),
        ]
        v = Cluster.from_manifests(manifests).can_connect("n/client", "n/server", 80)
        assert not v.allowed and v.ingress.policies == ("n/p",)

    def test_policies_are_additive_and_all_matches_reported(self) -> None:
        manifests = [
            pod("n", "server", {"app": "s"}),
            pod("n", "client", {"app": "c"}),
            policy("n", "a", {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}),
            policy(
                "n",
                "b",
                {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]},
            ),
        ]
        v = Cluster.from_manifests(manifests).can_connect("n/client", "n/server", 80)
        assert [str(m) for m in v.ingress.matches] == [
            "n/a ingress[0] (from: all; ports[0] 80/TCP)",
            "n/b ingress[0] (from[0] podSelector {}; ports: all)",
        ]
        assert Cluster.from_manifests(manifests).can_connect("n/client", "n/server", 443)

    @pytest.mark.parametrize(
        "spec",
        [
            {"ingress": [{"from": [{}]}]},
            {"ingress": [{"from": [{"ipBlock": {"cidr": "1.0.0.0/8"}, "podSelector": {}}]}]},
            {"ingress": [{"ports": [{"port": "http", "endPort": 90}]}]},
            {"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]},
            {"ingress": [{"ports": [{"port": 0}]}]},
            {"ingress": [{"ports": [{"port": "80"}]}]},
            {"ingress": [{"ports": [{"port": 80, "protocol": "ICMP"}]}]},
            {"policyTypes": ["Ingress", "Sideways"]},
            {"podSelector": {"matchLabels": {"on": True}}},
        ],
    )
    def test_manifests_the_api_server_rejects(self, spec: dict[str, Any]) -> None:
        with pytest.raises(ManifestError):
            NetworkPolicy.from_manifest(policy("n", "bad", {"podSelector": {}, **spec}))


class TestWorkloads:
    TEMPLATE = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "containers": [{"name": "c", "ports": [{"containerPort": 53, "protocol": "UDP"}]}]
        },
    }

    @pytest.mark.parametrize(
        ("kind", "spec"),
        [
            ("Deployment", {"template": TEMPLATE}),
            ("StatefulSet", {"template": TEMPLATE}),
            ("DaemonSet", {"template": TEMPLATE}),
            ("ReplicaSet", {"template": TEMPLATE}),
            ("Job", {"template": TEMPLATE}),
            ("CronJob", {"jobTemplate": {"spec": {"template": TEMPLATE}}}),
        ],
    )
    def test_pod_templates(self, kind: str, spec: dict[str, Any]) -> None:
        ep = endpoint_from_workload(
            {"kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}
        )
        assert ep is not None
        assert (ep.namespace, ep.name, ep.kind, ep.labels["app"]) == ("ns", "w", kind, "x")
        assert ep.ports == (ContainerPort(53, "UDP"),)

    def test_job_pods_carry_the_job_name_labels(self) -> None:
        ep = endpoint_from_workload(
            {"kind": "Job", "metadata": {"name": "train"}, "spec": {"template": self.TEMPLATE}}
        )
        assert ep is not None and ep.namespace == "default"
        assert ep.labels["batch.kubernetes.io/job-name"] == "train"
        assert ep.labels["job-name"] == "train"

    def test_non_workloads_are_skipped(self) -> None:
        assert endpoint_from_workload({"kind": "Service", "metadata": {"name": "s"}}) is None

    def test_resource_records_lists_and_foreign_policies(self) -> None:
        record = {
            "type": "kubernetes:apps/v1:Deployment",
            "inputs": {
                "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "n"},
                "spec": {"template": self.TEMPLATE},
            },
        }
        calico = {
            "apiVersion": "projectcalico.org/v3",
            "kind": "NetworkPolicy",
            "metadata": {"name": "deny", "namespace": "n"},
        }
        c = Cluster.from_manifests([record, {"kind": "List", "items": [pod("n", "p", {})]}, calico])
        assert sorted(c.ids.values()) == ["n/d", "n/p"]
        assert c.policies == ()
        assert len(c.warnings) == 1 and "projectcalico.org/v3" in c.warnings[0]

    def test_namespace_labels_include_metadata_name(self) -> None:
        c = Cluster.from_manifests([namespace("team", tier="gold"), pod("other", "p", {})])
        assert c.namespaces["team"].labels == {
            "tier": "gold",
            "kubernetes.io/metadata.name": "team",
        }
        assert c.namespaces["other"].labels == {"kubernetes.io/metadata.name": "other"}


class TestLookupsAndNotes:
    def test_duplicate_names_get_qualified_ids(self) -> None:
        job = {"kind": "Job", "metadata": {"name": "x", "namespace": "n"}, "spec": {"template": {}}}
        c = Cluster.from_manifests([pod("n", "x", {}), job])
        assert sorted(c.ids.values()) == ["n/Job/x", "n/Pod/x"]
        with pytest.raises(KeyError, match="ambiguous"):
            c.endpoint("n/x")
        assert c.endpoint("n/Job/x").kind == "Job"
        with pytest.raises(KeyError, match="unknown"):
            c.endpoint("n/y")

    def test_notes_and_errors(self) -> None:
        host = pod("n", "agent", {})
        host["spec"]["hostNetwork"] = True
        c = Cluster.from_manifests(
            [pod("n", "a", {}), host], [Endpoint.external("1.1.1.1"), Endpoint.external("2.2.2.2")]
        )
        assert "between two of its replicas" in c.can_connect("n/a", "n/a", 80).reason
        assert "hostNetwork" in c.can_connect("n/a", "n/agent", 80).reason
        with pytest.raises(ValueError, match="both endpoints are external"):
            c.can_connect("1.1.1.1", "2.2.2.2", 80)
        with pytest.raises(KeyError, match="no TCP container port named"):
            c.can_connect("n/a", "n/agent", "http")
        with pytest.raises(ManifestError):
            c.can_connect("n/a", "n/agent", 70000)
        with pytest.raises(ValueError, match="needs an ip"):
            Endpoint("lost")

    def test_module_level_can_connect(self) -> None:
        v = can_connect([pod("n", "a", {})], "n/a", "kube-system/kube-dns", 53, "UDP", [kube_dns()])
        assert v.allowed and v.dst == "kube-system/kube-dns"
        assert json.loads(json.dumps(v.to_json()))["allowed"] is True


MATRIX_MANIFESTS = [
    namespace("team"),
    pod("team", "api", {"app": "api"}, [{"containerPort": 8080, "name": "http"}]),
    pod("team", "worker", {"app": "worker"}),
    policy("team", "deny-all", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
    policy(
        "team",
        "worker-to-api",
        {
            "podSelector": {"matchLabels": {"app": "api"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "worker"}}}]}],
        },
    ),
    policy(
        "team",
        "worker-egress",
        {
            "podSelector": {"matchLabels": {"app": "worker"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"podSelector": {"matchLabels": {"app": "api"}}}]}],
        },
    ),
]


class TestMatrix:
    def test_structure(self) -> None:
        m = reachability_matrix(MATRIX_MANIFESTS, [Endpoint.external("8.8.8.8")], ports=[443])
        assert m.endpoints == ("team/api", "team/worker", "8.8.8.8")
        assert m.reachable("team/worker", "team/api") == ("443/TCP", "8080/TCP")
        assert m.reachable("team/api", "team/worker") == ()
        assert m.is_allowed("team/worker", "team/api", 8080)
        assert not m.is_allowed("team/worker", "8.8.8.8", 443)
        with pytest.raises(KeyError):
            m.is_allowed("team/worker", "team/api", 9999)
        data = json.loads(json.dumps(m.to_json()))
        assert data["reachable"] == {"team/worker": {"team/api": ["443/TCP", "8080/TCP"]}}
        assert data["endpoints"][0]["labels"] == {"app": "api"}
        assert {(f["src"], f["dst"]) for f in data["flows"]} >= {("8.8.8.8", "team/api")}
        # External-to-external pairs are never evaluated.
        assert not [f for f in data["flows"] if f["src"] == f["dst"] == "8.8.8.8"]

    def test_named_and_udp_requests(self) -> None:
        m = reachability_matrix(MATRIX_MANIFESTS, ports=["http", (53, "UDP")])
        assert {(v.port, v.protocol) for v in m.flows("team/worker", "team/api")} == {
            (8080, "TCP"),
            (53, "UDP"),
        }
        # "http" does not resolve on the worker: only the UDP probe is made there.
        assert {(v.port, v.protocol) for v in m.flows("team/api", "team/worker")} == {(53, "UDP")}

    def test_text_table(self) -> None:
        text = reachability_matrix(MATRIX_MANIFESTS).to_text()
        lines = text.splitlines()
        assert lines[0].split() == ["SOURCE", "DESTINATION", "ALLOWED", "DENIED"]
        assert lines[1].split() == ["team/api", "team/api", "-", "8080/TCP"]
        assert ["team/worker", "team/api", "8080/TCP", "-"] in [ln.split() for ln in lines]
        assert lines[-1] == "2 endpoints, 2 flows: 1 allowed, 1 denied"

    def test_cluster_input_with_extras(self) -> None:
        c = Cluster.from_manifests(MATRIX_MANIFESTS)
        m = reachability_matrix(c, [kube_dns()])
        assert "kube-system/kube-dns" in m.endpoints
        assert not m.is_allowed("team/worker", "kube-system/kube-dns", 53, "UDP")

    def test_cli(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        path = tmp_path / "m.yaml"
        path.write_text(yaml.safe_dump_all(MATRIX_MANIFESTS))
        report = tmp_path / "report.json"
        report.write_text(
            json.dumps({"resources": [{"type": "t", "inputs": m} for m in MATRIX_MANIFESTS]})
        )
        assert main([str(path), "--kube-dns", "--port", "53/udp"]) == 0
        assert "team/worker" in capsys.readouterr().out
        assert main([str(report), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["reachable"]["team/worker"]["team/api"] == [
            "8080/TCP"
        ]
