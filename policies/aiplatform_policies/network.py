"""Network policies: a NetworkPolicy may open paths inside the cluster, never to or from the
whole internet, never from every namespace, and never between two teams the stack does not
pair (data exfiltration, cryptominer call-homes and lateral movement start there).

``ipBlock`` peers are judged by the addresses they cover (``cidr.py``), not by how they are
spelled: ``0.0.0.0/1`` plus ``128.0.0.0/1`` is the internet, and so is ``0.0.0.0/0`` with a hole.
A policy may allow at most a budget of public addresses in all (by default a /8's worth of IPv4
and a /32's worth of IPv6); private ranges (a VPC, the pod network) do not count.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

from pulumi_policy import (
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from .cidr import Addresses
from .kube import (
    LabelSelector,
    as_map,
    as_seq,
    as_str,
    effective_namespace,
    is_kind,
    labels_of,
    metadata,
    name_of,
)
from .registry import (
    NO_KNOBS,
    Category,
    Knobs,
    int_value,
    resource_policy,
    stack_policy,
    str_list,
    string_list_schema,
)
from .shared import NAMESPACE_NAME_LABEL, TEAM_LABEL, TENANT_REACHABLE_FROM_ANNOTATION

NETWORK_POLICY: Final = "networking.k8s.io/NetworkPolicy"
PEERS: Final = {"egress": "to", "ingress": "from"}


class Openness(NamedTuple):
    exempt: frozenset[str]
    tolerated: Addresses
    ipv4_budget: int
    """Most public IPv4 addresses a policy may allow in all."""
    ipv6_budget: int


def _parse(raw: Mapping[str, Any]) -> Openness:
    try:
        tolerated = Addresses.of(str_list(raw.get("allowedWorldCidrs")))
    except ValueError:
        tolerated = Addresses()
    return Openness(
        frozenset(str_list(raw.get("exemptNamespaces"))),
        tolerated,
        2 ** (32 - int_value(raw.get("ipv4PublicPrefix"), 8)),
        2 ** (128 - int_value(raw.get("ipv6PublicPrefix"), 32)),
    )


def _knobs(exempt: str) -> Knobs[Openness]:
    return Knobs(
        {
            "exemptNamespaces": string_list_schema(exempt, ()),
            "allowedWorldCidrs": string_list_schema(
                "Addresses to tolerate anyway (e.g. 0.0.0.0/0 for a reviewed proxy): they do not "
                "count against the budget; normally empty.",
                (),
            ),
            "ipv4PublicPrefix": {
                "type": "integer",
                "minimum": 0,
                "maximum": 32,
                "default": 8,
                "description": "The public IPv4 addresses one policy may allow in all, as the "
                "size of one prefix of this length (8: a /8's worth).",
            },
            "ipv6PublicPrefix": {
                "type": "integer",
                "minimum": 0,
                "maximum": 128,
                "default": 32,
                "description": "The same budget for IPv6 (32: a /32's worth).",
            },
        },
        _parse,
    )


def _blocks(peers: Any) -> Iterator[tuple[str, list[str]]]:
    for peer in as_seq(peers):
        block = as_map(as_map(peer).get("ipBlock"))
        cidr = as_str(block.get("cidr"))
        if cidr is not None:
            yield cidr, [e for e in as_seq(block.get("except")) if isinstance(e, str)]


def _public(rules: Any, key: str, cfg: Openness) -> tuple[Addresses, list[str]]:
    """The addresses the rules' ipBlocks allow, less the tolerated ones; and unreadable CIDRs."""
    found, bad = Addresses(), []
    for rule in as_seq(rules):
        for cidr, excepts in _blocks(as_map(rule).get(key)):
            try:
                found = found.add(cidr, excepts)
            except ValueError:
                bad.append(cidr)
    return found.minus(cfg.tolerated), bad


_EVERYWHERE: Final = Addresses.of(["0.0.0.0/0", "::/0"]).reached()


def _too_wide(found: Addresses, cfg: Openness) -> Iterator[str]:
    found = found.reached()
    for family, addresses, budget, whole in (
        ("IPv4", found.v4, cfg.ipv4_budget, _EVERYWHERE.v4),
        ("IPv6", found.v6, cfg.ipv6_budget, _EVERYWHERE.v6),
    ):
        public = addresses.public()
        if public.size <= budget:
            continue
        every = whole.public()
        amount = (
            f"every public {family} address"
            if public.contains(every)
            else (f"{public.size:,} public {family} addresses")
        )
        yield f"{amount} (more than a /{_prefix(budget, family)}'s worth)"


def _prefix(budget: int, family: str) -> int:
    return (32 if family == "IPv4" else 128) - budget.bit_length() + 1


def _every_namespace(peer: Any) -> bool:
    selector = as_map(peer).get("namespaceSelector")
    return (
        isinstance(selector, Mapping)
        and not as_map(selector.get("matchLabels"))
        and not as_seq(selector.get("matchExpressions"))
    )


def _check(direction: str) -> Any:
    key = PEERS[direction]

    def check(args: ResourceValidationArgs, report: ReportViolation, cfg: Openness) -> None:
        if effective_namespace(args.props) in cfg.exempt:
            return
        who = f'NetworkPolicy "{name_of(args.props)}"'
        rules = as_map(args.props.get("spec")).get(direction)
        for index, rule in enumerate(as_seq(rules), start=1):
            rule = as_map(rule)
            peers = as_seq(rule.get(key))
            if not peers:
                ports = "every port" if not as_seq(rule.get("ports")) else "the listed ports"
                verb = (
                    "allows every destination" if direction == "egress" else "admits every source"
                )
                report(
                    f"{who} {direction} rule {index} has no '{key}' peers, so it {verb} on {ports}",
                    None,
                )
                continue
            if direction == "ingress" and any(_every_namespace(peer) for peer in peers):
                report(
                    f"{who} ingress rule {index} admits every namespace (an empty "
                    "namespaceSelector); name the namespaces that need it",
                    None,
                )
        found, bad = _public(rules, key, cfg)
        for cidr in bad:
            report(f"{who} {direction} has an ipBlock {cidr!r} that is not a CIDR", None)
        for amount in _too_wide(found, cfg):
            if direction == "egress":
                report(
                    f"{who} egress allows {amount}; name the external CIDRs the workload needs (or "
                    "route through an egress proxy)",
                    None,
                )
            else:
                report(
                    f"{who} ingress admits {amount}; admit the load balancer's or the clients' "
                    "ranges only",
                    None,
                )

    return check


networkpolicy_no_open_egress = resource_policy(
    name="networkpolicy-no-open-egress",
    description=(
        "NetworkPolicies do not allow egress to any destination, or to more of the internet "
        "than a budget, by the addresses their ipBlocks cover."
    ),
    category=Category.NETWORK,
    severity=Severity.HIGH,
    remediation=(
        "Give every egress rule explicit 'to' peers: pod/namespace selectors for in-cluster "
        "services (DNS, the object store gateway) and ipBlocks with the specific external CIDRs "
        "needed (split or holed blocks count by the addresses they cover). Internet access "
        "goes through an egress proxy in an exempt namespace (exemptNamespaces)."
    ),
    check=_check("egress"),
    knobs=_knobs("Namespaces (egress gateways, proxies) whose policies may allow the internet."),
    kinds=(NETWORK_POLICY,),
)

networkpolicy_no_open_ingress = resource_policy(
    name="networkpolicy-no-open-ingress",
    description=(
        "NetworkPolicies do not admit ingress from any source, from every namespace, or from "
        "more of the internet than a budget."
    ),
    category=Category.NETWORK,
    severity=Severity.HIGH,
    remediation=(
        "Give every ingress rule explicit 'from' peers: the pods or namespaces that call the "
        "workload (the ingress controller's namespace, the workload's own app), never an empty "
        "namespaceSelector, and ipBlocks only for the load balancer's or clients' ranges. An "
        "ingress controller that takes the internet runs in an exempt namespace "
        "(exemptNamespaces)."
    ),
    check=_check("ingress"),
    knobs=_knobs("Namespaces (ingress controllers) whose policies may admit the internet."),
    kinds=(NETWORK_POLICY,),
)


# --- networkpolicy-team-isolation -------------------------------------------------------------
class TeamNamespace(NamedTuple):
    name: str
    labels: dict[str, Any]
    reachable_from: frozenset[str]
    """Namespaces of the teams the stack lets reach this one."""


def team_namespaces(resources: list[PolicyResource]) -> dict[str, TeamNamespace]:
    found = {}
    for resource in resources:
        if not is_kind(resource.resource_type, "core/Namespace"):
            continue
        meta = metadata(resource.props)
        labels = dict(labels_of(meta))
        if not as_str(labels.get(TEAM_LABEL)):
            continue
        name = name_of(resource.props)
        labels.setdefault(NAMESPACE_NAME_LABEL, name)  # the API server sets it
        pairs = as_str(as_map(meta.get("annotations")).get(TENANT_REACHABLE_FROM_ANNOTATION))
        found[name] = TeamNamespace(
            name, labels, frozenset(p for p in (pairs or "").split(",") if p)
        )
    return found


def _peer_teams(peers: Any, own: str, teams: Mapping[str, TeamNamespace]) -> set[str]:
    """Team namespaces other than ``own`` that the peers of one rule select."""
    if not as_seq(peers):
        return set(teams) - {own}
    found: set[str] = set()
    for peer in as_seq(peers):
        selector = as_map(peer).get("namespaceSelector")
        if not isinstance(selector, Mapping):
            continue  # a pod selector alone means the policy's own namespace; ipBlocks no team
        chosen = LabelSelector(selector)
        found |= {name for name, team in teams.items() if chosen.matches(team.labels)}
    return found - {own}


def _check_isolation(args: StackValidationArgs, report: ReportViolation, _: None) -> None:
    teams = team_namespaces(args.resources)
    if len(teams) < 2:
        return
    for resource in args.resources:
        if not is_kind(resource.resource_type, NETWORK_POLICY):
            continue
        own = effective_namespace(resource.props)
        if own not in teams:
            continue
        who = f'NetworkPolicy "{name_of(resource.props)}" of team namespace "{own}"'
        spec = as_map(resource.props.get("spec"))
        for index, rule in enumerate(as_seq(spec.get("ingress")), start=1):
            for other in sorted(_peer_teams(as_map(rule).get("from"), own, teams)):
                if other not in teams[own].reachable_from:
                    report(
                        f'{who} ingress rule {index} admits team namespace "{other}", which the '
                        "stack does not let reach it (teams[].reachableFrom)",
                        resource.urn,
                    )
        for index, rule in enumerate(as_seq(spec.get("egress")), start=1):
            for other in sorted(_peer_teams(as_map(rule).get("to"), own, teams)):
                if own not in teams[other].reachable_from:
                    report(
                        f'{who} egress rule {index} reaches team namespace "{other}", which the '
                        f'stack does not open to "{own}" (teams[].reachableFrom)',
                        resource.urn,
                    )


networkpolicy_team_isolation = stack_policy(
    name="networkpolicy-team-isolation",
    description=(
        "A team's NetworkPolicies open no path to or from another team's namespace, unless the "
        "stack pairs the two teams."
    ),
    category=Category.NETWORK,
    severity=Severity.HIGH,
    remediation=(
        "Select peers in the team's own namespace, or platform and gateway namespaces by name. "
        "Where one team must call another, the callee's stack entry says so "
        f"(teams[].reachableFrom, written on its Namespace as {TENANT_REACHABLE_FROM_ANNOTATION}); "
        "then both teams' policies may allow that path."
    ),
    check=_check_isolation,
    knobs=NO_KNOBS,
)
