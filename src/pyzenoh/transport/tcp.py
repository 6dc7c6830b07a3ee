"""asyncio glue for :class:`pyzenoh.transport.link.Link` over TCP.

Each :class:`TcpLink` is an :class:`asyncio.Protocol`: it owns one socket, one sans-IO
:class:`Link` and one timer, and nothing else, so many links share an event loop without
a slow peer holding up the others (a slow peer only fills its own outgoing queue).

Output is coalesced: every ``send`` in one loop iteration ends up in the same write. The
outgoing queue (bytes queued in the link plus the transport's write buffer) is bounded:
``send(..., drop_if_full=True)`` drops when it is full (congestion control Drop) and
:meth:`TcpLink.wait_writable` lets a Block sender wait for room.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyzenoh.codec import NetworkMessage
from pyzenoh.errors import CloseReason, UsageError
from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    ReassemblyBudget,
    Received,
    Role,
)

log = logging.getLogger(__name__)

#: Default bound of one link's outgoing queue.
DEFAULT_MAX_QUEUE_BYTES = 4 * 1024 * 1024
#: Connections the kernel queues before they are accepted (zenohd's TCP listeners: 1024).
LISTEN_BACKLOG = 1024
#: Events one link hands on per event-loop turn. A read can hold thousands of small
#: messages (a declaration flood); the rest wait for the next turns while the socket is
#: not read, so the other links get their turn in between.
MAX_EVENTS_PER_TURN = 512
DEFAULT_PORT = 7447

EventCallback = Callable[["TcpLink", Event], None]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed ``tcp/HOST:PORT`` locator (metadata after ``?``/``#`` is ignored)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        proto, sep, rest = text.partition("/")
        if not sep or proto != "tcp":
            raise UsageError(f"unsupported endpoint {text!r}: only tcp/HOST:PORT is implemented")
        for cut in ("?", "#"):
            rest = rest.split(cut, 1)[0]
        if rest.startswith("["):
            host, bracket, tail = rest[1:].partition("]")
            if not bracket or not tail.startswith(":"):
                raise UsageError(f"bad IPv6 endpoint {text!r}: expected tcp/[ADDR]:PORT")
            port_text = tail[1:]
        else:
            host, colon, port_text = rest.rpartition(":")
            if not colon or ":" in host:
                raise UsageError(f"bad endpoint {text!r}: expected tcp/HOST:PORT (IPv6 in brackets)")
        if not host:
            raise UsageError(f"endpoint {text!r} has no host")
        try:
            port = int(port_text)
        except ValueError:
            raise UsageError(f"endpoint {text!r} has a bad port") from None
        if not 0 <= port <= 0xFFFF:
            raise UsageError(f"endpoint {text!r}: port out of range")
        return cls(host, port)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp/{host}:{self.port}"


class TcpLink(asyncio.Protocol):
    """One TCP connection running a Zenoh link, in the opener or acceptor role."""

    def __init__(
        self,
        config: LinkConfig,
        role: Role,
        on_event: EventCallback | None = None,
        *,
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
        keep_raw: bool = True,
        admit: Callable[[TcpLink], bool] | None = None,
        reassembly_budget: ReassemblyBudget | None = None,
    ) -> None:
        self.config = config
        self.reassembly_budget = reassembly_budget
        #: Asked once the addresses are known; False: the connection is dropped at once,
        #: before any handshake (as zenohd drops links over its accept limits).
        self.admit = admit
        self.role = role
        self.on_event = on_event
        self.max_queue_bytes = max_queue_bytes
        self._keep_raw = keep_raw
        self._loop = asyncio.get_running_loop()
        self.link: Link | None = None
        self.transport: asyncio.Transport | None = None
        self.established: asyncio.Future[Established] = self._loop.create_future()
        self.closed: asyncio.Future[LinkClosed] = self._loop.create_future()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._flush_scheduled = False
        self._write_paused = False
        self._read_paused = False  # by pause_reading (the consumer is behind)
        self._backlog: list[Event] = []  # events of the last read left for the next turns
        self._space = asyncio.Event()
        self._space.set()
        self._lost = self._loop.create_future()
        #: Messages dropped because the queue was full (congestion control Drop).
        self.dropped = 0
        self.local_address: tuple[str, int] | None = None
        self.remote_address: tuple[str, int] | None = None
        #: The link protocol as in locators ("tcp", "tls"): an access-control subject.
        self.protocol = "tcp"
        #: The common name of the peer's verified TLS certificate (mTLS), else None.
        self.cert_common_name: str | None = None
        # nobody may await these: keep "exception never retrieved" quiet
        self.established.add_done_callback(_consume)
        self.closed.add_done_callback(_consume)

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self.local_address = transport.get_extra_info("sockname")
        self.remote_address = transport.get_extra_info("peername")
        if self.admit is not None and not self.admit(self):
            transport.abort()
            return
        # pause_writing() past half the bound keeps room for Block messages
        transport.set_write_buffer_limits(high=max(self.max_queue_bytes // 2, 1))
        self.link = Link(self.config, self.role, self._loop.time(), keep_raw=self._keep_raw,
                         reassembly_budget=self.reassembly_budget)  # fmt: skip
        self._flush()
        self._rearm()

    def data_received(self, data: bytes) -> None:
        link = self.link
        assert link is not None
        events = link.receive_data(data, self._loop.time())
        if self._backlog:  # read while events still waited (should not happen): keep order
            self._backlog += events
            events = []
        elif len(events) > MAX_EVENTS_PER_TURN:
            self._backlog = events[MAX_EVENTS_PER_TURN:]
            events = events[:MAX_EVENTS_PER_TURN]
            self._set_reading()
            self._loop.call_soon(self._drain_backlog)
        if events:
            self._dispatch(events)
        self._flush()
        self._rearm()

    def _drain_backlog(self) -> None:
        backlog = self._backlog
        if not backlog or self._read_paused:
            return  # resume_reading() starts draining again
        events = backlog[:MAX_EVENTS_PER_TURN]
        self._backlog = backlog[MAX_EVENTS_PER_TURN:]
        self._dispatch(events)
        if self._backlog:
            self._loop.call_soon(self._drain_backlog)
        else:
            self._set_reading()
        self._flush()
        self._rearm()

    def _set_reading(self) -> None:
        """Read from the socket unless paused or events of the last read still wait."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        if self._read_paused or self._backlog:
            if transport.is_reading():
                transport.pause_reading()
        elif not transport.is_reading():
            transport.resume_reading()

    def eof_received(self) -> bool:
        if self.link is not None:
            self._dispatch(self.link.connection_lost("peer closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._backlog:  # what arrived before the connection went, in order
            backlog, self._backlog = self._backlog, []
            self._dispatch(backlog)
        if self.link is not None:
            detail = f"connection lost: {exc}" if exc else "connection closed"
            self._dispatch(self.link.connection_lost(detail))
        if not self.closed.done():
            # No link ran (refused by ``admit``) or it had ended already: still report the
            # close, so listeners forget this connection.
            self._dispatch([LinkClosed(CloseReason.GENERIC, True, "connection lost")])
        if not self._lost.done():
            self._lost.set_result(None)
        self._space.set()

    def pause_writing(self) -> None:
        self._write_paused = True
        self._space.clear()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._flush()

    # --- sending -------------------------------------------------------------------------

    @property
    def queued_bytes(self) -> int:
        """Bytes accepted by :meth:`send` and not yet handed to the kernel."""
        n = 0 if self.link is None else self.link.pending_bytes
        if self.transport is not None:
            n += self.transport.get_write_buffer_size()
        return n

    @property
    def is_full(self) -> bool:
        return self._write_paused or self.queued_bytes >= self.max_queue_bytes

    @property
    def is_closed(self) -> bool:
        return self.closed.done()

    def send(
        self,
        message: NetworkMessage | bytes,
        *,
        reliable: bool = True,
        priority: int | None = None,
        drop_if_full: bool = False,
        express: bool = False,
    ) -> bool:
        """Queue a network message object or pre-encoded bytes; False if dropped.

        With ``drop_if_full`` the message is dropped when the queue is full; otherwise
        it is always queued (use :meth:`wait_writable` first to apply back-pressure).
        """
        link = self.link
        if link is None or self.closed.done():
            return False
        if drop_if_full and self.is_full:
            self.dropped += 1
            return False
        link.send(message, reliable=reliable, priority=priority)
        if express:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)
        return True

    async def wait_writable(self) -> None:
        """Wait until the outgoing queue has room (or the link closed)."""
        while self.is_full and not self.closed.done():
            self._space.clear()
            await self._space.wait()

    def _flush(self) -> None:
        self._flush_scheduled = False
        link = self.link
        transport = self.transport
        if link is None or transport is None or self._write_paused:
            return
        data = link.data_to_send()
        if data and not transport.is_closing():
            transport.write(data)
        if not self._write_paused and self.queued_bytes < self.max_queue_bytes:
            self._space.set()
        if link.is_closed and not transport.is_closing():
            transport.close()

    # --- reading back-pressure -----------------------------------------------------------

    def pause_reading(self) -> None:
        """Stop reading from the socket (the consumer is behind); the lease is held."""
        if not self._read_paused:
            self._read_paused = True
            self._set_reading()

    def resume_reading(self) -> None:
        if self._read_paused:
            self._read_paused = False
            if self.link is not None:
                self.link.refresh_lease(self._loop.time())
            self._set_reading()
            if self._backlog:
                self._loop.call_soon(self._drain_backlog)

    # --- closing -------------------------------------------------------------------------

    def close(self, reason: int = CloseReason.GENERIC) -> None:
        """Send CLOSE after whatever is queued, then close the socket."""
        if self.link is None:
            if self.transport is not None:
                self.transport.close()
            return
        events = self.link.close(reason)
        self._write_paused = False  # CLOSE must go out even if the kernel is slow
        self._flush()
        self._dispatch(events)

    async def aclose(self, reason: int = CloseReason.GENERIC, timeout: float = 5.0) -> None:
        self.close(reason)
        try:
            await asyncio.wait_for(asyncio.shield(self._lost), timeout)
        except TimeoutError:
            self.abort()

    def abort(self) -> None:
        """Drop the connection at once, without CLOSE (as a crashed process would)."""
        if self.transport is not None:
            self.transport.abort()

    # --- internals -----------------------------------------------------------------------

    def _dispatch(self, events: list[Event]) -> None:
        cb = self.on_event
        for ev in events:
            if isinstance(ev, Received):
                if cb is not None:
                    try:
                        cb(self, ev)
                    except Exception:
                        log.exception("link event handler failed")
                continue
            if isinstance(ev, Established):
                if not self.established.done():
                    self.established.set_result(ev)
            elif isinstance(ev, LinkClosed):
                self._finish(ev)
            if cb is not None:
                try:
                    cb(self, ev)
                except Exception:
                    log.exception("link event handler failed")

    def _finish(self, ev: LinkClosed) -> None:
        if not self.established.done():
            self.established.set_exception(ConnectionError(f"link closed during handshake: {ev.detail}"))
        if not self.closed.done():
            self.closed.set_result(ev)
        transport = self.transport
        if transport is not None and not transport.is_closing():
            # write the CLOSE the link may have queued, then close (asyncio flushes first)
            if self.link is not None:
                data = self.link.data_to_send()
                if data:
                    transport.write(data)
            transport.close()
        self._space.set()

    def _rearm(self) -> None:
        link = self.link
        if link is None:
            return
        deadline = link.next_deadline()
        if deadline is None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        if self._timer is not None:
            if deadline >= self._timer_when:
                return  # the pending timer fires first; it re-arms for the later deadline
            self._timer.cancel()
        self._timer_when = deadline
        self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        link = self.link
        if link is None:
            return
        now = max(self._loop.time(), self._timer_when)
        if self._read_paused:
            link.refresh_lease(now)
        events = link.handle_timer(now)
        if events:
            self._dispatch(events)
        self._flush()
        self._rearm()


def _consume(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


async def connect(
    endpoint: str | Endpoint,
    config: LinkConfig,
    on_event: EventCallback | None = None,
    *,
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    keep_raw: bool = True,
    reassembly_budget: ReassemblyBudget | None = None,
) -> TcpLink:
    """Connect to ``endpoint`` and run the opener handshake; returns an established link.

    Raises :class:`ConnectionError` (or :class:`OSError`) when the connection or the
    handshake fails; the handshake is bounded by ``config.handshake_timeout_s``.
    """
    ep = endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint)
    loop = asyncio.get_running_loop()

    def factory() -> TcpLink:
        return TcpLink(config, Role.OPENER, on_event, max_queue_bytes=max_queue_bytes, keep_raw=keep_raw,
                       reassembly_budget=reassembly_budget)  # fmt: skip

    _, proto = await asyncio.wait_for(
        loop.create_connection(factory, ep.host, ep.port), config.handshake_timeout_s
    )
    try:
        await proto.established
    except BaseException:
        proto.abort()
        raise
    return proto


class TcpListener:
    """A listening socket whose accepted connections run the acceptor role."""

    def __init__(self, server: asyncio.Server, links: set[TcpLink]) -> None:
        self.server = server
        self.links = links

    @property
    def endpoints(self) -> list[Endpoint]:
        """The bound endpoints (with the real port when 0 was asked for)."""
        return [Endpoint(s.getsockname()[0], s.getsockname()[1]) for s in self.server.sockets]

    async def close(self, close_links: bool = True) -> None:
        self.server.close()
        if close_links:
            for link in list(self.links):
                await link.aclose()
        await self.server.wait_closed()


async def listen(
    endpoint: str | Endpoint,
    config: LinkConfig,
    on_event: EventCallback | None = None,
    *,
    on_accept: Callable[[TcpLink], None] | None = None,
    max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
    keep_raw: bool = True,
    admit: Callable[[TcpLink], bool] | None = None,
    reassembly_budget: ReassemblyBudget | None = None,
) -> TcpListener:
    """Listen on ``endpoint``; each connection becomes a :class:`TcpLink` (acceptor).

    ``on_event(link, event)`` sees every link's :class:`Established`, :class:`Received`
    and :class:`LinkClosed` events.
    """
    ep = endpoint if isinstance(endpoint, Endpoint) else Endpoint.parse(endpoint)
    loop = asyncio.get_running_loop()
    links: set[TcpLink] = set()

    def forget(link: TcpLink, ev: Event) -> None:
        if isinstance(ev, LinkClosed):
            links.discard(link)
        if on_event is not None:
            on_event(link, ev)

    def factory() -> TcpLink:
        link = TcpLink(config, Role.ACCEPTOR, forget, max_queue_bytes=max_queue_bytes, keep_raw=keep_raw,
                       admit=admit, reassembly_budget=reassembly_budget)  # fmt: skip
        links.add(link)
        if on_accept is not None:
            on_accept(link)
        return link

    server = await loop.create_server(factory, ep.host, ep.port, reuse_address=True, backlog=LISTEN_BACKLOG)
    return TcpListener(server, links)
