"""zenoh-python 1.10 behaviour of pyzenoh sessions that programs depend on, against a
real eclipse-zenoh 1.10.2 router, with real eclipse-zenoh sessions as the other side
where there is one: queriers and their matching status, cancellation tokens, locality,
session info, entity ids, source info and timestamp stacks on the wire."""

from __future__ import annotations

import itertools
import queue
import threading
import time
from typing import Any

import pytest
import zenoh

import pyzenoh
from tests.fixtures.procs import Proc, pyzenoh_config, zenoh_config
from tests.waits import passed_on, routed, until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]

WAIT = 10.0
_ids = itertools.count()


@pytest.fixture
def prefix() -> str:
    return f"compat/{next(_ids)}"


def replies(handler: Any) -> list[Any]:
    return list(handler)


# --- queriers ----------------------------------------------------------------------------------


def test_querier_gets_and_matching(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    querier = ps.declare_querier(f"{prefix}/q", timeout=5, target=pyzenoh.QueryTarget.ALL)
    statuses: queue.Queue[bool] = queue.Queue()
    listener = querier.declare_matching_listener(lambda st: statuses.put(st.matching))
    assert statuses.get(timeout=WAIT) is False and querier.matching_status.matching is False
    qabl = zs.declare_queryable(f"{prefix}/*", lambda q: q.reply(f"{prefix}/q", f"got {q.parameters}"))
    assert statuses.get(timeout=WAIT) is True and querier.matching_status.matching is True
    got = [r.ok.payload.to_string() for r in replies(querier.get(parameters="n=1"))]
    assert got == ["got n=1"]
    assert querier.accept_replies is pyzenoh.ReplyKeyExpr.MATCHING_QUERY and querier.key_expr == f"{prefix}/q"
    qabl.undeclare()
    assert statuses.get(timeout=WAIT) is False
    listener.undeclare()
    querier.undeclare()


def test_querier_complete_target_and_local_queryable(ps: pyzenoh.Session, prefix: str) -> None:
    querier = ps.declare_querier(f"{prefix}/a", target=pyzenoh.QueryTarget.ALL_COMPLETE, timeout=5)
    incomplete = ps.declare_queryable(f"{prefix}/a", lambda q: q.reply(f"{prefix}/a", "x"))
    assert until(lambda: True) and querier.matching_status.matching is False  # not complete
    complete = ps.declare_queryable(f"{prefix}/**", lambda q: q.reply(f"{prefix}/a", "y"), complete=True)
    assert until(lambda: querier.matching_status.matching)
    assert [r.ok.payload.to_string() for r in replies(querier.get())] == ["y"]
    complete.undeclare()
    incomplete.undeclare()
    assert until(lambda: not querier.matching_status)


def test_real_querier_gets_pyzenoh_replies(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    qabl = ps.declare_queryable(f"{prefix}/r", lambda q: q.reply(q.key_expr, "from pyzenoh"))
    querier = zs.declare_querier(f"{prefix}/r", timeout=5)
    assert until(lambda: querier.matching_status.matching)
    rs = list(querier.get())
    assert [r.ok.payload.to_string() for r in rs] == ["from pyzenoh"]
    assert str(rs[0].replier_id.zid) == str(ps.zid()) and rs[0].replier_id.eid == qabl.id.eid
    querier.undeclare()


# --- cancellation -------------------------------------------------------------------------------


def test_cancel_closes_the_channel(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    held: queue.Queue[Any] = queue.Queue()
    qabl = zs.declare_queryable(f"{prefix}/c", held.put)  # never answers until dropped
    routed(ps, f"{prefix}/c", query=True)
    token = pyzenoh.CancellationToken()
    handler = ps.get(f"{prefix}/c", cancellation_token=token, timeout=20)
    q = held.get(timeout=WAIT)
    assert handler.try_recv() is None
    token.cancel()
    assert token.is_cancelled
    with pytest.raises(pyzenoh.ZError):
        handler.try_recv()
    with pytest.raises(pyzenoh.ZError):  # a cancelled token refuses new operations
        ps.get(f"{prefix}/c", cancellation_token=token)
    q.drop()
    qabl.undeclare()


def test_cancel_waits_for_running_callback(ps: pyzenoh.Session, prefix: str) -> None:
    qabl = ps.declare_queryable(f"{prefix}/w", lambda q: q.reply(f"{prefix}/w", "ok"))
    token = pyzenoh.CancellationToken()
    started = threading.Event()
    done: list[int] = []
    dropped: list[bool] = []

    def slow(reply: Any) -> None:
        started.set()
        time.sleep(0.5)  # the point: a callback still running when the token is cancelled
        done.append(1)

    ps.get(f"{prefix}/w", pyzenoh.handlers.Callback(slow, lambda: dropped.append(True)), cancellation_token=token)
    assert started.wait(WAIT)
    token.cancel()
    assert done == [1] and dropped == [True]
    qabl.undeclare()


def test_cancel_querier_and_liveliness_gets(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    held: queue.Queue[Any] = queue.Queue()
    qabl = zs.declare_queryable(f"{prefix}/q", held.put)
    routed(ps, f"{prefix}/q", query=True)  # ps knows the queryable before it asks
    querier = ps.declare_querier(f"{prefix}/q", timeout=20)
    token = pyzenoh.CancellationToken()
    h1 = querier.get(cancellation_token=token)
    q = held.get(timeout=WAIT)
    tok = zs.liveliness().declare_token(f"{prefix}/alive")
    h2 = ps.liveliness().get(f"{prefix}/**", cancellation_token=token, timeout=20)
    token.cancel()
    for h in (h1, h2):
        with pytest.raises(pyzenoh.ZError):
            while True:
                h.recv(timeout=WAIT)
    with pytest.raises(pyzenoh.ZError):
        querier.get(cancellation_token=token)
    with pytest.raises(pyzenoh.ZError):
        ps.liveliness().get(f"{prefix}/**", cancellation_token=token)
    q.drop()
    tok.undeclare()
    qabl.undeclare()


# --- locality ----------------------------------------------------------------------------------


def test_allowed_origin(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    local_only = ps.declare_subscriber(f"{prefix}/**", allowed_origin=pyzenoh.Locality.SESSION_LOCAL)
    remote_only = ps.declare_subscriber(f"{prefix}/**", allowed_origin=pyzenoh.Locality.REMOTE)
    both = ps.declare_subscriber(f"{prefix}/**")
    routed(zs, f"{prefix}/other")
    ps.put(f"{prefix}/own", "own")
    zs.put(f"{prefix}/other", "other")
    got_both = sorted(both.recv(timeout=WAIT).payload.to_string() for _ in range(2))
    assert got_both == ["other", "own"]
    assert local_only.recv(timeout=WAIT).payload.to_string() == "own"
    assert remote_only.recv(timeout=WAIT).payload.to_string() == "other"
    time.sleep(0.3)  # an absence: nothing more comes
    assert local_only.try_recv() is None and remote_only.try_recv() is None


def test_allowed_destination(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    remote: queue.Queue[str] = queue.Queue()
    zsub = zs.declare_subscriber(f"{prefix}/**", lambda s: remote.put(s.payload.to_string()))
    mine = ps.declare_subscriber(f"{prefix}/**")
    passed_on(zs, ps)  # ps knows zsub (its own subscriber matches too: routed() cannot tell)
    ps.put(f"{prefix}/a", "local-only", allowed_destination=pyzenoh.Locality.SESSION_LOCAL)
    pub = ps.declare_publisher(f"{prefix}/b", allowed_destination=pyzenoh.Locality.REMOTE)
    pub.put("remote-only")
    assert mine.recv(timeout=WAIT).payload.to_string() == "local-only"
    assert remote.get(timeout=WAIT) == "remote-only"
    time.sleep(0.3)  # an absence: nothing more comes
    assert mine.try_recv() is None and remote.empty()
    zsub.undeclare()


def test_queryable_origin_and_get_destination(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    ps.declare_queryable(
        f"{prefix}/x", lambda q: q.reply(f"{prefix}/x", "local"), allowed_origin=pyzenoh.Locality.SESSION_LOCAL
    )
    zqabl = zs.declare_queryable(f"{prefix}/x", lambda q: q.reply(f"{prefix}/x", "remote"))
    routed(ps, f"{prefix}/x", query=True, allowed_destination=pyzenoh.Locality.REMOTE)

    def get(dest: pyzenoh.Locality) -> list[str]:
        return sorted(
            r.ok.payload.to_string()
            for r in ps.get(
                f"{prefix}/x",
                timeout=5,
                target=pyzenoh.QueryTarget.ALL,
                consolidation=pyzenoh.ConsolidationMode.NONE,
                allowed_destination=dest,
            )
        )

    assert get(pyzenoh.Locality.SESSION_LOCAL) == ["local"]
    assert get(pyzenoh.Locality.REMOTE) == ["remote"]
    assert get(pyzenoh.Locality.ANY) == ["local", "remote"]
    assert [r.ok.payload.to_string() for r in zs.get(f"{prefix}/x", timeout=5)] == ["remote"]
    zqabl.undeclare()


# --- session info, ids, undeclare --------------------------------------------------------------


def test_session_info_transports_links_and_events(zenohd: Proc) -> None:
    s = pyzenoh.open(pyzenoh_config(zenohd.endpoint))
    info = s.info
    (tr,) = info.transports()
    assert tr.whatami is pyzenoh.WhatAmI.ROUTER and str(tr.zid) == str(info.routers_zid()[0]) and not tr.is_multicast
    (ln,) = info.links()
    assert ln.dst == zenohd.endpoint and ln.src.startswith("tcp/127.0.0.1:") and ln.is_streamed
    tev = info.declare_transport_events_listener(history=True)
    lev = info.declare_link_events_listener(history=True)
    later = info.declare_transport_events_listener()
    first = tev.recv(timeout=WAIT)
    assert first.kind is pyzenoh.SampleKind.PUT and first.transport == tr
    assert lev.recv(timeout=WAIT).link == ln
    assert later.try_recv() is None
    s.close()
    assert tev.recv(timeout=WAIT).kind is pyzenoh.SampleKind.DELETE
    assert lev.recv(timeout=WAIT).kind is pyzenoh.SampleKind.DELETE
    assert later.recv(timeout=WAIT).kind is pyzenoh.SampleKind.DELETE
    with pytest.raises(pyzenoh.ZError):
        tev.recv(timeout=WAIT)
    assert info.transports() == [] and info.links() == []


def test_info_prints_as_zenoh_pythons(zenohd: Proc) -> None:
    """zenoh-python's z_info.py prints these reprs: the same text, ids, ports and the MTU
    (computed from each socket's MSS by zenoh's rule) aside."""
    import re

    def shape(text: str) -> str:
        text = re.sub(r"[0-9a-f]{16,32}", "ZID", text)
        text = re.sub(r"127\.0\.0\.1:\d+", "ADDR", text)
        return re.sub(r"mtu: \d+", "mtu: N", text)

    real = zenoh.open(zenoh_config(zenohd.endpoint))
    mine = pyzenoh.open(pyzenoh_config(zenohd.endpoint))
    try:
        for a, b in ((real.info, mine.info),):
            assert shape(repr(a.routers_zid())) == shape(repr(b.routers_zid()))
            assert shape(repr(a.transports())).replace("is_shm: true", "is_shm: false") == shape(repr(b.transports()))
            assert shape(repr(a.links())) == shape(repr(b.links()))
    finally:
        real.close()
        mine.close()


def test_a_replys_own_qos_is_deprecated_and_ignored_as_in_zenoh_python(ps: pyzenoh.Session, prefix: str) -> None:
    warned: list[str] = []

    def answer(q: pyzenoh.Query) -> None:
        import warnings

        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            q.reply(
                q.key_expr, "x", priority=pyzenoh.Priority.DATA_LOW, congestion_control=pyzenoh.CongestionControl.DROP
            )
        warned.extend(str(w.message) for w in got if w.category is DeprecationWarning)

    qabl = ps.declare_queryable(f"{prefix}/dq", answer)
    assert [r.ok.payload.to_string() for r in ps.get(f"{prefix}/dq", timeout=WAIT)] == ["x"]
    assert warned == [
        "congestion_control in Query.reply is deprecated, it will be ignored",
        "priority in Query.reply is deprecated, it will be ignored",
    ]
    qabl.undeclare()


def test_ids_and_undeclare(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    assert ps.id.zid == ps.zid() and ps.id.eid == 0
    sub = ps.declare_subscriber(f"{prefix}/s")
    pub = ps.declare_publisher(f"{prefix}/s")
    assert sub.id.zid == ps.zid() and sub.id != pub.id
    ke = ps.declare_keyexpr(f"{prefix}/k")
    got: queue.Queue[str] = queue.Queue()
    zsub = zs.declare_subscriber(f"{prefix}/k", lambda s: got.put(s.payload.to_string()))
    routed(ps, f"{prefix}/k")
    ps.put(ke, "declared")
    assert got.get(timeout=WAIT) == "declared"
    ps.undeclare(ke)
    ps.put(ke, "after")  # sent with the full key now
    assert got.get(timeout=WAIT) == "after"
    with pytest.raises(pyzenoh.ZError):
        ps.undeclare(ke)
    ps.undeclare(sub)  # entities too
    zsub.undeclare()


# --- on the wire: source info and timestamp stacks ----------------------------------------------


def test_source_info_reaches_zenoh(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    got: queue.Queue[Any] = queue.Queue()
    zsub = zs.declare_subscriber(f"{prefix}/si", got.put)
    routed(ps, f"{prefix}/si")
    src = pyzenoh.SourceInfo(pyzenoh.EntityGlobalId(ps.zid(), 42), 7)
    ps.put(f"{prefix}/si", "x", source_info=src)
    sample = got.get(timeout=WAIT)
    assert sample.source_info is not None
    assert str(sample.source_info.source_id.zid) == str(ps.zid())
    assert sample.source_info.source_id.eid == 42 and sample.source_info.source_sn == 7
    zsub.undeclare()


def test_timestamp_stacks_with_zenoh(ps: pyzenoh.Session, zs: zenoh.Session, prefix: str) -> None:
    instr = pyzenoh.TimestampInstrumentationBuilder().set_send(True).set_receive(True).build()
    got: queue.Queue[Any] = queue.Queue()
    zsub = zs.declare_subscriber(f"{prefix}/ts", got.put)
    zqabl = zs.declare_queryable(f"{prefix}/tq", lambda q: q.reply(f"{prefix}/tq", "r"))
    routed(ps, f"{prefix}/ts")
    routed(ps, f"{prefix}/tq", query=True)
    ps.put(f"{prefix}/ts", "x", timestamp_instrumentation=instr)
    stack = got.get(timeout=WAIT).timestamp_stack
    assert stack is not None
    points = [str(r.point).rsplit(".", 1)[1] for r in stack.records]
    assert points == ["SEND", "RECEIVE"]
    assert str(stack.records[0].timestamp().get_id()) == str(ps.zid())
    (reply,) = list(ps.get(f"{prefix}/tq", timestamp_instrumentation=instr, timeout=5))
    rstack = reply.ok.timestamp_stack
    assert rstack is not None and [r.point.name for r in rstack.records] == ["SEND", "RECEIVE", "SEND", "RECEIVE"]
    assert all(isinstance(r.timestamp(), pyzenoh.Timestamp) for r in rstack.records)
    (plain,) = list(ps.get(f"{prefix}/tq", timeout=5))
    assert plain.ok.timestamp_stack is None
    zsub.undeclare()
    zqabl.undeclare()


def test_timestamp_callback_and_query_stack(zenohd: Proc, zs: zenoh.Session, prefix: str) -> None:
    contexts: list[Any] = []

    def stamp(ctx: pyzenoh.TimestampContext) -> bytes:
        contexts.append(ctx)
        return b"\xde\xad"

    s = pyzenoh.open(pyzenoh_config(zenohd.endpoint), timestamp_callback=stamp)
    try:
        seen: queue.Queue[Any] = queue.Queue()

        def answer(q: pyzenoh.Query) -> None:
            seen.put(q.timestamp_stack)
            q.reply(f"{prefix}/cb", "r")

        s.declare_queryable(f"{prefix}/cb", answer)
        routed(zs, f"{prefix}/cb", query=True)
        instr = zenoh.TimestampInstrumentationBuilder().set_send(True).set_receive(True).build()
        (reply,) = list(zs.get(f"{prefix}/cb", timestamp_instrumentation=instr, timeout=5))
        qstack = seen.get(timeout=WAIT)
        assert [r.point.name for r in qstack.records] == ["SEND", "RECEIVE"]
        assert qstack.records[1].is_custom and qstack.records[1].timestamp() == b"\xde\xad"
        rec = reply.ok.timestamp_stack.records
        assert len(rec) == 4 and rec[2].is_custom and rec[2].timestamp() == b"\xde\xad"
        assert [c.whatami for c in contexts] == [pyzenoh.WhatAmI.CLIENT] * 2
    finally:
        s.close()
