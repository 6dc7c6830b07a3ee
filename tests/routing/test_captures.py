"""Replays of the captured 1.10.2 sessions: the core must send what the real router sent.

Only data timestamps are normalised (their time depends on the clock); ids, key
representations, QoS, order and extensions must match exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pyzenoh.codec import Declare as DeclareMsg
from pyzenoh.codec import (
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    Encoding,
    EntityGlobalId,
    Err,
    Interest,
    NetworkMessage,
    NetworkOam,
    Push,
    Put,
    Reply,
    Request,
    Response,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.routing import RoutingConfig, Send
from tests.routing.support import (
    CF,
    CLIENT_ZID,
    OTHER_ZID,
    QOS_REQ,
    Harness,
    d_qabl,
    d_sub,
    d_token,
    events,
    final,
    put,
    request,
    strip_times,
    u_token,
    we,
)

OTHER = 0  # the uncaptured "other" session (opened first, as in the capture)
CLIENT = 1


def expected_to(scenario: str, conn: int) -> list[NetworkMessage]:
    return [
        strip_times(e.message) for e in events(scenario) if e.conn == conn and not e.to_router and e.message is not None
    ]


def got(h: Harness, face: int) -> list[NetworkMessage]:
    return [strip_times(s.message) for s in h.sent.get(face, [])]


def test_pyclient_replay_both_connections() -> None:
    """Both sides of run ``pyclient`` were recorded: replay every message of both clients."""
    zids = {1: ZenohId.from_str("d1d2d3d4d5d6d7d8"), 2: ZenohId.from_str("e1e2e3e4e5e6e7e8")}
    h = Harness()
    for e in events("pyclient"):
        if e.message is None:
            h.open(e.conn, zids[e.conn], WhatAmI.CLIENT)
        elif e.to_router:
            h.send(e.conn, e.message)
    for conn in (1, 2):
        assert got(h, conn) == expected_to("pyclient", conn)
    # The data the router stamped carries its own HLC id.
    stamped = [s.message for s in h.sent[2] if isinstance(s.message, Push)]
    assert stamped and all(
        isinstance(m.body, Put) and m.body.timestamp is not None and m.body.timestamp.id == h.core.zid for m in stamped
    )
    h.close(1)
    h.close(2)
    assert h.core.is_empty()


def is_body(kind: type) -> Callable[[NetworkMessage], bool]:
    return lambda m: isinstance(m, DeclareMsg) and isinstance(m.body, kind)


def is_msg(kind: type, **attrs: object) -> Callable[[NetworkMessage], bool]:
    return lambda m: isinstance(m, kind) and all(getattr(m, a) == v for a, v in attrs.items())


def last_request_to(h: Harness, face: int) -> Request:
    req = [s.message for s in h.sent[face] if isinstance(s.message, Request)][-1]
    assert isinstance(req, Request)
    return req


def other_answers(payload: bytes, eid: int, key: str | None = None) -> Callable[[Harness], None]:
    def act(h: Harness) -> None:
        req = last_request_to(h, OTHER)
        body = Reply(Put(payload))
        h.send(
            OTHER,
            Response(req.request_id, we(key or "demo/q1"), body, QOS_REQ, responder=EntityGlobalId(OTHER_ZID, eid)),
            final(req.request_id),
        )

    return act


def main_scenario() -> list[tuple[Callable[[NetworkMessage], bool], Callable[[Harness], None]]]:
    return [
        (is_body(DeclareSubscriber), lambda h: h.send(OTHER, put("demo/a", b"hello"))),
        (is_msg(Request), other_answers(b"reply-from-other", 6)),
        (is_body(DeclareQueryable), lambda h: h.send(OTHER, request(1, "demo/cq", timeout_ms=5000, parameters="x=1"))),
        (is_body(DeclareToken), lambda h: h.send(OTHER, d_token(5, "demo/tok2"))),
        (is_msg(Interest, mode=CF), lambda h: h.send(OTHER, u_token(5))),
    ]


@pytest.mark.parametrize("scenario,whatami", [("client_router", WhatAmI.CLIENT), ("peer_router", WhatAmI.PEER)])
def test_main_scenario_matches_capture(scenario: str, whatami: WhatAmI) -> None:
    """Replay the captured client; the uncaptured other session (queryable demo/q1 from
    the start) acts right after the client message that preceded its action."""
    h = Harness()
    h.open(OTHER, OTHER_ZID, WhatAmI.CLIENT)
    h.send(OTHER, d_qabl(2, "demo/q1"))
    todo = main_scenario()
    for e in events(scenario):
        if e.message is None:
            h.open(CLIENT, CLIENT_ZID, whatami)
        elif e.to_router:
            h.now += 0.01
            h.send(CLIENT, e.message)
            if todo and todo[0][0](e.message):
                todo.pop(0)[1](h)
    assert not todo
    assert got(h, CLIENT) == expected_to(scenario, 1)
    # What the other session got: the client's put, its get, and its own query's reply.
    to_other = [s.message for s in h.sent[OTHER]]
    pushes = [m for m in to_other if isinstance(m, Push)]
    assert pushes == []  # the other session has no subscriber
    responses = [m for m in to_other if isinstance(m, Response)]
    assert [r.wire_expr for r in responses] == [we("demo/cq")]
    assert responses[0].request_id == 1
    h.close(CLIENT)
    h.close(OTHER)
    assert h.core.is_empty()


def test_client_peer_matches_capture_without_timestamps() -> None:
    """A peer serves clients with the same logic, except that it does not stamp data."""
    h = Harness(config=RoutingConfig(timestamping=False))
    h.open(OTHER, OTHER_ZID, WhatAmI.CLIENT)
    h.send(OTHER, d_qabl(2, "demo/q1"))
    todo = main_scenario()
    for e in events("client_peer"):
        if e.message is None:
            h.open(CLIENT, CLIENT_ZID, WhatAmI.CLIENT)
        elif e.to_router:
            h.send(CLIENT, e.message)
            if todo and todo[0][0](e.message):
                todo.pop(0)[1](h)
    assert not todo
    assert [s.message for s in h.sent[CLIENT]] == expected_to("client_peer", 1)


def test_client_router2_matches_capture() -> None:
    """Publisher and querier interests, fragmented put, QoS, query body, ERR replies."""

    def other_err_q(h: Harness) -> None:
        req = last_request_to(h, OTHER)
        h.send(
            OTHER,
            Response(
                req.request_id, we("err/q"), Err(b"nope", Encoding(4)), QOS_REQ, responder=EntityGlobalId(OTHER_ZID, 7)
            ),
            final(req.request_id),
        )

    def other_err_z(h: Harness) -> None:
        req = last_request_to(h, OTHER)
        h.send(
            OTHER,
            Response(
                req.request_id, we("err/z"), Err(b"nope", Encoding(4)), QOS_REQ, responder=EntityGlobalId(OTHER_ZID, 7)
            ),
            final(req.request_id),
        )

    # The clock of that run: the client's own timestamp on big/y must not look too far ahead.
    h = Harness(now=1_795_264_815.5)
    h.open(OTHER, OTHER_ZID)
    h.send(OTHER, d_sub(1, "big/**"), d_qabl(2, "err/**"))
    script = [(is_msg(Request, request_id=1), other_err_q), (is_msg(Request, request_id=2), other_err_z)]
    for e in events("client_router2"):
        if e.message is None:
            h.open(CLIENT, CLIENT_ZID)
        elif e.to_router:
            h.now += 0.01
            h.send(CLIENT, e.message, raw=True)
            if script and script[0][0](e.message):
                script.pop(0)[1](h)
    assert not script
    assert got(h, CLIENT) == expected_to("client_router2", 1)
    # What reached the other session: every publication, router-stamped unless stamped.
    to_other: list[Send] = h.sent[OTHER]
    pushes = [s for s in to_other if isinstance(s.message, Push)]
    keys = [(p.message.wire_expr.suffix, type(p.message.body).__name__) for p in pushes]
    assert keys == [("big/x", "Put"), ("big/x", "Put"), ("big/x", "Del"), ("big/y", "Put"), ("big/z", "Del")]
    small, big, _, with_ts, _ = (p.message for p in pushes)
    assert isinstance(small.body, Put) and small.body.attachment == b"ATT"
    assert small.body.encoding == Encoding(4)
    assert isinstance(big.body, Put) and len(big.body.payload) == 100_000
    assert small.body.timestamp is not None and small.body.timestamp.id == h.core.zid
    # The user's own timestamp is kept; QoS priority 2 / express / block reach the Send.
    assert isinstance(with_ts.body, Put) and with_ts.body.timestamp is not None
    assert with_ts.body.timestamp.id == CLIENT_ZID
    ts_send = pushes[3]
    assert (ts_send.priority, ts_send.express, ts_send.block) == (2, True, True)
    # The key was rewritten for the other session: a new head before the received body
    # (check_send verified that these bytes decode to exactly this message).
    rewritten = pushes[2]
    assert rewritten.raw is not None and rewritten.message.wire_expr == WireExpr(0, "big/x", True)
    # The DEL on a full key the other session has no id for goes out as received.
    assert pushes[4].raw is not None
    assert isinstance(pushes[4].message.body, Del)
    reqs = [s.message for s in to_other if isinstance(s.message, Request)]
    assert [r.target for r in reqs] == [0, 1]
    assert reqs[0].body.body is not None and reqs[0].body.body.payload == b"qbody"
    assert reqs[1].body.parameters == "a=b;c=d" and reqs[1].timeout_ms == 2000
    h.close(CLIENT)
    h.close(OTHER)
    assert h.core.is_empty()


def test_peer_gets_the_captured_linkstate_on_open() -> None:
    h = Harness()
    out = h.open(1, CLIENT_ZID, WhatAmI.PEER)
    expected = next(e.message for e in events("peer_router") if not e.to_router and e.message is not None)
    assert isinstance(expected, NetworkOam)
    assert [s.message for s in out] == [expected]
    assert out[0].priority == 0
    # The peer's own LINKSTATE needs no answer.
    first = next(e.message for e in events("peer_router") if e.to_router and e.message is not None)
    assert isinstance(first, NetworkOam)
    assert h.send(1, first) == []
    assert h.core.stats.dropped == {}


def test_client_oam_is_ignored() -> None:
    h = Harness()
    h.open(1)
    assert h.send(1, NetworkOam(1, b"\x00", 0x08)) == []
    assert h.core.stats.dropped == {"unexpected OAM": 1}
