"""A udp/ endpoint naming a multicast group is zenoh's multicast transport: a router and a
peer session listen on IPv4 groups (router/multicast.py, session/runtime/multicast.py);
where zenoh 1.10.2 refuses a group (a client, a connect endpoint) pyzenoh does too, and
IPv6 groups are refused by name; never served as a unicast udp link."""

from __future__ import annotations

import pytest

from pyzenoh.config.policy import check_config, is_group_endpoint
from pyzenoh.errors import UsageError

GROUP = "udp/224.0.0.224:7447#iface=lo"


def test_a_router_and_a_peer_listen_on_an_ipv4_group() -> None:
    assert check_config({"listen": {"endpoints": [GROUP]}}, "router") == []
    assert check_config({"mode": "peer", "listen": {"endpoints": [GROUP]}}, "session", "peer") == []


@pytest.mark.parametrize(
    ("tree", "role", "mode", "reason"),
    [
        ({"listen": {"endpoints": ["udp/[ff02::1]:7447"]}}, "router", None, "IPv6 multicast"),
        ({"mode": "peer", "listen": {"endpoints": ["udp/[ff02::1]:7447"]}}, "session", "peer", "IPv6 multicast"),
        ({"connect": {"endpoints": [GROUP]}}, "router", None, "forbidden multicast endpoint in connect list"),
        ({"mode": "peer", "connect": {"endpoints": [GROUP]}}, "session", "peer", "in connect list"),
        ({"mode": "client", "listen": {"endpoints": [GROUP]}}, "session", "client", "a client cannot join"),
        ({"mode": "client", "connect": {"endpoints": [GROUP]}}, "session", "client", "in connect list"),
    ],
)
def test_other_group_endpoints_are_refused(tree: dict[str, object], role: str, mode: str | None, reason: str) -> None:
    with pytest.raises(UsageError, match=reason):
        check_config(tree, role, mode)  # type: ignore[arg-type]


def test_a_unicast_udp_endpoint_is_not() -> None:
    assert check_config({"listen": {"endpoints": ["udp/127.0.0.1:7447", "udp/[::1]:7447"]}}, "router") == []


@pytest.mark.parametrize(
    ("endpoint", "group"),
    [
        (GROUP, True),
        ("udp/239.255.0.1:7447", True),
        ("udp/[ff02::1]:7447#iface=lo", True),
        ("udp/127.0.0.1:7447", False),
        ("udp/[::1]:7447", False),
        ("tcp/224.0.0.224:7447", False),
        ("udp/localhost:7447", False),
    ],
)
def test_the_one_rule_for_a_group_endpoint(endpoint: str, group: bool) -> None:
    assert is_group_endpoint(endpoint) is group
