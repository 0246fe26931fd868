"""Which workloads can reach which: Kubernetes NetworkPolicy evaluated over rendered manifests.

We have no cluster to probe, so isolation is proved offline: parse the Namespaces, the pod
templates of workloads and the ``networking.k8s.io/v1`` NetworkPolicies the program renders, then
answer "may this source open a connection to that destination on this port?" the way the
Kubernetes NetworkPolicy API defines it (kubernetes.io, "Network Policies" concept page and the
NetworkPolicy API reference):

- A pod is isolated for ingress (egress) only if some NetworkPolicy in its namespace selects it and
  has ``Ingress`` (``Egress``) in its ``policyTypes``; otherwise that direction is open.
- Omitted or empty ``policyTypes`` default to ``Ingress``, plus ``Egress`` if the policy has any
  egress rule. Policies are additive: an isolated pod allows the union of the rules that select it.
- A flow is allowed only if the source's egress AND the destination's ingress both allow it.
- Rules: absent/empty ``from``/``to`` matches every peer; absent/empty ``ports`` matches every port
  and protocol. ``ingress: []`` (or absent) allows nothing; ``ingress: [{}]`` allows everything.
- Peers: ``podSelector`` alone means the policy's namespace; ``namespaceSelector`` alone means every
  pod of the matching namespaces; both in one peer is an AND; separate peers are an OR.
- Ports: a number, a number range (``endPort``, inclusive) or a named container port, resolved on
  the destination pod for ingress and egress alike; ``protocol`` defaults to TCP.

Modelling choices (the API leaves these to the network plugin; we pick the documented intent):

- ``ipBlock`` matches only cluster-external endpoints (by IP). The docs say ipBlock "should be
  cluster-external IPs, since Pod IPs are ephemeral and unpredictable", so a cluster pod is never
  matched by an ipBlock unless the caller opts in with ``ipblock_matches_pod_ips=True`` and gives
  the pod an IP.
- Pod and namespace selectors never match external endpoints, and external endpoints have no
  policies of their own: a flow between two external endpoints is not evaluated.
- A named port resolves only on a pod (an endpoint with a namespace); an external IP has no ports
  the network plugin could look a name up in.
- Flows are pod to pod (after Service DNAT); node-local traffic, which is always allowed, is not
  modelled. A workload stands for all its replicas, so ``src == dst`` is evaluated as traffic
  between two replicas (a pod's traffic to itself is always allowed and needs no answer).
- ``hostNetwork`` pods are evaluated like any other pod, with a note: plugins differ for them.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from components.constants import (
    DNS_PORT,
    KUBE_DNS_LABEL,
    KUBE_DNS_LABEL_VALUE,
    KUBE_SYSTEM_NAMESPACE,
    NAMESPACE_NAME_LABEL,
    POD_TEMPLATE_PATHS,
)

PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
"""The protocols NetworkPolicy filters; ``NetworkPolicyPort.protocol`` defaults to TCP."""
INGRESS: Final = "Ingress"
EGRESS: Final = "Egress"
POLICY_API_VERSION: Final = "networking.k8s.io/v1"

_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
_TEMPLATE_PATHS: Final[Mapping[str, tuple[str, ...]]] = {
    group_kind.partition("/")[2]: path for group_kind, path in POD_TEMPLATE_PATHS.items()
}
"""Kind → where it keeps its pod template (the manifest itself for a Pod); the pod's labels and
ports live there."""
WORKLOAD_KINDS: Final = tuple(_TEMPLATE_PATHS)
_UNSUPPORTED_POLICY_KINDS: Final = (
    "AdminNetworkPolicy",
    "BaselineAdminNetworkPolicy",
    "CiliumNetworkPolicy",
    "CiliumClusterwideNetworkPolicy",
    "GlobalNetworkPolicy",
)

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ManifestError(ValueError):
    """A manifest the API server would reject; evaluating it would prove nothing."""


# --- Model --------------------------------------------------------------------------------------


def _check_protocol(protocol: str, where: str) -> str:
    if protocol not in PROTOCOLS:
        raise ManifestError(f"{where}: protocol must be one of {PROTOCOLS}, got {protocol!r}")
    return protocol


def _check_port_number(port: object, where: str) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ManifestError(f"{where}: port must be an integer in 1..65535, got {port!r}")
    return port


@dataclass(frozen=True)
class ContainerPort:
    """A port a pod listens on; the name is what a policy's named port resolves against."""

    port: int
    protocol: str = "TCP"
    name: str | None = None

    def __post_init__(self) -> None:
        _check_port_number(self.port, "container port")
        _check_protocol(self.protocol, f"container port {self.port}")

    def __str__(self) -> str:
        return f"{self.port}/{self.protocol}"


@dataclass(frozen=True)
class Namespace:
    """A namespace as namespaceSelectors see it: its labels plus the one the API server adds."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        # The API server always sets (and pins) kubernetes.io/metadata.name to the name.
        object.__setattr__(self, "labels", {**self.labels, NAMESPACE_NAME_LABEL: self.name})


@dataclass(frozen=True)
class Endpoint:
    """One workload (all replicas of a pod template) or one cluster-external IP.

    ``namespace is None`` marks an external endpoint: only ipBlocks match it and no policy
    isolates it. Pods may carry an ``ip`` too, used only with ``ipblock_matches_pod_ips``.
    """

    name: str
    namespace: str | None = None
    kind: str = "Pod"
    labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    ports: tuple[ContainerPort, ...] = ()
    ip: str | None = None
    host_network: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", dict(self.labels))
        object.__setattr__(self, "ports", tuple(self.ports))
        if self.ip is not None:
            object.__setattr__(self, "ip", str(ipaddress.ip_address(self.ip)))
        if self.namespace is None and self.ip is None:
            raise ValueError(f"external endpoint {self.name!r} needs an ip")

    @classmethod
    def external(
        cls, ip: str, name: str | None = None, ports: Iterable[ContainerPort] = ()
    ) -> Endpoint:
        """A cluster-external address (internet, object storage) that ipBlocks can match."""
        return cls(name=name or ip, namespace=None, kind="External", ip=ip, ports=tuple(ports))

    @property
    def is_external(self) -> bool:
        """Outside the cluster: no policy isolates it and only ipBlocks select it."""
        return self.namespace is None

    @property
    def key(self) -> str:
        """``namespace/name`` for pods, the name (default: the IP) for external endpoints."""
        return self.name if self.namespace is None else f"{self.namespace}/{self.name}"

    def resolve_port(self, name: str, protocol: str) -> int | None:
        """The number of the named container port with this protocol; None when there is none."""
        for p in self.ports:
            if p.name == name and p.protocol == protocol:
                return p.port
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "kind": self.kind,
            "labels": dict(sorted(self.labels.items())),
            "ports": [{"port": p.port, "protocol": p.protocol, "name": p.name} for p in self.ports],
            "ip": self.ip,
            "hostNetwork": self.host_network,
        }


def kube_dns(namespace: str = KUBE_SYSTEM_NAMESPACE, name: str = "kube-dns") -> Endpoint:
    """The cluster DNS pods as a synthetic endpoint, for proving DNS egress is left open.

    The manifests never contain kube-dns (the cluster brings it), but every default-deny egress
    policy must let pods reach it; labels and ports are those of the upstream CoreDNS addon.
    """
    return Endpoint(
        name=name,
        namespace=namespace,
        kind="Pod",
        labels={KUBE_DNS_LABEL: KUBE_DNS_LABEL_VALUE},
        ports=(
            ContainerPort(DNS_PORT, "UDP", "dns"),
            ContainerPort(DNS_PORT, "TCP", "dns-tcp"),
            ContainerPort(9153, "TCP", "metrics"),
        ),
    )


# --- Policy -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """One label requirement; ``matchLabels`` entries become ``In`` with a single value."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        # Kubernetes label semantics: NotIn and DoesNotExist also match pods lacking the key.
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels

    def __str__(self) -> str:
        if self.operator == "Exists":
            return self.key
        if self.operator == "DoesNotExist":
            return f"!{self.key}"
        if self.operator == "In" and len(self.values) == 1:
            return f"{self.key}={next(iter(self.values))}"
        op = "in" if self.operator == "In" else "notin"
        return f"{self.key} {op} ({','.join(sorted(self.values))})"


@dataclass(frozen=True)
class LabelSelector:
    """A ``metav1.LabelSelector``: requirements ANDed; no requirements selects everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, raw: object, where: str) -> LabelSelector:
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ManifestError(f"{where}: a label selector must be a mapping, got {raw!r}")
        reqs: list[Requirement] = []
        for k, v in (raw.get("matchLabels") or {}).items():
            if not isinstance(v, str):
                raise ManifestError(f"{where}.matchLabels[{k}]: value must be a string, got {v!r}")
            reqs.append(Requirement(str(k), "In", frozenset({v})))
        for i, expr in enumerate(raw.get("matchExpressions") or ()):
            here = f"{where}.matchExpressions[{i}]"
            op = expr.get("operator")
            values = expr.get("values") or []
            if op not in _OPERATORS:
                raise ManifestError(f"{here}: operator must be one of {_OPERATORS}, got {op!r}")
            if op in ("In", "NotIn") and not values:
                raise ManifestError(f"{here}: {op} needs at least one value")
            if op in ("Exists", "DoesNotExist") and values:
                raise ManifestError(f"{here}: {op} takes no values")
            if not all(isinstance(v, str) for v in values):
                raise ManifestError(f"{here}: values must be strings, got {values!r}")
            key = expr.get("key")
            if not isinstance(key, str) or not key:
                raise ManifestError(f"{here}: key must be a non-empty string, got {key!r}")
            reqs.append(Requirement(key, op, frozenset(values)))
        return cls(tuple(reqs))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return "{" + ", ".join(str(r) for r in self.requirements) + "}"


@dataclass(frozen=True)
class IPBlock:
    """A CIDR minus its ``except`` CIDRs."""

    cidr: IPNetwork
    excepts: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str) -> IPBlock:
        try:
            cidr = ipaddress.ip_network(str(raw.get("cidr")), strict=False)
            excepts = tuple(
                ipaddress.ip_network(str(e), strict=False) for e in raw.get("except") or ()
            )
        except ValueError as exc:
            raise ManifestError(f"{where}: {exc}") from exc
        for e in excepts:
            # The API server requires each except to be a strict subset of the cidr.
            inside = e.version == cidr.version and e.subnet_of(cidr)  # type: ignore[arg-type]
            if not inside or e.prefixlen <= cidr.prefixlen:
                raise ManifestError(f"{where}: except {e} must be a strict subset of {cidr}")
        return cls(cidr, excepts)

    def contains(self, ip: str) -> bool:
        addr = ipaddress.ip_address(ip)
        if addr.version != self.cidr.version or addr not in self.cidr:
            return False
        return not any(addr in e for e in self.excepts if e.version == addr.version)

    def __str__(self) -> str:
        if not self.excepts:
            return f"ipBlock {self.cidr}"
        return f"ipBlock {self.cidr} except {', '.join(str(e) for e in self.excepts)}"


@dataclass(frozen=True)
class Peer:
    """One ``from``/``to`` entry. None means the field is absent, which differs from ``{}``."""

    pod_selector: LabelSelector | None = None
    namespace_selector: LabelSelector | None = None
    ip_block: IPBlock | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str) -> Peer:
        if not isinstance(raw, Mapping):
            raise ManifestError(f"{where}: a peer must be a mapping, got {raw!r}")
        pod = raw.get("podSelector")
        ns = raw.get("namespaceSelector")
        block = raw.get("ipBlock")
        if block is not None and (pod is not None or ns is not None):
            raise ManifestError(f"{where}: ipBlock cannot be combined with selectors")
        if block is None and pod is None and ns is None:
            raise ManifestError(f"{where}: a peer needs podSelector, namespaceSelector or ipBlock")
        return cls(
            pod_selector=None if pod is None else LabelSelector.parse(pod, f"{where}.podSelector"),
            namespace_selector=(
                None if ns is None else LabelSelector.parse(ns, f"{where}.namespaceSelector")
            ),
            ip_block=None if block is None else IPBlock.parse(block, f"{where}.ipBlock"),
        )

    def __str__(self) -> str:
        if self.ip_block is not None:
            return str(self.ip_block)
        parts = []
        if self.namespace_selector is not None:
            parts.append(f"namespaceSelector {self.namespace_selector}")
        if self.pod_selector is not None:
            parts.append(f"podSelector {self.pod_selector}")
        return " AND ".join(parts)


@dataclass(frozen=True)
class PolicyPort:
    """One ``ports`` entry: protocol plus a number, a range, a container-port name, or any."""

    protocol: str = "TCP"
    port: int | str | None = None
    end_port: int | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], where: str) -> PolicyPort:
        protocol = _check_protocol(raw.get("protocol") or "TCP", where)
        port = raw.get("port")
        end_port = raw.get("endPort")
        if isinstance(port, str):
            # IntOrString: a string is always a name; a name must contain a letter.
            if not any(c.isalpha() for c in port):
                raise ManifestError(f"{where}: named port {port!r} must contain a letter")
        elif port is not None:
            _check_port_number(port, where)
        if end_port is not None:
            _check_port_number(end_port, f"{where}.endPort")
            if not isinstance(port, int):
                raise ManifestError(f"{where}: endPort needs a numeric port, got {port!r}")
            if end_port < port:
                raise ManifestError(f"{where}: endPort {end_port} is below port {port}")
        return cls(protocol, port, end_port)

    def matches(self, dst: Endpoint, port: int, protocol: str) -> bool:
        if protocol != self.protocol:
            return False
        if self.port is None:
            return True
        if isinstance(self.port, str):
            # Named ports resolve on the destination pod, for ingress and egress alike.
            return not dst.is_external and dst.resolve_port(self.port, protocol) == port
        if self.end_port is not None:
            return self.port <= port <= self.end_port
        return port == self.port

    def __str__(self) -> str:
        if self.port is None:
            return f"any/{self.protocol}"
        if self.end_port is not None:
            return f"{self.port}-{self.end_port}/{self.protocol}"
        return f"{self.port}/{self.protocol}"


@dataclass(frozen=True)
class Rule:
    """An ingress or egress rule; empty ``peers`` / ``ports`` mean all peers / all ports."""

    peers: tuple[Peer, ...] = ()
    ports: tuple[PolicyPort, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], peer_key: str, where: str) -> Rule:
        if not isinstance(raw, Mapping):
            raise ManifestError(f"{where}: a rule must be a mapping, got {raw!r}")
        peers = tuple(
            Peer.parse(p, f"{where}.{peer_key}[{i}]") for i, p in enumerate(raw.get(peer_key) or ())
        )
        ports = tuple(
            PolicyPort.parse(p, f"{where}.ports[{i}]") for i, p in enumerate(raw.get("ports") or ())
        )
        return cls(peers, ports)


@dataclass(frozen=True)
class NetworkPolicy:
    """A parsed ``networking.k8s.io/v1`` NetworkPolicy with ``policyTypes`` already defaulted."""

    namespace: str
    name: str
    pod_selector: LabelSelector
    policy_types: frozenset[str]
    ingress: tuple[Rule, ...] = ()
    egress: tuple[Rule, ...] = ()

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> NetworkPolicy:
        meta = manifest.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        name = meta.get("name") or "<unnamed>"
        where = f"NetworkPolicy {namespace}/{name}"
        spec = manifest.get("spec") or {}
        ingress = tuple(
            Rule.parse(r, "from", f"{where}.spec.ingress[{i}]")
            for i, r in enumerate(spec.get("ingress") or ())
        )
        egress = tuple(
            Rule.parse(r, "to", f"{where}.spec.egress[{i}]")
            for i, r in enumerate(spec.get("egress") or ())
        )
        raw_types = spec.get("policyTypes") or []
        if raw_types:
            bad = [t for t in raw_types if t not in (INGRESS, EGRESS)]
            if bad:
                raise ManifestError(f"{where}: policyTypes must be Ingress/Egress, got {bad}")
            types = frozenset(raw_types)
        else:
            # API defaulting: Ingress always; Egress only if there is at least one egress rule.
            types = frozenset({INGRESS, EGRESS} if egress else {INGRESS})
        return cls(
            namespace=namespace,
            name=name,
            pod_selector=LabelSelector.parse(spec.get("podSelector"), f"{where}.spec.podSelector"),
            policy_types=types,
            ingress=ingress,
            egress=egress,
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def selects(self, pod: Endpoint) -> bool:
        """Whether the policy applies to the pod: same namespace and podSelector matches."""
        return pod.namespace == self.namespace and self.pod_selector.matches(pod.labels)

    def rules(self, direction: str) -> tuple[Rule, ...]:
        return self.ingress if direction == INGRESS else self.egress


# --- Verdicts -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleMatch:
    """Which rule of which policy allowed a flow, and through which peer and port entry."""

    policy: str
    direction: str
    rule: int
    peer: int | None
    port: int | None
    detail: str

    def __str__(self) -> str:
        return f"{self.policy} {self.direction.lower()}[{self.rule}] ({self.detail})"


@dataclass(frozen=True)
class DirectionVerdict:
    """The answer for one side of a flow: the source's egress or the destination's ingress."""

    direction: str
    allowed: bool
    isolated: bool
    policies: tuple[str, ...]
    """Policies that select the pod and have this direction in their policyTypes."""
    matches: tuple[RuleMatch, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "isolated": self.isolated,
            "policies": list(self.policies),
            "allowedBy": [str(m) for m in self.matches],
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Verdict:
    """Whether src may connect to dst on port/protocol, and why (both sides must allow)."""

    src: str
    dst: str
    port: int
    protocol: str
    egress: DirectionVerdict
    ingress: DirectionVerdict
    notes: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.egress.allowed and self.ingress.allowed

    def __bool__(self) -> bool:
        return self.allowed

    @property
    def reason(self) -> str:
        head = "allowed" if self.allowed else "denied"
        text = f"{head}: {self.egress.reason}; {self.ingress.reason}"
        return text + "".join(f" [{n}]" for n in self.notes)

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst} {self.port}/{self.protocol}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "dst": self.dst,
            "port": self.port,
            "protocol": self.protocol,
            "allowed": self.allowed,
            "egress": self.egress.to_json(),
            "ingress": self.ingress.to_json(),
            "notes": list(self.notes),
            "reason": self.reason,
        }


# --- Manifests ----------------------------------------------------------------------------------


def _unwrap(manifests: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    """Flatten ``kind: List`` objects and resource records (``inputs``) into plain manifests."""
    for m in manifests:
        if not isinstance(m, Mapping):
            continue
        if "inputs" in m and "type" in m and isinstance(m["inputs"], Mapping):
            m = m["inputs"]
        kind = str(m.get("kind") or "")
        if kind == "List" or (kind.endswith("List") and "items" in m):
            yield from _unwrap(m.get("items") or ())
        elif "kind" in m:
            yield m


def _labels(raw: object, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        raise ManifestError(f"{where}: labels must map strings to strings, got {raw!r}")
    return {str(k): v for k, v in raw.items()}


def _pod_template(manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    kind = manifest.get("kind")
    node: Any = manifest
    for step in _TEMPLATE_PATHS[str(kind)]:
        node = node.get(step) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def endpoint_from_workload(manifest: Mapping[str, Any]) -> Endpoint | None:
    """The pod-template endpoint of a Pod or workload manifest; None for other kinds."""
    kind = manifest.get("kind")
    if kind not in WORKLOAD_KINDS:
        return None
    meta = manifest.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    name = meta.get("name") or "<unnamed>"
    where = f"{kind} {namespace}/{name}"
    template = _pod_template(manifest)
    if template is None:
        raise ManifestError(f"{where}: no pod template")
    labels = _labels((template.get("metadata") or {}).get("labels"), f"{where} pod labels")
    spec = template.get("spec") or {}
    if kind == "Job" and not (manifest.get("spec") or {}).get("manualSelector"):
        # The API server adds these to every Job's pod template; policies may select on them.
        labels.setdefault("batch.kubernetes.io/job-name", name)
        labels.setdefault("job-name", name)
    ports: list[ContainerPort] = []
    for c in spec.get("containers") or ():
        for p in c.get("ports") or ():
            ports.append(
                ContainerPort(
                    port=_check_port_number(p.get("containerPort"), f"{where} container port"),
                    protocol=_check_protocol(p.get("protocol") or "TCP", where),
                    name=p.get("name"),
                )
            )
    pod_ip = (manifest.get("status") or {}).get("podIP") if kind == "Pod" else None
    return Endpoint(
        name=name,
        namespace=namespace,
        kind=str(kind),
        labels=labels,
        ports=tuple(ports),
        ip=pod_ip,
        host_network=bool(spec.get("hostNetwork")),
    )


# --- Evaluation ---------------------------------------------------------------------------------


class Cluster:
    """Namespaces, endpoints and policies: everything a connectivity question depends on."""

    def __init__(
        self,
        namespaces: Iterable[Namespace] = (),
        endpoints: Iterable[Endpoint] = (),
        policies: Iterable[NetworkPolicy] = (),
        *,
        ipblock_matches_pod_ips: bool = False,
        warnings: Iterable[str] = (),
    ) -> None:
        self.namespaces: dict[str, Namespace] = {ns.name: ns for ns in namespaces}
        self.endpoints: tuple[Endpoint, ...] = tuple(endpoints)
        self.policies: tuple[NetworkPolicy, ...] = tuple(policies)
        self.ipblock_matches_pod_ips = ipblock_matches_pod_ips
        self.warnings: list[str] = list(warnings)
        # Namespaces referenced but not rendered (default, kube-system) exist with only the
        # label the API server adds.
        for name in {e.namespace for e in self.endpoints} | {p.namespace for p in self.policies}:
            if name is not None and name not in self.namespaces:
                self.namespaces[name] = Namespace(name)
        self._by_namespace: dict[str, list[NetworkPolicy]] = {}
        for p in self.policies:
            self._by_namespace.setdefault(p.namespace, []).append(p)
        self.ids: dict[Endpoint, str] = self._assign_ids()

    @classmethod
    def from_manifests(
        cls,
        manifests: Iterable[Any],
        extra_endpoints: Iterable[Endpoint] = (),
        *,
        ipblock_matches_pod_ips: bool = False,
    ) -> Cluster:
        """Read Namespaces, workloads and NetworkPolicies; other kinds are ignored."""
        namespaces: list[Namespace] = []
        endpoints: list[Endpoint] = []
        policies: list[NetworkPolicy] = []
        warnings: list[str] = []
        for m in _unwrap(manifests):
            kind = m.get("kind")
            meta = m.get("metadata") or {}
            if kind == "Namespace":
                name = meta.get("name")
                if not isinstance(name, str) or not name:
                    raise ManifestError(f"Namespace without a name: {meta!r}")
                namespaces.append(Namespace(name, _labels(meta.get("labels"), f"Namespace {name}")))
            elif kind == "NetworkPolicy" and m.get("apiVersion", POLICY_API_VERSION) == (
                POLICY_API_VERSION
            ):
                policies.append(NetworkPolicy.from_manifest(m))
            elif kind == "NetworkPolicy" or kind in _UNSUPPORTED_POLICY_KINDS:
                # Not silently: a CNI-specific policy could deny what we report as allowed.
                warnings.append(
                    f"{m.get('apiVersion')} {kind} {meta.get('namespace', '')}/{meta.get('name')}"
                    " is not evaluated: only networking.k8s.io/v1 NetworkPolicy is modelled"
                )
            elif kind in WORKLOAD_KINDS:
                ep = endpoint_from_workload(m)
                if ep is not None:
                    endpoints.append(ep)
        endpoints.extend(extra_endpoints)
        return cls(
            namespaces,
            endpoints,
            policies,
            ipblock_matches_pod_ips=ipblock_matches_pod_ips,
            warnings=warnings,
        )

    def _assign_ids(self) -> dict[Endpoint, str]:
        """``namespace/name`` unless two endpoints share it, then ``namespace/Kind/name``."""
        counts: dict[str, int] = {}
        for e in self.endpoints:
            counts[e.key] = counts.get(e.key, 0) + 1
        ids: dict[Endpoint, str] = {}
        for e in self.endpoints:
            if counts[e.key] == 1 or e.namespace is None:
                ids[e] = e.key
            else:
                ids[e] = f"{e.namespace}/{e.kind}/{e.name}"
        return ids

    def endpoint(self, ref: Endpoint | str) -> Endpoint:
        """Look an endpoint up by id (``ns/name``, ``ns/Kind/name``), external name or IP."""
        if isinstance(ref, Endpoint):
            return ref
        found = [
            e
            for e in self.endpoints
            if ref in (self.ids[e], e.key, f"{e.namespace}/{e.kind}/{e.name}")
            or (e.is_external and ref == e.ip)
        ]
        if len(found) != 1:
            what = "ambiguous" if found else "unknown"
            raise KeyError(f"{what} endpoint {ref!r}")
        return found[0]

    def id_of(self, endpoint: Endpoint) -> str:
        """The id verdicts and matrices use, unique within this cluster."""
        return self.ids.get(endpoint, endpoint.key)

    def policies_selecting(self, pod: Endpoint, direction: str) -> tuple[NetworkPolicy, ...]:
        """Policies that isolate the pod in this direction (empty: the direction is open)."""
        if pod.is_external:
            return ()
        return tuple(
            p
            for p in self._by_namespace.get(pod.namespace or "", ())
            if direction in p.policy_types and p.selects(pod)
        )

    def peer_matches(self, peer: Peer, policy_namespace: str, other: Endpoint) -> bool:
        """Whether the peer entry of a policy in ``policy_namespace`` covers ``other``."""
        if peer.ip_block is not None:
            if other.ip is None or (not other.is_external and not self.ipblock_matches_pod_ips):
                return False
            return peer.ip_block.contains(other.ip)
        if other.is_external:
            return False
        if peer.namespace_selector is None:
            in_namespace = other.namespace == policy_namespace
        else:
            ns = self.namespaces.get(other.namespace or "") or Namespace(other.namespace or "")
            in_namespace = peer.namespace_selector.matches(ns.labels)
        # A peer without podSelector (namespaceSelector alone) means every pod there.
        pods_ok = peer.pod_selector is None or peer.pod_selector.matches(other.labels)
        return in_namespace and pods_ok

    def _side(
        self,
        direction: str,
        subject: Endpoint,
        other: Endpoint,
        dst: Endpoint,
        port: int,
        protocol: str,
    ) -> DirectionVerdict:
        """Evaluate one side: ``subject``'s policies of ``direction`` against ``other``.

        Named ports always resolve on ``dst``, which is why it is passed separately.
        """
        label = f"{direction.lower()} {'from' if direction == EGRESS else 'to'} "
        label += self.id_of(subject)
        if subject.is_external:
            reason = f"{label} not subject to NetworkPolicy (external)"
            return DirectionVerdict(direction, True, False, (), (), reason)
        selecting = self.policies_selecting(subject, direction)
        if not selecting:
            reason = f"{label} not isolated (no policy with {direction} selects it)"
            return DirectionVerdict(direction, True, False, (), (), reason)
        matches: list[RuleMatch] = []
        for pol in selecting:
            for r_i, rule in enumerate(pol.rules(direction)):
                peer_i: int | None = None
                if rule.peers:
                    peer_i = next(
                        (
                            i
                            for i, p in enumerate(rule.peers)
                            if self.peer_matches(p, pol.namespace, other)
                        ),
                        None,
                    )
                    if peer_i is None:
                        continue
                port_i: int | None = None
                if rule.ports:
                    port_i = next(
                        (i for i, p in enumerate(rule.ports) if p.matches(dst, port, protocol)),
                        None,
                    )
                    if port_i is None:
                        continue
                peer_key = "to" if direction == EGRESS else "from"
                peer_txt = (
                    f"{peer_key}: all"
                    if peer_i is None
                    else f"{peer_key}[{peer_i}] {rule.peers[peer_i]}"
                )
                port_txt = (
                    "ports: all" if port_i is None else f"ports[{port_i}] {rule.ports[port_i]}"
                )
                matches.append(
                    RuleMatch(pol.key, direction, r_i, peer_i, port_i, f"{peer_txt}; {port_txt}")
                )
        names = tuple(p.key for p in selecting)
        if matches:
            reason = f"{label} allowed by " + ", ".join(str(m) for m in matches)
            return DirectionVerdict(direction, True, True, names, tuple(matches), reason)
        reason = f"{label} isolated by {', '.join(names)} and no rule allows it"
        return DirectionVerdict(direction, False, True, names, (), reason)

    def can_connect(
        self, src: Endpoint | str, dst: Endpoint | str, port: int | str, protocol: str = "TCP"
    ) -> Verdict:
        """Whether src may open a connection to dst: src's egress AND dst's ingress must allow.

        ``port`` may name one of dst's container ports; it is resolved to its number first.
        """
        s, d = self.endpoint(src), self.endpoint(dst)
        _check_protocol(protocol, "can_connect")
        if isinstance(port, str):
            resolved = d.resolve_port(port, protocol)
            if resolved is None:
                raise KeyError(f"{self.id_of(d)} has no {protocol} container port named {port!r}")
            port = resolved
        _check_port_number(port, "can_connect")
        if s.is_external and d.is_external:
            raise ValueError("both endpoints are external: NetworkPolicy does not apply")
        notes: list[str] = []
        if s == d:
            notes.append("same workload: evaluated as traffic between two of its replicas")
        for e in dict.fromkeys((s, d)):
            if e.host_network:
                notes.append(f"{self.id_of(e)} uses hostNetwork: enforcement is plugin-specific")
        return Verdict(
            src=self.id_of(s),
            dst=self.id_of(d),
            port=port,
            protocol=protocol,
            egress=self._side(EGRESS, s, d, d, port, protocol),
            ingress=self._side(INGRESS, d, s, d, port, protocol),
            notes=tuple(notes),
        )


def can_connect(
    manifests: Cluster | Iterable[Any],
    src: Endpoint | str,
    dst: Endpoint | str,
    port: int | str,
    protocol: str = "TCP",
    extra_endpoints: Iterable[Endpoint] = (),
) -> Verdict:
    """One-shot form of :meth:`Cluster.can_connect` for callers holding raw manifests."""
    cluster = (
        manifests
        if isinstance(manifests, Cluster)
        else Cluster.from_manifests(manifests, extra_endpoints)
    )
    return cluster.can_connect(src, dst, port, protocol)


# --- Matrix -------------------------------------------------------------------------------------


PortRequest = int | str | tuple[int | str, str]
"""A port to probe besides the declared ones: ``8080``, ``"http"``, ``(53, "UDP")``."""


@dataclass(frozen=True)
class Matrix:
    """Every (source, destination, port) verdict, for reports and for asserting isolation."""

    endpoints: tuple[str, ...]
    verdicts: tuple[Verdict, ...]
    warnings: tuple[str, ...] = ()
    endpoint_details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)

    def flows(self, src: str, dst: str) -> tuple[Verdict, ...]:
        """Every probed port from src to dst, allowed or not."""
        return tuple(v for v in self.verdicts if v.src == src and v.dst == dst)

    def reachable(self, src: str, dst: str) -> tuple[str, ...]:
        """``port/protocol`` strings src may connect to on dst."""
        return tuple(f"{v.port}/{v.protocol}" for v in self.flows(src, dst) if v.allowed)

    def is_allowed(self, src: str, dst: str, port: int, protocol: str = "TCP") -> bool:
        for v in self.flows(src, dst):
            if v.port == port and v.protocol == protocol:
                return v.allowed
        raise KeyError(f"{src} -> {dst} {port}/{protocol} was not evaluated")

    def to_json(self) -> dict[str, Any]:
        reach: dict[str, dict[str, list[str]]] = {}
        for v in self.verdicts:
            if v.allowed:
                reach.setdefault(v.src, {}).setdefault(v.dst, []).append(f"{v.port}/{v.protocol}")
        return {
            "endpoints": [{"id": e, **self.endpoint_details.get(e, {})} for e in self.endpoints],
            "flows": [
                {
                    "src": v.src,
                    "dst": v.dst,
                    "port": v.port,
                    "protocol": v.protocol,
                    "allowed": v.allowed,
                    "allowedBy": [str(m) for m in (*v.egress.matches, *v.ingress.matches)],
                    "reason": v.reason,
                }
                for v in self.verdicts
            ],
            "reachable": reach,
            "warnings": list(self.warnings),
        }

    def to_text(self) -> str:
        """One line per (source, destination) pair: allowed and denied ports, aligned."""
        rows = [("SOURCE", "DESTINATION", "ALLOWED", "DENIED")]
        pairs: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
        for v in self.verdicts:
            ok, no = pairs.setdefault((v.src, v.dst), ([], []))
            (ok if v.allowed else no).append(f"{v.port}/{v.protocol}")
        for (s, d), (ok, no) in pairs.items():
            rows.append((s, d, ",".join(ok) or "-", ",".join(no) or "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [
            "  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3]
            for r in rows
        ]
        allowed = sum(v.allowed for v in self.verdicts)
        lines.append(
            f"{len(self.endpoints)} endpoints, {len(self.verdicts)} flows: "
            f"{allowed} allowed, {len(self.verdicts) - allowed} denied"
        )
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def _probe_ports(dst: Endpoint, requested: Sequence[PortRequest]) -> list[tuple[int, str]]:
    """dst's declared container ports plus the requested ones, deduplicated and sorted."""
    out: set[tuple[int, str]] = {(p.port, p.protocol) for p in dst.ports}
    for req in requested:
        number, protocol = req if isinstance(req, tuple) else (req, "TCP")
        if isinstance(number, str):
            resolved = dst.resolve_port(number, protocol)
            if resolved is None:
                continue
            number = resolved
        out.add((_check_port_number(number, "requested port"), _check_protocol(protocol, "port")))
    return sorted(out)


def reachability_matrix(
    manifests: Cluster | Iterable[Any],
    extra_endpoints: Iterable[Endpoint] = (),
    ports: Iterable[PortRequest] = (),
) -> Matrix:
    """Evaluate every ordered pair of endpoints on each destination's ports.

    External-to-external pairs are skipped: no NetworkPolicy can apply to them.
    """
    extras = tuple(extra_endpoints)
    if isinstance(manifests, Cluster):
        cluster = manifests
        if extras:
            cluster = Cluster(
                cluster.namespaces.values(),
                (*cluster.endpoints, *extras),
                cluster.policies,
                ipblock_matches_pod_ips=cluster.ipblock_matches_pod_ips,
                warnings=cluster.warnings,
            )
    else:
        cluster = Cluster.from_manifests(manifests, extras)
    requested = list(ports)
    verdicts: list[Verdict] = []
    for s in cluster.endpoints:
        for d in cluster.endpoints:
            if s.is_external and d.is_external:
                continue
            for number, protocol in _probe_ports(d, requested):
                verdicts.append(cluster.can_connect(s, d, number, protocol))
    return Matrix(
        endpoints=tuple(cluster.id_of(e) for e in cluster.endpoints),
        verdicts=tuple(verdicts),
        warnings=tuple(cluster.warnings),
        endpoint_details={cluster.id_of(e): e.to_json() for e in cluster.endpoints},
    )


# --- CLI ----------------------------------------------------------------------------------------


def load_manifests(paths: Iterable[str]) -> list[Any]:
    """YAML streams, JSON documents, or a preview report (its ``resources`` records)."""
    import yaml

    docs: list[Any] = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for doc in yaml.safe_load_all(fh):
                if isinstance(doc, Mapping) and isinstance(doc.get("resources"), list):
                    docs.extend(doc["resources"])
                elif isinstance(doc, list):
                    docs.extend(doc)
                elif doc is not None:
                    docs.append(doc)
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reachability matrix of manifest files (``--json`` for the structure)."""
    parser = argparse.ArgumentParser(
        prog="python -m tools.netpol", description="Print which workloads can reach which."
    )
    parser.add_argument("files", nargs="+", help="YAML/JSON manifests or build/<stack>/report.json")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--kube-dns", action="store_true", help="add a kube-system/kube-dns pod")
    parser.add_argument(
        "--port", action="append", default=[], help="extra port to probe: 8080, 53/UDP or http"
    )
    args = parser.parse_args(argv)
    requested: list[PortRequest] = []
    for spec in args.port:
        number, _, protocol = spec.partition("/")
        value: int | str = int(number) if number.isdigit() else number
        requested.append((value, protocol.upper() or "TCP"))
    extras = [kube_dns()] if args.kube_dns else []
    matrix = reachability_matrix(load_manifests(args.files), extras, requested)
    out = json.dumps(matrix.to_json(), indent=2) if args.json else matrix.to_text()
    sys.stdout.write(out + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
