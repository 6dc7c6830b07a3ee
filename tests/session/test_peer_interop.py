"""pyzenoh sessions in peer mode, no router: a real eclipse-zenoh 1.10.2 peer connecting to a
listening pyzenoh peer, a pyzenoh peer connecting to a listening real peer, and two
pyzenoh peers. What they exchange was captured on a real peer pair first: each side sends
its declarations unasked, then D_FINAL(0), no interests; from then on data and queries
only go where a matching subscriber or queryable was declared; liveliness gets and
history are answered from the tokens the peers declared. Waits are bounded, never timed.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from pyzenoh.session import ChannelClosedError
from tests.fixtures.procs import opened
from tests.waits import expect, until, value_of

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]

WAIT = 10.0


def pz_peer(listen: list[str] | None = None, connect: list[str] | None = None) -> pz.Session:
    return pz.open(
        {
            "mode": "peer",
            "listen": {"endpoints": listen or []},
            "connect": {"endpoints": connect or []},
            "scouting": {"multicast": {"enabled": False}},
        }
    )


def z_peer(listen: list[str] | None = None, connect: list[str] | None = None) -> zenoh.Session:
    c = zenoh.Config()
    c.insert_json5("mode", '"peer"')
    c.insert_json5("listen/endpoints", json.dumps(listen or []))
    c.insert_json5("connect/endpoints", json.dumps(connect or []))
    c.insert_json5("scouting/multicast/enabled", "false")
    return zenoh.open(c)


def delivered(put: Callable[[], None], get: Callable[[float], Any]) -> Any:
    """Put again until the subscriber gets something (declarations have no acknowledgement)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        put()
        try:
            return get(0.3)
        except (TimeoutError, queue.Empty):
            continue
    raise AssertionError("nothing delivered")


def drain(ch: Any) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + WAIT
    while True:
        try:
            out.append(ch.recv(timeout=max(0.01, deadline - time.monotonic())))
        except ChannelClosedError:
            return out


@pytest.fixture
def endpoint() -> str:
    return f"tcp/127.0.0.1:{free_port()}"


def _exchange_with_real(p: pz.Session, z: zenoh.Session) -> None:
    """Pub/sub, queries and liveliness both ways between a pyzenoh and a real peer."""
    zq: queue.Queue[Any] = queue.Queue()
    # zenoh-python undeclares what is dropped: kept until the end
    zsub = z.declare_subscriber("pp/p/**", zq.put)
    zqabl = z.declare_queryable("pp/z/q", lambda q: q.reply("pp/z/q", "z-answer"))
    ztok = z.liveliness().declare_token("pp/tok/z")
    psub = p.declare_subscriber("pp/z/**")
    p.declare_queryable("pp/p/q", lambda q: q.reply("pp/p/q", "p-answer"))
    _ptok = p.liveliness().declare_token("pp/tok/p")  # undeclared when dropped, as zenoh's
    lsub = p.liveliness().declare_subscriber("pp/tok/**", history=True)
    # data both ways
    s = delivered(lambda: p.put("pp/p/a", "from-pyzenoh"), lambda t: zq.get(timeout=t))
    assert s.payload.to_string() == "from-pyzenoh"
    s = delivered(lambda: z.put("pp/z/a", "from-zenoh"), lambda t: psub.recv(timeout=t))
    assert s.payload.to_string() == "from-zenoh"
    # queries both ways
    [r] = drain(p.get("pp/z/q", timeout=WAIT))
    assert r.ok.payload.to_string() == "z-answer"
    [zr] = list(z.get("pp/p/q", timeout=WAIT))
    assert zr.ok.payload.to_string() == "p-answer"
    # liveliness both ways
    seen = {str(lsub.recv(timeout=WAIT).key_expr) for _ in range(2)}
    assert seen == {"pp/tok/p", "pp/tok/z"}
    assert {str(r.ok.key_expr) for r in drain(p.liveliness().get("pp/tok/**", timeout=WAIT))} == seen
    # a real session's get can come back empty right after its subscriber saw the tokens
    expect(lambda: {str(r.ok.key_expr) for r in z.liveliness().get("pp/tok/**", timeout=WAIT)} == seen, "z's get")
    ztok.undeclare()
    gone = lsub.recv(timeout=WAIT)
    assert (str(gone.key_expr), gone.kind) == ("pp/tok/z", pz.SampleKind.DELETE)
    # write-side filtering: nothing is sent where nobody subscribed, and a
    # publisher's matching status follows the real peer's subscriber
    pub = p.declare_publisher("pp/p/m")
    assert until(lambda: bool(pub.matching_status))
    zsub.undeclare()
    assert until(lambda: not pub.matching_status)
    zqabl.undeclare()


def test_real_peer_connects_to_pyzenoh_peer(endpoint: str) -> None:
    p = pz_peer(listen=[endpoint])
    with opened(p):
        z = z_peer(connect=[endpoint])
        with opened(z):
            assert until(lambda: len(p.info.peers_zid()) == 1)
            assert str(p.info.peers_zid()[0]) == str(z.zid())
            _exchange_with_real(p, z)
            lsub = p.liveliness().declare_subscriber("pp/gone/**")
            with opened(zs := z):
                tok = zs.liveliness().declare_token("pp/gone/z")
                assert lsub.recv(timeout=WAIT).kind is pz.SampleKind.PUT
            del tok
            # the real peer closed: its token goes, the listening peer stays
            assert lsub.recv(timeout=WAIT).kind is pz.SampleKind.DELETE
            assert until(lambda: p.info.peers_zid() == []) and not p.is_closed()


def test_pyzenoh_peer_connects_to_real_peer(endpoint: str) -> None:
    z = z_peer(listen=[endpoint])
    with opened(z):
        p = pz_peer(connect=[endpoint])
        with opened(p):
            assert [str(x) for x in p.info.peers_zid()] == [str(z.zid())]
            _exchange_with_real(p, z)


def test_two_pyzenoh_peers(endpoint: str) -> None:
    a = pz_peer(listen=[endpoint])
    b = pz_peer(connect=[endpoint])
    with opened(a, b):
        assert until(lambda: len(a.info.peers_zid()) == 1) and len(b.info.peers_zid()) == 1
        asub = a.declare_subscriber("tp/to-a/**")
        bsub = b.declare_subscriber("tp/to-b/**")
        a.declare_queryable("tp/qa", lambda q: q.reply("tp/qa", "a"))
        atok = a.liveliness().declare_token("tp/tok/a")
        blsub = b.liveliness().declare_subscriber("tp/tok/**", history=True)
        s = delivered(lambda: b.put("tp/to-a/x", "hi-a"), lambda t: asub.recv(timeout=t))
        assert s.payload.to_string() == "hi-a"
        s = delivered(lambda: a.put("tp/to-b/x", "hi-b"), lambda t: bsub.recv(timeout=t))
        assert s.payload.to_string() == "hi-b"
        assert [r.ok.payload.to_string() for r in drain(b.get("tp/qa", timeout=WAIT))] == ["a"]
        assert str(blsub.recv(timeout=WAIT).key_expr) == "tp/tok/a"
        assert [str(r.ok.key_expr) for r in drain(b.liveliness().get("tp/tok/**", timeout=WAIT))] == ["tp/tok/a"]
        atok.undeclare()
        assert blsub.recv(timeout=WAIT).kind is pz.SampleKind.DELETE
        # a third peer joins the listener: it meets a's declarations at once
        c = pz_peer(connect=[endpoint])
        with opened(c):
            assert [r.ok.payload.to_string() for r in drain(c.get("tp/qa", timeout=WAIT))] == ["a"]
            s = delivered(lambda: c.put("tp/to-a/c", "hi"), lambda t: asub.recv(timeout=t))
            assert s.payload.to_string() == "hi"


def test_peer_reconnects_to_restarted_peer(endpoint: str) -> None:
    """A peer's dialled link is retried when lost (here: the listening peer closes and a
    new one takes its endpoint); what it declared reaches the new one."""
    retry = {"period_init_ms": 100, "period_max_ms": 400}
    first = pz_peer(listen=[endpoint])
    p = pz.open({"mode": "peer", "listen": {"endpoints": []}, "connect": {"endpoints": [endpoint], "retry": retry}})
    with opened(p):
        p.declare_subscriber("rp/**", lambda s: None)
        _ptok = p.liveliness().declare_token("rp/tok")  # kept: undeclared when dropped
        assert until(lambda: len(p.info.peers_zid()) == 1)
        first.close()
        assert until(lambda: p.info.peers_zid() == [])
        second = pz_peer(listen=[endpoint])
        with opened(second):
            assert until(lambda: len(p.info.peers_zid()) == 1)
            # the declarations follow the handshake: asked until they are in
            assert until(lambda: [str(r.ok.key_expr) for r in drain(second.liveliness().get("rp/**"))] == ["rp/tok"])


def test_real_client_connects_to_pyzenoh_peer(endpoint: str) -> None:
    """A client's interests are answered by the peer it connects to (its current
    declarations, then D_FINAL); nothing is routed between the peer's links."""
    p = pz_peer(listen=[endpoint])
    c = zenoh.Config()
    c.insert_json5("mode", '"client"')
    c.insert_json5("connect/endpoints", json.dumps([endpoint]))
    c.insert_json5("scouting/multicast/enabled", "false")
    with opened(p):
        _ptok = p.liveliness().declare_token("pc/tok/p")  # kept: undeclared when dropped
        p.declare_queryable("pc/q", lambda q: q.reply("pc/q", "p-answer"))
        psub = p.declare_subscriber("pc/to-p/**")
        z = zenoh.open(c)
        with opened(z):
            assert [str(x) for x in z.info.peers_zid()] == [str(p.zid())]
            zq: queue.Queue[Any] = queue.Queue()
            zsub = z.declare_subscriber("pc/to-z/**", zq.put)
            s = delivered(lambda: p.put("pc/to-z/a", "x"), lambda t: zq.get(timeout=t))
            assert s.payload.to_string() == "x"
            s = delivered(lambda: z.put("pc/to-p/a", "y"), lambda t: psub.recv(timeout=t))
            assert s.payload.to_string() == "y"
            assert [r.ok.payload.to_string() for r in z.get("pc/q", timeout=WAIT)] == ["p-answer"]
            got = value_of(lambda: {str(r.ok.key_expr) for r in z.liveliness().get("pc/**", timeout=WAIT)}, "pc/tok/p")
            assert got == {"pc/tok/p"}
            pub = z.declare_publisher("pc/to-p/m")
            assert until(lambda: pub.matching_status.matching)
            zsub.undeclare()


def test_listen_endpoint_taken(endpoint: str) -> None:
    """listen/exit_on_failure (zenoh's default true): a configured endpoint that cannot be
    listened on stops open()."""
    with opened(pz_peer(listen=[endpoint])), pytest.raises(ConnectionError, match="could not listen"):
        pz_peer(listen=[endpoint])


def test_real_peer_meets_pyzenoh_peer_through_router_gossip() -> None:
    """A pyzenoh peer connected to a real router announces where it listens in its link
    state; the router gossips it and a real peer of that router connects to it: they
    then talk directly (a router routes nothing between peers), each sample once."""
    from tests.fixtures.procs import start_router

    router = start_router(extra={"scouting/gossip/enabled": True})
    try:
        p = pz.open(
            {
                "mode": "peer",
                "listen": {"endpoints": ["tcp/127.0.0.1:0"]},
                "connect": {"endpoints": [router.endpoint]},
                "scouting": {"multicast": {"enabled": False}},
            }
        )
        with opened(p):
            z = z_peer(connect=[router.endpoint])
            with opened(z):
                assert until(lambda: [str(x) for x in p.info.peers_zid()] == [str(z.zid())])
                psub = p.declare_subscriber("gs/to-p/**")
                zq: queue.Queue[Any] = queue.Queue()
                zsub = z.declare_subscriber("gs/to-z/**", zq.put)
                s = delivered(lambda: z.put("gs/to-p/a", "from-z"), lambda t: psub.recv(timeout=t))
                assert s.payload.to_string() == "from-z"
                s = delivered(lambda: p.put("gs/to-z/a", "from-p"), lambda t: zq.get(timeout=t))
                assert s.payload.to_string() == "from-p"
                while True:  # the retried puts' samples
                    try:
                        psub.recv(timeout=0.5)
                    except TimeoutError:
                        break
                z.put("gs/to-p/once", "once")
                assert psub.recv(timeout=WAIT).payload.to_string() == "once"
                with pytest.raises(TimeoutError):
                    psub.recv(timeout=0.5)  # not twice (directly and through the router)
                zsub.undeclare()
    finally:
        router.stop()


def test_pyzenoh_peers_meet_through_router_gossip() -> None:
    """Two pyzenoh peers of one real router dial each other from its gossip (the one with
    the greater zid dials, a second link between two nodes is refused), and a real peer
    joining meets both; each sample arrives once."""
    from tests.fixtures.procs import start_router

    router = start_router(extra={"scouting/gossip/enabled": True})
    cfg = {
        "mode": "peer",
        "listen": {"endpoints": ["tcp/127.0.0.1:0"]},
        "connect": {"endpoints": [router.endpoint]},
        "scouting": {"multicast": {"enabled": False}},
    }
    try:
        a, b = pz.open(cfg), pz.open(cfg)
        with opened(a, b):
            assert until(lambda: a.info.peers_zid() == [b.zid()] and b.info.peers_zid() == [a.zid()])
            bsub = b.declare_subscriber("gp/**")
            s = delivered(lambda: a.put("gp/x", "a-to-b"), lambda t: bsub.recv(timeout=t))
            assert s.payload.to_string() == "a-to-b"
            z = z_peer(connect=[router.endpoint])
            with opened(z):
                assert until(lambda: len(z.info.peers_zid()) == 2)
                assert until(lambda: len(a.info.peers_zid()) == 2 and len(b.info.peers_zid()) == 2)
                while True:  # the retried puts' samples
                    try:
                        bsub.recv(timeout=0.5)
                    except TimeoutError:
                        break
                a.put("gp/once", "once")
                assert bsub.recv(timeout=WAIT).payload.to_string() == "once"
                with pytest.raises(TimeoutError):
                    bsub.recv(timeout=0.5)
    finally:
        router.stop()


# --- the same rules on the sans-IO core (no sockets) ------------------------------------------


def _core_with_faces() -> tuple[Any, list[Any]]:
    from pyzenoh.codec import WhatAmI, ZenohId
    from pyzenoh.session.core import SessionCore
    from pyzenoh.transport.link import Established

    core = SessionCore(ZenohId.from_str("c1"), WhatAmI.PEER, None)  # type: ignore[arg-type]
    out: list[Any] = []
    for fid, (zid, what) in enumerate([("a1", WhatAmI.ROUTER), ("b1", WhatAmI.PEER)], start=1):
        core.on_established(Established(ZenohId.from_str(zid), what, 10_000, 65535, 0x0A, True, 1, 0, 0), fid)
    out += core.take_outbox()
    return core, out


def test_core_peer_face_rules() -> None:
    """Declarations go to every face, interests to routers only; a peer face gets data
    until its D_FINAL(0), then only what its subscribers match; a lost face ends the gets
    that waited on it and takes its tokens with it."""
    from pyzenoh.codec import (
        Declare,
        DeclareFinal,
        DeclareQueryable,
        DeclareSubscriber,
        DeclareToken,
        Interest,
        Push,
        Put,
        Request,
        ResponseFinal,
        WireExpr,
    )
    from pyzenoh.session.core import END

    core, _ = _core_with_faces()

    class Sink:
        pass

    core.declare_subscriber("k/**", Sink())
    pub = core.declare_publisher("k/pub")
    sent = core.take_outbox()
    assert [(type(m.body).__name__ if isinstance(m, Declare) else type(m).__name__, f) for m, *_, f in sent] == [
        ("DeclareSubscriber", None),
        ("DeclareKeyExpr", None),
        ("Interest", 1),
    ]
    assert isinstance(sent[2][0], Interest) and pub

    def data_faces() -> list[int | None]:
        core.put("x/y", Put(b"v"))
        return [f for m, *_, f in core.take_outbox() if isinstance(m, Push)]

    assert data_faces() == [1, 2]  # the router (no D_FINAL for a publisher there) and the peer
    core.select_face(2)
    core.on_message(Declare(DeclareFinal(), 0), 0.0)
    assert data_faces() == [1]  # the peer declared nothing on x/y
    core.on_message(Declare(DeclareSubscriber(7, WireExpr(0, "x/**", True))), 0.0)
    assert data_faces() == [1, 2]
    # a get waits for the router and the matching peers; the peer's link goes: it ends
    core.get("x/none", "", Sink(), 0.0)
    assert [f for m, *_, f in core.take_outbox() if isinstance(m, Request)] == [1]  # no queryable at the peer
    core.on_message(Declare(DeclareQueryable(8, WireExpr(0, "x/**", True))), 0.0)
    sink = Sink()
    rid = core.get("x/y", "", sink, 0.0)
    assert [f for m, *_, f in core.take_outbox() if isinstance(m, Request)] == [None]  # both faces
    core.select_face(1)
    core.on_message(ResponseFinal(rid), 0.0)
    assert (sink, END) not in core.take_deliveries()  # the peer's final is still due
    core.on_message(Declare(DeclareToken(3, WireExpr(0, "t/a", True))), 0.0)
    lsub = Sink()
    core.declare_liveliness_subscriber("t/**", False, lsub)
    core.select_face(2)
    core.on_message(Declare(DeclareToken(5, WireExpr(0, "t/b", True))), 0.0)
    core.take_outbox()
    core.face_lost(2)
    items = core.take_deliveries()
    assert (sink, END) in items  # the get: the router had answered, the peer is gone
    deletes = [
        str(i.key_expr)
        for s, i in items
        if s is lsub and getattr(i, "kind", None) is not None and i.kind.name == "DELETE"
    ]
    assert deletes == ["t/b"]
    # a face that opens again gets the whole state, then D_FINAL(0) (a peer)
    from pyzenoh.codec import WhatAmI, ZenohId
    from pyzenoh.transport.link import Established

    core.on_established(Established(ZenohId.from_str("b2"), WhatAmI.PEER, 10_000, 65535, 0x0A, True, 1, 0, 0), 3)
    replay = [(m, f) for m, *_, f in core.take_outbox()]
    assert all(f == 3 for _, f in replay)
    kinds = [type(m.body).__name__ if isinstance(m, Declare) else type(m).__name__ for m, _ in replay]
    assert kinds == ["NetworkOam", "DeclareKeyExpr", "DeclareSubscriber", "DeclareFinal"]
    assert replay[-1][0].interest_id == 0
