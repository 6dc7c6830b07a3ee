"""The router link-state graph (:mod:`pyzenoh.routing.network`): zenohd 1.10.2's behaviour.

Unit tests run networks wired in memory; the interop tests at the end put real 1.10.2
routers (and peers) behind recording relays, feed what they sent to our Network and
compare it with what the real routers print in their admin space and send on the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.batch import BatchReader, decode_batch
from pyzenoh.codec.network import OAM_LINKSTATE, NetworkOam
from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.transport import Frame
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.routing.linkstate import LinkState, decode_linkstates, encode_linkstates
from pyzenoh.routing.network import (
    MAX_NODES,
    LinkStateError,
    Network,
    edge_weight_of,
    siphash,
)
from tests.hyp import examples
from tests.routing.test_linkstate import CAPTURED

R = WhatAmI.ROUTER
P = WhatAmI.PEER


def Z(name: str) -> ZenohId:
    return ZenohId.from_str(name)


def loc(name: str) -> tuple[str, ...]:
    return (f"tcp/127.0.0.1:{int(name, 16) + 17000}",)


def states(body: bytes) -> list[LinkState]:
    return decode_linkstates(body)


def norm(body: bytes) -> list[tuple[Any, ...]]:
    """A body's states with each one's links sorted (zenohd sends them in HashMap order)."""
    out = []
    for s in decode_linkstates(body):
        pairs = sorted(zip(s.links, s.weights or [0] * len(s.links), strict=True))
        out.append((s.psid, s.sn, s.zid, s.whatami, s.locators, tuple(pairs), s.weights is not None, s.gateway))
    return out


class Mesh:
    """Networks wired together in memory; bodies are delivered in FIFO order."""

    def __init__(self) -> None:
        self.nets: dict[str, Network] = {}
        self.ends: dict[tuple[str, int], tuple[str, int]] = {}
        self.link_ids: dict[tuple[str, str], int] = {}
        self.queue: deque[tuple[str, int, bytes]] = deque()
        self.log: list[tuple[str, str, bytes]] = []
        self.removed: dict[str, list[ZenohId]] = {}
        self._next = 100

    def add(self, name: str, whatami: WhatAmI = R, **kw: Any) -> Network:
        kw.setdefault("locators", lambda: loc(name))
        self.nets[name] = Network(Z(name), whatami, **kw)
        self.removed[name] = []
        return self.nets[name]

    def connect(self, a: str, b: str, run: bool = True) -> None:
        la, lb = self._next, self._next + 1
        self._next += 2
        self.ends[(a, la)] = (b, lb)
        self.ends[(b, lb)] = (a, la)
        self.link_ids[(a, b)] = la
        self.link_ids[(b, a)] = lb
        for x, lx, y in ((a, la, b), (b, lb, a)):
            self._queue(x, self.nets[x].add_link(lx, Z(y), self.nets[y].whatami))
        if run:
            self.run()

    def disconnect(self, a: str, b: str) -> None:
        la, lb = self.link_ids.pop((a, b)), self.link_ids.pop((b, a))
        del self.ends[(a, la)], self.ends[(b, lb)]
        for x, lx in ((a, la), (b, lb)):
            removed, sends = self.nets[x].remove_link(lx)
            self.removed[x] += removed
            self._queue(x, sends)
        self.run()

    def link(self, a: str, b: str) -> int:
        return self.link_ids[(a, b)]

    def _queue(self, x: str, sends: list[tuple[int, bytes]]) -> None:
        for link, body in sends:
            self.queue.append((x, link, body))

    def run(self, trees: bool = True) -> None:
        while self.queue:
            x, link, body = self.queue.popleft()
            if (x, link) not in self.ends:
                continue  # that link closed meanwhile
            y, ly = self.ends[(x, link)]
            self.log.append((x, y, body))
            removed, sends = self.nets[y].link_states(ly, body)
            self.removed[y] += removed
            self._queue(y, sends)
        if trees:
            for net in self.nets.values():
                net.compute_trees()

    def sent(self, x: str, y: str) -> list[bytes]:
        return [body for a, b, body in self.log if (a, b) == (x, y)]


def weights_by_pair(net: Network) -> dict[frozenset[ZenohId], float]:
    out = {}
    for a, b, w in net.edges():
        za, zb = net.zid_of(a), net.zid_of(b)
        assert za is not None and zb is not None
        out[frozenset((za, zb))] = w
    return out


def reference_trees(net: Network) -> dict[ZenohId, dict[ZenohId, ZenohId]]:
    """Per root zid, each node's predecessor, by petgraph's Bellman-Ford (a plain copy of
    its relaxation loop: node order, edges both ways, strict ``<``)."""
    idxs = [i for i, *_ in net.nodes()]
    adj: dict[int, list[tuple[int, float]]] = {i: [] for i in idxs}
    for a, b, w in net.edges():
        adj[a].append((b, w))
        adj[b].append((a, w))
    out = {}
    for root in idxs:
        dist = {i: float("inf") for i in idxs}
        pred: dict[int, int] = {}
        dist[root] = 0.0
        for _ in range(len(idxs) - 1):
            changed = False
            for i in idxs:
                for j, w in adj[i]:
                    if dist[i] + w < dist[j]:
                        dist[j] = dist[i] + w
                        pred[j] = i
                        changed = True
            if not changed:
                break
        zid = {i: net.zid_of(i) for i in idxs}
        out[zid[root]] = {zid[j]: zid[i] for j, i in pred.items()}
    return out  # type: ignore[return-value]


def check_trees(net: Network) -> None:
    """Our trees are the Bellman-Ford trees, and their directions walk to each destination."""
    ref = reference_trees(net)
    for root, tree in net.trees.items():
        rz = net.zid_of(root)
        assert rz is not None
        preds = ref[rz]
        parent = preds.get(net.zid)
        assert (net.zid_of(tree.parent) if tree.parent is not None else None) == parent
        assert sorted(net.zid_of(c).value for c in tree.children) == sorted(  # type: ignore[union-attr]
            z.value for z, p in preds.items() if p == net.zid
        )
        for dest, hop in tree.directions.items():
            # the hop is a neighbour of ours, and the path to dest via the tree goes through it
            assert net.edge_weight(net.idx, hop) is not None
            dz = net.zid_of(dest)
            chain = [dz]
            while chain[-1] in preds:
                chain.append(preds[chain[-1]])
            if net.zid in chain:  # dest below us: the hop is our child towards it
                assert chain[chain.index(net.zid) - 1] == net.zid_of(hop)
            else:  # elsewhere: up to our parent
                assert hop == tree.parent


# --- SipHash-1-3 and edge weights ----------------------------------------------------------------

#: SipHash-2-4 reference vectors (key 00..0f, message 00..len-1), from the SipHash paper.
SIPHASH24 = [
    0x726FDB47DD0E0E31, 0x74F839C593DC67FD, 0x0D6C8009D9A94F5A, 0x85676696D7FB7E2D,
    0xCF2794E0277187B7, 0x18765564CD99A68D, 0xCBC9466E58FEE3CE, 0xAB0200F58B01D137,
    0x93F5F5799A932462, 0x9E0082DF0BA9E4B0, 0x7A5DBBC594DDB9F3, 0xF4B32F46226BADA7,
    0x751E8FBC860EE5FB, 0x14EA5627C0843D90, 0xF723CA908E7AF2EE, 0xA129CA6149BE45E5,
    0x3F2ACC7F57C29BDB, 0x699AE9F52CBE4794, 0x4BC1B3F0968DD39C, 0xBB6DC91DA77961BD,
    0xBED65CF21AA2EE98, 0xD0F2CBB02E3B67C7, 0x93536795E3A33E88, 0xA80C038CCD5CCEC8,
    0xB8AD50C6F649AF94, 0xBCE192DE8A85B8EA, 0x17D835B85BBB15F3, 0x2F2E6163076BCFAD,
    0xDE4DAAACA71DC9A5, 0xA6A2506687956571, 0xAD87A3535C49EF28, 0x32D892FAD841C342,
    0x7127512F72F27CCE, 0xA7F32346F95978E3, 0x12E0B01ABB051238, 0x15E034D40FA197AE,
    0x314DFFBE0815A3B4, 0x027990F029623981, 0xCADCD4E59EF40C4D, 0x9ABFD8766A33735C,
    0x0E3EA96B5304A7D0, 0xAD0C42D6FC585992, 0x187306C89BC215A9, 0xD4A60ABCF3792B95,
    0xF935451DE4F21DF2, 0xA9538F0419755787, 0xDB9ACDDFF56CA510, 0xD06C98CD5C0975EB,
    0xE612A3CB9ECBA951, 0xC766E62CFCADAF96, 0xEE64435A9752FE72, 0xA192D576B245165A,
    0x0A8787BF8ECB74B2, 0x81B3E73D20B49B6F, 0x7FA8220BA3B2ECEA, 0x245731C13CA42499,
    0xB78DBFAF3A8D83BD, 0xEA1AD565322A1A0B, 0x60E61C23A3795013, 0x6606D7E446282B93,
    0x6CA4ECB15C5F91E1, 0x9F626DA15C9625F3, 0xE51B38608EF25F57, 0x958A324CEB064572,
]  # fmt: skip


def test_siphash_24_reference_vectors() -> None:
    key = bytes(range(16))
    for n, expected in enumerate(SIPHASH24):
        assert siphash(bytes(range(n)), key, 2, 4) == expected, n


@pytest.mark.parametrize(("data", "key", "expected"), [
    # Rust's DefaultHasher::default() with nothing written; the same values are published
    # by the digest-sip_hash (Ruby) and starlark test suites
    (b"", bytes(16), 0xD1FBA762150C532C),
    (b"", bytes(range(16)), 0xABAC0158050FC4DC),
    (b"test", bytes(16), 0xE0969DA9B8FB378D),
    (b"siphash", bytes(16), 0x8264CEECCB16BCBE),
    (b"digest-sip_hash", bytes(16), 0xCE31007E34130C0A),
    (b"x" * 1000, bytes(16), 0x1B47C0CC4DD21F05),
])  # fmt: skip
def test_siphash_13_vectors(data: bytes, key: bytes, expected: int) -> None:
    assert siphash(data, key) == expected


#: Edge weights a real 1.10.2 triangle a1-b2-c3 printed at @/<zid>/router/linkstate/north.
MEASURED_WEIGHTS = {("a1", "b2"): "100.52192227251872", ("b2", "c3"): "100.22397104702516",
                    ("a1", "c3"): "100.0761500708936"}  # fmt: skip


@pytest.mark.parametrize(("pair", "printed"), list(MEASURED_WEIGHTS.items()))
def test_edge_weight_matches_real_routers(pair: tuple[str, str], printed: str) -> None:
    a, b = pair
    assert repr(edge_weight_of(Z(a), Z(b))) == printed
    assert edge_weight_of(Z(b), Z(a)) == edge_weight_of(Z(a), Z(b))


def test_edge_weight_uses_the_larger_announced_weight() -> None:
    base = edge_weight_of(Z("a1"), Z("b2")) / 100
    assert edge_weight_of(Z("a1"), Z("b2"), 200, 0) == 200 * base
    assert edge_weight_of(Z("a1"), Z("b2"), 0, 7) == 7 * base
    assert edge_weight_of(Z("a1"), Z("b2"), 50, 300) == 300 * base


# --- golden replays of captured router links -----------------------------------------------------


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


# --- in-memory meshes ------------------------------------------------------------------------------


def test_pair() -> None:
    m = Mesh()
    a, b = m.add("a1"), m.add("b2")
    m.connect("b2", "a1")
    for net, other in ((a, "b2"), (b, "a1")):
        assert [z for _, z, *_ in net.nodes()] == [net.zid, Z(other)]
        assert net.link_of(Z(other)) == m.link(str(net.zid), other)
        assert net.node_of_psid(m.link(str(net.zid), other), 0) == Z(other)
        assert net.local_index_of_psid(m.link(str(net.zid), other), 0) == 1
        assert net.edge_weight(0, 1) == edge_weight_of(Z("a1"), Z("b2"))
        assert net.trees[0].children == [1] and net.trees[0].parent is None
        assert net.trees[1].parent == 1 and net.trees[1].children == []
        assert net.direction(0, 1) == 1 and net.direction(1, 1) == 1
        assert net.distance(1) == edge_weight_of(Z("a1"), Z("b2")) and net.distance(0) == 0.0
        assert net.sn == 2
        check_trees(net)
    # the first message on a link lists the sender (locators, links) and the neighbour
    first = states(m.sent("b2", "a1")[0])
    assert first == [LinkState(0, 2, Z("b2"), R, loc("b2"), (1,), None, False),
                     LinkState(1, 0, Z("a1"), R, None, (), None, False)]  # fmt: skip


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


def test_triangle_matches_real_successors() -> None:
    m = Mesh()
    nets = {n: m.add(n) for n in ("a1", "b2", "c3")}
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("c3", "b2")
    for net in nets.values():
        assert len(net.edges()) == 3
        assert {frozenset(map(str, k)): repr(w) for k, w in weights_by_pair(net).items()} == {
            frozenset(k): v for k, v in MEASURED_WEIGHTS.items()
        }
        check_trees(net)
    # what the real a1 of such a triangle listed at @/a1/router/route/successor/**
    real_a1 = {("c3", "c3", "c3"), ("a1", "c3", "c3"), ("c3", "b2", "c3"), ("b2", "b2", "b2"),
               ("a1", "b2", "b2"), ("b2", "c3", "b2")}  # fmt: skip
    assert {tuple(map(str, t)) for t in nets["a1"].route_successors()} == real_a1


def test_link_removal_drops_unreachable_nodes() -> None:
    m = Mesh()
    a, b, c = m.add("a1"), m.add("b2"), m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "b2")
    lbc = m.link("b2", "c3")
    assert b.disconnected_if_removed(lbc) == [Z("c3")]
    assert b.disconnected_if_removed(m.link("b2", "a1")) == [Z("a1")]
    assert len(b.nodes()) == 3  # only predicted
    sn = b.sn
    removed, sends = b.remove_link(lbc)
    assert removed == [Z("c3")] and b.sn == sn + 1
    # B tells A (not C: that link is gone) its new state, links to A only
    la = m.link("b2", "a1")
    assert [link for link, _ in sends] == [la]
    assert states(sends[0][1]) == [LinkState(0, sn + 1, None, R, loc("b2"), (1,), None, False)]
    # deliver it (and let C notice too)
    m.ends.pop(("b2", lbc))
    m.ends.pop(("c3", m.link("c3", "b2")))
    m._queue("b2", sends)
    m.removed["c3"] += c.remove_link(m.link("c3", "b2"))[0]
    m.run()
    assert m.removed["a1"] == [Z("c3")]
    assert m.removed["c3"] == [Z("b2"), Z("a1")]
    assert [z for _, z, *_ in a.nodes()] == [Z("a1"), Z("b2")] and set(a.trees) == {0, 1}
    assert [z for _, z, *_ in c.nodes()] == [Z("c3")] and c.trees[0].directions == {}


def test_triangle_link_loss_reroutes() -> None:
    m = Mesh()
    nets = {n: m.add(n) for n in ("a1", "b2", "c3")}
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("c3", "b2")
    a = nets["a1"]
    ib, ic = a.index_of(Z("b2")), a.index_of(Z("c3"))
    assert a.direction(0, ib) == ib  # type: ignore[arg-type]
    assert a.disconnected_if_removed(m.link("a1", "b2")) == []
    m.disconnect("a1", "b2")
    assert all(r == [] for r in m.removed.values())
    assert a.direction(0, ib) == ic  # type: ignore[arg-type]
    for net in nets.values():
        assert len(net.nodes()) == 3 and len(net.edges()) == 2
        check_trees(net)


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


def test_index_reuse_resends_the_zid() -> None:
    m = Mesh()
    for n in ("a1", "b2", "c3", "d4", "e5", "f6"):
        m.add(n)
    a, b = m.nets["a1"], m.nets["b2"]
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("d4", "a1")
    assert [a.index_of(Z(n)) for n in ("b2", "c3", "d4")] == [1, 2, 3]
    m.disconnect("a1", "c3")
    m.disconnect("a1", "d4")
    assert m.removed["a1"] == [Z("c3"), Z("d4")]
    assert b.node_of_psid(m.link("b2", "a1"), 3) == Z("d4")  # stale until reused
    # freed indexes are reused last-freed-first, like petgraph's StableGraph
    m.connect("e5", "a1")
    assert a.index_of(Z("e5")) == 3
    m.connect("f6", "a1")
    assert a.index_of(Z("f6")) == 2
    lba = m.link("b2", "a1")
    assert b.node_of_psid(lba, 3) == Z("e5") and b.node_of_psid(lba, 2) == Z("f6")
    for net in (a, b):
        assert {str(z) for _, z, *_ in net.nodes()} == {"a1", "b2", "e5", "f6"}
        check_trees(net)


def test_own_state_from_a_previous_run_is_superseded() -> None:
    b = Network(Z("b2"), R)
    assert b.add_link(1, Z("a1"), R)  # our sn: 2
    # A still holds us at sn 9 with a link to c3 (from our previous run)
    stale = encode_linkstates([
        LinkState(0, 4, Z("a1"), R, None, (1, 2), None, False),
        LinkState(1, 9, Z("b2"), R, None, (0, 2), None, False),
        LinkState(2, 3, Z("c3"), R, None, (0, 1), None, False),
    ])  # fmt: skip
    removed, sends = b.link_states(1, stale)
    assert removed == [] and [link for link, _ in sends] == [1]
    assert b.sn == 10 and b.links_of(0) == {Z("a1"): 0}
    own = [s for _, body in sends for s in states(body) if s.psid == 0]
    assert own == [LinkState(0, 10, None, R, (), (1,), None, False)]


def test_compute_trees_reports_new_children() -> None:
    m = Mesh()
    a, b = m.add("a1"), m.add("b2")
    m.connect("b2", "a1")
    assert a.compute_trees() == {0: [], 1: []}  # nothing new since the mesh's own run
    m.add("c3")
    m.connect("c3", "b2", run=False)
    m.run(trees=False)
    new = b.compute_trees()
    assert (b.index_of(Z("a1")), b.index_of(Z("c3"))) == (1, 2)
    assert new == {0: [2], 1: [2], 2: [1]}
    assert b.compute_trees() == {0: [], 1: [], 2: []}
    # at A, C's tree is new but A is a leaf of it; A's own tree did not change
    assert a.compute_trees() == {0: [], 1: [], 2: []}


# --- bad input: LinkStateError, nothing changed --------------------------------------------------


def snapshot(net: Network, links: list[int]) -> Any:
    return (net.dot(), net.nodes(), net.sn, [net.links_of(i) for i, *_ in net.nodes()],
            [(lk, p, net.node_of_psid(lk, p)) for lk in links for p in range(8)])  # fmt: skip


def _line() -> tuple[Mesh, Network, int]:
    m = Mesh()
    m.add("a1")
    b = m.add("b2", max_nodes=5)
    m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "b2")
    return m, b, m.link("b2", "a1")


def _ls(psid: int, sn: int, zid: str | None = None, links: tuple[int, ...] = (), whatami: WhatAmI | None = R,
        weights: tuple[int, ...] | None = None) -> LinkState:  # fmt: skip
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


def test_usage_errors() -> None:
    net = Network(Z("a1"), R)
    with pytest.raises(UsageError):
        net.link_states(1, b"\x00")
    with pytest.raises(UsageError):
        net.remove_link(1)
    net.add_link(1, Z("b2"), R)
    with pytest.raises(UsageError):
        net.add_link(1, Z("c3"), R)
    with pytest.raises(UsageError):
        net.add_link(2, Z("b2"), R)
    with pytest.raises(UsageError):
        net.add_link(3, Z("a1"), R)
    with pytest.raises(UsageError):
        Network(Z("a1"), R, link_weights={Z("b2"): 0})


def test_max_nodes_on_add_link() -> None:
    net = Network(Z("a1"), R, max_nodes=2)
    net.add_link(1, Z("b2"), R)
    with pytest.raises(LinkStateError):
        net.add_link(2, Z("c3"), R)
    assert net.links() == {1: Z("b2")} and len(net.nodes()) == 2
    assert MAX_NODES >= 1024


# --- configured link weights ---------------------------------------------------------------------------


def test_configured_weights_are_announced_and_used() -> None:
    m = Mesh()
    a = m.add("a1", link_weights={Z("b2"): 500})
    b = m.add("b2")
    m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("c3", "b2")
    first = states(m.sent("a1", "b2")[0])
    assert first[0].weights == (500,)
    w = edge_weight_of(Z("a1"), Z("b2"), 500, 0)
    for net in m.nets.values():
        assert weights_by_pair(net)[frozenset((Z("a1"), Z("b2")))] == w
        check_trees(net)
    assert a.links_info()[Z("b2")] == (500, None, int(w))
    assert b.links_info()[Z("a1")] == (None, 500, int(w))
    assert b.links_info()[Z("c3")] == (None, None, 100)
    # a1 - b2 now costs 5x: traffic between them goes through c3
    assert a.direction(0, a.index_of(Z("b2"))) == a.index_of(Z("c3"))  # type: ignore[arg-type]
    assert b.direction(0, b.index_of(Z("a1"))) == b.index_of(Z("c3"))  # type: ignore[arg-type]


# --- random meshes ---------------------------------------------------------------------------------------


@st.composite
def meshes(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]], tuple[int, int] | None]:
    n = draw(st.integers(2, 6))
    edges = [(i, draw(st.integers(0, i - 1))) for i in range(1, n)]  # a spanning tree
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
    for x, y in extra:
        if x != y and (x, y) not in edges and (y, x) not in edges:
            edges.append((x, y))
    order = draw(st.permutations(edges))
    cut = draw(st.none() | st.sampled_from(order))
    return n, list(order), cut


NAMES = ["a1", "b2", "c3", "d4", "e5", "f6"]


@examples(200, 40)
@given(meshes())
def test_random_meshes_agree(spec: tuple[int, list[tuple[int, int]], tuple[int, int] | None]) -> None:
    n, edges, cut = spec
    m = Mesh()
    for i in range(n):
        m.add(NAMES[i], link_weights={Z(NAMES[(i + 1) % n]): 150} if i == 0 else None)
    for x, y in edges:
        m.connect(NAMES[x], NAMES[y])
    if cut is not None:
        m.disconnect(NAMES[cut[0]], NAMES[cut[1]])
    # each connected component agrees on its graph, and every tree is Bellman-Ford's
    groups: dict[frozenset[ZenohId], list[Network]] = {}
    for net in m.nets.values():
        groups.setdefault(frozenset(z for _, z, *_ in net.nodes()), []).append(net)
    for members, nets in groups.items():
        assert {net.zid for net in nets} == members
        assert all(weights_by_pair(net) == weights_by_pair(nets[0]) for net in nets)
        for net in nets:
            check_trees(net)
            for other in nets:  # paths between any two routers: following directions arrives
                root = net.index_of(other.zid)
                for dest_net in nets:
                    if dest_net is net:
                        continue
                    hops, cur = 0, net
                    while cur is not dest_net and hops < n:
                        r = cur.index_of(other.zid)
                        d = cur.index_of(dest_net.zid)
                        assert r is not None and d is not None
                        hop = cur.direction(r, d)
                        assert hop is not None
                        cur = m.nets[str(cur.zid_of(hop))]
                        hops += 1
                    assert cur is dest_net
                assert root is not None


# --- single-hop gossip (a router's peer region) -------------------------------------------------------

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
    return Network(Z("a1"), R, full_linkstate=False, gossip=True, gossip_multihop=False, gateway=True,
                   locators=lambda: ("tcp/127.0.0.1:58473",), **kw)  # fmt: skip


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
    assert r.edges() == [] and r.dot() == 'graph {\n    0 [ label = "a1" ]\n    1 [ label = "d4" ]\n' \
        '    2 [ label = "e5" ]\n}\n'
    # new locators are passed on
    moved = encode_linkstates([LinkState(0, 9, None, P, ("tcp/127.0.0.1:1",), (1,), None, False)])
    _, sends = r.link_states(2, moved)
    assert [(link, states(body)) for link, body in sends] == [
        (1, [LinkState(2, 9, Z("e5"), P, ("tcp/127.0.0.1:1",), (), None, False)])]
    # a peer leaving is forgotten, nothing is sent
    assert r.remove_link(1) == ([], [])
    assert [z for _, z, *_ in r.nodes()] == [Z("a1"), Z("e5")]
    assert r.disconnected_if_removed(2) == []


def test_gossip_forgets_nodes_no_peer_mentions() -> None:
    r = gossip_router()
    r.add_link(1, Z("d4"), P)
    body = encode_linkstates([LinkState(0, 2, Z("d4"), P, ("tcp/h:1",), (1, 2), None, False),
                              LinkState(1, 0, Z("a1"), R, None, (), None, True),
                              LinkState(2, 1, Z("f6"), P, ("tcp/h:6",), (), None, False)])  # fmt: skip
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


# --- against real 1.10.2 routers -------------------------------------------------------------------

INTEROP_TIMEOUT = 15.0


class Relay:
    """A recording TCP relay on 127.0.0.1 to ``target_port`` (its own event-loop thread).

    ``records``: (monotonic time, "a->b" from the connecting side | "b->a", bytes).
    ``hold=True``: connections wait (unanswered) until :meth:`release`.
    """

    def __init__(self, target_port: int, hold: bool = False) -> None:
        self.target_port = target_port
        self._hold = hold
        self._released: asyncio.Event | None = None
        self.records: list[tuple[float, str, bytes]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._writers: list[asyncio.StreamWriter] = []
        self._server: asyncio.Server | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(5.0):
            raise RuntimeError("relay did not start")

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._released = asyncio.Event()
        if not self._hold:
            self._released.set()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()

    def release(self) -> None:
        assert self._released is not None
        self._loop.call_soon_threadsafe(self._released.set)

    async def _handle(self, cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        assert self._released is not None
        await self._released.wait()
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            cw.close()
            return
        self._writers += [cw, uw]

        async def pump(r: asyncio.StreamReader, w: asyncio.StreamWriter, d: str) -> None:
            try:
                while data := await r.read(65536):
                    self.records.append((time.monotonic(), d, data))
                    w.write(data)
                    await w.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                w.close()

        await asyncio.gather(pump(cr, uw, "a->b"), pump(ur, cw, "b->a"))

    def oams(self, direction: str, records: list[tuple[float, str, bytes]]) -> list[tuple[float, bytes]]:
        """(time, body) of the LINKSTATE OAMs sent in ``direction`` (first connection)."""
        out, reader = [], BatchReader()
        for t, d, data in records:
            if d == direction:
                for batch in reader.feed(data):
                    for tm in decode_batch(batch):
                        if isinstance(tm, Frame):
                            out += [(t, m.body) for m in tm.messages
                                    if isinstance(m, NetworkOam) and m.oam_id == OAM_LINKSTATE]  # fmt: skip
        return out  # type: ignore[return-value]

    def close(self) -> None:
        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for w in self._writers:
                w.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        self._loop.close()


@contextlib.contextmanager
def closing_all() -> Iterator[list[Any]]:
    """Close (in reverse order) everything appended to the list, whatever happens."""
    things: list[Any] = []
    try:
        yield things
    finally:
        for thing in reversed(things):
            with contextlib.suppress(Exception):
                thing.close()


def zenoh_config(zenoh: Any, zid: str, mode: str, listen: int, connect: list[int]) -> Any:
    conf = zenoh.Config()
    conf.insert_json5("id", json.dumps(zid))
    conf.insert_json5("mode", json.dumps(mode))
    conf.insert_json5("listen/endpoints", json.dumps([f"tcp/127.0.0.1:{listen}"]))
    conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{p}" for p in connect]))
    conf.insert_json5("scouting/multicast/enabled", "false")
    conf.insert_json5("adminspace/enabled", "true")
    return conf


def open_listening(zenoh: Any, ports: dict[str, int], zid: str, mode: str, connect: list[int]) -> Any:
    """Open a session listening on a free port (recorded in ``ports``); a port taken
    meanwhile (e.g. as another connection's local port) is replaced, up to 3 times."""
    from pyzenoh.localnet import free_port

    for attempt in range(3):
        ports[zid] = free_port()
        try:
            return zenoh.open(zenoh_config(zenoh, zid, mode, ports[zid], connect))
        except zenoh.ZError as exc:
            if "already in use" not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")


def admin(session: Any, selector: str, timeout: float = 3.0) -> dict[str, bytes]:
    """Admin-space replies to ``selector`` (at most ``timeout`` + 2 s of waiting).

    Polled from a channel: no Python callback runs on zenoh's threads, and a query that
    would not end cannot hang the test."""
    import zenoh

    out: dict[str, bytes] = {}
    replies = session.get(selector, timeout=timeout)
    deadline = time.monotonic() + timeout + 2.0
    while time.monotonic() < deadline:
        try:
            reply = replies.try_recv()
        except zenoh.ZError:  # closed: the query ended
            break
        if reply is None:
            time.sleep(0.01)
        elif reply.ok:
            out[str(reply.ok.key_expr)] = reply.ok.payload.to_bytes()
    return out


def wait_for(what: Callable[[], Any], timeout: float = INTEROP_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.05)


DOT_NODE = re.compile(r'^    (\d+) \[ label = "([0-9a-f]+)" \]$')
DOT_EDGE = re.compile(r'^    (\d+) -- (\d+) \[ label = "([0-9.]+)" \]$')


def parse_dot(text: str) -> tuple[dict[int, str], set[tuple[frozenset[str], str]]]:
    nodes: dict[int, str] = {}
    edges = set()
    lines = text.split("\n")
    assert lines[0] == "graph {" and lines[-2:] == ["}", ""]
    for line in lines[1:-2]:
        if mn := DOT_NODE.match(line):
            nodes[int(mn[1])] = mn[2]
        else:
            me = DOT_EDGE.match(line)
            assert me is not None, line
            edges.add((frozenset((nodes[int(me[1])], nodes[int(me[2])])), me[3]))
    return nodes, edges


def replay(zid: str, locators: list[str], links: dict[int, tuple[str, WhatAmI, list[tuple[float, bytes]],
           list[tuple[float, bytes]]]], **kw: Any) -> tuple[Network, dict[int, list[bytes]]]:  # fmt: skip
    """A Network fed, in capture order, what a real router received on each link (its own
    first sending on a link marks when it opened). Returns it and what it sent per link."""
    events: list[tuple[float, int, int, Any]] = []
    for link, (peer, whatami, received, sent) in links.items():
        opened = min(t for t, _ in received[:1] + sent[:1]) - 1e-6
        events.append((opened, 0, link, (peer, whatami)))
        events += [(t, 1, link, body) for t, body in received]
    net = Network(Z(zid), R, locators=lambda: locators, **kw)
    out: dict[int, list[bytes]] = {link: [] for link in links}
    for _, kind, link, arg in sorted(events, key=lambda e: (e[0], e[1])):
        sends = net.add_link(link, Z(arg[0]), arg[1]) if kind == 0 else net.link_states(link, arg)[1]
        for lk, body in sends:
            out[lk].append(body)
    net.compute_trees()
    return net, out


@pytest.mark.interop
@pytest.mark.timeout(60)
def test_real_triangle_weights_trees_and_messages() -> None:
    """Three real routers in a triangle (b2 -> a1, then c3 -> a1 and c3 -> b2), every link
    through a recording relay. Each router's received LINKSTATEs, fed to a Network, give
    the graph (indexes, edges, printed weights) and the trees (route successors) that
    router prints in its admin space, and while only a1 and b2 were up we sent exactly
    their bytes. (Later sends depend on which message each router handled first, which
    relay timestamps do not tell: they are not compared.)"""
    zenoh: Any = pytest.importorskip("zenoh")

    def exchanged(relay: Relay, n: int) -> bool:
        records = list(relay.records)
        return len(relay.oams("a->b", records)) >= n and len(relay.oams("b->a", records)) >= n

    ports: dict[str, int] = {}
    relays: dict[str, Relay] = {}
    with closing_all() as opened:
        opened.append(open_listening(zenoh, ports, "a1", "router", []))
        for name in ("ab", "ac"):
            relays[name] = Relay(ports["a1"])
            opened.append(relays[name])
        rab = relays["ab"]
        opened.append(open_listening(zenoh, ports, "b2", "router", [rab.port]))
        # c3 -> b2 waits until c3 -> a1 is up, so that every router numbers alike each run
        relays["bc"] = Relay(ports["b2"], hold=True)
        opened.append(relays["bc"])
        wait_for(lambda: exchanged(rab, 2))
        time.sleep(0.2)  # nothing else is sent between two routers alone
        pair_phase = list(rab.records)
        opened.append(open_listening(zenoh, ports, "c3", "router", [relays["ac"].port, relays["bc"].port]))
        wait_for(lambda: exchanged(relays["ac"], 2))
        time.sleep(0.2)
        relays["bc"].release()
        wait_for(lambda: exchanged(relays["bc"], 1))
        # one client per router, reading that router's own admin space
        clients = {}
        for z, port in ports.items():
            client_conf = zenoh.Config()
            client_conf.insert_json5("mode", '"client"')
            client_conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{port}"]))
            client_conf.insert_json5("scouting/multicast/enabled", "false")
            clients[z] = zenoh.open(client_conf)
            opened.append(clients[z])

        def converged() -> dict[str, bytes] | None:
            seen: dict[str, bytes] = {}
            for z, client in clients.items():
                text = admin(client, f"@/{z}/router/linkstate/north").get(f"@/{z}/router/linkstate/north", b"")
                succ = admin(client, f"@/{z}/router/route/successor/**")
                if text.count(b" -- ") != 3 or len(succ) != 6:
                    return None
                seen[f"@/{z}/router/linkstate/north"] = text
                seen.update(succ)
            return seen

        wait_for(converged)
        # zenohd recomputes its trees in a worker, 100 ms after a change: let it run
        time.sleep(0.5)
        seen = converged()
        assert seen is not None
        info = {z: json.loads(admin(clients[z], f"@/{z}/router")[f"@/{z}/router"]) for z in ports}
        records = {name: list(r.records) for name, r in relays.items()}
    # (everything is closed here; the relays recorded the shutdown too)

    def flows(name: str, received: str, recs: dict[str, list[Any]]) -> tuple[list[Any], list[Any]]:
        sent = "a->b" if received == "b->a" else "b->a"
        return relays[name].oams(received, recs[name]), relays[name].oams(sent, recs[name])

    # per router: link id -> (neighbour, relay, the direction that reaches this router)
    layout = {"a1": {1: ("b2", "ab", "a->b"), 2: ("c3", "ac", "a->b")},
              "b2": {1: ("a1", "ab", "b->a"), 2: ("c3", "bc", "a->b")},
              "c3": {1: ("a1", "ac", "b->a"), 2: ("b2", "bc", "b->a")}}  # fmt: skip
    for zid, links in layout.items():
        spec = {lk: (peer, R, *flows(rel, d, records)) for lk, (peer, rel, d) in links.items()}
        net, _ = replay(zid, info[zid]["locators"], spec)
        # same nodes at the same indexes, same edges with the same printed weights
        real_text = seen[f"@/{zid}/router/linkstate/north"].decode()
        # (the text itself matches too when we handled events in the router's order, which
        # relay timestamps only approximate: edge order and orientation may then differ)
        assert parse_dot(net.dot()) == parse_dot(real_text), zid
        # same trees: the next hop from this router for every (tree, destination)
        real_succ = {tuple(k.split("/")[6::2]) + (json.loads(v),)
                     for k, v in seen.items() if k.startswith(f"@/{zid}/router/route/successor/")}  # fmt: skip
        assert {(str(s), str(d), str(n)) for s, d, n in net.route_successors()} == real_succ, zid
        check_trees(net)
        # the shutdown's link-state traffic is accepted too
        everything = {name: list(r.records) for name, r in relays.items()}
        replay(zid, info[zid]["locators"], {lk: (peer, R, *flows(rel, d, everything))
                                            for lk, (peer, rel, d) in links.items()})  # fmt: skip
    # while only a1 and b2 were up, each of our replays sent exactly what the router sent
    pair = {"ab": pair_phase}
    for zid, peer, received in (("a1", "b2", "a->b"), ("b2", "a1", "b->a")):
        got, sent = flows("ab", received, pair)
        _, ours = replay(zid, info[zid]["locators"], {1: (peer, R, got, sent)})
        assert ours[1] == [body for _, body in sent] and len(sent) == 2, zid
    # @/<zid>/router: one session per neighbour router, in the north region, whose
    # "weight" is our links_info()
    for zid, links in layout.items():
        north = [s for s in info[zid]["sessions"] if s["whatami"] == "router"]
        assert sorted(s["peer"] for s in north) == sorted(set(layout) - {zid})
        net, _ = replay(zid, info[zid]["locators"], {lk: (peer, R, *flows(rel, d, records))
                                                     for lk, (peer, rel, d) in links.items()})  # fmt: skip
        weights: dict[str, dict[str, int | None]] = {
            str(z): {"src_weight": sw, "dst_weight": dw, "actual_weight": aw}
            for z, (sw, dw, aw) in net.links_info().items()
        }
        assert {s["peer"]: s["weight"] for s in north} == weights
        assert all(s["region"] == "north" for s in north)


@pytest.mark.interop
@pytest.mark.timeout(60)
def test_real_router_gossip_with_peers() -> None:
    zenoh: Any = pytest.importorskip("zenoh")

    ports: dict[str, int] = {}
    with closing_all() as opened:
        router = open_listening(zenoh, ports, "a1", "router", [])
        opened.append(router)
        r1, r2 = Relay(ports["a1"]), Relay(ports["a1"])
        opened += [r1, r2]
        opened.append(open_listening(zenoh, ports, "d4", "peer", [r1.port]))
        wait_for(lambda: len(r1.oams("a->b", list(r1.records))) >= 1)
        opened.append(open_listening(zenoh, ports, "e5", "peer", [r2.port]))

        def settled() -> dict[str, bytes] | None:
            # both peers met each other and told the router (their states list 2 links)
            d4 = [s for _, b in r1.oams("a->b", list(r1.records)) for s in states(b) if s.psid == 0]
            e5 = [s for _, b in r2.oams("a->b", list(r2.records)) for s in states(b) if s.psid == 0]
            if not (d4 and e5 and len(d4[-1].links) == 2 and len(e5[-1].links) == 2):
                return None
            return admin(router, "@/a1/router/linkstate/**") or None

        texts = wait_for(settled)
        time.sleep(0.2)  # let any last gossip land
        texts = admin(router, "@/a1/router/linkstate/**")
        info = json.loads(admin(router, "@/a1/router")["@/a1/router"])
        records = {"d4": list(r1.records), "e5": list(r2.records)}

    spec = {1: ("d4", P, r1.oams("a->b", records["d4"]), r1.oams("b->a", records["d4"])),
            2: ("e5", P, r2.oams("a->b", records["e5"]), r2.oams("b->a", records["e5"]))}  # fmt: skip
    net, ours = replay("a1", info["locators"], spec, full_linkstate=False, gateway=True)
    # byte for byte what the real router sent each peer: first the empty list, then the
    # other peer's zid, whatami and locators
    for lk in spec:
        assert ours[lk] == [body for _, body in spec[lk][3]], lk
    assert ours[1][0] == b"\x00"
    assert states(ours[2][0])[0].zid == Z("d4") and states(ours[1][1])[0].zid == Z("e5")
    assert net.dot() == texts["@/a1/router/linkstate/south:0:peer"].decode()
    assert texts["@/a1/router/linkstate/north"].decode() == 'graph {\n    0 [ label = "a1" ]\n}\n'
    assert sorted((s["peer"], s["region"]) for s in info["sessions"]) == [("d4", "south:0:peer"),
                                                                          ("e5", "south:0:peer")]  # fmt: skip
