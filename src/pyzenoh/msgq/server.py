"""asyncio glue for the msgq daemon: listeners, per-client queues, lifecycle.

:class:`MsgqDaemon` runs inside any asyncio program (``pyzenoh msgq`` runs it alone, ``pyzenoh
router --msgq PATH`` embeds it next to the router)::

    async with MsgqDaemon("/run/msgq.sock", ["tcp/127.0.0.1:9912"]) as daemon:
        await daemon.serve_forever()

:func:`serve_msgq` is the same thing as one coroutine that returns on cancellation or on
SIGINT/SIGTERM.

Listeners
---------
* A Unix stream socket at ``socket_file``; if that is ``None``, at ``$BIND10_MSGQ_SOCKET_FILE``;
  if that is unset, at :data:`DEFAULT_SOCKET_FILE` (``/usr/local/var/bind10-devel/msgq_socket``,
  the path a default BIND 10 build of June 2010 used, so BIND 10 clients find us unconfigured).
  ``unix=False`` turns it off. Missing parent directories are created. An existing path is
  handled more carefully than BIND 10 (which deleted whatever was there): a socket that still
  accepts connections means another daemon is running (``OSError(EADDRINUSE)``), a dead socket
  is removed, anything that is not a socket is left alone (``OSError(EEXIST)``). On close the
  listener is closed and the socket file unlinked if it is still the one we created.
* Optional TCP listeners, ``"tcp/HOST:PORT"`` (``HOST`` may be ``[v6]``; port 0 picks a free
  port, see :attr:`MsgqDaemon.tcp_addresses`), as BIND 10 used on 127.0.0.1:9912 before May 2010.

Per-client robustness
---------------------
Everything is non-blocking, so a client that sends half a frame, or reads slowly, or resets
with unread data only affects itself (BIND 10 stalled or crashed). Every limit below is a
named constant with a keyword argument (and a ``pyzenoh msgq`` option) to change it, is counted
in ``stats`` and is logged (the first event of each kind in full, then a periodic summary).

* **Output queue** (per client): frames wait in user space while the client's socket buffer is
  full, up to ``max_queue_bytes`` (default: :data:`DEFAULT_MAX_QUEUE_BYTES`, 64 MiB, or four
  maximal frames if ``max_frame_size`` is raised beyond about 32 MiB) and ``max_queue_messages``
  (:data:`DEFAULT_MAX_QUEUE_MESSAGES`). A client with nothing pending always accepts the next
  frame, and ``max_queue_bytes`` must hold two maximal frames, so any legal frame (up to
  ``max_frame_size``) reaches a client that reads, even behind another one. When a frame does
  not fit, the ``slow_reader`` policy applies:

  - ``"disconnect"`` (default): the client is disconnected at once (``slow_disconnects``; like
    BIND 10 from 2011, which dropped clients that did not drain), so it notices instead of
    silently missing messages;
  - ``"drop"``: that frame is not queued for that client (``queue_drops``; like the 2009 C
    msgq); the client stays.

  ``queue_peak_bytes`` in ``stats`` is the most any client has had pending.
* **Stopped readers** (``slow_reader_timeout``, :data:`DEFAULT_SLOW_READER_TIMEOUT`): "not
  reading" is judged on progress, not on a byte count: a client that has data pending and takes
  not a single byte of it for that long is disconnected (``stalled_disconnects``), whatever the
  policy. A client that keeps reading, however slowly, keeps everything (within the queue
  limits), in order. Other clients never wait for it.
* **Handshake and partial frames** (``handshake_timeout``, ``frame_stall_timeout``): see
  :mod:`pyzenoh.msgq.core`. A connection that has not issued one valid command within
  :data:`~pyzenoh.msgq.core.DEFAULT_HANDSHAKE_TIMEOUT` seconds is closed; so is a client that
  stops in the middle of a frame.
* **Client cap** (``max_clients``, :data:`DEFAULT_MAX_CLIENTS`) counts every connection (it
  bounds sockets). At the cap, a newcomer evicts the connection that has waited longest
  without issuing a valid command (``evicted_clients``); only when every connection is an
  established client is the newcomer refused (``refused_clients``). The reasoning is in
  ``_Connection.connection_made``.
* A frame whose length prefix says more than ``max_frame_size`` disconnects its sender.

Bridge
------
``MsgqDaemon(observer=...)`` (or :meth:`MsgqDaemon.set_observer`) installs the
:class:`~pyzenoh.msgq.core.MsgqObserver` called for every routed send, and
:meth:`MsgqDaemon.inject` delivers a message from outside to the local clients. Both run on
the daemon's event loop thread; from another thread use :meth:`MsgqDaemon.inject_threadsafe`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, Self, cast

from typing_extensions import override

from pyzenoh.errors import UsageError
from pyzenoh.msgq.core import (
    DEFAULT_FRAME_STALL_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    Action,
    Deliver,
    MsgqCore,
    MsgqObserver,
)
from pyzenoh.msgq.flow import OutputQueue
from pyzenoh.msgq.frame import DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "DEFAULT_MAX_CLIENTS",
    "DEFAULT_MAX_QUEUE_BYTES",
    "DEFAULT_MAX_QUEUE_MESSAGES",
    "DEFAULT_SLOW_READER_TIMEOUT",
    "DEFAULT_SOCKET_FILE",
    "SOCKET_FILE_ENV",
    "MsgqDaemon",
    "SlowReaderPolicy",
    "parse_tcp_endpoint",
    "resolve_socket_file",
    "serve_msgq",
]

log = logging.getLogger("pyzenoh.msgq")

DEFAULT_SOCKET_FILE = "/usr/local/var/bind10-devel/msgq_socket"
SOCKET_FILE_ENV = "BIND10_MSGQ_SOCKET_FILE"
DEFAULT_MAX_QUEUE_BYTES = 64 * 1024 * 1024
"""Bytes a client may have pending (in user space) before the slow-reader policy applies:
four maximal frames at the default ``max_frame_size``. Must be at least two maximal frames."""
DEFAULT_MAX_QUEUE_MESSAGES = 65536
"""Frames a client may have waiting in its queue before the slow-reader policy applies."""
DEFAULT_SLOW_READER_TIMEOUT = 30.0
"""Seconds a client may leave pending data untouched (not one byte read) before it is
disconnected. BIND 10 (2011) allowed 0.1 s; a module busy for a few seconds is not dead."""
DEFAULT_MAX_CLIENTS = 1024
"""BIND 10 listened with a backlog of 1024; we also cap the connected clients."""
LENGTH_FIELD_SIZE = 4
"""A frame on the wire is this plus its total length field (at most ``max_frame_size``)."""
TRANSPORT_HIGH_WATER = 256 * 1024
"""Bytes handed to a client's transport beyond what its socket took, before the rest waits in
its :class:`~pyzenoh.msgq.flow.OutputQueue` (which counts and limits messages)."""
MIN_TICK_INTERVAL = 0.05
MAX_TICK_INTERVAL = 1.0
"""Bounds on the period of the deadline checks (a quarter of the shortest timeout)."""


class SlowReaderPolicy(StrEnum):
    """What happens when a client's outgoing queue is full."""

    DISCONNECT = "disconnect"
    DROP = "drop"


def resolve_socket_file(socket_file: str | None = None) -> str:
    """The explicit path, else ``$BIND10_MSGQ_SOCKET_FILE``, else :data:`DEFAULT_SOCKET_FILE`."""
    if socket_file:
        return socket_file
    return os.environ.get(SOCKET_FILE_ENV) or DEFAULT_SOCKET_FILE


def parse_tcp_endpoint(text: str) -> tuple[str, int]:
    """``"tcp/HOST:PORT"`` (or ``"HOST:PORT"``, ``"tcp/[::1]:PORT"``) -> ``(host, port)``."""
    spec = text.removeprefix("tcp/")
    host, sep, port_text = spec.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise UsageError(f"bad TCP endpoint {text!r}: expected tcp/HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    port = int(port_text)
    if port > 65535:
        raise UsageError(f"bad TCP endpoint {text!r}: port out of range")
    return host, port


class _Connection(asyncio.Protocol):
    """One client socket; forwards bytes to the core and applies what comes back."""

    def __init__(self, daemon: MsgqDaemon) -> None:
        self.daemon = daemon
        self.transport: asyncio.Transport | None = None
        self.cid = 0
        self.dropping = False
        self.paused = False
        self.out = OutputQueue(daemon.max_queue_bytes, daemon.max_queue_messages)

    @override
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert hasattr(transport, "write")  # a stream transport (uvloop's are no asyncio.Transport)
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        daemon = self.daemon
        core = daemon.core
        if len(daemon._conns) >= daemon.max_clients:
            # The cap bounds sockets, so it counts every connection. At the cap, the one to give
            # up is the connection that has waited longest without issuing a valid command:
            # BIND 10's clients send getlname as soon as they connect, so a real client spends
            # milliseconds unestablished and the oldest silent connection is the least likely
            # to be one. A running module is never evicted for a newcomer, and a crowd of
            # connections that never speak cannot lock a (re)starting module out. (Counting
            # only established clients would leave the number of sockets unbounded.) Only when
            # every connection is an established client is the newcomer refused.
            victim = core.oldest_unestablished()
            if victim is None:
                core.counters.refused_clients += 1
                core.events.event(
                    "refused_clients",
                    logging.WARNING,
                    "msgq: refusing a client: %d established clients connected (max_clients)",
                    len(daemon._conns),
                )
                transport.abort()
                return
            why = f"evicted for a new client at max_clients={daemon.max_clients}"
            daemon._apply(core.kick(victim, "evicted_clients", why))
        transport.set_write_buffer_limits(high=TRANSPORT_HIGH_WATER)
        self.cid = core.connect(time.time())
        daemon._conns[self.cid] = self

    @override
    def data_received(self, data: bytes) -> None:
        if self.cid:
            self.daemon._apply(self.daemon.core.receive(self.cid, data))

    @override
    def eof_received(self) -> bool:
        core = self.daemon.core
        if self.cid and self.cid in core.clients and core.mid_frame(self.cid):
            core.events.event(
                "eof_mid_frame",
                logging.INFO,
                "msgq: %s closed in the middle of a frame",
                core.lname(self.cid),
            )
        return False  # close our side too, as BIND 10 did on EOF

    @override
    def connection_lost(self, exc: Exception | None) -> None:
        if self.cid:
            core = self.daemon.core
            if exc is not None and self.cid in core.clients:
                core.events.event(
                    "connection_errors",
                    logging.INFO,
                    "msgq: %s connection lost: %s",
                    core.lname(self.cid),
                    exc,
                )
            core.disconnect(self.cid)
            self.daemon._conns.pop(self.cid, None)

    @override
    def pause_writing(self) -> None:
        self.paused = True

    @override
    def resume_writing(self) -> None:
        self.paused = False
        self._flush()

    def _in_transport(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport is not None else 0

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        daemon = self.daemon
        counters = daemon.core.counters
        in_transport = transport.get_write_buffer_size()
        if not self.out.admits(len(data), in_transport):
            lname = daemon.core.lname(self.cid) if self.cid in daemon.core.clients else "?"
            pending = self.out.pending(in_transport)
            if daemon.slow_reader == SlowReaderPolicy.DROP:
                counters.queue_drops += 1
                if not self.dropping:
                    daemon.core.events.event(
                        "queue_drops",
                        logging.WARNING,
                        "msgq: %s is not keeping up (%d bytes, %d frames pending); dropping its messages",
                        lname,
                        pending,
                        len(self.out),
                    )
                    self.dropping = True
                return
            counters.slow_disconnects += 1
            daemon.core.events.event(
                "slow_disconnects",
                logging.WARNING,
                "msgq: %s is not keeping up (%d bytes, %d frames pending); disconnecting",
                lname,
                pending,
                len(self.out),
            )
            self.abort()
            return
        self.dropping = False
        if self.paused or len(self.out):
            self.out.push(data)
        else:
            self.out.handed_over(len(data))
            transport.write(data)  # may call pause_writing()
        pending = self.out.pending(transport.get_write_buffer_size())
        counters.queue_peak_bytes = max(counters.queue_peak_bytes, pending)

    def _flush(self) -> None:
        transport = self.transport
        while not self.paused and len(self.out) and transport is not None and not transport.is_closing():
            transport.write(self.out.pop())  # may call pause_writing()

    def check_stalled(self, now: float) -> bool:
        """Progress check for :meth:`MsgqDaemon._tick`: True if this reader has stopped."""
        return self.out.stalled(now, self._in_transport(), self.daemon.slow_reader_timeout)

    def abort(self) -> None:
        self.daemon.core.disconnect(self.cid)
        self.daemon._conns.pop(self.cid, None)
        if self.transport is not None:
            self.transport.abort()


class MsgqDaemon:
    """The msgq daemon on an asyncio event loop (see the module docstring)."""

    def __init__(
        self,
        socket_file: str | None = None,
        tcp: Sequence[str] = (),
        *,
        unix: bool = True,
        hostname: str | None = None,
        observer: MsgqObserver | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_queue_bytes: int | None = None,
        max_queue_messages: int = DEFAULT_MAX_QUEUE_MESSAGES,
        slow_reader: SlowReaderPolicy | str = SlowReaderPolicy.DISCONNECT,
        slow_reader_timeout: float | None = DEFAULT_SLOW_READER_TIMEOUT,
        max_clients: int = DEFAULT_MAX_CLIENTS,
        handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT,
        frame_stall_timeout: float | None = DEFAULT_FRAME_STALL_TIMEOUT,
        enforce_from: bool = False,
    ) -> None:
        two_frames = 2 * (LENGTH_FIELD_SIZE + max_frame_size)
        if max_queue_bytes is None:
            max_queue_bytes = DEFAULT_MAX_QUEUE_BYTES
            if max_queue_bytes < two_frames:
                max_queue_bytes = 2 * two_frames
        if max_queue_bytes < 1 or max_queue_messages < 1 or max_clients < 1:
            raise UsageError("max_queue_bytes, max_queue_messages and max_clients must be positive")
        if max_queue_bytes < two_frames:
            raise UsageError(
                f"max_queue_bytes={max_queue_bytes} must hold two maximal frames "
                f"(2 * (4 + max_frame_size) = {two_frames})"
            )
        for name, value in (
            ("slow_reader_timeout", slow_reader_timeout),
            ("handshake_timeout", handshake_timeout),
            ("frame_stall_timeout", frame_stall_timeout),
        ):
            if value is not None and not value > 0:
                raise UsageError(f"{name} must be positive (or None for no limit)")
        try:
            self.slow_reader = SlowReaderPolicy(slow_reader)
        except ValueError:
            raise UsageError(f"unknown slow_reader policy {slow_reader!r}") from None
        self.socket_file: str | None = resolve_socket_file(socket_file) if unix else None
        self.tcp_endpoints = [parse_tcp_endpoint(spec) for spec in tcp]
        if self.socket_file is None and not self.tcp_endpoints:
            raise UsageError("msgq needs a Unix socket or at least one TCP listener")
        self.core = MsgqCore(
            hostname=hostname or socket.gethostname(),
            observer=observer,
            max_frame_size=max_frame_size,
            enforce_from=enforce_from,
            handshake_timeout=handshake_timeout,
            frame_stall_timeout=frame_stall_timeout,
        )
        self.max_queue_bytes = max_queue_bytes
        self.max_queue_messages = max_queue_messages
        self.slow_reader_timeout = slow_reader_timeout
        self.max_clients = max_clients
        self._tick_handle: asyncio.TimerHandle | None = None
        self.tcp_addresses: list[tuple[str, int]] = []
        self._conns: dict[int, _Connection] = {}
        self._servers: list[asyncio.Server] = []
        self._socket_inode: tuple[int, int] | None = None
        self._closed = asyncio.Event()
        self._started = False
        self._close_task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind every listener. On failure nothing stays bound."""
        if self._started:
            raise UsageError("MsgqDaemon.start() called twice")
        self._started = True
        self._loop = asyncio.get_running_loop()
        try:
            if self.socket_file is not None:
                await self._start_unix(self.socket_file)
            for host, port in self.tcp_endpoints:
                server = await asyncio.get_running_loop().create_server(
                    lambda: _Connection(self), host, port, backlog=1024
                )
                self._servers.append(server)
                for sock in server.sockets:
                    address = sock.getsockname()
                    self.tcp_addresses.append((str(address[0]), int(address[1])))
        except BaseException:
            await self.close()
            raise
        self._schedule_tick()
        log.info(
            "msgq listening on %s",
            ", ".join(
                ([self.socket_file] if self.socket_file else []) + [f"tcp/{h}:{p}" for h, p in self.tcp_addresses]
            ),
        )

    async def _start_unix(self, path: str) -> None:
        await _clear_stale_socket(path)
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        server = await asyncio.get_running_loop().create_unix_server(lambda: _Connection(self), path, backlog=1024)
        self._servers.append(server)
        info = os.stat(path)
        self._socket_inode = (info.st_dev, info.st_ino)

    async def close(self) -> None:
        """Stop listening, disconnect every client, unlink the socket file."""
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
        for server in self._servers:
            server.close()
        for conn in list(self._conns.values()):
            conn.abort()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        if self.socket_file is not None and self._socket_inode is not None:
            try:
                info = os.stat(self.socket_file)
                if (info.st_dev, info.st_ino) == self._socket_inode:
                    os.unlink(self.socket_file)
            except OSError:
                pass
            self._socket_inode = None
        self._closed.set()

    async def serve_forever(self) -> None:
        """Wait until :meth:`close` is called (or the task is cancelled)."""
        await self._closed.wait()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- bridge ---------------------------------------------------------------------------

    def set_observer(self, observer: MsgqObserver | None) -> None:
        """Install (or remove) the observer called for every routed send."""
        self.core.observer = observer

    def inject(self, header: Mapping[str, Any], body: bytes | None = None) -> int:
        """Deliver a ``send`` from outside to the matching local clients; returns how many.

        Must be called on the daemon's loop thread. See :meth:`MsgqCore.inject`.
        """
        actions = self.core.inject(header, body)
        self._apply(actions)
        return sum(1 for action in actions if isinstance(action, Deliver))

    def inject_threadsafe(self, header: Mapping[str, Any], body: bytes | None = None) -> None:
        """:meth:`inject` from any thread (e.g. a Zenoh callback); returns at once.

        A bad header is reported through the event loop's exception handler.
        """
        if self._loop is None:
            raise UsageError("inject_threadsafe() before start()")
        self._loop.call_soon_threadsafe(self.inject, dict(header), body)

    # -- internals ------------------------------------------------------------------------

    @property
    def client_count(self) -> int:
        return len(self._conns)

    @property
    def tick_interval(self) -> float:
        """Seconds between deadline checks: a quarter of the shortest timeout, bounded."""
        timeouts = [
            value
            for value in (
                self.core.handshake_timeout,
                self.core.frame_stall_timeout,
                self.slow_reader_timeout,
            )
            if value is not None
        ]
        quarter = min(timeouts, default=MAX_TICK_INTERVAL * 4) / 4
        return min(MAX_TICK_INTERVAL, max(MIN_TICK_INTERVAL, quarter))

    def _schedule_tick(self) -> None:
        if self._loop is not None and not self._closed.is_set():
            self._tick_handle = self._loop.call_later(self.tick_interval, self._tick)

    def _tick(self) -> None:
        now = time.monotonic()
        try:
            self._apply(self.core.tick(now))
            for conn in list(self._conns.values()):
                if conn.cid in self._conns and conn.check_stalled(now):
                    core = self.core
                    lname = core.lname(conn.cid) if conn.cid in core.clients else "?"
                    core.counters.stalled_disconnects += 1
                    core.events.event(
                        "stalled_disconnects",
                        logging.WARNING,
                        "msgq: %s read nothing of %d pending bytes for %g s; disconnecting",
                        lname,
                        conn.out.pending(conn._in_transport()),
                        self.slow_reader_timeout,
                    )
                    conn.abort()
        finally:
            self._schedule_tick()

    def _apply(self, actions: list[Action]) -> None:
        for action in actions:
            conn = self._conns.get(action.client)
            if conn is None:
                continue
            if isinstance(action, Deliver):
                conn.write(action.data)
            else:
                self._conns.pop(action.client, None)
                if conn.transport is not None:
                    conn.transport.abort()


async def _clear_stale_socket(path: str) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise OSError(errno.EEXIST, f"{path} exists and is not a socket; not replacing it")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_unix_connection(path), timeout=2.0)
    except (TimeoutError, OSError):
        log.info("msgq: removing stale socket %s", path)
        os.unlink(path)
        return
    writer.close()
    raise OSError(errno.EADDRINUSE, f"a msgq daemon is already listening on {path}")


async def serve_msgq(
    socket_file: str | None = None,
    tcp: Sequence[str] = (),
    *,
    ready: Callable[[MsgqDaemon], None] | None = None,
    handle_signals: bool = True,
    **options: Any,
) -> None:
    """Run a :class:`MsgqDaemon` until cancelled or, with ``handle_signals`` on the main
    thread, until SIGINT/SIGTERM. ``options`` are :class:`MsgqDaemon` keyword arguments;
    ``ready`` is called once the listeners are bound."""
    daemon = MsgqDaemon(socket_file, tcp, **options)
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    async with daemon:
        if handle_signals and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                try:
                    loop.add_signal_handler(signum, _schedule_close, daemon)
                    installed.append(signum)
                except (NotImplementedError, RuntimeError):
                    pass
        try:
            if ready is not None:
                ready(daemon)
            await daemon.serve_forever()
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)


def _schedule_close(daemon: MsgqDaemon) -> None:
    log.info("msgq: signal received, shutting down")
    if daemon._close_task is None:  # keep a reference so the task is not collected
        daemon._close_task = asyncio.ensure_future(daemon.close())
