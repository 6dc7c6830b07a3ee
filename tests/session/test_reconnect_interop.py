"""A pyzenoh client whose real eclipse-zenoh 1.10.2 router is killed and restarted on the
same endpoint, next to a real zenoh client in the same situation; and open() with
zenoh's ``connect`` settings. What is asserted was measured on a real 1.10.2 client in
the same scenario first: a get in flight ends at once without replies, every token
(its own too, echoed by the router) is DELETEd then PUT again, publisher and querier
matching listeners see False then True, transport events DELETE then PUT; entities
declared while the router is away are declared when it is back; gets and liveliness
gets made while it is away end at once, empty. Waits are bounded, never timed.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh.localnet import free_port
from pyzenoh.session import ChannelClosedError
from tests.fixtures.procs import (
    Proc,
    opened,
    pyzenoh_config,
    start_router,
    zenoh_config,
)
from tests.waits import expect, until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]

WAIT = 10.0
#: fast retries, so a restarted router is found again soon (zenoh's keys)
RETRY = {"period_init_ms": 100, "period_max_ms": 400, "period_increase_factor": 2}


def fast(endpoint: str, **connect: Any) -> dict[str, Any]:
    """A client config with fast retries (and more ``connect`` settings)."""
    return pyzenoh_config(endpoint, connect={"endpoints": [endpoint], "retry": RETRY, **connect})


def zenoh_fast(endpoint: str) -> zenoh.Config:
    c = zenoh_config(endpoint)
    c.insert_json5("connect/retry", json.dumps(RETRY))
    return c


def items(ch: Any, n: int) -> list[Any]:
    """The next ``n`` items of a pyzenoh channel (bounded wait)."""
    return [ch.recv(timeout=WAIT) for _ in range(n)]


def drain(ch: Any) -> list[Any]:
    out: list[Any] = []
    deadline = time.monotonic() + WAIT
    while True:
        try:
            out.append(ch.recv(timeout=max(0.01, deadline - time.monotonic())))
        except ChannelClosedError:
            return out


@pytest.fixture
def port() -> int:
    return free_port()


def test_client_reconnects_and_redeclares(zenohd_factory: Callable[..., Proc], port: int) -> None:
    original = zenohd_factory(port)
    ep = original.endpoint
    a = pz.open(fast(ep))
    b = zenoh.open(zenoh_fast(ep))
    with opened(a, b):
        b_got: queue.Queue[str] = queue.Queue()
        held: list[Any] = []
        # zenoh-python undeclares what is dropped: keep them
        keep = [
            b.declare_subscriber("rc/pub", lambda s: b_got.put(s.payload.to_string())),
            b.liveliness().declare_token("rc/tok/b"),
            b.declare_queryable("rc/qb", held.append),
        ]  # never answers
        sub = a.declare_subscriber("rc/data/**")
        a.declare_queryable("rc/qa", lambda q: q.reply("rc/qa", "answer"))
        a.declare_keyexpr("rc/data/x")
        _atok = a.liveliness().declare_token("rc/tok/a")  # kept: undeclared when dropped
        lsub = a.liveliness().declare_subscriber("rc/tok/**", history=True)
        pub = a.declare_publisher("rc/pub")
        qr = a.declare_querier("rc/qb")
        events = a.info.declare_transport_events_listener(history=True)
        first = events.recv(timeout=WAIT)
        assert first.kind is pz.SampleKind.PUT
        assert sorted(str(s.key_expr) for s in items(lsub, 2)) == ["rc/tok/a", "rc/tok/b"]
        assert until(lambda: bool(pub.matching_status) and bool(qr.matching_status))
        pub_m = pub.declare_matching_listener()
        qr_m = qr.declare_matching_listener()
        assert pub_m.recv(timeout=WAIT).matching is True  # the current status first
        assert qr_m.recv(timeout=WAIT).matching is True
        in_flight = a.get("rc/qb", timeout=30)
        assert until(lambda: len(held) == 1)

        original.kill()
        assert drain(in_flight) == []  # ends at once, no reply, no Timeout error
        gone = items(lsub, 2)
        assert {(str(s.key_expr), s.kind) for s in gone} == {
            ("rc/tok/a", pz.SampleKind.DELETE),
            ("rc/tok/b", pz.SampleKind.DELETE),
        }
        assert pub_m.recv(timeout=WAIT).matching is False
        assert qr_m.recv(timeout=WAIT).matching is False
        lost = events.recv(timeout=WAIT)
        assert lost.kind is pz.SampleKind.DELETE and lost.transport.zid == first.transport.zid
        assert not a.is_closed() and a.info.routers_zid() == []
        assert drain(a.get("rc/qb", timeout=5)) == []  # no router: at once, empty
        assert drain(a.liveliness().get("rc/**", timeout=5)) == []
        late = a.declare_subscriber("rc/late")  # declared while the router is away
        a.put("rc/data/local", "mine")  # delivered locally, as zenoh's
        assert sub.recv(timeout=WAIT).payload.to_string() == "mine"

        zenohd_factory(port)  # the restart, on the same port
        back = events.recv(timeout=WAIT)
        assert back.kind is pz.SampleKind.PUT and back.transport.zid != first.transport.zid
        assert sorted(str(s.key_expr) for s in items(lsub, 2)) == ["rc/tok/a", "rc/tok/b"]
        assert pub_m.recv(timeout=WAIT).matching is True
        assert qr_m.recv(timeout=WAIT).matching is True
        assert until(lambda: len(b.info.routers_zid()) == 1)
        # everything works again, both ways
        assert until(lambda: _put_seen(b, "rc/data/x", sub))
        assert until(lambda: _put_seen(b, "rc/late", late))
        pub.put("again")
        assert b_got.get(timeout=WAIT) == "again"
        [reply] = list(b.get("rc/qa", timeout=WAIT))
        assert reply.ok.payload.to_string() == "answer"
        # (zenoh lists its own token twice; its get can miss a token it has just seen)
        expect(
            lambda: (
                {str(r.ok.key_expr) for r in b.liveliness().get("rc/tok/**", timeout=WAIT)} == {"rc/tok/a", "rc/tok/b"}
            ),
            "b's liveliness get finds both tokens",
        )
        held.clear()
        del keep


def _put_seen(b: zenoh.Session, key: str, sub: Any) -> bool:
    b.put(key, "from-b")
    try:
        return bool(sub.recv(timeout=0.3).payload.to_string() == "from-b")
    except TimeoutError:
        return False


def test_open_without_router(port: int) -> None:
    ep = f"tcp/127.0.0.1:{port}"
    # a client: one try (connect/timeout_ms 0), failing at once whatever exit_on_failure says
    with pytest.raises(ConnectionError):
        pz.open(pyzenoh_config(ep))
    with pytest.raises(ConnectionError):
        pz.open(fast(ep, exit_on_failure=False))
    # with a timeout it retries until the timeout, then fails
    with pytest.raises(ConnectionError, match="timeout_ms"):
        pz.open(fast(ep, timeout_ms=600))
    # a peer: exit_on_failure with one try fails; by default it opens without the link
    with pytest.raises(ConnectionError):
        pz.open(
            {
                "mode": "peer",
                "listen": {"endpoints": []},
                "connect": {"endpoints": [ep], "timeout_ms": 0, "exit_on_failure": True},
            }
        )
    with pz.open({"mode": "peer", "listen": {"endpoints": []}, "connect": {"endpoints": [ep]}}) as peer:
        assert peer.info.routers_zid() == [] and not peer.is_closed()


def test_open_waits_for_router(port: int) -> None:
    """connect/timeout_ms -1: open() retries until the router is there; a peer's
    background connector finds it too."""
    ep = f"tcp/127.0.0.1:{port}"
    procs: list[Proc] = []
    peer = pz.open({"mode": "peer", "listen": {"endpoints": []}, "connect": {"endpoints": [ep], "retry": RETRY}})
    starter = threading.Timer(0.5, lambda: procs.append(start_router(port)))
    starter.start()
    try:
        with opened(peer), pz.open(fast(ep, timeout_ms=-1)) as s:
            assert len(s.info.routers_zid()) == 1
            assert until(lambda: len(peer.info.routers_zid()) == 1)
            sub = s.declare_subscriber("w/**")
            assert until(lambda: _pz_put_seen(peer, "w/a", sub))
    finally:
        starter.join()
        for p in procs:
            p.stop()


def _pz_put_seen(s: pz.Session, key: str, sub: Any) -> bool:
    s.put(key, "x")
    try:
        return bool(sub.recv(timeout=0.3).payload.to_string() == "x")
    except TimeoutError:
        return False


def test_aio_client_reconnects(zenohd_factory: Callable[..., Proc], port: int) -> None:
    original = zenohd_factory(port)
    import asyncio

    from pyzenoh.session import aio

    ep = original.endpoint

    async def main() -> None:
        s = await aio.open(fast(ep))
        sub = await s.declare_subscriber("ai/**")
        z = zenoh.open(zenoh_fast(ep))
        try:
            original.kill()
            gone_by = time.monotonic() + WAIT
            while s.info.routers_zid():  # until the session has seen its router go
                assert time.monotonic() < gone_by, "the router's loss went unnoticed"
                await asyncio.sleep(0.02)
            await asyncio.to_thread(zenohd_factory, port)
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:
                z.put("ai/x", "back")
                try:
                    got = await asyncio.wait_for(sub.recv(), 0.3)
                    assert got.payload.to_string() == "back"
                    break
                except TimeoutError:
                    continue
            else:
                raise AssertionError("the asyncio session did not receive after the restart")
        finally:
            z.close()
            await s.close()

    asyncio.run(main())
