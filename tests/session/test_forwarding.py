"""The peer's forwarding rule (core/forwarding.py), sans-IO: a pyzenoh peer core with two
client faces (A, B) and two peer faces (P, Q); what came from a client goes to every other
face, what came from a peer to the clients only; a client is declared what its interests
ask for, as a 1.10.2 peer does."""

from __future__ import annotations

from typing import Any

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    Push,
    Put,
    Query,
    Request,
    Response,
    ResponseFinal,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec import (
    DeclareKeyExpr as DeclareKeyExprBody,
)
from pyzenoh.codec.data import Reply
from pyzenoh.session.core import SessionCore
from pyzenoh.transport.link import Established

A, B, P, Q = 1, 2, 3, 4
ZID7 = ZenohId(7)
ALL = InterestOptions.KEYEXPRS | InterestOptions.SUBSCRIBERS | InterestOptions.QUERYABLES | InterestOptions.TOKENS
KINDS = {A: WhatAmI.CLIENT, B: WhatAmI.CLIENT, P: WhatAmI.PEER, Q: WhatAmI.PEER}


class Peer:
    """A peer core with faces A, B (clients) and P, Q (peers, their declarations done)."""

    def __init__(self, asking: bool = True) -> None:
        """``asking``: the clients follow every declaration (a CurrentFuture interest)."""
        self.core = SessionCore(ZenohId.from_str("c1c2c3c4c5c6c7c8"), WhatAmI.PEER, self, query_timeout_s=10.0)  # type: ignore[arg-type]
        for fid, kind in KINDS.items():
            self.open(fid, kind)
        for fid in (P, Q):
            self.recv(fid, Declare(DeclareFinal(), 0))
        if asking:
            for fid in (A, B):
                self.recv(fid, Interest(99, InterestMode.CURRENT_FUTURE, ALL))
        self.core.take_outbox()

    def open(self, fid: int, kind: WhatAmI) -> None:
        zid = ZenohId.from_str(f"{fid:02x}" * 8)
        self.core.on_established(Established(zid, kind, 10_000, 65535, 0x0A, True, 1, 0, 0), fid)

    def recv(self, fid: int, msg: Any, now: float = 0.0) -> None:
        self.core.select_face(fid)
        self.core.on_message(msg, now)

    def sent(self) -> list[tuple[int | None, Any]]:
        return [(face, m) for m, _r, _p, _d, _e, face in self.core.take_outbox()]


def to(sent: list[tuple[int | None, Any]], cls: type) -> dict[int | None, list[Any]]:
    out: dict[int | None, list[Any]] = {}
    for face, m in sent:
        body = m.body if isinstance(m, Declare) else m
        if isinstance(body, cls):
            out.setdefault(face, []).append(m)
    return out


def sub(eid: int, key: str) -> Declare:
    return Declare(DeclareSubscriber(eid, WireExpr(0, key)))


def test_a_clients_subscriber_goes_everywhere_a_peers_to_the_clients_only() -> None:
    n = Peer()
    n.recv(A, sub(7, "k/**"))
    assert sorted(f for f in to(n.sent(), DeclareSubscriber) if f is not None) == [B, P, Q]
    n.recv(P, sub(7, "k/**"))
    assert sorted(f for f in to(n.sent(), DeclareSubscriber) if f is not None) == [A, B]


def test_data_follows_the_rule_and_the_subscribers() -> None:
    n = Peer()
    for fid in (B, P, Q):
        n.recv(fid, sub(5, "k/**"))
    n.sent()
    push = Push(WireExpr(0, "k/a"), Put(b"v"))
    n.recv(A, push)
    assert sorted(f for f, m in n.sent() if isinstance(m, Push)) == [B, P, Q]
    n.recv(P, push)  # a peer's data: to the clients, never to another peer
    assert sorted(f for f, m in n.sent() if isinstance(m, Push)) == [B]


def test_a_lost_face_takes_its_forwarded_declarations() -> None:
    n = Peer()
    n.recv(A, sub(7, "k/**"))
    n.recv(P, sub(8, "k/**"))
    n.recv(A, Declare(DeclareToken(9, WireExpr(0, "t/a"))))
    n.sent()
    n.core.face_lost(A)
    sent = n.sent()
    assert sorted(f for f in to(sent, UndeclareSubscriber) if f is not None) == [B, P, Q]
    [(_, tok)] = [(f, m) for f, m in sent if f == P and isinstance(m.body, UndeclareToken)]
    assert tok.body.ext_wire_expr == WireExpr(0, "t/a")
    n.core.face_lost(P)
    assert sorted(f for f in to(n.sent(), UndeclareSubscriber) if f is not None) == [B]


def test_a_face_that_opens_later_gets_what_the_rule_lets_it_know() -> None:
    n = Peer()
    n.recv(A, sub(7, "k/**"))
    n.recv(P, Declare(DeclareQueryable(8, WireExpr(0, "q/**"))))
    n.sent()
    n.open(5, WhatAmI.CLIENT)  # a client is told nothing unasked...
    assert not [m for f, m in n.sent() if f == 5 and isinstance(m, Declare) and not isinstance(m.body, DeclareFinal)]
    n.recv(5, Interest(3, InterestMode.CURRENT, ALL, WireExpr(0, "**")))  # ...and what it asks
    got = [(type(m.body).__name__, m.interest_id) for f, m in n.sent() if f == 5]
    assert got == [("DeclareSubscriber", 3), ("DeclareQueryable", 3), ("DeclareFinal", 3)]
    n.open(6, WhatAmI.PEER)  # the peer's queryable is not for another peer
    bodies = [type(m.body).__name__ for f, m in n.sent() if f == 6 and isinstance(m, Declare)]
    assert "DeclareSubscriber" in bodies and "DeclareQueryable" not in bodies
    assert bodies[-1] == "DeclareFinal"


def _request(rid: int, key: str = "q/a") -> Request:
    return Request(rid, WireExpr(0, key), Query(), timeout_ms=1000)


def test_a_relayed_query_answers_back_and_ends_once() -> None:
    n = Peer()
    n.recv(P, Declare(DeclareQueryable(8, WireExpr(0, "q/**"))))
    n.sent()
    n.recv(A, _request(40))
    sent = n.sent()
    [(face, req)] = [(f, m) for f, m in sent if isinstance(m, Request)]
    assert face == P and req.request_id != 40
    assert not to(sent, ResponseFinal)  # our own (absent) queryables' final is held
    n.recv(P, Response(req.request_id, WireExpr(0, "q/a"), Reply(Put(b"x"))))
    [(face, resp)] = n.sent()
    assert face == A and resp.request_id == 40
    n.recv(P, ResponseFinal(req.request_id))
    assert [(f, m.request_id) for f, m in n.sent() if isinstance(m, ResponseFinal)] == [(A, 40)]
    assert not n.core.forwarding.relayed


def test_a_relayed_query_ends_at_its_timeout_or_when_its_face_goes() -> None:
    n = Peer()
    n.recv(P, Declare(DeclareQueryable(8, WireExpr(0, "q/**"))))
    n.recv(A, _request(40), now=0.0)
    n.sent()
    assert n.core.next_deadline() == 1.0
    n.core.handle_timer(1.0)
    assert [(f, m.request_id) for f, m in n.sent() if isinstance(m, ResponseFinal)] == [(A, 40)]
    n.recv(A, _request(41))
    n.sent()
    n.core.face_lost(P)
    assert [(f, m.request_id) for f, m in n.sent() if isinstance(m, ResponseFinal)] == [(A, 41)]


def test_relays_are_bounded() -> None:
    n = Peer()
    n.core.forwarding.max_relays = 1
    n.recv(P, Declare(DeclareQueryable(8, WireExpr(0, "q/**"))))
    n.recv(A, _request(40))
    n.recv(A, _request(41))
    sent = n.sent()
    assert len(to(sent, Request)[P]) == 1
    assert [(f, m.request_id) for f, m in sent if isinstance(m, ResponseFinal)] == [(A, 41)]
    assert n.core.forwarding.relays_refused == 1


def test_a_client_session_forwards_nothing() -> None:
    c = SessionCore(ZenohId.from_str("c1c2c3c4c5c6c7c8"), WhatAmI.CLIENT, None, query_timeout_s=10.0)  # type: ignore[arg-type]
    c.on_established(Established(ZenohId.from_str("a1" * 8), WhatAmI.ROUTER, 10_000, 65535, 0x0A, True, 1, 0, 0), 1)
    c.take_outbox()
    c.select_face(1)
    c.on_message(sub(7, "k/**"), 0.0)
    assert c.take_outbox() == [] and not c.forwarding.decls


def test_a_client_follows_what_its_future_interests_cover() -> None:
    n = Peer(asking=False)
    n.recv(A, Interest(4, InterestMode.CURRENT_FUTURE, InterestOptions.SUBSCRIBERS, WireExpr(0, "k/a")))
    n.sent()
    n.recv(P, sub(7, "k/**"))
    n.recv(P, sub(8, "x/**"))
    n.recv(P, Declare(DeclareToken(9, WireExpr(0, "k/a"))))
    sent = n.sent()
    assert [(f, m.body.wire_expr.suffix) for f, m in sent if f in (A, B)] == [(A, "k/**")]
    n.recv(P, Declare(UndeclareSubscriber(8)))  # never declared to A: nothing to undeclare
    n.recv(P, Declare(UndeclareSubscriber(7)))
    assert [f for f, m in n.sent()] == [A]
    n.recv(A, Interest(4, InterestMode.FINAL))
    n.recv(P, sub(10, "k/a"))
    assert n.sent() == []


def test_a_run_of_pushes_is_relayed_message_by_message() -> None:
    """A run (one FRAME of same-shape PUSHes) from a client goes on as its PUSHes, key in
    full, payloads and timestamps each its own."""
    from pyzenoh.codec import Frame, Timestamp, encode_network_message
    from pyzenoh.dataplane import PushRun, decode_batch

    n = Peer()
    n.recv(P, sub(5, "a/**"))
    n.sent()
    out = bytearray()
    Frame(True, 1, (), 5).write_header(out)
    n.recv(A, Declare(DeclareKeyExprBody(3, WireExpr(0, "a/b"))))
    for i in range(8):
        out += encode_network_message(Push(WireExpr(3, ""), Put(b"x%d" % i, timestamp=Timestamp(1000 + i, ZID7))))
    (frame,) = decode_batch(bytes(out), keep_raw=True, runs=True, stamped=True)
    run = frame.messages[0]
    assert isinstance(run, PushRun) and run.count == 8
    n.core.select_face(A)
    n.core.on_push_run(run)
    pushes = [(f, m) for f, m in n.sent() if isinstance(m, Push)]
    assert [f for f, _ in pushes] == [P] * 8
    assert {m.wire_expr for _, m in pushes} == {WireExpr(0, "a/b")}
    assert [(m.body.payload, m.body.timestamp.time) for _, m in pushes] == [(b"x%d" % i, 1000 + i) for i in range(8)]
