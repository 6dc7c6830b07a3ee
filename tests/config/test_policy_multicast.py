"""A udp/ endpoint naming a multicast group is zenoh's multicast transport, which pyzenoh's
router and sessions do not run yet: refused by name, never served as a unicast udp link."""

from __future__ import annotations

import pytest

from pyzenoh.config.policy import check_config
from pyzenoh.errors import UsageError


@pytest.mark.parametrize("ep", ["udp/224.0.0.224:7447#iface=lo", "udp/[ff02::1]:7447"])
def test_a_multicast_group_endpoint_is_refused(ep: str) -> None:
    with pytest.raises(UsageError, match="multicast transport"):
        check_config({"listen": {"endpoints": [ep]}}, "router")


def test_a_unicast_udp_endpoint_is_not() -> None:
    assert check_config({"listen": {"endpoints": ["udp/127.0.0.1:7447", "udp/[::1]:7447"]}}, "router") == []
