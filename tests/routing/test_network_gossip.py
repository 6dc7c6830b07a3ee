"""Single-hop gossip (a router's peer region: ``full_linkstate=False``): a router tells
its peers each other's locators, with the bytes a real 1.10.2 router sent."""

from __future__ import annotations

from typing import Any

from pyzenoh.routing.linkstate import LinkState, encode_linkstates
from pyzenoh.routing.network import Network
from tests.routing.network_helpers import P, R, Z, states

# Measured with a real 1.10.2 router a1 and peers d4, e5 (each listening on its own port).
PEER_D4_OPEN = "0207000201d40201137463702f3132372e302e302e313a3539363037010113010001a10100"
PEER_E5_OPEN = "0207000201e50201137463702f3132372e302e302e313a3439303439010113010001a10100"
ROUTER_TO_E5_AT_OPEN = "0107010201d40201137463702f3132372e302e302e313a353936303700"
ROUTER_TO_D4_AFTER_E5 = "0107020201e50201137463702f3132372e302e302e313a343930343900"
PEER_D4_MET_E5 = "0203020001e502000600030201137463702f3132372e302e302e313a3539363037020102"
PEER_D4_FORWARDS_E5 = "0107020301e50201137463702f3132372e302e302e313a343930343900"
#: The same router with scouting/gossip/enabled = false, to the second peer: the first
#: peer's zid and whatami, no locators.
GOSSIP_OFF_ROUTER_TO_E5_AT_OPEN = "0103010201d40200"


def gossip_router(**kw: Any) -> Network:
    return Network(
        Z("a1"),
        R,
        full_linkstate=False,
        gossip=True,
        gossip_multihop=False,
        gateway=True,
        locators=lambda: ("tcp/127.0.0.1:58473",),
        **kw,
    )


def test_gossip_tells_peers_each_others_locators() -> None:
    r = gossip_router()
    # a new peer first gets the empty list
    assert r.add_link(1, Z("d4"), P) == [(1, b"\x00")]
    # its state (itself, and us as its gateway) is recorded; nobody else to tell
    assert r.link_states(1, bytes.fromhex(PEER_D4_OPEN)) == ([], [])
    assert r.nodes()[1] == (1, Z("d4"), P, ("tcp/127.0.0.1:59607",), False)
    assert r.neighbours_locators() == [(Z("d4"), P, ("tcp/127.0.0.1:59607",))]
    # the next peer gets the first one's locators at once
    assert r.add_link(2, Z("e5"), P) == [(2, bytes.fromhex(ROUTER_TO_E5_AT_OPEN))]
    # and the first one gets the next one's once it has sent them
    assert r.link_states(2, bytes.fromhex(PEER_E5_OPEN)) == ([], [(1, bytes.fromhex(ROUTER_TO_D4_AFTER_E5))])
    # the peers met: their updates carry nothing new for the router to pass on
    assert r.link_states(1, bytes.fromhex(PEER_D4_MET_E5)) == ([], [])
    assert r.link_states(1, bytes.fromhex(PEER_D4_FORWARDS_E5)) == ([], [])
    assert r.links_of(1) == {Z("a1"): 0, Z("e5"): 0}
    # no edges, no trees beyond ours in this mode
    assert (
        r.edges() == []
        and r.dot() == 'graph {\n    0 [ label = "a1" ]\n    1 [ label = "d4" ]\n    2 [ label = "e5" ]\n}\n'
    )
    # new locators are passed on
    moved = encode_linkstates([LinkState(0, 9, None, P, ("tcp/127.0.0.1:1",), (1,), None, False)])
    _, sends = r.link_states(2, moved)
    assert [(link, states(body)) for link, body in sends] == [
        (1, [LinkState(2, 9, Z("e5"), P, ("tcp/127.0.0.1:1",), (), None, False)])
    ]
    # a peer leaving is forgotten, nothing is sent
    assert r.remove_link(1) == ([], [])
    assert [z for _, z, *_ in r.nodes()] == [Z("a1"), Z("e5")]
    assert r.disconnected_if_removed(2) == []


def test_gossip_forgets_nodes_no_peer_mentions() -> None:
    r = gossip_router()
    r.add_link(1, Z("d4"), P)
    body = encode_linkstates(
        [
            LinkState(0, 2, Z("d4"), P, ("tcp/h:1",), (1, 2), None, False),
            LinkState(1, 0, Z("a1"), R, None, (), None, True),
            LinkState(2, 1, Z("f6"), P, ("tcp/h:6",), (), None, False),
        ]
    )
    assert r.link_states(1, body) == ([], [])  # f6 is not our neighbour: not passed on
    assert {str(z) for _, z, *_ in r.nodes()} == {"a1", "d4", "f6"}
    r.remove_link(1)
    assert [z for _, z, *_ in r.nodes()] == [Z("a1")]


def test_gossip_off_and_targets() -> None:
    # gossip off: the peers are still listed to a new peer, without their locators, and
    # nothing is passed on later (zenohd's Network with gossip = false)
    off = gossip_router()
    off.gossip = False
    assert off.add_link(1, Z("d4"), P) == [(1, b"\x00")]
    off.link_states(1, bytes.fromhex(PEER_D4_OPEN))
    assert off.add_link(2, Z("e5"), P) == [(2, bytes.fromhex(GOSSIP_OFF_ROUTER_TO_E5_AT_OPEN))]
    assert off.link_states(2, bytes.fromhex(PEER_E5_OPEN)) == ([], [])
    routers_only = gossip_router(gossip_target=frozenset({R}))
    routers_only.add_link(1, Z("d4"), P)
    routers_only.link_states(1, bytes.fromhex(PEER_D4_OPEN))
    sends = routers_only.add_link(2, Z("e5"), P)
    assert [s.locators for _, body in sends for s in states(body)] == [None]
