"""``quic/HOST:PORT`` links: zenoh's stream framing (2-byte length prefix, batches up to
65535 bytes, as zenoh's QUIC link) on one bidirectional QUIC stream, through aioquic.

The link itself is :class:`TcpLink`: :class:`QuicStreamCarrier` is the asyncio transport
it writes to (bytes go on the stream) and the connection protocol feeds its
``data_received`` with the stream's bytes. The opener opens stream 0 and writes INIT
first (zenoh's acceptor takes the first bidirectional stream the opener sends on).
Certificates follow ``transport/link/tls/*`` as for ``tls/`` (security/tls.py): a listener
needs listen_certificate and listen_private_key; a client always verifies the router's
chain (root_ca_certificate), the name only with verify_name_on_connect; enable_mtls
asks for and checks client certificates. ALPN: zenoh's single-stream ``zenoh`` and the
``hq-29`` of zenoh <= 1.8.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import QuicServer, serve
from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from typing_extensions import override

from pyzenoh.errors import UsageError
from pyzenoh.security.tls import TLS_CONFIG_PATH, TlsConfig, _as_file

log = logging.getLogger(__name__)

#: The protocol name of ``quic/HOST:PORT`` endpoints.
QUIC = "quic"
#: zenoh's ALPN protocols for a single-stream link, preferred first.
ALPN_PROTOCOLS = ["zenoh", "hq-29"]
#: Bytes queued on the stream (not yet acknowledged by the peer's flow control) past
#: which the link is told to pause writing, as a slow TCP peer's full socket would.
DEFAULT_HIGH_WATER = 1 << 20
#: Bytes a link may receive while its reading is paused (its consumer is behind) before
#: the link is closed. A TCP peer is held back by the socket's window; aioquic grants a
#: QUIC peer more credit as data arrives, consumed or not, so what a paused link receives
#: is kept here, and without this bound one fast publisher would grow it without end.
MAX_PAUSED_BYTES = 16 << 20


def quic_configuration(tls: TlsConfig | None, *, server_side: bool, server_name: str | None) -> QuicConfiguration:
    """aioquic's configuration from zenohd's ``transport/link/tls/*`` keys (the same
    certificate rules as ``tls/``); :class:`UsageError` when they cannot work."""
    cfg = tls or TlsConfig()
    conf = QuicConfiguration(is_client=not server_side, alpn_protocols=list(ALPN_PROTOCOLS))
    # zenoh batches are up to 65535 bytes: let a stream carry several in flight
    conf.max_stream_data = conf.max_data = 1 << 22
    ca = cfg.pem("root_ca_certificate")
    if server_side:
        cert, key = cfg.pem("listen_certificate"), cfg.pem("listen_private_key")
        if cert is None or key is None:
            missing = [
                f"{TLS_CONFIG_PATH}/{n}"
                for n, v in (("listen_certificate", cert), ("listen_private_key", key))
                if v is None
            ]
            raise UsageError(f"a quic/ listen endpoint needs {' and '.join(missing)}")
        _load_chain(conf, cert, key, cfg.describe("listen_certificate"))
        if cfg.flag("enable_mtls"):
            if ca is None:
                raise UsageError(f"{TLS_CONFIG_PATH}/enable_mtls needs {TLS_CONFIG_PATH}/root_ca_certificate")
            conf.load_verify_locations(cadata=ca)
            conf.verify_mode = ssl.CERT_REQUIRED
        return conf
    conf.verify_mode = ssl.CERT_REQUIRED  # the router's chain is always verified
    if ca is not None:
        try:
            conf.load_verify_locations(cadata=ca)
        except (ssl.SSLError, ValueError) as exc:
            raise UsageError(f"{cfg.describe('root_ca_certificate')}: not a PEM certificate: {exc}") from None
    # aioquic checks the name only when one is set (verify_name_on_connect)
    conf.server_name = server_name if cfg.flag("verify_name_on_connect") else None
    if cfg.flag("enable_mtls"):
        cert, key = cfg.pem("connect_certificate"), cfg.pem("connect_private_key")
        if cert is None or key is None:
            raise UsageError(
                f"{TLS_CONFIG_PATH}/enable_mtls on a connecting side needs "
                f"{TLS_CONFIG_PATH}/connect_certificate and connect_private_key"
            )
        _load_chain(conf, cert, key, cfg.describe("connect_certificate"))
    return conf


def _load_chain(conf: QuicConfiguration, cert: bytes, key: bytes, what: str) -> None:
    # aioquic reads files only: the PEM bytes go through a private temporary file
    try:
        with _as_file(cert) as cert_path, _as_file(key) as key_path:
            conf.load_cert_chain(cert_path, key_path)
    except (ValueError, TypeError, OSError) as exc:
        raise UsageError(f"{what}: cannot load the certificate and key: {exc}") from None


class QuicStreamCarrier(asyncio.Transport):
    """The asyncio transport a :class:`TcpLink` writes to: the link's one stream."""

    def __init__(self, conn: ZenohQuicProtocol, stream_id: int) -> None:
        super().__init__()
        self._conn = conn
        self.stream_id = stream_id
        self._closing = False
        self._reading = True
        self._high = DEFAULT_HIGH_WATER

    @override
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        self._conn.send(self.stream_id, bytes(data))

    @override
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "sockname":
            return self._conn.sockname
        if name == "peername":
            return self._conn.peer()
        return default

    @override
    def is_closing(self) -> bool:
        return self._closing

    @override
    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._conn.finish()

    @override
    def abort(self) -> None:
        self._closing = True
        self._conn.finish(error=True)

    @override
    def is_reading(self) -> bool:
        return self._reading

    @override
    def pause_reading(self) -> None:
        # QUIC's own flow control then holds the peer back once its window is used
        self._reading = False

    @override
    def resume_reading(self) -> None:
        if not self._reading:
            self._reading = True
            self._conn.deliver_pending()

    @override
    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._high = max(high or DEFAULT_HIGH_WATER, 1)

    @override
    def get_write_buffer_size(self) -> int:
        return self._conn.queued(self.stream_id)

    @property
    def high_water(self) -> int:
        return self._high


class ZenohQuicProtocol(QuicConnectionProtocol):
    """One QUIC connection carrying one zenoh link (its first bidirectional stream)."""

    def __init__(
        self,
        quic: QuicConnection,
        make_link: Callable[[], Any] | None = None,
        max_paused_bytes: int = MAX_PAUSED_BYTES,
        **kw: Any,
    ) -> None:
        super().__init__(quic, **kw)
        #: Builds the acceptor's TcpLink when the opener's stream arrives (None: opener).
        self.make_link = make_link
        self.link: Any = None
        self.carrier: QuicStreamCarrier | None = None
        self.sockname: Any = None
        self.peername: Any = None
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.max_paused_bytes = max_paused_bytes
        self._eof = False
        self._write_paused = False
        self._ended = False
        self.handshake_error: str | None = None
        #: The opener's handshake outcome, made before ``connect()``: aioquic's own
        #: ``wait_connected`` misses a handshake that completes before its waiter exists
        #: (aioquic 1.7 only marks the connection connected when a waiter is there), which
        #: under load stalled a router's dial for its whole handshake timeout.
        self.handshake: asyncio.Future[None] | None = None

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.sockname = transport.get_extra_info("sockname")
        self.peername = transport.get_extra_info("peername")

    def peer(self) -> Any:
        """The peer's (host, port): a listener's connections share its socket, so the
        address is the one the connection's first datagram came from."""
        if self.peername is None:
            paths = self._quic._network_paths
            if paths:
                self.peername = tuple(paths[0].addr[:2])
        return self.peername

    def attach(self, link: Any, stream_id: int) -> None:
        self.carrier = QuicStreamCarrier(self, stream_id)
        self.link = link
        link.protocol = QUIC  # before connection_made: admit() may look at it
        link.connection_made(self.carrier)

    def send(self, stream_id: int, data: bytes) -> None:
        try:
            self._quic.send_stream_data(stream_id, data)
        except ValueError as exc:  # a stream this side may not send on
            log.debug("quic: cannot send: %s", exc)
            return
        self.transmit()
        carrier = self.carrier
        if carrier is not None and not self._write_paused and self.queued(stream_id) > carrier.high_water:
            self._write_paused = True
            self.link.pause_writing()

    def queued(self, stream_id: int) -> int:
        stream = self._quic._streams.get(stream_id)
        if stream is None:
            return 0
        sender = stream.sender
        return int(sender._buffer_stop - sender._buffer_start)

    def finish(self, error: bool = False) -> None:
        if self._ended:
            return
        self._ended = True
        self.close(error_code=1 if error else 0)
        self._end(None)

    def deliver_pending(self) -> None:
        while self._pending and self.carrier is not None and self.carrier.is_reading():
            data = self._pending.pop(0)
            self._pending_bytes -= len(data)
            self.link.data_received(data)
        if not self._pending and self._eof:
            self._end(None)

    def _end(self, reason: str | None) -> None:
        link, self.link = self.link, None
        if link is not None:
            if reason is not None:
                link.eof_received()
            link.connection_lost(ConnectionError(reason) if reason else None)

    @override
    def quic_event_received(self, event: events.QuicEvent) -> None:
        if isinstance(event, events.HandshakeCompleted):
            if self.handshake is not None and not self.handshake.done():
                self.handshake.set_result(None)
        elif isinstance(event, events.StreamDataReceived):
            if self.carrier is None:
                if event.stream_id % 4 != 0 or self.make_link is None:
                    return  # only the opener's first bidirectional stream carries the link
                try:
                    link = self.make_link()
                except ConnectionRefusedError:
                    self.finish(error=True)
                    return
                self.attach(link, event.stream_id)
            elif event.stream_id != self.carrier.stream_id:
                return
            carrier = self.carrier
            assert carrier is not None  # attach() set it
            if event.data:
                if carrier.is_reading() and not self._pending:
                    self.link.data_received(event.data)
                elif self._pending_bytes + len(event.data) > self.max_paused_bytes:
                    reason = f"quic peer sent over {self.max_paused_bytes} bytes while the link's reading was paused"
                    log.warning("quic %s: %s", self.peer(), reason)
                    self._pending.clear()
                    self._pending_bytes = 0
                    link, self.link = self.link, None
                    link.connection_lost(ConnectionError(reason))  # the link is told why
                    self.finish(error=True)
                    return
                else:
                    self._pending.append(event.data)
                    self._pending_bytes += len(event.data)
            if event.end_stream:
                self._eof = True
                if not self._pending:
                    self._end("peer closed the stream")
        elif isinstance(event, events.ConnectionTerminated):
            detail = event.reason_phrase or f"error code {event.error_code:#x}"
            if self.link is None and self.carrier is None:
                self.handshake_error = detail
                log.info("quic %s: connection ended before any link: %s", self.peer(), detail)
            if self.handshake is not None and not self.handshake.done():
                self.handshake.set_exception(ConnectionError(detail))
            self._ended = True
            self._end(f"quic connection closed: {detail}")
        self._check_writable()

    def _check_writable(self) -> None:
        carrier = self.carrier
        if self._write_paused and carrier is not None and self.queued(carrier.stream_id) <= carrier.high_water // 2:
            self._write_paused = False
            if self.link is not None:
                self.link.resume_writing()


async def open_quic(host: str, port: int, conf: QuicConfiguration, timeout: float) -> ZenohQuicProtocol:
    """A connected QUIC connection to ``host:port`` (the TLS handshake done)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    family, _, _, _, addr = infos[0]
    local = ("::", 0) if family == socket.AF_INET6 else ("0.0.0.0", 0)
    conn = QuicConnection(configuration=conf)
    _, proto = await loop.create_datagram_endpoint(lambda: ZenohQuicProtocol(conn), local_addr=local)
    proto.peername = addr[:2]
    proto.handshake = loop.create_future()
    proto.connect(addr)
    try:
        await asyncio.wait_for(proto.handshake, timeout)
    except BaseException as exc:
        proto.close()
        proto._transport.close()  # type: ignore[union-attr]
        if isinstance(exc, ConnectionError | TimeoutError):
            why = str(exc) or (f"no answer within {timeout:.1f} s" if isinstance(exc, TimeoutError) else "refused")
            raise ConnectionError(f"quic/{host}:{port}: handshake failed: {why}") from None
        raise
    # the UDP socket goes with the connection
    _close_socket_when_done(proto)
    return proto


def _close_socket_when_done(proto: ZenohQuicProtocol) -> None:
    async def closer() -> None:
        await proto.wait_closed()
        transport = proto._transport
        if transport is not None:
            transport.close()

    task = asyncio.get_running_loop().create_task(closer())
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


_TASKS: set[asyncio.Task[None]] = set()


class QuicAcceptor:
    """A QUIC listener: its connections' first bidirectional stream each become a link.

    All its connections share one UDP socket, so :meth:`close` only stops taking new
    links (the links' CLOSE still goes out); :meth:`shutdown` closes the socket."""

    def __init__(self, server: QuicServer, address: tuple[str, int]) -> None:
        self.quic_server = server
        self.address = address
        self.accepting = True

    def close(self) -> None:
        self.accepting = False

    async def wait_closed(self) -> None:
        return None

    def shutdown(self) -> None:
        self.accepting = False
        self.quic_server.close()


async def serve_quic(host: str, port: int, conf: QuicConfiguration, make_link: Callable[[], Any]) -> QuicAcceptor:
    """Listen for QUIC connections on ``host:port``; ``make_link()`` builds each link."""
    acceptor: QuicAcceptor | None = None

    def link_if_accepting() -> Any:
        if acceptor is not None and not acceptor.accepting:
            raise ConnectionRefusedError("the listener is closing")
        return make_link()

    def create(quic: QuicConnection, **kw: Any) -> ZenohQuicProtocol:
        return ZenohQuicProtocol(quic, link_if_accepting, **kw)

    server = await serve(host, port, configuration=conf, create_protocol=create)
    bound = server._transport.get_extra_info("sockname")  # type: ignore[union-attr]
    acceptor = QuicAcceptor(server, (bound[0], bound[1]))
    return acceptor
