"""The router region of the routing core, sans-IO: several cores wired together in memory.

Every message between routers is encoded and decoded with pyzenoh's codec on the way, as
on a real link. Clients are scripted faces. Checks: declarations along trees with NodeId,
data delivered once in every topology (cycles included), requests across hops with one
final per hop, tokens, entities of unreachable routers removed, and bad input from a
router neighbour raising a PeerError (the daemon closes that link).
"""

from __future__ import annotations

import itertools

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    NetworkMessage,
    Push,
    Put,
    Query,
    Request,
    Response,
    ResponseFinal,
    WhatAmI,
    ZenohId,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.codec.data import Reply
from pyzenoh.errors import PeerError
from pyzenoh.routing import RoutingCore, Send
from tests.routing.support import we

CLIENT = 100  # each core's client face id


class Net:
    """Cores by name, router links between them, one client face per core."""

    def __init__(self, *names: str) -> None:
        self.now = 1_000.0
        self.cores = {n: RoutingCore(ZenohId(int.from_bytes(n.encode(), "little") + 0x10)) for n in names}
        self.links: dict[tuple[str, int], tuple[str, int]] = {}  # (core, face) -> peer end
        self.fids = itertools.count(1)
        self.client_out: dict[str, list[NetworkMessage]] = {n: [] for n in names}
        for n, core in self.cores.items():
            self._deliver(
                n, core.add_face(CLIENT, ZenohId(0xC0 + len(self.client_out[n]) + ord(n[0])), WhatAmI.CLIENT, self.now)
            )

    def link(self, a: str, b: str) -> None:
        fa, fb = next(self.fids), next(self.fids)
        self.links[(a, fa)] = (b, fb)
        self.links[(b, fb)] = (a, fa)
        sends = self.cores[a].add_face(fa, self.cores[b].zid, WhatAmI.ROUTER, self.now)
        sends_b = self.cores[b].add_face(fb, self.cores[a].zid, WhatAmI.ROUTER, self.now)
        self._deliver(a, sends)
        self._deliver(b, sends_b)

    def cut(self, a: str, b: str) -> None:
        for (n, f), (m, g) in list(self.links.items()):
            if n == a and m == b:
                del self.links[(n, f)], self.links[(m, g)]
                self._deliver(a, self.cores[a].remove_face(f, self.now))
                self._deliver(b, self.cores[b].remove_face(g, self.now))

    def kill(self, a: str) -> None:
        for (n, f), (m, g) in list(self.links.items()):
            if n == a:
                del self.links[(n, f)], self.links[(m, g)]
                self._deliver(m, self.cores[m].remove_face(g, self.now))
        del self.cores[a]

    def _deliver(self, name: str, sends: list[Send]) -> None:
        queue = [(name, s) for s in sends]
        while queue:
            src, s = queue.pop(0)
            if s.face == CLIENT:
                self.client_out[src].append(s.message)
                continue
            peer = self.links.get((src, s.face))
            if peer is None or peer[0] not in self.cores:
                continue
            data = s.raw if s.raw is not None else encode_network_message(s.message)
            msg = decode_network_message(data)  # as a real link would
            out = self.cores[peer[0]].handle(peer[1], msg, self.now, raw=data)
            queue.extend((peer[0], o) for o in out)

    def client(self, name: str, msg: NetworkMessage) -> None:
        self._deliver(name, self.cores[name].handle(CLIENT, msg, self.now))

    def take(self, name: str, kind: type) -> list[NetworkMessage]:
        got = [m for m in self.client_out[name] if isinstance(m, kind)]
        self.client_out[name] = [m for m in self.client_out[name] if not isinstance(m, kind)]
        return got


def _interest_all(net: Net, name: str) -> None:
    from pyzenoh.codec import Interest, InterestMode, InterestOptions

    opts = InterestOptions.KEYEXPRS | InterestOptions.SUBSCRIBERS | InterestOptions.QUERYABLES | InterestOptions.TOKENS
    net.client(name, Interest(1, InterestMode.CURRENT_FUTURE, opts, None))


def _put(key: str, payload: bytes) -> Push:
    return Push(we(key), Put(payload))


@pytest.mark.parametrize("topology", ["pair", "line", "triangle", "square-with-diagonal"])
def test_every_subscriber_gets_each_sample_once(topology: str) -> None:
    names, edges = {
        "pair": ("AB", ["AB"]),
        "line": ("ABC", ["AB", "BC"]),
        "triangle": ("ABC", ["AB", "BC", "CA"]),
        "square-with-diagonal": ("ABCD", ["AB", "BC", "CD", "DA", "AC"]),
    }[topology]
    net = Net(*names)
    for a, b in edges:
        net.link(a, b)
    for n in names:
        net.client(n, Declare(DeclareSubscriber(1, we("x/**"))))
    for src in names:
        net.client(src, _put(f"x/{src}", src.encode()))
        for n in names:
            pushes = net.take(n, Push)
            expected = [] if n == src else [src.encode()]
            assert [p.body.payload for p in pushes] == expected, (src, n)  # type: ignore[union-attr]


def test_declarations_travel_with_node_ids_and_are_removed_with_their_router() -> None:
    net = Net("A", "B", "C")
    net.link("A", "B")
    net.link("B", "C")
    _interest_all(net, "A")
    net.take("A", Declare)
    net.client("C", Declare(DeclareSubscriber(7, we("k/**"))))
    net.client("C", Declare(DeclareToken(8, we("lv/c"))))
    decls = [m.body for m in net.take("A", Declare)]
    assert any(isinstance(b, DeclareSubscriber) for b in decls)
    assert any(isinstance(b, DeclareToken) for b in decls)
    b = net.cores["B"]
    assert b.router_entities("subscriber") == {"k/**": sorted([net.cores["C"].zid], key=str)}
    net.kill("C")  # C unreachable: its entities vanish at A
    gone = [type(m.body).__name__ for m in net.take("A", Declare)]
    assert "UndeclareSubscriber" in gone and "UndeclareToken" in gone
    assert net.cores["A"].router_entities("token") == {}


def test_query_crosses_two_hops_with_one_final_per_hop() -> None:
    net = Net("A", "B", "C")
    net.link("A", "B")
    net.link("B", "C")
    net.client("A", Declare(DeclareQueryable(3, we("q/**"), True, 0)))
    net.client("C", Request(41, we("q/x"), Query()))
    requests = net.take("A", Request)
    assert len(requests) == 1
    rid = requests[0].request_id  # type: ignore[attr-defined]
    net.client("A", Response(rid, we("q/x"), Reply(Put(b"v"))))
    net.client("A", ResponseFinal(rid))
    replies = net.take("C", Response)
    finals = net.take("C", ResponseFinal)
    assert [r.request_id for r in replies] == [41]  # type: ignore[attr-defined]
    assert [f.request_id for f in finals] == [41]  # type: ignore[attr-defined]


def test_link_cut_in_a_triangle_reroutes() -> None:
    net = Net("A", "B", "C")
    for a, b in ("AB", "BC", "CA"):
        net.link(a, b)
    net.client("C", Declare(DeclareSubscriber(1, we("x"))))
    net.cut("A", "C")
    net.client("A", _put("x", b"1"))
    assert [p.body.payload for p in net.take("C", Push)] == [b"1"]  # type: ignore[union-attr]


def test_unknown_node_id_from_a_router_is_bad_input() -> None:
    net = Net("A", "B")
    net.link("A", "B")
    (face,) = [f for (n, f) in net.links if n == "A"]
    with pytest.raises(PeerError):
        net.cores["A"].handle(face, Declare(DeclareSubscriber(0, we("z")), node_id=77), net.now)


def test_malformed_linkstate_is_bad_input() -> None:
    from pyzenoh.codec import NetworkOam
    from pyzenoh.codec.network import OAM_LINKSTATE

    net = Net("A", "B")
    net.link("A", "B")
    (face,) = [f for (n, f) in net.links if n == "A"]
    with pytest.raises(PeerError):
        net.cores["A"].handle(face, NetworkOam(OAM_LINKSTATE, b"\x05\x07"), net.now)
