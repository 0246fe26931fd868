"""Network policies: a team's NetworkPolicies may open paths inside the cluster, not to the
whole internet (data exfiltration and cryptominer call-homes start with open egress)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from pulumi_policy import ReportViolation, ResourceValidationArgs, Severity

from .kube import as_map, as_seq, as_str, effective_namespace, name_of
from .registry import Category, Knobs, resource_policy, str_list, string_list_schema

WORLD_CIDRS: Final = frozenset({"0.0.0.0/0", "::/0"})


class EgressRules(NamedTuple):
    exempt: frozenset[str]
    allowed_cidrs: frozenset[str]


def _check_egress(args: ResourceValidationArgs, report: ReportViolation, cfg: EgressRules) -> None:
    if effective_namespace(args.props) in cfg.exempt:
        return
    who = f'NetworkPolicy "{name_of(args.props)}"'
    for index, rule in enumerate(as_seq(as_map(args.props.get("spec")).get("egress")), start=1):
        rule = as_map(rule)
        peers = as_seq(rule.get("to"))
        if not peers:
            ports = "every port" if not as_seq(rule.get("ports")) else "the listed ports"
            report(
                f"{who} egress rule {index} has no 'to' peers, so it allows every destination "
                f"on {ports}",
                None,
            )
            continue
        for peer in peers:
            cidr = as_str(as_map(as_map(peer).get("ipBlock")).get("cidr"))
            if cidr in WORLD_CIDRS and cidr not in cfg.allowed_cidrs:
                report(
                    f"{who} egress rule {index} allows {cidr}; name the external CIDRs the "
                    "workload needs (or route through an egress proxy)",
                    None,
                )


def _parse(raw: Mapping[str, Any]) -> EgressRules:
    return EgressRules(
        frozenset(str_list(raw.get("exemptNamespaces"))),
        frozenset(str_list(raw.get("allowedWorldCidrs"))),
    )


networkpolicy_no_open_egress = resource_policy(
    name="networkpolicy-no-open-egress",
    description="NetworkPolicies do not allow egress to 0.0.0.0/0, ::/0 or to any destination.",
    category=Category.NETWORK,
    severity=Severity.HIGH,
    remediation=(
        "Give every egress rule explicit 'to' peers: pod/namespace selectors for in-cluster "
        "services (DNS, the object store gateway) and ipBlocks with the specific external CIDRs "
        "needed. Internet access goes through an egress proxy in an exempt namespace "
        "(exemptNamespaces)."
    ),
    check=_check_egress,
    knobs=Knobs(
        {
            "exemptNamespaces": string_list_schema(
                "Namespaces (egress gateways, proxies) whose policies may allow the internet.", ()
            ),
            "allowedWorldCidrs": string_list_schema(
                "World CIDRs to tolerate anyway (0.0.0.0/0 or ::/0); normally empty.", ()
            ),
        },
        _parse,
    ),
    kinds=("networking.k8s.io/NetworkPolicy",),
)
