"""asyncio glue for :class:`pyzenoh.transport.link.Link` over TCP and TLS, and the link
every other carrier (udp, ws, unixsock-stream, quic) runs under; :mod:`.dial` and
:mod:`.listener` open them.

Each :class:`TcpLink` is an :class:`asyncio.Protocol`: it owns one socket, one sans-IO
:class:`Link` and one timer, and nothing else, so many links share an event loop without
a slow peer holding up the others (a slow peer only fills its own outgoing queue).

Output is coalesced: every ``send`` in one loop iteration ends up in the same write, unless
a whole batch is queued before the iteration ends (then it is written at once). The
outgoing queue (bytes queued in the link plus the transport's write buffer) is bounded:
``send(..., drop_if_full=True)`` drops when it is full (congestion control Drop) and
:meth:`TcpLink.wait_writable` lets a Block sender wait for room.

TLS (``tls/HOST:PORT``, contexts from :mod:`pyzenoh.security.tls`): a connecting link
gets its TLS transport from ``create_connection``; an accepted link is admitted as a
plain connection first (so the accept limits count it), then runs the server handshake
itself with ``start_tls``, bounded by the handshake timeout. A failed handshake ends only
that link: it is logged once with the peer's address and reported as a
:class:`LinkClosed` during the handshake, like a failed Zenoh handshake.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

from typing_extensions import override

from pyzenoh.codec import NetworkMessage
from pyzenoh.errors import CloseReason
from pyzenoh.security.tls import peer_common_name, peer_not_after
from pyzenoh.transport.endpoint import LinkTls, set_buffers
from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    ReassemblyBudget,
    Received,
    ReceivedPush,
    ReceivedRun,
    Role,
    State,
)
from pyzenoh.transport.link.qos import LinkQos

__all__ = ["DEFAULT_MAX_QUEUE_BYTES", "EXPIRY_CHECK_MAX_S", "MAX_EVENTS_PER_TURN", "EventCallback", "TcpLink"]

log = logging.getLogger(__name__)

#: Default bound of one link's outgoing queue.
DEFAULT_MAX_QUEUE_BYTES = 4 * 1024 * 1024
#: Events one link hands on per event-loop turn. A read can hold thousands of small
#: messages (a declaration flood); the rest wait for the next turns while the socket is
#: not read, so the other links get their turn in between.
MAX_EVENTS_PER_TURN = 512
#: A link closed on its peer's certificate expiry re-checks the clock at least this often
#: (a long timer would drift from the wall clock that expiry is measured in).
EXPIRY_CHECK_MAX_S = 600.0

EventCallback = Callable[["TcpLink", Event], None]
#: Events carrying received data: handed on as they are (a class check per message).
_DATA_EVENTS = frozenset((Received, ReceivedRun, ReceivedPush))


class TcpLink(asyncio.BufferedProtocol):
    """One TCP connection running a Zenoh link, in the opener or acceptor role.

    A buffered protocol: the transport reads into a buffer the thread's links share
    (:func:`_rx_buffer`) and the link copies what it needs before the next read. A plain
    protocol's every read allocates a fresh 256 KiB ``bytes`` (asyncio's read size),
    which costs ~16 us a read here; a ping-pong message through the router is two reads.
    """

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
        tls: LinkTls | None = None,
    ) -> None:
        self.config = config
        #: TLS settings; an acceptor runs the TLS handshake itself once admitted.
        self.tls = tls
        self.reassembly_budget = reassembly_budget
        #: Asked once the addresses are known; False: the connection is dropped at once,
        #: before any handshake (as zenohd drops links over its accept limits).
        self.admit = admit
        self.role = role
        self.on_event = on_event
        self.max_queue_bytes = max_queue_bytes
        self._keep_raw = keep_raw
        self._loop = asyncio.get_running_loop()
        self._rx = _rx_buffer()  # this thread's (the link lives on this loop's thread)
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
        self._tls_task: asyncio.Task[None] | None = None
        self._early: list[bytes] = []  # TLS data decrypted before start_tls returned
        self._expiry: asyncio.TimerHandle | None = None
        self._closing = False  # close() was called (a TLS handshake it ends is no failure)
        # nobody may await these: keep "exception never retrieved" quiet
        self.established.add_done_callback(_consume)
        self.closed.add_done_callback(_consume)

    # --- asyncio.Protocol ----------------------------------------------------------------

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's are not registered as asyncio.Transport subclasses)
        assert hasattr(transport, "write")
        self.transport = cast(asyncio.Transport, transport)
        transport = self.transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        if sock is not None and sock.family == getattr(socket, "AF_UNIX", None):
            # unixsock-stream: framed as TCP; a path is no (host, port) address
            self.protocol = "unixsock-stream"
            self.local_address = self.remote_address = None
        else:
            self.local_address = transport.get_extra_info("sockname")
            self.remote_address = transport.get_extra_info("peername")
        if self.admit is not None and not self.admit(self):
            transport.abort()
            return
        tls = self.tls
        if tls is not None:
            self.protocol = "tls"
            if sock is not None:
                set_buffers(sock, tls)
            if transport.get_extra_info("ssl_object") is None:
                # Accepted: nothing may be read as plaintext; start_tls resumes reading.
                transport.pause_reading()
                self._tls_task = self._loop.create_task(self._accept_tls(transport, tls))
                return
            self._tls_established(transport, tls)  # connected: create_connection did TLS
        self._start_link()

    def _start_link(self) -> None:
        transport = self.transport
        assert transport is not None
        # pause_writing() past half the bound keeps room for Block messages
        transport.set_write_buffer_limits(high=max(self.max_queue_bytes // 2, 1))
        self.link = Link(
            self.config, self.role, self._loop.time(), keep_raw=self._keep_raw, reassembly_budget=self.reassembly_budget
        )
        self._flush()
        self._rearm()

    @override
    def get_buffer(self, sizehint: int) -> memoryview:
        return self._rx

    @override
    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._rx[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        """Bytes read (``data`` is only valid during the call: a view of the shared buffer)."""
        link = self.link
        if link is None:
            # The TLS layer hands on what came with the peer's last handshake message
            # before start_tls returns: kept for the link about to start.
            if self._tls_task is not None:
                self._early.append(bytes(data))
            return
        events = link.rx.receive_data(data, self._loop.time())
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

    @override
    def eof_received(self) -> bool:
        if self.link is not None:
            self._dispatch(self.link.connection_lost("peer closed the connection"))
        return False

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
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

    @override
    def pause_writing(self) -> None:
        self._write_paused = True
        self._space.clear()

    @override
    def resume_writing(self) -> None:
        self._write_paused = False
        self._flush()

    # --- sending -------------------------------------------------------------------------

    @property
    def queued_bytes(self) -> int:
        """Bytes accepted by :meth:`send` and not yet handed to the kernel."""
        link = self.link
        # (Link.pending_bytes, read here from its state: this runs twice per routed message)
        n = 0 if link is None else link.s.pending_bytes + len(link.s.out)
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
        transport = self.transport
        if (
            express
            and priority is not None
            and type(message) is bytes
            and not self._write_paused
            and transport is not None
            and not transport.is_closing()
        ):
            # the common express case, nothing queued before it: framed and written now
            data = link.tx.batch_now(message, reliable=reliable, priority=priority)
            if data is not None:
                transport.write(data)
                return True
        link.tx.send(message, reliable=reliable, priority=priority)
        self._queued(link, express)
        return True

    def send_run(
        self,
        data: bytes,
        ends: Sequence[int],
        *,
        reliable: bool = True,
        priority: int = 5,
        drop_if_full: bool = False,
        express: bool = False,
    ) -> bool:
        """Queue several encoded messages at once (see :meth:`Link.send_run`); with
        ``drop_if_full`` all of them are dropped when the queue is full (False);
        ``express``: written now."""
        link = self.link
        if link is None or self.closed.done():
            return False
        if drop_if_full and self.is_full:
            self.dropped += len(ends)
            return False
        link.tx.send_run(data, ends, reliable=reliable, priority=priority)
        self._queued(link, express)
        return True

    def _queued(self, link: Link, express: bool) -> None:
        """Something was queued on ``link``: written now when express or when a whole
        batch is queued, else at the end of the loop's turn (one write for all of it).
        Waiting with a whole batch gains no batching, and one read can route megabytes
        (libuv reads a socket up to 32 times in a row while each read fills the buffer)."""
        s = link.s
        if express or s.pending_bytes + len(s.out) >= s.max_payload:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

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
        s = link.s
        if s.pending_bytes or s.out:  # link.has_output, read from its state: after every read
            data = link.tx.data_to_send()
            if data and not transport.is_closing():
                transport.write(data)
        # (cleared only by pause_writing and wait_writable: skip the check while set)
        if not self._space.is_set() and not self._write_paused and self.queued_bytes < self.max_queue_bytes:
            self._space.set()
        if s.state is State.CLOSED and not transport.is_closing():  # link.is_closed
            transport.close()

    @property
    def link_qos(self) -> LinkQos | None:
        """The negotiated priority range and reliability (None: QoS off or not open)."""
        link = self.link
        return None if link is None else link.s.link_qos

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
            self._closing = True
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
        self._closing = True
        if self.transport is not None:
            self.transport.abort()

    # --- TLS -----------------------------------------------------------------------------

    async def _accept_tls(self, raw: asyncio.Transport, tls: LinkTls) -> None:
        """Run the server side of the TLS handshake, then the Zenoh link over it."""
        try:
            transport = await self._loop.start_tls(
                raw, self, tls.context, server_side=True, ssl_handshake_timeout=tls.handshake_timeout_s
            )
            if transport is None:
                raise ConnectionError("the TLS layer gave no transport")
        except Exception as exc:  # noqa: BLE001  (whatever failed, it ends only this link)
            self._tls_failed(raw, exc)
            return
        except BaseException as exc:  # cancelled (the loop is stopping): still report it
            self._tls_failed(raw, exc)
            raise
        finally:
            self._tls_task = None
        if self.closed.done():  # closed while the handshake ran
            transport.abort()
            return
        self.transport = transport
        self._tls_established(transport, tls)
        self._start_link()
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)

    def _tls_failed(self, raw: asyncio.Transport, exc: BaseException) -> None:
        self._early = []
        raw.abort()  # start_tls has closed it; abort also drops what it had queued
        level = logging.WARNING
        if self._closing or isinstance(exc, asyncio.CancelledError):
            level, reason = logging.DEBUG, "closed by this side"
        elif isinstance(exc, ssl.SSLCertVerificationError):
            reason = f"{exc.reason}: {exc.verify_message}"
        elif isinstance(exc, ssl.SSLError) and exc.reason:
            reason = exc.reason  # the short OpenSSL name, e.g. PEER_DID_NOT_RETURN_A_CERTIFICATE
        elif isinstance(exc, ConnectionAbortedError):  # asyncio's handshake timeout
            reason = f"no TLS handshake within {self.tls.handshake_timeout_s if self.tls else 0:g} s"
        elif isinstance(exc, ConnectionResetError):
            # closed before or during the handshake: a port probe as much as a TLS failure
            level, reason = logging.INFO, "the peer closed the connection"
        else:
            reason = str(exc) or type(exc).__name__
        log.log(level, "TLS handshake with %s failed: %s", _peer(self.remote_address), reason)
        if not self.closed.done():
            self._dispatch([LinkClosed(CloseReason.GENERIC, True, f"TLS handshake failed: {reason}")])
        if not self._lost.done():
            self._lost.set_result(None)
        self._space.set()

    def _tls_established(self, transport: asyncio.BaseTransport, tls: LinkTls) -> None:
        peercert = transport.get_extra_info("peercert")
        self.cert_common_name = peer_common_name(peercert)
        if tls.close_link_on_expiration:
            not_after = peer_not_after(peercert)
            if not_after is None:
                log.warning(
                    "cannot watch the expiry of the TLS link with %s: the peer presented no certificate",
                    _peer(self.remote_address),
                )
            else:
                self._check_expiry(not_after)

    def _check_expiry(self, not_after: float) -> None:
        """Close the link once the peer's certificate expires (close_link_on_expiration)."""
        self._expiry = None
        left = not_after - time.time()  # certificates expire by the wall clock
        if left <= 0:
            log.warning("closing the TLS link with %s: the peer's certificate expired", _peer(self.remote_address))
            self.close(CloseReason.GENERIC)
            return
        self._expiry = self._loop.call_later(min(left, EXPIRY_CHECK_MAX_S), self._check_expiry, not_after)

    # --- internals -----------------------------------------------------------------------

    def _dispatch(self, events: list[Event]) -> None:
        cb = self.on_event
        for ev in events:
            if ev.__class__ in _DATA_EVENTS:
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


#: Bytes one read takes at most (asyncio's own read size).
RX_BUFFER_BYTES = 256 * 1024
_rx_local = threading.local()


def _rx_buffer() -> memoryview:
    """The read buffer of this thread's links (one event loop per thread: a link's bytes
    are consumed before the loop reads another socket)."""
    try:
        return _rx_local.view  # type: ignore[no-any-return]
    except AttributeError:
        view = _rx_local.view = memoryview(bytearray(RX_BUFFER_BYTES))
        return view


def _consume(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()


def _peer(address: tuple[str, int] | None) -> str:
    if not address:
        return "an unknown address"
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
