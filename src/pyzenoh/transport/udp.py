"""``udp/HOST:PORT`` links: one batch per datagram, best effort, as zenoh's UDP unicast link.

A datagram carries exactly one batch, without the 2-byte length prefix of streamed links;
the batch size announced in InitSyn is at most :data:`UDP_MAX_MTU` (zenoh's rule: 65535
less the UDP and IPv6 headers; zenoh 1.10.2 negotiates 65487 on 127.0.0.1 and fills its
datagrams to it). Nothing is retransmitted: a lost datagram is a lost batch (a fragmented
message it belonged to is dropped by the SN gap).

The link itself is :class:`TcpLink` (the sans-IO :class:`Link` and its asyncio glue); this
module gives it a datagram *carrier*: :class:`DatagramStream`, an ``asyncio.Transport``
look-alike that hands each received datagram on as prefix + batch and turns what the link
writes (whole prefixed batches) back into one datagram per batch.

The dialling side has its own connected socket. A listener has one socket and tells peers
apart by source address (zenoh's per-source demultiplexing): a datagram from a new source
starts a new link (acceptor role, admitted like an accepted TCP connection). Limits, each
counted on the listener (:class:`UdpServer`): at most ``max_sources`` sources at once; a
source whose link ended is not heard for :data:`CLOSED_SOURCE_QUIET_S` (a flood of bad
datagrams opens at most one link per period); a link not reading (back-pressure) holds
at most :data:`MAX_PENDING_DATAGRAMS` and ends past it; more than
:data:`MAX_HANDSHAKE_DATAGRAMS` datagrams before the handshake completes end it too. A
datagram that is oversized (over the negotiated batch size), truncated (a message cut
short) or empty ends only its source's link, with the reason in the log.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from typing_extensions import override

from pyzenoh.errors import CloseReason
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.link import LinkConfig
from pyzenoh.transport.listener import TcpListener
from pyzenoh.transport.tcp import TcpLink

log = logging.getLogger(__name__)

#: The protocol name of ``udp/HOST:PORT`` endpoints.
UDP = "udp"
#: zenoh's UDP_MAX_MTU: the largest batch a udp link announces (65535 - 8 - 40).
UDP_MAX_MTU = 0xFFFF - 8 - 40
#: Sources one listener serves at once; datagrams from more are dropped (counted).
DEFAULT_MAX_SOURCES = 1024
#: Datagrams held for a link that does not read (back-pressure); past it the link ends.
MAX_PENDING_DATAGRAMS = 1024
#: Datagrams a source may send before its handshake completes (a handshake takes 2).
MAX_HANDSHAKE_DATAGRAMS = 16
#: A source whose link ended is ignored this long (late and flooding datagrams).
CLOSED_SOURCE_QUIET_S = 1.0
#: Receive buffer asked for each udp socket (the kernel caps it at net.core.rmem_max): the
#: default 208 KiB holds three full datagrams, less than one 300 kB message's burst.
UDP_RCVBUF_BYTES = 4 * 1024 * 1024


def _grow_rcvbuf(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, UDP_RCVBUF_BYTES)
        except OSError as exc:
            log.debug("cannot set the udp receive buffer: %s", exc)


def udp_config(config: LinkConfig) -> LinkConfig:
    """``config`` for a udp link: a batch fits a datagram, batches are not streamed."""
    return replace(config, batch_size=min(config.batch_size, UDP_MAX_MTU), streamed=False)


class DatagramStream(asyncio.Transport):
    """What one :class:`TcpLink` sees of its peer: a stream of prefixed batches."""

    def __init__(
        self,
        link: TcpLink,
        send: Callable[[bytes], None],
        extra: dict[str, Any],
        on_close: Callable[[DatagramStream], None],
        write_buffer_size: Callable[[], int],
    ) -> None:
        super().__init__(extra)
        self.link = link
        self._send = send
        self._on_close = on_close
        self._write_buffer_size = write_buffer_size
        self._loop = asyncio.get_running_loop()
        self._out = bytearray()  # an unfinished prefixed batch (not expected: writes are whole)
        self._pending: deque[bytes] = deque()
        self._reading = True
        self._closing = False
        self._lost = False
        #: Datagrams received (before the handshake completes, bounded).
        self.received = 0
        #: Why this side ended the link, if it did for the peer's datagrams.
        self.fault: str | None = None
        #: Told once when the link ends for the peer's datagrams (the listener counts it).
        self.on_fault: Callable[[], None] | None = None

    # --- from the peer -------------------------------------------------------------------

    def feed(self, datagram: bytes) -> None:
        """One datagram from the peer."""
        if self._closing:
            return
        self.received += 1
        link = self.link
        if not datagram:
            self.end("an empty datagram")
            return
        if self.received > MAX_HANDSHAKE_DATAGRAMS and not link.established.done():
            self.end(f"more than {MAX_HANDSHAKE_DATAGRAMS} datagrams before the handshake completed")
            return
        if not self._reading or self._pending:
            if len(self._pending) >= MAX_PENDING_DATAGRAMS:
                self.end(f"datagram flood: {MAX_PENDING_DATAGRAMS} datagrams queued unread")
                return
            self._pending.append(datagram)
            return
        self._deliver(datagram)

    def _deliver(self, datagram: bytes) -> None:
        # the sans-IO link reads prefixed batches: the datagram is one
        link = self.link
        link.data_received(len(datagram).to_bytes(2, "little") + datagram)
        if link.closed.done() and self.fault is None:
            ev = link.closed.result()
            if not ev.by_peer and ev.reason == CloseReason.INVALID:  # the datagram was bad
                self._faulted(ev.detail)

    def _faulted(self, fault: str) -> None:
        self.fault = fault
        log.warning("udp link with %s ended: %s", _show(self.get_extra_info("peername")), fault)
        if self.on_fault is not None:
            self.on_fault()

    def _drain(self) -> None:
        while self._pending and self._reading and not self._closing:
            self._deliver(self._pending.popleft())

    def end(self, fault: str) -> None:
        """End the link for the peer's datagrams: the reason logged, CLOSE sent."""
        if self._closing:
            return
        self._faulted(fault)
        self._pending.clear()
        self.link.close(CloseReason.INVALID)
        self.close()

    def lost(self, exc: Exception | None) -> None:
        """The socket went: the link learns it once."""
        if self._lost:
            return
        self._lost = True
        self._closing = True
        self._pending.clear()
        self.link.connection_lost(exc)

    # --- asyncio.Transport, as TcpLink uses it ---------------------------------------------

    @override
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        buf = self._out
        buf += data
        view = memoryview(buf)
        pos, end = 0, len(buf)
        try:
            while end - pos >= 2:
                n = view[pos] | (view[pos + 1] << 8)
                if end - pos - 2 < n:
                    break
                self._send(bytes(view[pos + 2 : pos + 2 + n]))
                pos += 2 + n
        finally:
            view.release()
        del buf[:pos]

    @override
    def is_closing(self) -> bool:
        return self._closing

    @override
    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._on_close(self)

    @override
    def abort(self) -> None:
        self.close()

    @override
    def is_reading(self) -> bool:
        return self._reading

    @override
    def pause_reading(self) -> None:
        self._reading = False

    @override
    def resume_reading(self) -> None:
        if not self._reading:
            self._reading = True
            if self._pending:
                self._loop.call_soon(self._drain)

    @override
    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass  # the datagram socket's own buffer; the link bounds its queue itself

    @override
    def get_write_buffer_size(self) -> int:
        return self._write_buffer_size()


def _show(addr: Any) -> str:
    if not addr:
        return "an unknown address"
    host, port = addr[0], addr[1]
    return f"udp/[{host}]:{port}" if ":" in host else f"udp/{host}:{port}"


def _transport_size(transport: asyncio.BaseTransport | None) -> int:
    if transport is None or transport.is_closing():
        return 0
    size: int = getattr(transport, "get_write_buffer_size", lambda: 0)()  # (not typed on DatagramTransport)
    return size


class _Connected(asyncio.DatagramProtocol):
    """The dialling side: a connected socket carrying one link."""

    def __init__(self, link: TcpLink) -> None:
        self.link = link
        self.transport: asyncio.DatagramTransport | None = None
        self.stream: DatagramStream | None = None

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = t = cast(asyncio.DatagramTransport, transport)
        _grow_rcvbuf(t)
        extra = {"sockname": t.get_extra_info("sockname"), "peername": t.get_extra_info("peername")}
        self.stream = DatagramStream(self.link, t.sendto, extra, lambda _: t.close(), lambda: _transport_size(t))
        self.link.connection_made(self.stream)

    @override
    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        if self.stream is not None:
            self.stream.feed(data)

    @override
    def error_received(self, exc: Exception) -> None:
        # ICMP port unreachable: nobody listens there. Before the handshake that ends the
        # attempt at once (as a refused TCP connect); later the lease decides.
        if self.stream is not None and not self.link.established.done() and self.transport is not None:
            log.debug("udp connect to %s: %s", _show(self.stream.get_extra_info("peername")), exc)
            self.stream.close()
            self.transport.abort()

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        if self.stream is not None:
            self.stream.lost(exc)

    @override
    def pause_writing(self) -> None:
        self.link.pause_writing()

    @override
    def resume_writing(self) -> None:
        self.link.resume_writing()


class UdpServer(asyncio.DatagramProtocol):
    """A listener's socket: datagrams demultiplexed by source, one link per source."""

    def __init__(self, factory: Callable[[], TcpLink], max_sources: int = DEFAULT_MAX_SOURCES) -> None:
        self.factory = factory
        self.max_sources = max_sources
        self.transport: asyncio.DatagramTransport | None = None
        self.sources: dict[Any, DatagramStream] = {}
        self._quiet: dict[Any, float] = {}  # source -> loop time it is heard again
        self._loop = asyncio.get_running_loop()
        self._closed = self._loop.create_future()
        self._accepting = True
        #: By reason: datagrams dropped from a source over ``max_sources`` ("over_sources")
        #: or from a quiet one ("quiet"); links ended for their datagrams ("faults": flood,
        #: oversized, truncated, empty). The router shares its own dict (its metrics).
        self.counters: dict[str, int] = {}

    @property
    def sockets(self) -> list[socket.socket]:
        sock = None if self.transport is None else self.transport.get_extra_info("socket")
        return [] if sock is None else [sock]

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)
        _grow_rcvbuf(transport)

    @override
    def datagram_received(self, data: bytes, addr: Any) -> None:
        stream = self.sources.get(addr)
        if stream is None:
            stream = self._new_source(addr)
            if stream is None:
                return
        stream.feed(data)

    def _new_source(self, addr: Any) -> DatagramStream | None:
        transport = self.transport
        if transport is None or transport.is_closing() or not self._accepting:
            return None
        now = self._loop.time()
        until = self._quiet.get(addr)
        if until is not None:
            if until > now:
                self._count("quiet")
                return None
            del self._quiet[addr]
        if len(self.sources) >= self.max_sources:
            if not self.counters.get("over_sources"):
                log.warning("udp listener: %d sources at once, datagrams from more dropped", self.max_sources)
            self._count("over_sources")
            return None
        link = self.factory()

        def send(data: bytes) -> None:
            transport.sendto(data, addr)

        extra = {"sockname": transport.get_extra_info("sockname"), "peername": addr}
        stream = DatagramStream(link, send, extra, self._forget, lambda: _transport_size(transport))
        stream.on_fault = self._count_fault
        self.sources[addr] = stream
        link.connection_made(stream)  # admitted, or closed at once (then forgotten)
        return None if stream.is_closing() else stream

    def _count(self, reason: str) -> None:
        self.counters[reason] = self.counters.get(reason, 0) + 1

    def _count_fault(self) -> None:
        self._count("faults")

    def _forget(self, stream: DatagramStream) -> None:
        addr = stream.get_extra_info("peername")
        if self.sources.get(addr) is stream:
            del self.sources[addr]
        quiet = self._quiet
        if len(quiet) >= self.max_sources:  # bounded: the expired go, else the oldest
            now = self._loop.time()
            for key in [k for k, t in quiet.items() if t <= now] or [next(iter(quiet))]:
                del quiet[key]
        quiet[addr] = self._loop.time() + CLOSED_SOURCE_QUIET_S
        # asyncio reports a closed transport on the next turn
        self._loop.call_soon(stream.lost, None)
        if not self._accepting and not self.sources and self.transport is not None:
            self.transport.close()

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        for stream in list(self.sources.values()):
            stream.lost(exc)
        self.sources.clear()
        if not self._closed.done():
            self._closed.set_result(None)

    @override
    def error_received(self, exc: Exception) -> None:
        log.debug("udp listener: %s", exc)  # an ICMP error for one peer's datagram

    @override
    def pause_writing(self) -> None:
        for stream in list(self.sources.values()):
            stream.link.pause_writing()

    @override
    def resume_writing(self) -> None:
        for stream in list(self.sources.values()):
            stream.link.resume_writing()

    def close(self) -> None:
        """As ``asyncio.Server.close``: no new source; the socket closes with the last link."""
        self._accepting = False
        if self.transport is None:
            if not self._closed.done():
                self._closed.set_result(None)
        elif not self.sources:
            self.transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)


async def open_udp(ep: Endpoint, factory: Callable[[], TcpLink]) -> tuple[asyncio.BaseTransport, TcpLink]:
    """A connected socket to ``ep`` carrying one link from ``factory`` (opener), as
    ``loop.create_connection`` gives (the handshake has started, not finished)."""
    loop = asyncio.get_running_loop()
    link = factory()
    link.protocol = UDP
    transport, _ = await loop.create_datagram_endpoint(lambda: _Connected(link), remote_addr=(ep.host, ep.port))
    return transport, link


async def listen_udp(
    ep: Endpoint,
    factory: Callable[[], TcpLink],
    links: set[TcpLink],
    max_sources: int = DEFAULT_MAX_SOURCES,
) -> TcpListener:
    """Listen on ``ep``: each new source address gets a link from ``factory`` (acceptor)."""
    loop = asyncio.get_running_loop()

    def made() -> TcpLink:
        link = factory()
        link.protocol = UDP
        return link

    server = UdpServer(made, max_sources)
    if ep.host in ("::", "[::]") and socket.has_dualstack_ipv6():
        # as a TCP listener on [::]: IPv4 peers too
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", ep.port))
        await loop.create_datagram_endpoint(lambda: server, sock=sock)
    else:
        await loop.create_datagram_endpoint(lambda: server, local_addr=(ep.host, ep.port))
    return UdpListener(server, links, ep)


class UdpListener(TcpListener):
    """A udp listener, used as a TCP one (``server.close()``, ``endpoints``, ``close``)."""

    def __init__(self, server: UdpServer, links: set[TcpLink], endpoint: Endpoint) -> None:
        super().__init__(cast(asyncio.Server, server), links, endpoint)
        self.udp = server

    @property
    @override
    def endpoints(self) -> list[Endpoint]:
        return [Endpoint(s.getsockname()[0], s.getsockname()[1], UDP) for s in self.udp.sockets]


__all__ = [
    "CLOSED_SOURCE_QUIET_S",
    "DEFAULT_MAX_SOURCES",
    "MAX_HANDSHAKE_DATAGRAMS",
    "MAX_PENDING_DATAGRAMS",
    "UDP",
    "UDP_MAX_MTU",
    "DatagramStream",
    "UdpListener",
    "UdpServer",
    "listen_udp",
    "open_udp",
    "udp_config",
]
