"""The sans-IO session core, driven with hand-made router messages."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    EntityGlobalId,
    Err,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkOam,
    Push,
    Put,
    Query,
    Reply,
    Request,
    Response,
    ResponseFinal,
    Timestamp,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
    encode_network_message,
)
from pyzenoh.errors import UsageError
from pyzenoh.session import types as t
from pyzenoh.session.core import END, SessionCore
from pyzenoh.transport.link import Established

ZC = ZenohId.from_str("c1c2c3c4c5c6c7c8")
ZR = ZenohId.from_str("a1a2a3a4a5a6a7a8")


class Sink:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.closed = False


class Harness:
    """A core plus helpers: deliveries are routed to Sink objects, the outbox is kept."""

    def __init__(self, mode: WhatAmI = WhatAmI.CLIENT) -> None:
        self.core = SessionCore(ZC, mode, self, query_timeout_s=10.0)
        self.replies: list[tuple[int, str, Any]] = []
        self.core.on_established(Established(ZR, WhatAmI.ROUTER, 10_000, 65535, 0x0A, True, 1, 0, 0))
        self.sent: list[Any] = []
        self.flush()

    # Responder, used by Query objects: call straight into the core
    def query_reply(self, qref: int, key: str, body: Any, priority: Any, express: bool, block: bool) -> None:
        self.core.query_reply(qref, key, body, None if priority is None else priority.value, express, block)
        self.flush()

    def query_finalize(self, qref: int) -> None:
        self.core.query_finalize(qref)
        self.flush()

    def flush(self) -> list[Any]:
        out = [m for m, *_ in self.core.take_outbox()]
        self.sent += out
        for sink, item in self.core.take_deliveries():
            if item is END:
                sink.closed = True
            else:
                sink.items.append(item)
        return out

    def recv(self, msg: Any, now: float = 0.0) -> list[Any]:
        self.core.on_message(msg, now)
        return self.flush()


def put_push(key: str, payload: bytes = b"v", ts: Timestamp | None = None, **kw: Any) -> Push:
    return Push(WireExpr(0, key), Put(payload, timestamp=ts), **kw)


def test_subscriber_declared_once_per_key() -> None:
    h = Harness()
    a, b = Sink(), Sink()
    la = h.core.declare_subscriber("demo/**", a)
    lb = h.core.declare_subscriber("demo/**", b)
    out = h.flush()
    assert out == [Declare(DeclareSubscriber(1, WireExpr(0, "demo/**")), qos=0x08)]
    h.core.undeclare_subscriber(la)
    assert h.flush() == [] and a.closed
    h.core.undeclare_subscriber(lb)
    assert h.flush() == [Declare(UndeclareSubscriber(1), qos=0x08)]


def test_push_resolution_against_both_tables() -> None:
    h = Harness()
    sub = Sink()
    h.core.declare_subscriber("demo/**", sub)
    h.core.declare_keyexpr("demo")  # our expr id 1
    h.flush()
    h.recv(Declare(DeclareKeyExpr(7, WireExpr(0, "demo/r"))))  # the router's id 7
    h.recv(Push(WireExpr(7, "/x", True), Put(b"1")))  # M=1: sender's table
    h.recv(Push(WireExpr(1, "/y", False), Put(b"2")))  # M=0: our table
    h.recv(Push(WireExpr(99, "/z", True), Put(b"3")))  # unknown: dropped
    h.recv(put_push("other/k"))  # no subscriber
    assert [(str(s.key_expr), s.payload.to_bytes()) for s in sub.items] == [("demo/r/x", b"1"), ("demo/y", b"2")]


def test_push_sample_fields() -> None:
    h = Harness()
    sub = Sink()
    h.core.declare_subscriber("k", sub)
    ts = Timestamp(123 << 32, ZR)
    h.recv(Push(WireExpr(0, "k"), Put(b"p", t.to_encoding("text/plain"), ts, attachment=b"A"), qos=0x1A))
    h.recv(Push(WireExpr(0, "k"), Del()))
    s, d = sub.items
    assert s.kind is t.SampleKind.PUT and str(s.encoding) == "text/plain" and s.attachment == b"A"
    assert s.timestamp.get_time_as_ntp64() == 123 << 32
    assert s.priority is t.Priority.INTERACTIVE_HIGH and s.express
    assert s.congestion_control is t.CongestionControl.BLOCK
    assert d.kind is t.SampleKind.DELETE and d.payload == b""


def test_put_delivers_locally_and_sends() -> None:
    h = Harness()
    sub = Sink()
    h.core.declare_subscriber("k/*", sub)
    h.flush()
    h.core.put("k/a", Put(b"x"), priority=2, block=True, express=True)
    [push] = h.flush()
    assert push == Push(WireExpr(0, "k/a"), Put(b"x"), qos=0x1A)
    assert sub.items[0].payload == b"x" and sub.items[0].timestamp is None


def test_put_raises_after_close() -> None:
    h = Harness()
    h.core.close()
    with pytest.raises(UsageError):
        h.core.put("k", Put(b""))


# --- publisher interests and write-side filtering ---------------------------------------------


def test_publisher_interest_and_write_filtering() -> None:
    h = Harness()
    local = h.core.declare_publisher("big/x")
    out = h.flush()
    assert out == [
        Declare(DeclareKeyExpr(1, WireExpr(0, "big/x")), qos=0x08),
        Interest(
            1,
            InterestMode.CURRENT_FUTURE,
            InterestOptions.KEYEXPRS | InterestOptions.SUBSCRIBERS,
            WireExpr(1, "", True),
            qos=0x08,
        ),
    ]
    listener = Sink()
    h.core.add_matching_listener(local, listener)
    h.flush()
    # before D_FINAL, everything is sent
    h.core.put("big/x", Put(b"1"))
    assert len(h.flush()) == 1
    # D_FINAL without subscribers: puts on big/x stop, others still flow
    h.recv(Declare(DeclareFinal(), interest_id=1))
    h.core.put("big/x", Put(b"2"))
    assert h.flush() == []
    h.core.put("big/y", Put(b"3"))
    assert len(h.flush()) == 1
    # a matching remote subscriber re-enables them, and flips matching status
    h.recv(Declare(DeclareSubscriber(4, WireExpr(0, "big/**"))))
    h.core.put("big/x", Put(b"4"))
    assert len(h.flush()) == 1
    assert h.core.publisher_matching(local)
    h.recv(Declare(UndeclareSubscriber(4)))
    h.core.put("big/x", Put(b"5"))
    assert h.flush() == []
    assert [s.matching for s in listener.items] == [False, True, False]
    h.core.undeclare_publisher(local)
    assert h.flush() == [Interest(1, InterestMode.FINAL, qos=0x08)]
    assert listener.closed
    h.core.put("big/x", Put(b"6"))
    assert len(h.flush()) == 1  # no finalized interest left: no filtering


def test_publisher_fast_path_bytes() -> None:
    from pyzenoh.session.api import PublisherState

    st = PublisherState(
        t.to_key_expr("big/x"), "text/plain", t.CongestionControl.BLOCK, t.Priority.DATA_HIGH, True, None
    )
    st.bind(1, 3)
    from pyzenoh.codec import encode_network_message

    for payload in (b"", b"x" * 8, b"y" * 300, b"z" * 70000):
        expected = encode_network_message(
            Push(WireExpr(3, "", True), Put(payload, t.to_encoding("text/plain")), qos=0x1C)
        )
        assert st.encode(payload) == expected


def _publisher_twins(mode: WhatAmI) -> tuple[Harness, Harness, Any]:
    """Two identical cores (a second face for peers) with a local subscriber each, and a
    publisher's precomputed state on big/x."""
    from pyzenoh.session.api import PublisherState

    cores = (Harness(mode), Harness(mode))
    for h in cores:
        if mode is WhatAmI.PEER:
            other = ZenohId.from_str("b1b2b3b4b5b6b7b8")
            h.core.on_established(Established(other, WhatAmI.PEER, 10_000, 65535, 0x0A, True, 1, 0, 0), fid=7)
        h.core.declare_subscriber("big/*", Sink())
        h.core.declare_publisher("big/x")
        h.core.take_outbox()
        h.flush()
    st = PublisherState(t.to_key_expr("big/x"), "text/plain", None, None, None, None)
    st.bind(1, 1)
    return cores[0], cores[1], st


@pytest.mark.parametrize("mode", [WhatAmI.CLIENT, WhatAmI.PEER])
def test_a_run_of_puts_is_the_puts_one_by_one(mode: WhatAmI) -> None:
    """``put_encoded_run`` sends the bytes ``put`` would send for each, in order, and
    delivers the same samples locally, on a client's router face and on a peer's faces."""
    one, joined, st = _publisher_twins(mode)
    payloads = [b"", b"a" * 8, b"b" * 200, b"c" * 70_000, b"d"]
    for p in payloads:
        one.core.put("big/x", Put(p, st.wire_encoding))
    joined.core.put_encoded_run("big/x", [st.encode(p) for p in payloads], payloads, st.wire_encoding)
    singles = [(encode_network_message(m), *rest) for m, *rest in one.core.take_outbox()]
    runs = joined.core.take_outbox()
    if mode is WhatAmI.CLIENT:
        [(run, *rest)] = runs
        assert all(tuple(rest) == tuple(other) for _, *other in singles)
        assert run.data == b"".join(raw for raw, *_ in singles)
        assert list(run.ends) == list(itertools.accumulate(len(raw) for raw, *_ in singles))
    else:  # per face, message by message, as each put goes
        assert runs == singles
    one_by_one = [sample for _, sample in one.core.take_deliveries()]
    [(_, batch)] = joined.core.take_deliveries()
    assert batch.samples == one_by_one
    assert [s.payload for s in batch.samples] == payloads


# --- queries: our gets --------------------------------------------------------------------------


def get(h: Harness, key: str = "q/**", params: str = "", **kw: Any) -> tuple[Sink, int, Request]:
    sink = Sink()
    rid = h.core.get(key, params, sink, 0.0, **kw)
    req = [m for m in h.flush() if isinstance(m, Request)][-1]
    return sink, rid, req


def response(rid: int, key: str, payload: bytes = b"r", ts: Timestamp | None = None) -> Response:
    return Response(rid, WireExpr(0, key), Reply(Put(payload, timestamp=ts)), qos=0x0D, responder=EntityGlobalId(ZR, 3))


def test_get_request_fields() -> None:
    h = Harness()
    _, rid, req = get(h, "q/a", "x=1", target=1, timeout_s=2.0, payload=b"pl", attachment=b"at")
    assert rid == 1 and req.request_id == 1 and req.target == 1 and req.timeout_ms == 2000
    assert req.qos == 0x0D and req.wire_expr == WireExpr(0, "q/a")
    assert req.body.consolidation == t.ConsolidationMode.LATEST.value
    assert req.body.parameters == "x=1" and req.body.attachment == b"at"
    assert req.body.body is not None and req.body.body.payload == b"pl"
    _, _, req2 = get(h, "q/a", "_time=[..]")
    assert req2.body.consolidation == t.ConsolidationMode.NONE.value


def test_get_filters_reply_keys_unless_anyke() -> None:
    h = Harness()
    sink, rid, _ = get(h, "q/a", consolidation=t.ConsolidationMode.NONE.value)
    h.recv(response(rid, "q/a", b"ok"))
    h.recv(response(rid, "elsewhere", b"no"))
    h.recv(ResponseFinal(rid))
    assert [r.ok.payload.to_bytes() for r in sink.items] == [b"ok"] and sink.closed
    assert sink.items[0].replier_id == t.EntityGlobalId(ZR, 3)
    sink2, rid2, req = get(h, "q/a", accept_any=True)
    assert "_anyke" in req.body.parameters
    h.recv(response(rid2, "elsewhere", b"yes"))
    h.recv(ResponseFinal(rid2))
    assert [r.ok.payload.to_bytes() for r in sink2.items] == [b"yes"]


def test_get_latest_consolidation_holds_until_final() -> None:
    h = Harness()
    sink, rid, _ = get(h)
    h.recv(response(rid, "q/a", b"old", Timestamp(1 << 32, ZR)))
    h.recv(response(rid, "q/a", b"new", Timestamp(2 << 32, ZR)))
    h.recv(response(rid, "q/a", b"older", Timestamp(0, ZR)))
    h.recv(response(rid, "q/b", b"b"))
    h.recv(Response(rid, WireExpr(0, "q/a"), Err(b"oops")))
    assert [r.err.payload.to_bytes() for r in sink.items] == [b"oops"]  # errors pass at once
    h.recv(ResponseFinal(rid))
    assert [r.ok.payload.to_bytes() for r in sink.items[1:]] == [b"new", b"b"] and sink.closed
    h.recv(response(rid, "q/a", b"late"))  # after the final: ignored
    assert len(sink.items) == 3


def test_get_monotonic_consolidation() -> None:
    h = Harness()
    sink, rid, _ = get(h, consolidation=t.ConsolidationMode.MONOTONIC.value)
    h.recv(response(rid, "q/a", b"1", Timestamp(2 << 32, ZR)))
    h.recv(response(rid, "q/a", b"2", Timestamp(1 << 32, ZR)))
    h.recv(response(rid, "q/a", b"3", Timestamp(3 << 32, ZR)))
    assert [r.ok.payload.to_bytes() for r in sink.items] == [b"1", b"3"]


def test_get_timeout_synthesises_err() -> None:
    h = Harness()
    sink, rid, _ = get(h, timeout_s=1.5)
    h.recv(response(rid, "q/a", b"held"))
    assert h.core.next_deadline() == 1.5
    h.core.handle_timer(1.4)
    h.flush()
    assert sink.items == []
    h.core.handle_timer(1.5)
    h.flush()
    assert [r.ok.payload.to_bytes() if r.ok else r.err.payload.to_bytes() for r in sink.items] == [b"held", b"Timeout"]
    assert sink.closed and h.core.next_deadline() is None


# --- queries: our queryables --------------------------------------------------------------------


def request(rid: int, key: str, params: str = "", target: int = 0) -> Request:
    return Request(rid, WireExpr(0, key), Query(consolidation=3, parameters=params), qos=0x0D, target=target)


def test_request_without_queryable_finishes_at_once() -> None:
    h = Harness()
    assert h.recv(request(5, "nothing/here")) == [ResponseFinal(5, qos=0x0D)]


def test_request_to_queryables_and_replies() -> None:
    h = Harness()
    qa, qb = Sink(), Sink()
    h.core.declare_queryable("q/*", False, qa)
    h.core.declare_queryable("q/a", True, qb)
    out = h.flush()
    assert out[1] == Declare(DeclareQueryable(2, WireExpr(0, "q/a"), complete=True), qos=0x08)
    assert h.recv(request(9, "q/a", "x=1")) == []
    [query_a] = qa.items
    [query_b] = qb.items
    assert str(query_a.key_expr) == "q/a" and query_a.parameters.get("x") == "1"
    query_a.reply("q/a", b"from-a")
    with pytest.raises(UsageError):
        query_a.reply("q/other", b"no")  # must intersect the query
    query_a.drop()
    assert isinstance(h.sent[-1], Response)
    resp = h.sent[-1]
    assert resp.request_id == 9 and resp.wire_expr == WireExpr(0, "q/a")
    assert resp.responder == EntityGlobalId(ZC, 1) and resp.body == Reply(Put(b"from-a"))
    assert not isinstance(h.sent[-1], ResponseFinal)  # b still holds it
    query_b.reply_err(b"bad")
    query_b.drop()
    assert h.sent[-2].body == Err(b"bad") and h.sent[-2].wire_expr == WireExpr(0, "q/a")
    assert h.sent[-1] == ResponseFinal(9, qos=0x0D)
    with pytest.raises(UsageError):
        query_b.reply("q/a", b"too late")


def test_all_complete_target_and_anyke() -> None:
    h = Harness()
    incomplete = Sink()
    h.core.declare_queryable("q/**", False, incomplete)
    h.flush()
    assert h.recv(request(1, "q/a", target=2)) == [ResponseFinal(1, qos=0x0D)]
    h.recv(request(2, "q/a", params="_anyke"))
    [q] = incomplete.items
    q.reply("anywhere/else", b"ok")  # allowed with _anyke
    q.drop()
    assert h.sent[-2].wire_expr == WireExpr(0, "anywhere/else")


def test_local_get_hits_local_queryable() -> None:
    h = Harness()
    qs = Sink()
    h.core.declare_queryable("loc/q", False, qs)
    sink, rid, _ = get(h, "loc/q")
    [query] = qs.items
    query.reply("loc/q", b"local")
    query.drop()
    assert not sink.closed  # the router's answer is still pending
    h.recv(ResponseFinal(rid))
    assert [r.ok.payload.to_bytes() for r in sink.items] == [b"local"] and sink.closed


# --- liveliness -------------------------------------------------------------------------------------


def test_tokens_and_liveliness_subscribers() -> None:
    h = Harness()
    h.core.declare_token("lv/mine")
    assert h.flush() == [Declare(DeclareToken(1, WireExpr(0, "lv/mine")), qos=0x08)]
    hist, fut = Sink(), Sink()
    ih = h.core.declare_liveliness_subscriber("lv/**", True, hist)
    i_f = h.core.declare_liveliness_subscriber("lv/**", False, fut)
    out = h.flush()
    assert [(m.mode, m.interest_id) for m in out] == [(InterestMode.CURRENT_FUTURE, ih), (InterestMode.FUTURE, i_f)]
    # current answer for the history subscriber only
    h.recv(Declare(DeclareToken(5, WireExpr(0, "lv/old")), interest_id=ih))
    h.recv(Declare(DeclareFinal(), interest_id=ih))
    # a new token: everyone; a repeat of a known id is ignored
    h.recv(Declare(DeclareToken(6, WireExpr(0, "lv/new"))))
    h.recv(Declare(DeclareToken(6, WireExpr(0, "lv/new"))))
    h.recv(Declare(UndeclareToken(5)))
    assert [(str(s.key_expr), s.kind.name) for s in hist.items] == [
        ("lv/old", "PUT"),
        ("lv/new", "PUT"),
        ("lv/old", "DELETE"),
    ]
    assert [(str(s.key_expr), s.kind.name) for s in fut.items] == [("lv/new", "PUT"), ("lv/old", "DELETE")]
    h.core.undeclare_liveliness_subscriber(ih)
    assert h.flush() == [Interest(ih, InterestMode.FINAL, qos=0x08)] and hist.closed


def test_a_token_declared_as_future_and_again_in_the_interest_answer_is_given_once() -> None:
    """The router may send a token declared while it answers a history subscriber's
    interest both as a future declaration and in the answer (CI run 17: PUT, PUT)."""
    h = Harness()
    hist, late = Sink(), Sink()
    ih = h.core.declare_liveliness_subscriber("lv/**", True, hist)
    h.flush()
    h.recv(Declare(DeclareToken(7, WireExpr(0, "lv/t"))))  # future, first
    h.recv(Declare(DeclareToken(7, WireExpr(0, "lv/t")), interest_id=ih))  # then in the answer
    h.recv(Declare(DeclareFinal(), interest_id=ih))
    # a history subscriber declared afterwards still gets the known token in its answer
    il = h.core.declare_liveliness_subscriber("lv/**", True, late)
    h.flush()
    h.recv(Declare(DeclareToken(7, WireExpr(0, "lv/t")), interest_id=il))
    h.recv(Declare(UndeclareToken(7)))
    assert [s.kind.name for s in hist.items] == ["PUT", "DELETE"]
    assert [s.kind.name for s in late.items] == ["PUT", "DELETE"]


def test_liveliness_get() -> None:
    h = Harness()
    sink = Sink()
    iid = h.core.liveliness_get("lv/**", sink, 0.0, 2.0)
    [interest] = h.flush()
    assert interest == Interest(
        iid, InterestMode.CURRENT, InterestOptions.KEYEXPRS | InterestOptions.TOKENS, WireExpr(0, "lv/**"), qos=0x08
    )
    h.recv(Declare(DeclareToken(0, WireExpr(0, "lv/a")), interest_id=iid))
    h.recv(Declare(DeclareFinal(), interest_id=iid))
    assert [str(r.ok.key_expr) for r in sink.items] == ["lv/a"] and sink.closed
    sink2 = Sink()
    h.core.liveliness_get("lv/**", sink2, 0.0, 2.0)
    h.core.handle_timer(2.0)
    h.flush()
    assert [r.err.payload.to_bytes() for r in sink2.items] == [b"Timeout"] and sink2.closed


def test_peer_mode_linkstate_and_local_tokens() -> None:
    h = Harness(WhatAmI.PEER)
    [oam] = h.sent
    assert isinstance(oam, NetworkOam) and oam.oam_id == 1 and oam.qos == 0x08
    assert isinstance(oam.body, bytes) and oam.body[0] == 2 and ZC.to_wire() in oam.body and ZR.to_wire() in oam.body
    sub = Sink()
    h.core.declare_liveliness_subscriber("lv/**", True, sub)
    h.core.declare_token("lv/p")
    local = Sink()
    h.core.liveliness_get("lv/**", local, 0.0)
    h.flush()
    assert [str(s.key_expr) for s in sub.items] == ["lv/p"]
    assert [str(r.ok.key_expr) for r in local.items] == ["lv/p"]


def test_close_ends_everything() -> None:
    h = Harness()
    sinks = [Sink() for _ in range(4)]
    h.core.declare_subscriber("a", sinks[0])
    h.core.declare_queryable("b", False, sinks[1])
    h.core.declare_liveliness_subscriber("c", False, sinks[2])
    h.core.get("d", "", sinks[3], 0.0)
    h.flush()
    h.core.close()
    assert h.flush() == []
    assert all(s.closed for s in sinks)
    h.recv(put_push("a"))
    assert sinks[0].items == []


def test_interest_from_router_ignored() -> None:
    h = Harness()
    assert h.recv(Interest(3, InterestMode.CURRENT, InterestOptions.TOKENS)) == []
