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
import itertools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    EntityGlobalId,
    Frame,
    Interest,
    NetworkMessage,
    Push,
    Put,
    Response,
    ResponseFinal,
    Timestamp,
    UndeclareQueryable,
    UndeclareToken,
    ZenohId,
    decode_batch,
)
from pyzenoh.localnet import free_port
from tests.waits import WAIT, expect, routed, until

zenoh = pytest.importorskip("zenoh")

pytestmark = pytest.mark.interop

REFERENCE_RETRIES = 2
#: The key prefix of the barriers' liveliness gets (see :func:`handled`): nothing declares
#: under it, and the router's answers to them are left out of the comparison.
PROBE = "wire-probe"
_probes = itertools.count()
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

    @staticmethod
    def _frames(data: bytes) -> list[NetworkMessage]:
        """The network messages of the complete batches in ``data`` (a batch still in
        flight at the end is left for a later look)."""
        out: list[NetworkMessage] = []
        pos = 0
        while pos + 2 <= len(data):
            n = int.from_bytes(data[pos : pos + 2], "little")
            if pos + 2 + n > len(data):
                break
            for tm in decode_batch(data[pos + 2 : pos + 2 + n]):
                if isinstance(tm, Frame):
                    out.extend(tm.messages)
            pos += 2 + n
        return out

    def messages(self) -> list[NetworkMessage]:
        """What the router sent the session under test, normalised, without the answers
        to the barriers' probe gets (the same filter for both routers)."""
        keys: dict[int, str] = {}  # the session's own key ids (its interests use them)
        probes: set[int] = set()
        for m in self._frames(bytes(self.sent)):
            if isinstance(m, Declare) and isinstance(m.body, DeclareKeyExpr):
                keys[m.body.expr_id] = keys.get(m.body.wire_expr.scope, "") + m.body.wire_expr.suffix
            elif (
                isinstance(m, Interest)
                and m.wire_expr is not None
                and PROBE in keys.get(m.wire_expr.scope, "") + m.wire_expr.suffix
            ):
                probes.add(m.interest_id)
        return [
            normalise(m)
            for m in self._frames(bytes(self.received))
            if not (isinstance(m, Declare) and isinstance(m.body, DeclareFinal) and m.interest_id in probes)
        ]

    def count(self, kind: type) -> int:
        """How many declarations with a ``kind`` body, or other messages of ``kind``, the
        router has sent the session under test so far."""
        return sum(
            1 for m in self.messages() if isinstance(m, kind) or (isinstance(m, Declare) and isinstance(m.body, kind))
        )

    def told(self, kind: type, n: int) -> None:
        """Wait (bounded) until the router has sent the session under test its ``n``-th
        ``kind``. Not asserted: a router that never sends it fails the comparison."""
        until(lambda: self.count(kind) >= n)

    def ended(self) -> bool:
        """Whether every connection through the proxy has ended both ways (so every byte
        the router sent has been recorded)."""
        return not self.tasks


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


def handled(s: Any) -> None:
    """Wait (bounded) until the router has handled every declaration and interest the
    zenoh session ``s`` sent it before: a liveliness get on a key nothing declares is an
    INTEREST on the same link and lane, answered by a DECLARE_FINAL alone once the router
    reaches it. (Not for puts: those ride the data lane, which the get may overtake.)

    On the session under test only where nothing else can tell: its probe adds a key id
    of its own (so later ids shift by one, alike for both routers) and an answer that
    :meth:`RecordingProxy.messages` leaves out."""
    list(s.liveliness().get(f"{PROBE}/{next(_probes)}", timeout=WAIT))


def gone(s: Any, token: str) -> None:
    """Wait (bounded) until a liveliness get of ``s`` finds no ``token``."""
    until(lambda: not list(s.liveliness().get(token, timeout=WAIT)))


def declarations(proxy: RecordingProxy, router_port: int, mode: str) -> None:
    """Publisher and querier interests, declaration sharing, liveliness with and without
    history, router key ids, data with the session's own ids, and departures."""
    keep: list[Any] = []  # dropping a zenoh entity undeclares it
    o, o2 = session(router_port), session(router_port)
    o_sub = o.declare_subscriber("big/**", lambda s: None)
    keep.append(o.liveliness().declare_token("a/t1"))
    keep.append(o.declare_queryable("q/**", lambda q: q.reply("q/x", b"r"), complete=True))
    handled(o)
    c = session(proxy.port, mode)
    samples: list[Any] = []
    keep.append(c.declare_subscriber("demo/**", samples.append))
    keep.append(c.declare_publisher("big/x"))
    proxy.told(DeclareFinal, 1)  # the router's answer to the publisher's interest
    keep.append(o.declare_subscriber("big/x", lambda s: None))
    handled(o)
    o2_sub = o2.declare_subscriber("big/**", lambda s: None)
    handled(o2)
    o_sub.undeclare()
    handled(o)
    o2_sub.undeclare()
    handled(o2)
    keep.append(c.liveliness().declare_subscriber("a/**", lambda s: None, history=False))
    proxy.told(DeclareFinal, 2)
    t2 = o.liveliness().declare_token("a/t2")
    handled(o)
    o.put("demo/a/b", b"x")
    until(lambda: len(samples) >= 1)  # not asserted: a router that drops it fails the comparison
    o2.put("demo/c", b"y")
    until(lambda: len(samples) >= 2)
    querier = c.declare_querier("q/x")
    proxy.told(DeclareFinal, 3)
    keep.append(o2.declare_queryable("q/**", lambda q: None, complete=False))
    handled(o2)
    list(querier.get())
    # (One matching token only: real routers answer several in no fixed order.)
    keep.append(c.liveliness().declare_subscriber("a/t1", lambda s: None, history=True))
    proxy.told(DeclareFinal, 4)
    t2.undeclare()
    handled(o)
    o.close()
    gone(o2, "a/t1")  # o's departure handled
    o2.close()
    proxy.told(UndeclareQueryable, 1)  # o2's queryable, the last of q/**, is gone
    c.close()
    expect(proxy.ended, "the session under test's connection ended")


def tokens_and_queries(proxy: RecordingProxy, router_port: int, mode: str) -> None:
    """Own tokens, liveliness get, a query timing out, the session's own queryable."""
    keep: list[Any] = []  # dropping a zenoh entity undeclares it
    o = session(router_port)
    held: list[Any] = []
    keep.append(o.declare_queryable("slow/**", held.append))
    keep.append(o.liveliness().declare_token("tk/o"))
    handled(o)
    c = session(proxy.port, mode)
    tokens: list[Any] = []
    # (Current answers hold one token each: real routers list several in no fixed order.)
    keep.append(c.liveliness().declare_subscriber("tk/**", tokens.append, history=True))
    proxy.told(DeclareFinal, 1)
    tc = c.liveliness().declare_token("tk/c")
    # (The session's own steps need no wait: its link keeps them in order.)
    list(c.liveliness().get("tk/c", timeout=2))  # ends with the router's final answer
    list(c.get("slow/x", timeout=1.0))
    # The session's own timeout and the router's race at 1 s: the router's Err "Timeout"
    # and final answer come either way.
    proxy.told(ResponseFinal, 1)
    keep.append(c.declare_queryable("cq/**", lambda q: q.reply("cq/1", b"from-c")))
    routed(o, "cq/1", query=True)
    list(o.get("cq/1", timeout=2))
    samples: list[Any] = []
    sub = c.declare_subscriber("cq/**", samples.append)
    routed(o, "cq/2")
    o.put("cq/2", b"d")
    until(lambda: samples)  # not asserted: a router that drops it fails the comparison
    sub.undeclare()
    tc.undeclare()
    gone(o, "tk/c")  # and so the undeclaration before it
    held.clear()
    o.close()
    until(lambda: any(str(t.key_expr) == "tk/o" and t.kind == zenoh.SampleKind.DELETE for t in tokens))
    c.close()
    expect(proxy.ended, "the session under test's connection ended")


def departures(proxy: RecordingProxy, router_port: int, mode: str) -> None:
    """Entities the session under test shares with others that go away: what the last
    remaining holder is told (or not) about tokens, queryables and subscribers."""
    keep: list[Any] = []  # dropping a zenoh entity undeclares it
    o, o2 = session(router_port), session(router_port)
    c = session(proxy.port, mode)
    keep.append(c.liveliness().declare_token("dp/t"))
    keep.append(o.liveliness().declare_token("dp/t"))
    handled(o)  # (c's token reaches the router before c's next steps: one link, in order)
    keep.append(c.liveliness().declare_subscriber("dp/**", lambda s: None, history=True))
    querier = c.declare_querier("dq/x")
    keep.append(c.declare_publisher("ds/x"))
    proxy.told(DeclareFinal, 3)  # the answers to the three interests
    keep.append(o.declare_queryable("dq/x", lambda q: None, complete=True))
    keep.append(o.declare_subscriber("ds/x", lambda s: None))
    handled(o)
    cq = c.declare_queryable("dq/x", lambda q: None)
    cs = c.declare_subscriber("ds/x", lambda s: None)
    handled(c)
    o.close()  # leaves c as the only holder of the token, the queryable, the subscriber
    proxy.told(UndeclareToken, 1)  # o's token: the last the router says of o's departure
    cq.undeclare()
    cs.undeclare()
    handled(c)  # (nothing else sees these: o2 holds nothing yet, and c is told nothing)
    q2 = o2.declare_queryable("dq/x", lambda q: None)
    handled(o2)
    keep.append(o2.liveliness().declare_token("dp/t"))
    handled(o2)
    keep.append(c.declare_queryable("dq/x", lambda q: None, complete=True))
    routed(o2, "dq/x", query=True, target=zenoh.QueryTarget.ALL_COMPLETE)  # o2's own is not complete
    q2.undeclare()
    handled(o2)
    # ... and c has taken in what the router told it of that (a peer learns q2 is gone, and
    # then answers its get from its own complete queryable alone, without the router).
    handled(c)
    list(querier.get())
    o2.close()
    proxy.told(UndeclareToken, 2)  # o2's token
    c.close()
    expect(proxy.ended, "the session under test's connection ended")


Scenario = Callable[[RecordingProxy, int, str], None]


def record(router_port: int, scenario: Scenario, mode: str) -> list[NetworkMessage]:
    proxy = RecordingProxy(router_port)
    try:
        scenario(proxy, router_port, mode)
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
