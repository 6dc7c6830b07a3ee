"""``ws/HOST:PORT`` links: one Zenoh batch per binary WebSocket message, no length prefix
(as zenoh's WS link), over aiohttp's WebSocket client and server.

The link itself is :class:`TcpLink` (stream framing, 2-byte length prefix). Between it and
the WebSocket sits :class:`WsCarrier`, an asyncio-transport-like adapter: what the link
writes is cut at the prefixes into batches, each sent as one binary message; each binary
message received is handed to the link as prefix + batch. Flow control goes through the
carrier as through a socket: its queue of unsent messages is the write buffer
(pause_writing/resume_writing at its limits) and pause_reading stops reading messages.

Bad input: a text frame, a frame larger than a batch, or a peer that never finishes its
upgrade (bounded by the handshake timeout) ends that peer's link, logged with the reason.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import aiohttp
from aiohttp import web
from typing_extensions import override

from pyzenoh.transport.endpoint import Endpoint

log = logging.getLogger(__name__)

#: The protocol name of ``ws/HOST:PORT`` endpoints.
WS = "ws"
#: The largest WebSocket message taken (a batch is at most 65535 bytes, as zenoh's WS MTU).
MAX_MESSAGE_BYTES = 0xFFFF
#: aiohttp's max_msg_size refuses a message of exactly its size: one more lets 65535 in.
_AIOHTTP_MAX_MSG_SIZE = MAX_MESSAGE_BYTES + 1
#: Default high-water mark of a carrier's queue of unsent messages (bytes).
DEFAULT_HIGH_WATER = 64 * 1024


class WsCarrier(asyncio.Transport):
    """Carries a stream-framed protocol (:class:`TcpLink`) over one WebSocket."""

    def __init__(
        self,
        ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
        protocol: Any,
        peername: tuple[str, int] | None,
        sockname: tuple[str, int] | None,
    ) -> None:
        super().__init__()
        self._ws = ws
        self._protocol = protocol
        self._extra = {"peername": peername, "sockname": sockname, "socket": None}
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()  # written bytes not yet cut into whole batches
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._high = DEFAULT_HIGH_WATER
        self._low = DEFAULT_HIGH_WATER // 4
        self._paused_writing = False
        self._wake_writer = asyncio.Event()
        self._reading = asyncio.Event()
        self._reading.set()
        self._closing = False
        self._lost = False
        self._writer = self._loop.create_task(self._write_loop())

    # --- the transport side TcpLink uses ---------------------------------------------------

    @override
    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._extra.get(name, default)

    @override
    def is_closing(self) -> bool:
        return self._closing

    @override
    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing:
            return
        buf = self._pending
        buf += data
        # cut whole prefixed batches; a partial one waits for the rest
        pos = 0
        while len(buf) - pos >= 2:
            n = buf[pos] | (buf[pos + 1] << 8)
            if len(buf) - pos - 2 < n:
                break
            self._queue.append(bytes(buf[pos + 2 : pos + 2 + n]))
            self._queued += n
            pos += 2 + n
        if pos:
            del buf[:pos]
            self._wake_writer.set()
        if not self._paused_writing and self._queued > self._high:
            self._paused_writing = True
            self._protocol.pause_writing()

    @override
    def get_write_buffer_size(self) -> int:
        return self._queued + len(self._pending)

    @override
    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._high = DEFAULT_HIGH_WATER if high is None else high
        self._low = self._high // 4 if low is None else low

    @override
    def pause_reading(self) -> None:
        self._reading.clear()

    @override
    def resume_reading(self) -> None:
        self._reading.set()

    @override
    def is_reading(self) -> bool:
        return self._reading.is_set()

    @override
    def close(self) -> None:
        # queued messages go out first, then the close frame (the write loop ends)
        self._closing = True
        self._wake_writer.set()

    @override
    def abort(self) -> None:
        self._closing = True
        self._queue.clear()
        self._queued = 0
        self._writer.cancel()
        self._loop.create_task(self._ws.close())

    # --- the loops -----------------------------------------------------------------------

    async def _write_loop(self) -> None:
        ws = self._ws
        try:
            while True:
                while self._queue:
                    msg = self._queue.popleft()
                    await ws.send_bytes(msg)
                    self._queued -= len(msg)
                    if self._paused_writing and self._queued <= self._low:
                        self._paused_writing = False
                        self._protocol.resume_writing()
                if self._closing:
                    break
                self._wake_writer.clear()
                await self._wake_writer.wait()
            await ws.close()
        except (ConnectionError, aiohttp.ClientError, RuntimeError) as exc:
            log.debug("ws write failed: %s", exc)
            self._closing = True
            with contextlib.suppress(Exception):
                await ws.close()

    async def read_loop(self) -> None:
        """Feed the protocol every binary message until the WebSocket ends."""
        ws = self._ws
        exc: Exception | None = None
        try:
            while True:
                if not self._reading.is_set():
                    await self._reading.wait()
                msg = await ws.receive()
                if msg.type == aiohttp.WSMsgType.BINARY:
                    data: bytes = msg.data
                    if not data:
                        continue
                    self._protocol.data_received(len(data).to_bytes(2, "little") + data)
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    log.warning("ws link with %s: closed: a text frame (zenoh sends binary ones)", self._peer())
                    exc = ConnectionError("text frame")
                    break
                elif msg.type == aiohttp.WSMsgType.ERROR:
                    log.warning("ws link with %s: closed: %s", self._peer(), msg.data)
                    exc = ConnectionError(str(msg.data))
                    break
                else:  # CLOSE, CLOSING, CLOSED
                    break
        except (ConnectionError, aiohttp.ClientError, asyncio.CancelledError) as e:
            exc = e if isinstance(e, Exception) else None
        finally:
            self._closing = True
            self._wake_writer.set()
            self._queue.clear()
            self._queued = 0
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 1.0)
            self._writer.cancel()
            if not self._lost:
                self._lost = True
                self._protocol.connection_lost(exc)

    def _peer(self) -> str:
        p = self._extra["peername"]
        return f"{p[0]}:{p[1]}" if p else "an unknown address"


ProtocolFactory = Callable[[], Any]


async def ws_connect(ep: Endpoint, factory: ProtocolFactory, timeout_s: float) -> Any:
    """Dial ``ws://HOST:PORT/`` and run ``factory()``'s protocol over it; returns the protocol."""
    host = f"[{ep.host}]" if ":" in ep.host else ep.host
    session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=timeout_s))
    try:
        ws = await asyncio.wait_for(
            session.ws_connect(f"ws://{host}:{ep.port}/", max_msg_size=_AIOHTTP_MAX_MSG_SIZE, autoping=True),
            timeout_s,
        )
    except BaseException:
        await session.close()
        raise
    conn = ws.get_extra_info("socket")
    peer = conn.getpeername() if conn is not None else None
    local = conn.getsockname() if conn is not None else None
    proto = factory()
    proto.protocol = WS
    carrier = WsCarrier(ws, proto, peer, local)
    proto.connection_made(carrier)

    async def run() -> None:
        try:
            await carrier.read_loop()
        finally:
            await session.close()

    task = asyncio.get_running_loop().create_task(run())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return proto


_tasks: set[asyncio.Task[None]] = set()


class WsListener:
    """An aiohttp server whose WebSocket upgrades run the acceptor role."""

    def __init__(self, runner: web.AppRunner, site: web.TCPSite, links: set[Any], endpoint: Endpoint) -> None:
        self.runner = runner
        self.site = site
        self.links = links
        self.endpoint = endpoint
        #: the listening server (closed first at shutdown, as TcpListener.server)
        self.server: Any = site._server

    @property
    def endpoints(self) -> list[Endpoint]:
        server = self.site._server  # an asyncio (or uvloop) server once started
        sockets = getattr(server, "sockets", None) or []
        ports = dict.fromkeys(s.getsockname()[1] for s in sockets)
        return [Endpoint(self.endpoint.host, port, WS) for port in ports]

    async def close(self, close_links: bool = True) -> None:
        if close_links:
            for link in list(self.links):
                await link.aclose()
        await self.runner.cleanup()


async def ws_listen(
    ep: Endpoint, factory: ProtocolFactory, links: set[Any], timeout_s: float, reuse_port: bool = False
) -> WsListener:
    """Serve WebSocket upgrades on ``ep`` (any path, as zenohd's listener); ``reuse_port``
    as for a TCP listener."""

    async def handler(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=_AIOHTTP_MAX_MSG_SIZE, autoping=True)
        if not ws.can_prepare(request).ok:
            log.info("ws listener %s: not a WebSocket upgrade from %s: refused", ep, request.remote)
            return web.Response(status=400, text="expected a WebSocket upgrade")
        await ws.prepare(request)
        transport = request.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        local = transport.get_extra_info("sockname") if transport is not None else None
        proto = factory()
        proto.protocol = WS
        carrier = WsCarrier(ws, proto, peer, local)
        proto.connection_made(carrier)
        await carrier.read_loop()
        return ws

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handler)
    # a peer that never finishes its upgrade: aiohttp drops a silent connection after this
    runner = web.AppRunner(app, handle_signals=False, access_log=None, keepalive_timeout=timeout_s)
    await runner.setup()
    site = web.TCPSite(runner, ep.host, ep.port, reuse_address=True, reuse_port=reuse_port or None)
    await site.start()
    return WsListener(runner, site, links, ep)
