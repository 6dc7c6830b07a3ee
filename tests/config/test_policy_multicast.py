"""A udp/ endpoint naming a multicast group is zenoh's multicast transport: a router
listens on IPv4 groups (router/multicast.py); anything else is refused by name, never
served as a unicast udp link."""

from __future__ import annotations

import pytest

from pyzenoh.config.policy import check_config
from pyzenoh.errors import UsageError


def test_a_router_listens_on_an_ipv4_group() -> None:
    assert check_config({"listen": {"endpoints": ["udp/224.0.0.224:7447#iface=lo"]}}, "router") == []


@pytest.mark.parametrize(
    ("tree", "role"),
    [
        ({"listen": {"endpoints": ["udp/[ff02::1]:7447"]}}, "router"),
        ({"connect": {"endpoints": ["udp/224.0.0.224:7447"]}}, "router"),
        ({"mode": "peer", "listen": {"endpoints": ["udp/224.0.0.224:7447#iface=lo"]}}, "session"),
    ],
)
def test_other_group_endpoints_are_refused(tree: dict[str, object], role: str) -> None:
    with pytest.raises(UsageError, match="multicast transport"):
        check_config(tree, role, "peer" if role == "session" else None)  # type: ignore[arg-type]


def test_a_unicast_udp_endpoint_is_not() -> None:
    assert check_config({"listen": {"endpoints": ["udp/127.0.0.1:7447", "udp/[::1]:7447"]}}, "router") == []
