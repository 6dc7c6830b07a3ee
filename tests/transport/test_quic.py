"""quic/ links (pyzenoh only): a link both ways with a verified certificate, a client that
does not trust the certificate refused with nothing else touched, a listener without a
certificate refused at start, garbage datagrams on the listener's port ignored, a peer
that keeps sending to a paused link cut off at a bound."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.security.tls import TlsConfig, tls_config
from pyzenoh.transport.dial import connect
from pyzenoh.transport.link import LinkConfig
from pyzenoh.transport.listener import listen
from tests.security.certs import Pki

pytestmark = pytest.mark.timeout(30)


def configs(pki: Pki) -> tuple[TlsConfig, TlsConfig, TlsConfig]:
    server = pki.server()
    listen_tls = tls_config({"transport": {"link": {"tls": pki.listen_config(server)}}})
    connect_tls = tls_config({"transport": {"link": {"tls": pki.connect_config()}}})
    rogue = pki.unrelated()
    rogue_tls = tls_config({"transport": {"link": {"tls": rogue.connect_config()}}})
    return listen_tls, connect_tls, rogue_tls


def test_link_both_ways_bad_certificate_and_garbage(tmp_path: Path) -> None:
    pki = Pki(tmp_path)
    listen_tls, connect_tls, rogue_tls = configs(pki)

    async def run() -> None:
        config = LinkConfig(ZenohId.from_str("a1"), WhatAmI.ROUTER, handshake_timeout_s=5.0)
        listener = await listen("quic/127.0.0.1:0", config, tls=listen_tls)
        (ep,) = listener.endpoints
        assert ep.protocol == "quic" and ep.port > 0
        # garbage datagrams: dropped by the QUIC layer, the listener serves on
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for n in range(20):
                s.sendto(bytes([n]) * (n * 50 + 1), ("127.0.0.1", ep.port))
        client = LinkConfig(ZenohId.from_str("c1"), WhatAmI.CLIENT, handshake_timeout_s=5.0)
        with pytest.raises(ConnectionError):
            await connect(str(ep), client, tls=rogue_tls)
        link = await connect(str(ep), client, tls=connect_tls)
        assert link.protocol == "quic"
        assert len(listener.links) == 1
        await link.aclose()
        await listener.close()

    asyncio.run(run())


def test_listener_needs_a_certificate() -> None:
    async def run() -> None:
        config = LinkConfig(ZenohId.from_str("a1"), WhatAmI.ROUTER, handshake_timeout_s=5.0)
        with pytest.raises(UsageError, match="quic/ listen endpoint needs"):
            await listen("quic/127.0.0.1:0", config)

    asyncio.run(run())


def test_a_paused_link_bounds_what_it_keeps(tmp_path: Path) -> None:
    """aioquic grants credit as data arrives, so a paused link's backlog is bounded by
    MAX_PAUSED_BYTES: past it that link closes, saying why; the listener serves on."""
    from pyzenoh.codec import Push, Put, WireExpr
    from pyzenoh.transport.link import LinkClosed

    listen_tls, connect_tls, _ = configs(Pki(tmp_path))
    closed: list[LinkClosed] = []

    async def run() -> None:
        config = LinkConfig(ZenohId.from_str("a1"), WhatAmI.ROUTER, handshake_timeout_s=5.0)
        accepted = asyncio.Event()
        listener = await listen(
            "quic/127.0.0.1:0",
            config,
            tls=listen_tls,
            on_event=lambda _, e: closed.append(e) if isinstance(e, LinkClosed) else None,
            on_accept=lambda _: accepted.set(),
        )
        (ep,) = listener.endpoints
        client = LinkConfig(ZenohId.from_str("c1"), WhatAmI.CLIENT, handshake_timeout_s=5.0)
        link = await connect(str(ep), client, tls=connect_tls)
        await asyncio.wait_for(accepted.wait(), 10)
        (served,) = listener.links
        served.transport._conn.max_paused_bytes = 64 * 1024  # type: ignore[union-attr]
        served.pause_reading()
        push = Push(WireExpr(0, "quic/flood"), Put(b"x" * 1000))
        for _ in range(1000):  # 1 MB, far past the bound; bounded in count and time
            if link.is_closed:
                break
            link.send(push)
            await link.wait_writable()
            await asyncio.sleep(0)
        await asyncio.wait_for(served.closed, 10)
        assert "while the link's reading was paused" in served.closed.result().detail
        await asyncio.wait_for(link.closed, 10)  # the peer's link ends too
        again = await connect(str(ep), client, tls=connect_tls)  # the listener serves on
        await again.aclose()
        await listener.close()

    asyncio.run(run())


def test_the_opener_sees_a_handshake_that_completed_before_it_waited() -> None:
    """Under load the handshake can complete before the opener's wait starts; aioquic's
    ``wait_connected`` then waits forever (CI run 50: a router's dial stalled for its whole
    handshake timeout). The opener's future exists before ``connect()``, so the outcome is
    kept whichever comes first; a connection that ends first fails it, saying why."""
    from aioquic.quic import events
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.quic.connection import QuicConnection

    from pyzenoh.transport.quic import ZenohQuicProtocol

    async def run() -> None:
        loop = asyncio.get_running_loop()
        done = ZenohQuicProtocol(QuicConnection(configuration=QuicConfiguration(is_client=True)))
        done.handshake = loop.create_future()
        done.quic_event_received(events.HandshakeCompleted("zenoh", False, False))
        await asyncio.wait_for(done.handshake, 1)
        ended = ZenohQuicProtocol(QuicConnection(configuration=QuicConfiguration(is_client=True)))
        ended.handshake = loop.create_future()
        ended.quic_event_received(events.ConnectionTerminated(0x128, None, "bad certificate"))
        with pytest.raises(ConnectionError, match="bad certificate"):
            await ended.handshake

    asyncio.run(run())
