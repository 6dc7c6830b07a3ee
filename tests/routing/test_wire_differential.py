"""Wire-level differential: what a router sends to one real 1.10.2 session, byte for byte.

The same scenario runs twice: once against a real zenoh router (a zenoh session in router
mode), then against ``pyzenoh router`` (not at the same time: concurrent runs in one
process made the real router's answers vary). The session under test connects through a
recording TCP proxy; the other sessions connect directly. The network messages each router
sent to that session must be equal, once the values that differ from run to run are
normalised (data timestamps, and the ids of the sessions, which are random).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from pyzenoh.codec import (
    EntityGlobalId,
    Frame,
    NetworkMessage,
    Push,
    Put,
    Response,
    Timestamp,
    ZenohId,
    decode_batch,
)
from pyzenoh.localnet import free_port

zenoh = pytest.importorskip("zenoh")

pytestmark = pytest.mark.interop

SETTLE = 0.2  # time for a change to reach every session (no assertion depends on it)
REFERENCE_RETRIES = 2
# Scenarios make every current answer (the declarations answering an interest) hold at
# most one entity: real routers list several in hash order, which varies between runs.
ANY_ZID = ZenohId(1)


class RecordingProxy:
    """Forwards TCP connections to ``target_port``; records what comes back."""

    def __init__(self, target_port: int) -> None:
        self.port = free_port()
        self.target = target_port
        self.received = bytearray()
        #: What the client side sent on (recorded too: compression tests measure both ways).
        self.sent = bytearray()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: asyncio.Server | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(5)

    async def _start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.add(task)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bytearray) -> None:
            try:
                while data := await src.read(65_536):
                    record += data
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer, self.sent), pipe(up_reader, writer, self.received))
        except asyncio.CancelledError:
            pass  # the proxy is closing
        finally:
            self.tasks.discard(task)

    async def _stop(self) -> None:
        if self.server is not None:
            self.server.close()
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()

    def messages(self) -> list[NetworkMessage]:
        data = bytes(self.received)
        out: list[NetworkMessage] = []
        pos = 0
        while pos + 2 <= len(data):
            n = int.from_bytes(data[pos : pos + 2], "little")
            for tm in decode_batch(data[pos + 2 : pos + 2 + n]):
                if isinstance(tm, Frame):
                    out.extend(normalise(m) for m in tm.messages)
            pos += 2 + n
        return out


def normalise(msg: NetworkMessage) -> NetworkMessage:
    if isinstance(msg, Push) and isinstance(msg.body, Put) and msg.body.timestamp is not None:
        return replace(msg, body=replace(msg.body, timestamp=Timestamp(0, ANY_ZID)))
    if isinstance(msg, Response) and msg.responder is not None:
        return replace(msg, responder=EntityGlobalId(ANY_ZID, msg.responder.eid))
    return msg


def session(port: int, mode: str = "client") -> Any:
    conf = zenoh.Config()
    conf.insert_json5("mode", f'"{mode}"')
    conf.insert_json5("connect/endpoints", f'["tcp/127.0.0.1:{port}"]')
    conf.insert_json5("scouting/multicast/enabled", "false")
    if mode == "peer":
        conf.insert_json5("listen/endpoints", '["tcp/127.0.0.1:0"]')
        conf.insert_json5("scouting/gossip/enabled", "false")
    return zenoh.open(conf)


def declarations(router_port: int, proxy_port: int, mode: str) -> None:
    """Publisher and querier interests, declaration sharing, liveliness with and without
    history, router key ids, data with the session's own ids, and departures."""
    keep: list[Any] = []  # dropping a zenoh entity undeclares it
    o, o2 = session(router_port), session(router_port)
    o_sub = o.declare_subscriber("big/**", lambda s: None)
    keep.append(o.liveliness().declare_token("a/t1"))
    keep.append(o.declare_queryable("q/**", lambda q: q.reply("q/x", b"r"), complete=True))
    time.sleep(SETTLE)
    c = session(proxy_port, mode)
    keep.append(c.declare_subscriber("demo/**", lambda s: None))
    keep.append(c.declare_publisher("big/x"))
    time.sleep(SETTLE)
    keep.append(o.declare_subscriber("big/x", lambda s: None))
    time.sleep(SETTLE)
    o2_sub = o2.declare_subscriber("big/**", lambda s: None)
    time.sleep(SETTLE)
    o_sub.undeclare()
    time.sleep(SETTLE)
    o2_sub.undeclare()
    time.sleep(SETTLE)
    keep.append(c.liveliness().declare_subscriber("a/**", lambda s: None, history=False))
    time.sleep(SETTLE)
    t2 = o.liveliness().declare_token("a/t2")
    time.sleep(SETTLE)
    o.put("demo/a/b", b"x")
    time.sleep(SETTLE)
    o2.put("demo/c", b"y")
    time.sleep(SETTLE)
    querier = c.declare_querier("q/x")
    time.sleep(SETTLE)
    keep.append(o2.declare_queryable("q/**", lambda q: None, complete=False))
    time.sleep(SETTLE)
    list(querier.get())
    # (One matching token only: real routers answer several in no fixed order.)
    keep.append(c.liveliness().declare_subscriber("a/t1", lambda s: None, history=True))
    time.sleep(SETTLE)
    t2.undeclare()
    time.sleep(SETTLE)
    o.close()
    time.sleep(SETTLE)
    o2.close()
    time.sleep(SETTLE)
    c.close()
    time.sleep(SETTLE)


def tokens_and_queries(router_port: int, proxy_port: int, mode: str) -> None:
    """Own tokens, liveliness get, a query timing out, the session's own queryable."""
    keep: list[Any] = []  # dropping a zenoh entity undeclares it
    o = session(router_port)
    held: list[Any] = []
    keep.append(o.declare_queryable("slow/**", held.append))
    keep.append(o.liveliness().declare_token("tk/o"))
    time.sleep(SETTLE)
    c = session(proxy_port, mode)
    # (Current answers hold one token each: real routers list several in no fixed order.)
    keep.append(c.liveliness().declare_subscriber("tk/**", lambda s: None, history=True))
    time.sleep(SETTLE)
    tc = c.liveliness().declare_token("tk/c")
    time.sleep(SETTLE)
    list(c.liveliness().get("tk/c", timeout=2))
    time.sleep(SETTLE)
    list(c.get("slow/x", timeout=1.0))
    time.sleep(SETTLE)
    keep.append(c.declare_queryable("cq/**", lambda q: q.reply("cq/1", b"from-c")))
    time.sleep(SETTLE)
    list(o.get("cq/1", timeout=2))
    sub = c.declare_subscriber("cq/**", lambda s: None)
    time.sleep(SETTLE)
    o.put("cq/2", b"d")
    time.sleep(SETTLE)
    sub.undeclare()
    tc.undeclare()
    time.sleep(SETTLE)
    held.clear()
    o.close()
    time.sleep(SETTLE)
    c.close()
    time.sleep(SETTLE)


def departures(router_port: int, proxy_port: int, mode: str) -> None:
    """Entities the session under test shares with others that go away: what the last
    remaining holder is told (or not) about tokens, queryables and subscribers."""
    keep: list[Any] = []  # dropping a zenoh entity undeclares it
    o, o2 = session(router_port), session(router_port)
    c = session(proxy_port, mode)
    keep.append(c.liveliness().declare_token("dp/t"))
    keep.append(o.liveliness().declare_token("dp/t"))
    time.sleep(SETTLE)
    keep.append(c.liveliness().declare_subscriber("dp/**", lambda s: None, history=True))
    querier = c.declare_querier("dq/x")
    keep.append(c.declare_publisher("ds/x"))
    time.sleep(SETTLE)
    keep.append(o.declare_queryable("dq/x", lambda q: None, complete=True))
    keep.append(o.declare_subscriber("ds/x", lambda s: None))
    time.sleep(SETTLE)
    cq = c.declare_queryable("dq/x", lambda q: None)
    cs = c.declare_subscriber("ds/x", lambda s: None)
    time.sleep(SETTLE)
    o.close()  # leaves c as the only holder of the token, the queryable, the subscriber
    time.sleep(SETTLE)
    cq.undeclare()
    cs.undeclare()
    time.sleep(SETTLE)
    q2 = o2.declare_queryable("dq/x", lambda q: None)
    time.sleep(SETTLE)
    keep.append(o2.liveliness().declare_token("dp/t"))
    time.sleep(SETTLE)
    keep.append(c.declare_queryable("dq/x", lambda q: None, complete=True))
    time.sleep(SETTLE)
    q2.undeclare()
    time.sleep(SETTLE)
    list(querier.get())
    o2.close()
    time.sleep(SETTLE)
    c.close()
    time.sleep(SETTLE)


Scenario = Callable[[int, int, str], None]


def record(router_port: int, scenario: Scenario, mode: str) -> list[NetworkMessage]:
    proxy = RecordingProxy(router_port)
    try:
        scenario(router_port, proxy.port, mode)
        return proxy.messages()
    finally:
        proxy.close()


CASES = [
    (declarations, "client"),
    (declarations, "peer"),
    (tokens_and_queries, "client"),
    (tokens_and_queries, "peer"),
    (departures, "client"),
    (departures, "peer"),
]


@pytest.mark.slow
@pytest.mark.parametrize("scenario,mode", CASES, ids=[f"{s.__name__}-{m}" for s, m in CASES])
def test_router_sends_what_a_real_router_sends(
    scenario: Scenario, mode: str, zenoh_router_port: int, pyzenoh_router_port: int
) -> None:
    expected = record(zenoh_router_port, scenario, mode)
    got = record(pyzenoh_router_port, scenario, mode)
    assert len(expected) > 5
    # The real router is the reference, and once in a few full runs it differs from its
    # usual self (twice seen: an extra ERR "Timeout" on the 2 s liveliness get, peer
    # mode). Before calling pyzenoh wrong, give the reference REFERENCE_RETRIES more runs.
    for _ in range(REFERENCE_RETRIES):
        if got == expected:
            break
        expected = record(zenoh_router_port, scenario, mode)
    assert got == expected
