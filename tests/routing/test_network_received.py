"""Received link states (:mod:`pyzenoh.routing.network.received`): forwarded in the
sender's numbering, sequence numbers, our own state from a previous run superseded, and
bad input refused (:class:`LinkStateError`) before anything changes."""

from __future__ import annotations

from typing import Any

import pytest

from pyzenoh.codec.primitives import WhatAmI
from pyzenoh.errors import CloseReason, PeerError
from pyzenoh.routing.linkstate import LinkState, encode_linkstates
from pyzenoh.routing.network import LinkStateError, Network
from tests.routing.network_helpers import (
    MEASURED_WEIGHTS,
    Mesh,
    P,
    R,
    Z,
    check_trees,
    loc,
    states,
    weights_by_pair,
)


def test_line_forwards_states_with_the_senders_numbering() -> None:
    m = Mesh()
    a, b, c = m.add("a1"), m.add("b2"), m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "b2")
    # B told A about C with B's index of C (2) and C's zid; A maps it on that link
    lab = m.link("a1", "b2")
    assert a.node_of_psid(lab, 2) == Z("c3")
    assert a.local_index_of_psid(lab, 2) == a.index_of(Z("c3")) == 2
    assert c.node_of_psid(m.link("c3", "b2"), 1) == Z("a1")  # B numbers A 1
    # C met A in B's links before A's own state (same message): A is listed twice back to
    # B, with its whatami, as the real C of router_line_BC did
    a_to_b = [s for s in states(m.sent("c3", "b2")[-1]) if s.zid == Z("a1")]
    assert len(a_to_b) == 2 and all(s.whatami is R for s in a_to_b)
    assert c.whatami_of(c.index_of(Z("a1"))) is R  # type: ignore[arg-type]
    # locators are passed on for neighbours only (single-hop gossip between routers)
    c_at_a = [s for body in m.sent("b2", "a1") for s in states(body) if s.psid == 2 and s.links]
    assert c_at_a[-1].locators == loc("c3")
    a_at_c = [s for body in m.sent("b2", "c3") for s in states(body) if s.zid == Z("a1")]
    assert a_at_c and all(s.locators == loc("a1") for s in a_at_c)
    for net in (a, b, c):
        assert len(net.nodes()) == 3 and len(net.edges()) == 2
        check_trees(net)
    ib, ic = (a.index_of(Z(n)) for n in ("b2", "c3"))
    assert a.direction(0, ic) == ib  # type: ignore[arg-type]
    assert b.trees[b.index_of(Z("a1"))].children == [b.index_of(Z("c3"))]  # type: ignore[index]
    assert b.trees[b.index_of(Z("c3"))].children == [b.index_of(Z("a1"))]  # type: ignore[index]
    # C's tree at A: A is a leaf, everything goes up to B
    tree_c = a.trees[ic]  # type: ignore[index]
    assert tree_c.parent == ib and tree_c.children == [] and tree_c.directions == {ib: ib, ic: ib}
    # all agree on the weights
    assert weights_by_pair(a) == weights_by_pair(b) == weights_by_pair(c)
    assert a.dot() == (
        "graph {\n"
        '    0 [ label = "a1" ]\n    1 [ label = "b2" ]\n    2 [ label = "c3" ]\n'
        f'    1 -- 0 [ label = "{MEASURED_WEIGHTS[("a1", "b2")]}" ]\n'
        f'    2 -- 1 [ label = "{MEASURED_WEIGHTS[("b2", "c3")]}" ]\n'
        "}\n"
    )


def test_sequence_numbers() -> None:
    m = Mesh()
    a, b, _ = m.add("a1"), m.add("b2"), m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "b2")
    lba, lbc = m.link("b2", "a1"), m.link("b2", "c3")
    ib_at_a = a.index_of(Z("b2"))
    sn = b.sn_of(b.index_of(Z("a1")))  # type: ignore[arg-type]
    assert sn == a.sn
    older = encode_linkstates([LinkState(0, sn - 1, None, R, None, (), None, False)])
    before = b.dot()
    assert b.link_states(lba, older) == ([], [])
    same = encode_linkstates([LinkState(0, sn, None, R, None, (ib_at_a,), None, False)])  # type: ignore[arg-type]
    assert b.link_states(lba, same) == ([], [])
    assert b.dot() == before
    # newer: adopted and flooded to C (without the zid: C knows B's index of A), not back to A
    newer = encode_linkstates([LinkState(0, sn + 5, None, R, loc("a1"), (ib_at_a,), None, False)])  # type: ignore[arg-type]
    removed, sends = b.link_states(lba, newer)
    assert removed == [] and [link for link, _ in sends] == [lbc]
    assert states(sends[0][1]) == [LinkState(1, sn + 5, None, R, loc("a1"), (0,), None, False)]
    assert b.sn_of(1) == sn + 5


def test_own_state_from_a_previous_run_is_superseded() -> None:
    b = Network(Z("b2"), R)
    assert b.add_link(1, Z("a1"), R)  # our sn: 2
    # A still holds us at sn 9 with a link to c3 (from our previous run)
    stale = encode_linkstates(
        [
            LinkState(0, 4, Z("a1"), R, None, (1, 2), None, False),
            LinkState(1, 9, Z("b2"), R, None, (0, 2), None, False),
            LinkState(2, 3, Z("c3"), R, None, (0, 1), None, False),
        ]
    )
    removed, sends = b.link_states(1, stale)
    assert removed == [] and [link for link, _ in sends] == [1]
    assert b.sn == 10 and b.links_of(0) == {Z("a1"): 0}
    own = [s for _, body in sends for s in states(body) if s.psid == 0]
    assert own == [LinkState(0, 10, None, R, (), (1,), None, False)]


# --- bad input: LinkStateError, nothing changed --------------------------------------------------


def snapshot(net: Network, links: list[int]) -> Any:
    return (
        net.dot(),
        net.nodes(),
        net.sn,
        [net.links_of(i) for i, *_ in net.nodes()],
        [(lk, p, net.node_of_psid(lk, p)) for lk in links for p in range(8)],
    )


def _line() -> tuple[Mesh, Network, int]:
    m = Mesh()
    m.add("a1")
    b = m.add("b2", max_nodes=5)
    m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "b2")
    return m, b, m.link("b2", "a1")


def _ls(
    psid: int,
    sn: int,
    zid: str | None = None,
    links: tuple[int, ...] = (),
    whatami: WhatAmI | None = R,
    weights: tuple[int, ...] | None = None,
) -> LinkState:
    return LinkState(psid, sn, None if zid is None else Z(zid), whatami, None, links, weights, False)


# A numbers: 0 = a1, 1 = b2, 2 = c3 (learned from B)
BAD_INPUT: dict[str, list[LinkState] | bytes] = {
    "undecodable": b"\x01\x00",
    "trailing bytes": encode_linkstates([_ls(0, 50)]) + b"\x00",
    "psid never mapped": [_ls(6, 50)],
    "link index never mapped": [_ls(0, 50, links=(1, 6))],
    "link index out of range": [_ls(0, 50, links=(1, 10**9))],
    "psid out of range": [_ls(10**9, 50, "d4")],
    "one zid for two psids": [_ls(5, 1, "d4"), _ls(6, 1, "d4")],
    "two zids for one psid": [_ls(5, 1, "d4"), _ls(5, 1, "e5")],
    "neighbour not at psid 0": [_ls(5, 50, "a1")],
    "psid 0 is another node": [_ls(0, 50, "d4")],
    "us as a peer": [_ls(1, 1, "b2", whatami=P)],
    "us with a link we don't have": [_ls(1, 3, "b2", links=(0, 5)), _ls(5, 1, "d4")],
    "a link to itself": [_ls(0, 50, links=(1, 0))],
    "a zid remapped away then used": [_ls(2, 1, "d4"), _ls(7, 1, "c3"), _ls(0, 50, links=(7, 2, 3))],
    "over max_nodes": [_ls(0, 50, links=(1, 5, 6, 7)), _ls(5, 1, "d4"), _ls(6, 1, "e5"), _ls(7, 1, "f6")],
}


@pytest.mark.parametrize("bad", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_raises_before_any_change(bad: list[LinkState] | bytes) -> None:
    m, b, la = _line()
    assert b.sn == 3
    body = bad if isinstance(bad, bytes) else encode_linkstates(bad)
    links = list(b.links())
    before = snapshot(b, links)
    with pytest.raises(LinkStateError) as exc:
        b.link_states(la, body)
    assert isinstance(exc.value, PeerError) and exc.value.close_reason is CloseReason.INVALID
    assert snapshot(b, links) == before
    # the link still works after
    removed, sends = b.link_states(la, encode_linkstates([_ls(0, 50, links=(1,))]))
    assert removed == [] and [link for link, _ in sends] == [m.link("b2", "c3")]
    assert b.sn_of(b.index_of(Z("a1"))) == 50  # type: ignore[arg-type]
