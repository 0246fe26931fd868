"""The address arithmetic of the network policies, against sets of addresses spelled out.

Blocks are drawn inside one /22 (1,024 addresses), where every address can be listed; union,
difference, containment and size must agree with Python sets of those addresses, and the
IPv4-in-IPv6 ranges must land on the IPv4 addresses they stand for.
"""

from __future__ import annotations

import ipaddress

from hypothesis import given, settings
from hypothesis import strategies as st

from aiplatform_policies.cidr import Addresses, AddressSet

BASE = int(ipaddress.ip_address("203.0.112.0"))


@st.composite
def blocks(draw: st.DrawFn) -> str:
    prefix = draw(st.integers(22, 32))
    size = 2 ** (32 - prefix)
    offset = draw(st.integers(0, 1024 // size - 1)) * size
    return f"{ipaddress.ip_address(BASE + offset)}/{prefix}"


def spelled(cidrs: list[str]) -> set[int]:
    return {int(a) for c in cidrs for a in ipaddress.ip_network(c)}


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(blocks(), max_size=6), st.lists(blocks(), max_size=6))
def test_set_operations_agree_with_spelled_out_sets(first: list[str], second: list[str]) -> None:
    a, b = AddressSet.of(4, first), AddressSet.of(4, second)
    sa, sb = spelled(first), spelled(second)
    assert a.size == len(sa)
    assert a.union(b).size == len(sa | sb)
    assert a.minus(b).size == len(sa - sb)
    assert a.contains(b) == (sb <= sa)
    listed = {x for first_, last in a.minus(b).intervals for x in range(first_, last + 1)}
    assert listed == sa - sb


def test_splits_and_holes_are_what_they_cover() -> None:
    halves = Addresses.of(["0.0.0.0/1", "128.0.0.0/1"])
    assert halves.v4 == Addresses.of(["0.0.0.0/0"]).v4
    holed = Addresses().add("0.0.0.0/0", ["8.8.8.8/32"])
    assert holed.v4.size == 2**32 - 1
    assert Addresses.of(["10.0.0.0/8", "192.168.0.0/16"]).v4.public().size == 0


def test_ipv6_ranges_that_reach_ipv4_count_as_ipv4() -> None:
    mapped = Addresses.of(["::ffff:8.8.8.0/120", "64:ff9b::1.1.1.1/128"]).reached()
    assert mapped.v6.size == 0
    assert mapped.v4 == Addresses.of(["8.8.8.0/24", "1.1.1.1/32"]).v4
