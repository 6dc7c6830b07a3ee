"""The asyncio TCP glue: pyzenoh opener <-> pyzenoh acceptor on real loopback sockets,
raw-socket misbehaviour, queue bounds, independence of links, and the real 1.10.2 router.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from pyzenoh.codec import (
    BatchReader,
    Close,
    Push,
    Put,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_batch,
    encode_network_message,
)
from pyzenoh.errors import CloseReason, UsageError
from pyzenoh.transport.dial import connect
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    Received,
    Role,
)
from pyzenoh.transport.listener import listen
from pyzenoh.transport.tcp import MAX_EVENTS_PER_TURN, TcpLink

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")
WAIT = 10.0
ZA = ZenohId.from_str("a1a2")
ZC = ZenohId.from_str("c1c2")


def run(coro: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(coro(), 40))  # type: ignore[arg-type]


def push(key: str, payload: bytes = b"x") -> Push:
    return Push(WireExpr(0, key), Put(payload))


class Events:
    """Collects link events; ``wait_for`` waits (bounded) for one matching a predicate."""

    def __init__(self) -> None:
        self.items: list[tuple[TcpLink, Event]] = []
        self.cond = asyncio.Condition()

    def __call__(self, link: TcpLink, ev: Event) -> None:
        self.items.append((link, ev))
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self.cond:
            self.cond.notify_all()

    async def wait_for(self, pred: Callable[[TcpLink, Event], bool]) -> tuple[TcpLink, Event]:
        async def find() -> tuple[TcpLink, Event]:
            async with self.cond:
                while True:
                    for item in self.items:
                        if pred(*item):
                            return item
                    await self.cond.wait()

        return await asyncio.wait_for(find(), WAIT)

    def received(self, link: TcpLink | None = None) -> list[Any]:
        return [e.message for lk, e in self.items if isinstance(e, Received) and (link is None or lk is link)]


def shrink_buffers(link: TcpLink) -> None:
    """Small fixed kernel buffers, so a peer that stops reading fills them quickly."""
    assert link.transport is not None
    sock = link.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)


def router_cfg(**kw: Any) -> LinkConfig:
    return LinkConfig(ZA, WhatAmI.ROUTER, **kw)


def client_cfg(**kw: Any) -> LinkConfig:
    return LinkConfig(ZC, WhatAmI.CLIENT, **kw)


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("tcp/127.0.0.1:7447", "127.0.0.1", 7447),
        ("tcp/[::1]:80", "::1", 80),
        ("tcp/localhost:1", "localhost", 1),
        ("tcp/10.0.0.1:7447#iface=lo", "10.0.0.1", 7447),
        ("tcp/[fe80::1]:9?prio=1", "fe80::1", 9),
    ],
)
def test_endpoint_parse(text: str, host: str, port: int) -> None:
    ep = Endpoint.parse(text)
    assert (ep.host, ep.port) == (host, port)
    assert Endpoint.parse(str(ep)) == ep


@pytest.mark.parametrize(
    "text", ["vsock/1.2.3.4:5", "tcp/1.2.3.4", "tcp/::1:80", "tcp/[::1]80", "tcp/:80", "tcp/h:x", "tcp/h:70000"]
)
def test_endpoint_parse_errors(text: str) -> None:
    with pytest.raises(UsageError):
        Endpoint.parse(text)


def _has_ipv6() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.parametrize(
    "host", ["127.0.0.1", pytest.param("[::1]", marks=pytest.mark.skipif(not _has_ipv6(), reason="no IPv6"))]
)
def test_pyzenoh_to_pyzenoh(host: str) -> None:
    async def main() -> None:
        server_ev = Events()
        client_ev = Events()
        lst = await listen(f"tcp/{host}:0", router_cfg(), server_ev)
        ep = lst.endpoints[0]
        client = await connect(ep, client_cfg(), client_ev)
        assert client.link is not None and client.link.peer is not None
        assert client.link.peer.zid == ZA and client.link.peer.whatami is WhatAmI.ROUTER
        server_link, est = await server_ev.wait_for(lambda lk, e: isinstance(e, Established))
        assert isinstance(est, Established) and est.zid == ZC and est.whatami is WhatAmI.CLIENT
        for i in range(100):
            client.send(push(f"k/{i}", bytes(i)))
        big = push("big", bytes(200_000))
        client.send(big)
        await server_ev.wait_for(lambda lk, e: isinstance(e, Received) and e.message == big)
        assert server_ev.received()[:100] == [push(f"k/{i}", bytes(i)) for i in range(100)]
        raw = encode_network_message(push("raw/fwd", b"bytes"))
        server_link.send(raw, priority=3)
        _, ev = await client_ev.wait_for(lambda lk, e: isinstance(e, Received))
        assert isinstance(ev, Received) and ev.raw == raw and ev.priority == 3
        await client.aclose()
        _, closed = await server_ev.wait_for(lambda lk, e: isinstance(e, LinkClosed))
        assert isinstance(closed, LinkClosed) and closed.by_peer and closed.reason == CloseReason.GENERIC
        await lst.close()

    run(main)


@pytest.mark.skipif(not _has_ipv6() or not socket.has_dualstack_ipv6(), reason="no dual-stack IPv6")
def test_a_listener_on_the_ipv6_wildcard_takes_ipv4_connections_too() -> None:
    # As zenohd's (pyzenoh router's default listen endpoint is tcp/[::]:7447).
    async def main() -> None:
        server_ev = Events()
        lst = await listen("tcp/[::]:0", router_cfg(), server_ev)
        port = lst.endpoints[0].port
        for host, local in (("127.0.0.1", "::ffff:127.0.0.1"), ("[::1]", "::1")):
            client = await connect(f"tcp/{host}:{port}", client_cfg(), Events())
            link, _ = await server_ev.wait_for(
                lambda lk, e, local=local: isinstance(e, Established) and (lk.local_address or ("",))[0] == local
            )
            assert link.remote_address is not None and link.remote_address[0] == local
            await client.aclose()
        await lst.close()

    run(main)


def test_a_large_read_is_handed_on_in_slices_in_order() -> None:
    # A read holding thousands of messages is dispatched MAX_EVENTS_PER_TURN at a time,
    # so one flooding link cannot hold the event loop; nothing is lost or reordered.
    async def main() -> None:
        backlog_seen: list[int] = []
        server_ev = Events()

        def on_event(link: TcpLink, ev: Event) -> None:
            backlog_seen.append(len(link._backlog))
            server_ev(link, ev)

        lst = await listen("tcp/127.0.0.1:0", router_cfg(), on_event)
        client = await connect(lst.endpoints[0], client_cfg(), Events())
        n = 3 * MAX_EVENTS_PER_TURN
        msgs = [push(f"s/{i}") for i in range(n)]
        for m in msgs:
            client.send(m)
        await server_ev.wait_for(lambda lk, e: isinstance(e, Received) and e.message == msgs[-1])
        assert server_ev.received() == msgs
        assert max(backlog_seen) > 0  # some events waited for a later turn
        await client.aclose()
        await lst.close()

    run(main)


def test_a_whole_batch_is_written_without_waiting_for_the_loop() -> None:
    # Sends in one loop turn are coalesced into one write at its end, except that a whole
    # batch queued is written at once: a read that routes megabytes (libuv reads a socket
    # up to 32 times in a row) must not pile them up in memory before the first write.
    async def main() -> None:
        server_ev = Events()
        lst = await listen("tcp/127.0.0.1:0", router_cfg(), server_ev)
        client = await connect(lst.endpoints[0], client_cfg(), Events())
        link = client.link
        assert link is not None and client.transport is not None
        small = encode_network_message(push("k", bytes(10)))
        assert client.send_run(small * 3, [len(small), 2 * len(small), 3 * len(small)])
        assert link.has_output  # a little: left for the end of the turn
        big = encode_network_message(push("k", bytes(1000)))
        n = link.batch_size // len(big) + 1
        assert client.send_run(big * n, range(len(big), n * len(big) + 1, len(big)))
        assert not link.has_output  # a whole batch and more: handed to the transport now
        for _ in range(n):  # one by one: written once a whole batch is queued
            client.send(big)
        assert not link.has_output
        client.send(small)
        assert link.has_output
        await server_ev.wait_for(lambda lk, e: len(server_ev.received()) == 3 + 2 * n + 1)
        assert server_ev.received() == [push("k", bytes(10))] * 3 + [push("k", bytes(1000))] * (2 * n) + [
            push("k", bytes(10))
        ]
        await client.aclose()
        await lst.close()

    run(main)


def test_drop_when_full_and_block_until_room() -> None:
    async def main() -> None:
        server_ev = Events()
        lst = await listen("tcp/127.0.0.1:0", router_cfg(), server_ev)
        client = await connect(lst.endpoints[0], client_cfg(), max_queue_bytes=64 * 1024)
        server_link, _ = await server_ev.wait_for(lambda lk, e: isinstance(e, Established))
        shrink_buffers(client)
        shrink_buffers(server_link)
        server_link.pause_reading()  # a slow peer: the kernel buffers fill, then our queue
        payload = bytes(1000)
        sent = streak = 0
        for _ in range(20_000):  # until the queue stays full: 50 drops in a row
            if client.send(push("fill", payload), drop_if_full=True):
                sent += 1
                streak = 0
            else:
                streak += 1
                if streak >= 50:
                    break
            await asyncio.sleep(0.001)  # the kernel takes a little more for a while
        assert streak >= 50 and client.dropped >= 50 and client.is_full
        waiter = asyncio.ensure_future(client.wait_writable())
        await asyncio.sleep(0.1)  # an absence: the waiter stays pending while the peer reads nothing
        assert not waiter.done()
        server_link.resume_reading()
        await asyncio.wait_for(waiter, WAIT)
        await server_ev.wait_for(lambda lk, e: len(server_ev.received(server_link)) >= sent)
        await client.aclose()
        await lst.close()

    run(main)


def test_slow_peer_does_not_hold_others() -> None:
    async def main() -> None:
        server_ev = Events()
        lst = await listen("tcp/127.0.0.1:0", router_cfg(), server_ev)
        slow = await connect(lst.endpoints[0], client_cfg(), max_queue_bytes=32 * 1024)
        fast = await connect(lst.endpoints[0], LinkConfig(ZenohId.from_str("c3"), WhatAmI.CLIENT))
        await server_ev.wait_for(lambda lk, e: isinstance(e, Established) and e.zid == ZC)
        fast_server, _ = await server_ev.wait_for(lambda lk, e: isinstance(e, Established) and e.zid != ZC)
        slow_server = next(lk for lk, e in server_ev.items if isinstance(e, Established) and e.zid == ZC)
        shrink_buffers(slow)
        shrink_buffers(slow_server)
        slow_server.pause_reading()
        streak = 0
        for _ in range(20_000):
            streak = 0 if slow.send(push("slow", bytes(1000)), drop_if_full=True) else streak + 1
            if streak >= 50:
                break
            await asyncio.sleep(0.001)
        assert slow.is_full
        fast.send(push("fast", b"through"))
        _, ev = await server_ev.wait_for(lambda lk, e: lk is fast_server and isinstance(e, Received))
        assert isinstance(ev, Received) and ev.message == push("fast", b"through")
        # the acceptor side can also forward to the fast link while the slow one is stuck
        fast_server.send(push("back", b"ok"))
        await slow.aclose(timeout=0.5)
        await fast.aclose()
        await lst.close()

    run(main)


async def _raw_client(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def _read_close(reader: asyncio.StreamReader) -> int | None:
    """Read until EOF; the reason of the CLOSE seen, if any."""
    data = await asyncio.wait_for(reader.read(), WAIT)
    reason = None
    for payload in BatchReader().feed(data):
        for msg in decode_batch(payload):
            if isinstance(msg, Close):
                reason = msg.reason
    return reason


def test_acceptor_closes_on_garbage() -> None:
    async def main() -> None:
        ev = Events()
        lst = await listen("tcp/127.0.0.1:0", router_cfg(), ev)
        reader, writer = await _raw_client(lst.endpoints[0].port)
        writer.write(b"\x05\x00\xff\xee\xdd\xcc\xbb")
        assert await _read_close(reader) == CloseReason.INVALID
        _, closed = await ev.wait_for(lambda lk, e: isinstance(e, LinkClosed))
        assert isinstance(closed, LinkClosed) and not closed.by_peer
        writer.close()
        await lst.close()

    run(main)


def test_handshake_timeout_and_lease_expiry() -> None:
    async def main() -> None:
        ev = Events()
        lst = await listen("tcp/127.0.0.1:0", router_cfg(handshake_timeout_s=0.3), ev)
        port = lst.endpoints[0].port
        # 1. connects and says nothing: dropped after the handshake timeout
        r1, w1 = await _raw_client(port)
        await _read_close(r1)
        _, c1 = await ev.wait_for(lambda lk, e: isinstance(e, LinkClosed))
        assert isinstance(c1, LinkClosed) and "handshake" in c1.detail
        # 2. completes the handshake announcing a 400 ms lease, then goes silent
        r2, w2 = await _raw_client(port)
        link = Link(client_cfg(lease_ms=400), Role.OPENER, 0.0)
        while not link.is_established:
            w2.write(link.data_to_send())
            data = await asyncio.wait_for(r2.read(65536), WAIT)
            assert data
            link.receive_data(data, 0.0)
        assert await _read_close(r2) == CloseReason.EXPIRED
        _, c2 = await ev.wait_for(lambda lk, e: isinstance(e, LinkClosed) and e.reason == CloseReason.EXPIRED)
        assert isinstance(c2, LinkClosed)
        w1.close()
        w2.close()
        await lst.close()

    run(main)


@pytest.mark.interop  # starts a real zenohd
def test_connect_refused_and_handshake_with_real_router() -> None:
    from tests.fixtures.procs import free_port, start_router

    async def refused() -> None:
        with pytest.raises(OSError):
            await connect(f"tcp/127.0.0.1:{free_port()}", client_cfg())

    run(refused)
    proc = start_router()
    try:

        async def main() -> None:
            ev = Events()
            client = await connect(proc.endpoint, client_cfg(lease_ms=1000), ev)
            assert client.link is not None and client.link.peer is not None
            peer = client.link.peer
            assert peer.whatami is WhatAmI.ROUTER and peer.qos and peer.patch == 1
            assert peer.batch_size <= 65535
            # lease 1 s: keepalives every 250 ms keep the router from expiring us
            await asyncio.sleep(2.5)
            assert not client.is_closed
            await client.aclose()

        run(main)
    finally:
        proc.stop()
