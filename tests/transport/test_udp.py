"""udp endpoints and links (pyzenoh only): one batch per datagram, the batch size a
datagram holds, the listener's per-source links, and bad datagrams (empty, oversized,
truncated, a flood from one source) ending only their source's link."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from pyzenoh.codec import Push, Put, WhatAmI, WireExpr, ZenohId
from pyzenoh.codec.batch import decode_batch
from pyzenoh.codec.transport import InitAck
from pyzenoh.transport.dial import connect
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.link import Established, Link, LinkConfig, Received, Role
from pyzenoh.transport.listener import TcpListener, listen
from pyzenoh.transport.tcp import TcpLink
from pyzenoh.transport.udp import (
    CLOSED_SOURCE_QUIET_S,
    MAX_HANDSHAKE_DATAGRAMS,
    UDP_MAX_MTU,
    UdpListener,
    udp_config,
)

pytestmark = pytest.mark.timeout(30)

ROUTER = LinkConfig(ZenohId.from_str("a1"), WhatAmI.ROUTER, handshake_timeout_s=5.0)
CLIENT = LinkConfig(ZenohId.from_str("c1"), WhatAmI.CLIENT, handshake_timeout_s=5.0)


def push(key: str, payload: bytes) -> Push:
    return Push(WireExpr(0, key), Put(payload))


def test_parse_and_config() -> None:
    ep = Endpoint.parse("udp/127.0.0.1:7447")
    assert (ep.protocol, ep.host, ep.port, str(ep)) == ("udp", "127.0.0.1", 7447, "udp/127.0.0.1:7447")
    assert str(Endpoint.parse("udp/[::1]:7")) == "udp/[::1]:7"
    cfg = udp_config(CLIENT)
    assert (cfg.batch_size, cfg.streamed) == (UDP_MAX_MTU, False) and UDP_MAX_MTU == 65487
    assert udp_config(LinkConfig(CLIENT.zid, WhatAmI.CLIENT, batch_size=1000)).batch_size == 1000


@asynccontextmanager
async def listening(accepted: list[TcpLink] | None = None) -> AsyncIterator[tuple[TcpListener, str]]:
    got: list[tuple[TcpLink, object]] = []
    listener = await listen(
        "udp/127.0.0.1:0",
        ROUTER,
        lambda link, ev: got.append((link, ev)),
        on_accept=None if accepted is None else accepted.append,
    )
    try:
        yield listener, str(listener.endpoints[0])
    finally:
        await listener.close()


async def until_async(cond: object, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(cond) and cond():
            return True
        await asyncio.sleep(0.01)
    return bool(callable(cond) and cond())


def test_link_both_ways_fragmented_and_forgotten_on_close() -> None:
    async def run() -> None:
        accepted: list[TcpLink] = []
        async with listening(accepted) as (listener, where):
            assert where.startswith("udp/127.0.0.1:") and not where.endswith(":0")
            received: list[object] = []
            link = await connect(where, CLIENT, lambda _, ev: received.append(ev))
            assert link.protocol == "udp" and link.remote_address is not None
            ev = await link.established
            assert ev.batch_size == UDP_MAX_MTU  # both sides cap at a datagram
            assert accepted and accepted[0].protocol == "udp"
            server = accepted[0]
            assert server.remote_address == link.local_address
            big = bytes(range(256)) * 1200  # 300 kB: five datagrams
            server.send(push("k/big", big))
            assert await until_async(lambda: any(isinstance(e, Received) for e in received))
            msg = next(e for e in received if isinstance(e, Received)).message
            assert isinstance(msg, Push) and isinstance(msg.body, Put) and bytes(msg.body.payload) == big
            assert isinstance(listener, UdpListener)
            assert len(listener.udp.sources) == 1
            await link.aclose()
            assert await until_async(lambda: not listener.udp.sources and not listener.links)

    asyncio.run(run())


class RawPeer:
    """A datagram socket speaking through a sans-IO opener Link: what we send is exact."""

    def __init__(self, where: str) -> None:
        ep = Endpoint.parse(where)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.sock.connect((ep.host, ep.port))
        self.link = Link(udp_config(CLIENT), Role.OPENER, 0.0)
        self.datagrams: list[bytes] = []

    def flush(self) -> None:
        data = self.link.data_to_send()
        pos = 0
        while pos < len(data):
            n = data[pos] | data[pos + 1] << 8
            self.sock.send(data[pos + 2 : pos + 2 + n])
            pos += 2 + n

    async def recv(self) -> bytes:
        data = await asyncio.wait_for(asyncio.get_running_loop().sock_recv(self.sock, 70_000), 5.0)
        self.datagrams.append(data)
        return data

    async def open(self) -> Established:
        self.flush()
        while not self.link.is_established:
            data = await self.recv()
            events = self.link.receive_data(len(data).to_bytes(2, "little") + data, 0.0)
            self.flush()
        assert isinstance(events[-1], Established)
        return events[-1]

    def close(self) -> None:
        self.sock.close()


def test_one_batch_per_datagram_without_prefix() -> None:
    async def run() -> None:
        async with listening() as (_, where):
            peer = RawPeer(where)
            try:
                established = await peer.open()
                init_ack = decode_batch(peer.datagrams[0])
                assert isinstance(init_ack[0], InitAck) and init_ack[0].batch_size == UDP_MAX_MTU
                assert established.batch_size == UDP_MAX_MTU
            finally:
                peer.close()

    asyncio.run(run())


@pytest.mark.parametrize("kind", ["empty", "oversized", "truncated"])
def test_bad_datagram_ends_only_its_link(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> None:
        accepted: list[TcpLink] = []
        async with listening(accepted) as (listener, where):
            good = await connect(where, CLIENT)
            peer = RawPeer(where)
            try:
                await peer.open()
                assert len(accepted) == 2
                bad_link = accepted[1]
                if kind == "empty":
                    bad = b""
                elif kind == "oversized":  # over the negotiated batch size (a datagram may hold it)
                    bad = b"\x04" * (UDP_MAX_MTU + 10)
                else:  # a real FRAME, its message cut short
                    peer.link.send(push("k/t", b"y" * 100))
                    batch = peer.link.data_to_send()[2:]
                    bad = batch[: len(batch) - 50]
                peer.sock.send(bad)
                closed = await asyncio.wait_for(bad_link.closed, 5.0)
                assert not closed.by_peer
                assert not accepted[0].is_closed
                assert good.send(push("k/x", b"still here"))  # the other link carries on
                assert isinstance(listener, UdpListener) and listener.udp.counters.get("faults") == 1
            finally:
                peer.close()
                await good.aclose()

    with caplog.at_level(logging.WARNING, logger="pyzenoh.transport.udp"):
        asyncio.run(run())
    warnings = [r.getMessage() for r in caplog.records if r.name == "pyzenoh.transport.udp"]
    assert len(warnings) == 1 and warnings[0].startswith("udp link with udp/127.0.0.1:"), warnings


def test_flood_from_one_source_is_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """5000 junk datagrams from one source in < 1 quiet period: one link, ended with the
    reason logged; the rest dropped (counted); another source is served throughout."""

    async def run() -> None:
        accepted: list[TcpLink] = []
        async with listening(accepted) as (listener, where):
            assert isinstance(listener, UdpListener)
            good = await connect(where, CLIENT)
            flood = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            flood.setblocking(False)
            ep = Endpoint.parse(where)
            flood.connect((ep.host, ep.port))
            started = time.monotonic()
            sent = 0
            try:
                for i in range(5000):
                    try:
                        flood.send(b"\x01junk" + i.to_bytes(4, "little"))
                        sent += 1
                    except BlockingIOError:
                        await asyncio.sleep(0)
                    if i % 100 == 0:
                        await asyncio.sleep(0)  # the listener reads in between
                await asyncio.sleep(0.1)
                elapsed = time.monotonic() - started
                server = listener.udp
                assert sent > 1000
                periods = int(elapsed / CLOSED_SOURCE_QUIET_S) + 1
                assert 1 <= server.counters.get("faults", 0) <= periods + 1
                assert len(accepted) - 1 <= periods + 1  # at most one link per quiet period
                assert server.counters.get("quiet", 0) > 0
                assert not good.is_closed and accepted[0] is not None and not accepted[0].is_closed
            finally:
                flood.close()
                await good.aclose()

    with caplog.at_level(logging.DEBUG, logger="pyzenoh"):
        asyncio.run(run())


def test_handshake_datagrams_bounded() -> None:
    """A source that keeps sending InitSyns' worth of datagrams without finishing the
    handshake is ended past MAX_HANDSHAKE_DATAGRAMS (here: stray KEEPALIVEs after InitSyn
    are no handshake step)."""

    async def run() -> None:
        accepted: list[TcpLink] = []
        async with listening(accepted) as (_, where):
            peer = RawPeer(where)
            try:
                peer.flush()  # InitSyn
                await peer.recv()  # InitAck
                for _ in range(MAX_HANDSHAKE_DATAGRAMS + 5):
                    peer.sock.send(b"\x04")  # KEEPALIVE: ignored while opening, or fatal
                closed = await asyncio.wait_for(accepted[0].closed, 5.0)
                assert not closed.by_peer
            finally:
                peer.close()

    asyncio.run(run())


def test_max_sources() -> None:
    async def run() -> None:
        from pyzenoh.transport.udp import listen_udp

        accepted: list[TcpLink] = []

        def factory() -> TcpLink:
            link = TcpLink(ROUTER, Role.ACCEPTOR)
            accepted.append(link)
            return link

        listener = await listen_udp(Endpoint.parse("udp/127.0.0.1:0"), factory, set(), max_sources=1)
        where = str(listener.endpoints[0])
        try:
            first = await connect(where, CLIENT)
            with pytest.raises((ConnectionError, TimeoutError)):
                await connect(where, LinkConfig(ZenohId.from_str("c2"), WhatAmI.CLIENT, handshake_timeout_s=0.5))
            assert isinstance(listener, UdpListener) and listener.udp.counters.get("over_sources", 0) >= 1
            assert len(accepted) == 1
            await first.aclose()
        finally:
            await listener.close()

    asyncio.run(run())


def test_connect_to_nobody_fails_fast_and_ipv6_dual_stack() -> None:
    async def run() -> None:
        from pyzenoh.localnet import free_port

        t0 = time.monotonic()
        with pytest.raises(ConnectionError):  # ICMP port unreachable ends the attempt
            await connect(f"udp/127.0.0.1:{free_port()}", CLIENT)
        assert time.monotonic() - t0 < 3.0
        if not socket.has_dualstack_ipv6():
            return
        listener = await listen("udp/[::]:0", ROUTER)
        try:
            port = listener.endpoints[0].port
            assert str(listener.endpoints[0]) == f"udp/[::]:{port}"
            v4 = await connect(f"udp/127.0.0.1:{port}", CLIENT)
            v6 = await connect(f"udp/[::1]:{port}", LinkConfig(ZenohId.from_str("c2"), WhatAmI.CLIENT))
            assert v4.established.done() and v6.established.done() and v4.remote_address != v6.remote_address
            await v4.aclose()
            await v6.aclose()
        finally:
            await listener.close()

    asyncio.run(run())
