"""REQUEST routing, reply mapping and RESPONSE_FINAL aggregation."""

from __future__ import annotations

from pyzenoh.codec import (
    EntityGlobalId,
    Err,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    WireExpr,
    ZenohId,
)
from pyzenoh.routing import QueryRouted, RoutingConfig, RoutingEvent
from pyzenoh.routing.queries import REQUEST_TIMEOUT_GRACE
from tests.routing.support import (
    QOS_REQ,
    Harness,
    d_keyexpr,
    d_qabl,
    final,
    reply,
    request,
    u_qabl,
    we,
)

ALL = QueryTarget.ALL
ALL_COMPLETE = QueryTarget.ALL_COMPLETE


def queryables(*specs: tuple[int, str, bool], config: RoutingConfig | None = None) -> Harness:
    """Face 0 is the querier; each spec is (face, key, complete)."""
    h = Harness(config=config or RoutingConfig())
    for face in sorted({f for f, _, _ in specs} | {0}):
        h.open(face, ZenohId(0xD0 + face))
    for n, (face, key, complete) in enumerate(specs, 1):
        h.send(face, d_qabl(n, key, complete))
    return h


def requests(out: list[object]) -> dict[int, Request]:
    return {s.face: s.message for s in out if isinstance(s.message, Request)}  # type: ignore[attr-defined]


def test_no_queryable_means_an_immediate_final() -> None:
    h = queryables((1, "other", True))
    out = h.send(0, request(4, "k"))
    assert [(s.face, s.message) for s in out] == [(0, ResponseFinal(4, QOS_REQ))]


def test_best_matching_prefers_one_complete_queryable_including_the_key() -> None:
    h = queryables((1, "q/**", False), (2, "q/**", True), (3, "q/a", True))
    assert sorted(requests(h.send(0, request(1, "q/a")))) == [2]
    # q/a does not include q/*: only face 2 is complete for it.
    assert sorted(requests(h.send(0, request(2, "q/*")))) == [2]
    h.send(2, u_qabl(2))
    assert sorted(requests(h.send(0, request(3, "q/a")))) == [3]
    # No complete one: everybody.
    assert sorted(requests(h.send(0, request(4, "q/*")))) == [1, 3]


def test_targets_all_and_all_complete() -> None:
    h = queryables((1, "q/**", False), (2, "q/**", True), (3, "q/a", True))
    assert sorted(requests(h.send(0, request(1, "q/a", target=ALL)))) == [1, 2, 3]
    assert sorted(requests(h.send(0, request(2, "q/a", target=ALL_COMPLETE)))) == [2, 3]
    assert sorted(requests(h.send(0, request(3, "q/*", target=ALL_COMPLETE)))) == [2]


def test_one_request_per_face_with_fresh_ids_and_translated_keys() -> None:
    h = queryables((1, "q/a", False), (1, "q/**", False), (2, "q/**", False))
    h.send(2, d_keyexpr(5, "q"))
    reqs = requests(h.send(0, request(77, "q/a", timeout_ms=3000, budget=4)))
    assert sorted(reqs) == [1, 2]
    assert reqs[1].request_id == 1 and reqs[2].request_id == 1
    assert reqs[1].wire_expr == we("q/a")
    assert reqs[2].wire_expr == WireExpr(5, "/a", False)
    assert (reqs[1].timeout_ms, reqs[1].budget, reqs[1].qos) == (3000, 4, QOS_REQ)
    reqs = requests(h.send(0, request(78, "q/a")))
    assert reqs[1].request_id == 2 and reqs[2].request_id == 2


def test_replies_are_mapped_back_and_one_final_ends_the_query() -> None:
    h = queryables((1, "q/**", False), (2, "q/**", False))
    h.send(1, d_keyexpr(3, "q"))
    reqs = requests(h.send(0, request(9, "q/x")))
    rid1, rid2 = reqs[1].request_id, reqs[2].request_id
    out = h.send(1, reply(rid1, WireExpr(3, "/x", True), b"one"))
    assert [(s.face, s.message) for s in out] == [(0, reply(9, "q/x", b"one"))]
    assert h.send(1, final(rid1)) == []
    out = h.send(
        2, Response(rid2, we("q/x"), Err(b"bad"), 0x05, responder=EntityGlobalId(ZenohId(0xD2), 3)), final(rid2)
    )
    assert [s.face for s in out] == [0, 0]
    err, fin = (s.message for s in out)
    assert isinstance(err, Response) and err.request_id == 9 and err.qos == QOS_REQ
    assert fin == ResponseFinal(9, QOS_REQ)
    # Late or unknown answers are dropped.
    assert h.send(1, reply(rid1, "q/x"), final(rid1)) == []
    assert h.core.stats.dropped == {"unknown request id": 2}


def test_reply_forwarded_raw_when_unchanged() -> None:
    h = queryables((1, "q", False))
    (req,) = requests(h.send(0, request(1, "q"))).values()
    msg = reply(req.request_id, "q")
    (send,) = h.send(1, msg, raw=True)
    assert send.raw is not None and send.message is msg


def test_timeout_sends_err_with_the_responder_then_the_final() -> None:
    h = queryables((1, "q", False), (2, "q", False))
    t0 = h.now
    reqs = requests(h.send(0, request(5, "q", timeout_ms=2000)))
    assert h.core.next_deadline() == t0 + 2.0 + REQUEST_TIMEOUT_GRACE
    h.send(2, final(reqs[2].request_id))
    assert h.tick(1.9) == []
    out = h.tick(0.2)
    assert [(s.face, s.message) for s in out] == [
        (0, Response(5, WireExpr(0, "", True), Err(b"Timeout"), QOS_REQ, responder=EntityGlobalId(ZenohId(0xD1), 0))),
        (0, ResponseFinal(5, QOS_REQ)),
    ]
    assert h.core.next_deadline() is None
    assert h.send(1, final(reqs[1].request_id)) == []


def test_default_query_timeout() -> None:
    h = queryables((1, "q", False), config=RoutingConfig(query_timeout=3.0))
    t0 = h.now
    h.send(0, request(5, "q"))
    assert h.core.next_deadline() == t0 + 3.0
    assert len(h.tick(3.0)) == 2


def test_destination_going_away_finishes_its_part() -> None:
    h = queryables((1, "q", False), (2, "q", False))
    reqs = requests(h.send(0, request(5, "q")))
    assert h.close(1) == []
    out = h.send(2, reply(reqs[2].request_id, "q"), final(reqs[2].request_id))
    assert [type(s.message).__name__ for s in out] == ["Response", "ResponseFinal"]
    assert h.core.next_deadline() is None


def test_last_destination_going_away_sends_the_final() -> None:
    h = queryables((1, "q", False))
    h.send(0, request(5, "q"))
    assert [(s.face, s.message) for s in h.close(1)] == [(0, ResponseFinal(5, QOS_REQ))]


def test_querier_going_away_forgets_its_queries() -> None:
    h = queryables((1, "q", False))
    reqs = requests(h.send(0, request(5, "q")))
    h.close(0)
    assert h.send(1, reply(reqs[1].request_id, "q"), final(reqs[1].request_id)) == []
    assert h.core.next_deadline() is None


def test_a_faces_own_queryables_never_get_its_queries() -> None:
    h = queryables((0, "q", True), (1, "q", False))
    assert sorted(requests(h.send(0, request(1, "q", target=ALL)))) == [1]
    h.send(1, u_qabl(2))
    assert [type(s.message).__name__ for s in h.send(0, request(2, "q"))] == ["ResponseFinal"]


def test_pending_queries_are_capped_per_face() -> None:
    h = queryables((1, "q", False), config=RoutingConfig(max_pending_queries_per_face=2))
    assert len(requests(h.send(0, request(1, "q"), request(2, "q")))) == 1
    # Refused with an error naming the limit, then the final: not a silent "no queryable".
    out = h.send(0, request(3, "q"))
    assert [(s.face, type(s.message).__name__) for s in out] == [(0, "Response"), (0, "ResponseFinal")]
    err = out[0].message
    assert isinstance(err, Response) and isinstance(err.body, Err) and err.request_id == 3
    assert err.body.payload == b"max_pending_queries_per_face (2) reached"
    assert h.core.stats.limits == {"max_pending_queries_per_face": 1}
    h.send(1, final(1))
    assert sorted(requests(h.send(0, request(4, "q")))) == [1]


def test_pending_queries_are_capped_in_total() -> None:
    h = queryables((1, "q", False), config=RoutingConfig(max_pending_queries_total=2))
    h.open(2)
    assert len(requests(h.send(0, request(1, "q")))) == 1
    assert len(requests(h.send(2, request(1, "q")))) == 1
    out = h.send(2, request(2, "q"))
    assert isinstance(out[0].message, Response) and out[0].message.body == Err(b"max_pending_queries_total (2) reached")
    h.close(0)  # its query ends: room again
    assert len(requests(h.send(2, request(3, "q")))) == 1


def test_budget_is_forwarded_and_optionally_enforced() -> None:
    for enforce, delivered in ((False, 3), (True, 2)):
        h = queryables((1, "q", False), config=RoutingConfig(enforce_budget=enforce))
        (req,) = requests(h.send(0, request(1, "q", budget=2))).values()
        assert req.budget == 2
        out = h.send(1, *(reply(req.request_id, "q") for _ in range(3)))
        assert len(out) == delivered


def test_unroutable_requests_get_a_final_at_once() -> None:
    h = queryables((1, "**", False))
    for req in (request(1, WireExpr(9, "/x", True)), request(2, "a//b")):
        out = h.send(0, req)
        assert [(s.face, s.message) for s in out] == [(0, ResponseFinal(req.request_id, QOS_REQ))]
    assert h.core.stats.dropped == {"unknown key id": 1, "invalid key expression": 1}


def test_reply_with_a_bad_key_is_dropped() -> None:
    h = queryables((1, "q", False))
    (req,) = requests(h.send(0, request(1, "q"))).values()
    assert h.send(1, reply(req.request_id, WireExpr(4, "", True))) == []
    assert h.send(1, reply(req.request_id, "q//x")) == []
    assert len(h.send(1, final(req.request_id))) == 1


def test_wildcard_queries_and_observer() -> None:
    events: list[RoutingEvent] = []
    h = queryables((1, "q/a", False), (2, "q/b/**", False))
    h.core.observer = events.append
    assert sorted(requests(h.send(0, request(1, "q/**")))) == [1, 2]
    (ev,) = [e for e in events if isinstance(e, QueryRouted)]
    assert (ev.source, ev.key, ev.destinations) == (0, "q/**", frozenset({1, 2}))


def test_request_ids_wrap() -> None:
    h = queryables((1, "q", False))
    h.core._tables.faces[1].next_rid = 0xFFFF_FFFF
    (req,) = requests(h.send(0, request(1, "q"))).values()
    assert req.request_id == 0
    (req,) = requests(h.send(0, request(2, "q"))).values()
    assert req.request_id == 1


def test_answered_queries_do_not_pile_up_timers() -> None:
    h = queryables((1, "q", False))
    for n in range(5_000):
        (req,) = requests(h.send(0, request(n, "q", timeout_ms=10**12))).values()
        h.send(1, final(req.request_id))
    assert len(h.core._queries.timers) <= 2_048
    assert h.core.next_deadline() is None


def test_best_matching_chooses_per_region_clients_and_peers() -> None:
    """Real routers choose among clients and among peers separately (differential check
    against eclipse-zenoh 1.10.2: a complete client queryable and a complete peer
    queryable both get a BestMatching query)."""
    from pyzenoh.codec import WhatAmI

    h = Harness()
    h.open(0)
    h.open(1, ZenohId(0xD1))
    h.open(2, ZenohId(0xD2), WhatAmI.PEER)
    h.open(3, ZenohId(0xD3), WhatAmI.PEER)
    h.send(1, d_qabl(1, "q/**", True))
    h.send(2, d_qabl(1, "q/a", True))
    h.send(3, d_qabl(1, "q/*", False))
    assert sorted(requests(h.send(0, request(1, "q/a")))) == [1, 2]
    # No complete peer queryable for q/b: every peer gets it.
    assert sorted(requests(h.send(0, request(2, "q/b")))) == [1, 3]
