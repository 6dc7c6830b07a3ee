"""Captured links of real 1.10.2 routers replayed into a :class:`Network`: what it sends
is what the real router sent, byte for byte (states sorted where zenohd's order is a
HashMap's)."""

from __future__ import annotations

import pytest

from pyzenoh.routing.network import Network, edge_weight_of
from tests.routing.network_helpers import R, Z, norm
from tests.routing.test_linkstate import CAPTURED


def bodies(scenario: str, direction: str) -> list[bytes]:
    return [b for sc, d, b in CAPTURED if (sc, d) == (scenario, direction)]


needs_captures = pytest.mark.skipif(not CAPTURED, reason="router-link captures not available")


@needs_captures
def test_router_pair_replay_is_byte_exact() -> None:
    # router_pair: A (listener) = 5340ee5c..., B (connector) = 9d1340a0...; "b->a" is A's
    a_zid, b_zid = Z("5340ee5cc7b1557a71718a56ddb084d3"), Z("9d1340a03f02fb5c9bfe0747766122c7")
    from_a, from_b = bodies("router_pair", "b->a"), bodies("router_pair", "a->b")
    net = Network(a_zid, R, locators=lambda: ("tcp/127.0.0.1:17001",))
    assert net.add_link(1, b_zid, R) == [(1, from_a[0])]
    assert net.link_states(1, from_b[0]) == ([], [(1, from_a[1])])
    assert net.link_states(1, from_b[1]) == ([], [])  # B's echo of our own state
    net.compute_trees()
    assert net.sn == 2 and [z for _, z, *_ in net.nodes()] == [a_zid, b_zid]
    assert net.edge_weight(0, 1) == edge_weight_of(a_zid, b_zid)
    assert net.trees[0].children == [1] and net.trees[1].parent == 1


@needs_captures
def test_router_line_replay_as_the_middle_router() -> None:
    # router_line: B (b2, :17002) connects to A (a1), then C (c3) connects to B
    to_a, from_a = bodies("router_line_AB", "a->b"), bodies("router_line_AB", "b->a")
    to_c, from_c = bodies("router_line_BC", "b->a"), bodies("router_line_BC", "a->b")
    b = Network(Z("b2"), R, locators=lambda: ("tcp/127.0.0.1:17002",))
    la, lc = 1, 2
    assert b.add_link(la, Z("a1"), R) == [(la, to_a[0])]
    assert b.link_states(la, from_a[0]) == ([], [(la, to_a[1])])
    sends = b.add_link(lc, Z("c3"), R)
    assert [(link, norm(body)) for link, body in sends] == [(la, norm(to_a[2])), (lc, norm(to_c[0]))]
    _, sends = b.link_states(la, from_a[1])  # A echoes C (sn 0): nothing new
    assert sends == []
    _, sends = b.link_states(lc, from_c[0])  # C's own state: flooded to both, zid to A only
    assert [(link, norm(body)) for link, body in sends] == [(la, norm(to_a[3])), (lc, norm(to_c[1]))]
    assert b.link_states(lc, from_c[1]) == ([], [])  # C echoes us and A: nothing new
    b.compute_trees()
    assert (b.index_of(Z("a1")), b.index_of(Z("c3"))) == (1, 2)
    assert b.trees[1].children == [2] and b.trees[2].children == [1]
    assert b.node_of_psid(lc, 2) == Z("a1")  # C numbers A 2
    assert b.local_index_of_psid(lc, 2) == 1
    # C leaves: B drops it and tells A its new state (sn 4)
    assert b.remove_link(lc) == ([Z("c3")], [(la, to_a[4])])
