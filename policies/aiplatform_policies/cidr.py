"""Address arithmetic for NetworkPolicy ``ipBlock`` peers: sets of IPv4 and IPv6 addresses as
sorted intervals, so ``0.0.0.0/1`` plus ``128.0.0.0/1`` is the whole IPv4 space and an
``except`` hole is subtracted, whatever the strings look like.

"Public" is every address outside the special-purpose ranges (RFC 6890 and its IANA registries:
private, shared, loopback, link-local, documentation, benchmarking, multicast, reserved). The
IPv6 ranges that reach IPv4 hosts (IPv4-mapped ``::ffff:0:0/96``, NAT64 ``64:ff9b::/96``) count
as the IPv4 addresses they reach (``Addresses.reached``): through them a small IPv6 block is the
whole IPv4 internet.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

Interval = tuple[int, int]
"""``[first, last]`` address, inclusive."""

_NOT_PUBLIC: Final[dict[int, tuple[str, ...]]] = {
    4: (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    ),
    6: (
        "::/128",
        "::1/128",
        "100::/64",
        "2001:db8::/32",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    ),
}


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@functools.lru_cache(maxsize=4096)
def _network(cidr: str) -> Network:
    """Parsed once: a stack's NetworkPolicies repeat the same few blocks in every namespace,
    and parsing is most of what checking them costs. Raises ``ValueError`` on bad input."""
    return ipaddress.ip_network(cidr, strict=False)


def _interval(network: Network) -> Interval:
    return int(network.network_address), int(network.broadcast_address)


def _normal(intervals: Iterable[Interval]) -> tuple[Interval, ...]:
    merged: list[Interval] = []
    for first, last in sorted(intervals):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


@dataclass(frozen=True)
class AddressSet:
    """A set of addresses of one IP version."""

    version: int
    intervals: tuple[Interval, ...] = ()

    @classmethod
    def of(cls, version: int, cidrs: Iterable[str]) -> AddressSet:
        return cls(version, _normal(_interval(_network(c)) for c in cidrs))

    def union(self, other: AddressSet) -> AddressSet:
        return AddressSet(self.version, _normal((*self.intervals, *other.intervals)))

    def minus(self, other: AddressSet) -> AddressSet:
        result: list[Interval] = []
        for first, last in self.intervals:
            start = first
            for cut_first, cut_last in other.intervals:
                if cut_last < start or cut_first > last:
                    continue
                if cut_first > start:
                    result.append((start, cut_first - 1))
                start = max(start, cut_last + 1)
                if start > last:
                    break
            if start <= last:
                result.append((start, last))
        return AddressSet(self.version, tuple(result))

    @property
    def size(self) -> int:
        return sum(last - first + 1 for first, last in self.intervals)

    def contains(self, other: AddressSet) -> bool:
        return not other.minus(self).intervals

    def public(self) -> AddressSet:
        return self.minus(_not_public(self.version))


@dataclass(frozen=True)
class Addresses:
    """IPv4 and IPv6 addresses together."""

    v4: AddressSet = AddressSet(4)
    v6: AddressSet = AddressSet(6)

    def add(self, cidr: str, excepts: Iterable[str] = ()) -> Addresses:
        """With ``cidr`` minus its ``except`` blocks added; raises ``ValueError`` on bad input."""
        block = _network(cidr)
        holes = [_network(e) for e in excepts]
        version = block.version
        found = AddressSet(version, (_interval(block),)).minus(
            AddressSet(version, _normal(_interval(h) for h in holes if h.version == version))
        )
        if version == 4:
            return Addresses(self.v4.union(found), self.v6)
        return Addresses(self.v4, self.v6.union(found))

    def minus(self, other: Addresses) -> Addresses:
        return Addresses(self.v4.minus(other.v4), self.v6.minus(other.v6))

    @classmethod
    def of(cls, cidrs: Iterable[str]) -> Addresses:
        found = cls()
        for cidr in cidrs:
            found = found.add(cidr)
        return found

    def reached(self) -> Addresses:
        """The IPv4 addresses the IPv4-mapped and NAT64 parts of the IPv6 set reach, added to
        the IPv4 set (and taken out of the IPv6 one)."""
        v4, v6 = self.v4, self.v6
        for prefix in _IPV4_IN_IPV6:
            window = AddressSet.of(6, [prefix])
            inside = v6.minus(v6.minus(window))
            base = window.intervals[0][0]
            v4 = v4.union(AddressSet(4, tuple((a - base, b - base) for a, b in inside.intervals)))
            v6 = v6.minus(window)
        return Addresses(v4, v6)


_IPV4_IN_IPV6: Final = ("::ffff:0:0/96", "64:ff9b::/96")


@functools.cache
def _not_public(version: int) -> AddressSet:
    return AddressSet.of(version, _NOT_PUBLIC[version])
