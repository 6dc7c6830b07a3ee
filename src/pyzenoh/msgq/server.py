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
with unread data only affects itself (BIND 10 stalled or crashed). Outgoing data per client is
bounded by ``max_queue_bytes`` (bytes waiting in the transport's buffer after the kernel
socket buffer is full). When a new frame would exceed it (and the queue is not empty), the
``slow_reader`` policy applies:

* ``"disconnect"`` (default): the client is disconnected at once (like BIND 10 from 2011, which
  dropped clients that did not drain), so it notices instead of silently missing messages;
* ``"drop"``: that frame is not queued for that client (like the 2009 C msgq); the client stays.

Both are counted in ``stats`` (``slow_disconnects``, ``queue_drops``) and logged. At most
``max_clients`` clients are accepted; more are closed at once. A frame whose length prefix
says more than ``max_frame_size`` disconnects its sender.

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
from typing import Any, Self

from pyzenoh.errors import UsageError
from pyzenoh.msgq.core import Action, Deliver, MsgqCore, MsgqObserver
from pyzenoh.msgq.frame import DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "DEFAULT_MAX_CLIENTS",
    "DEFAULT_MAX_QUEUE_BYTES",
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
DEFAULT_MAX_QUEUE_BYTES = 4 * 1024 * 1024
"""Bytes a client may have waiting in user space before the slow-reader policy applies."""
DEFAULT_MAX_CLIENTS = 1024
"""BIND 10 listened with a backlog of 1024; we also cap the connected clients."""


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

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        daemon = self.daemon
        if len(daemon._conns) >= daemon.max_clients:
            log.warning("msgq: refusing a client: %d clients connected", len(daemon._conns))
            transport.abort()
            return
        self.cid = daemon.core.connect(time.time())
        daemon._conns[self.cid] = self

    def data_received(self, data: bytes) -> None:
        if self.cid:
            self.daemon._apply(self.daemon.core.receive(self.cid, data))

    def eof_received(self) -> bool:
        if self.cid and self.daemon.core.mid_frame(self.cid):
            log.info("msgq: %s closed in the middle of a frame", self.daemon.core.lname(self.cid))
        return False  # close our side too, as BIND 10 did on EOF

    def connection_lost(self, exc: Exception | None) -> None:
        if self.cid:
            core = self.daemon.core
            if exc is not None and self.cid in core.clients:
                log.info("msgq: %s connection lost: %s", core.lname(self.cid), exc)
            core.disconnect(self.cid)
            self.daemon._conns.pop(self.cid, None)

    def write(self, data: bytes) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        daemon = self.daemon
        queued = transport.get_write_buffer_size()
        if queued and queued + len(data) > daemon.max_queue_bytes:
            lname = daemon.core.lname(self.cid) if self.cid in daemon.core.clients else "?"
            if daemon.slow_reader == SlowReaderPolicy.DROP:
                daemon.core.counters.queue_drops += 1
                if not self.dropping:
                    log.warning("msgq: %s is not reading; dropping its messages", lname)
                    self.dropping = True
                return
            daemon.core.counters.slow_disconnects += 1
            log.warning("msgq: %s is not reading (%d bytes queued); disconnecting", lname, queued)
            self.abort()
            return
        self.dropping = False
        transport.write(data)

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
        max_queue_bytes: int = DEFAULT_MAX_QUEUE_BYTES,
        slow_reader: SlowReaderPolicy | str = SlowReaderPolicy.DISCONNECT,
        max_clients: int = DEFAULT_MAX_CLIENTS,
        enforce_from: bool = False,
    ) -> None:
        if max_queue_bytes < 1 or max_clients < 1:
            raise UsageError("max_queue_bytes and max_clients must be positive")
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
        )
        self.max_queue_bytes = max_queue_bytes
        self.max_clients = max_clients
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
        log.info(
            "msgq listening on %s",
            ", ".join(
                ([self.socket_file] if self.socket_file else [])
                + [f"tcp/{h}:{p}" for h, p in self.tcp_addresses]
            ),
        )

    async def _start_unix(self, path: str) -> None:
        await _clear_stale_socket(path)
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        server = await asyncio.get_running_loop().create_unix_server(
            lambda: _Connection(self), path, backlog=1024
        )
        self._servers.append(server)
        info = os.stat(path)
        self._socket_inode = (info.st_dev, info.st_ino)

    async def close(self) -> None:
        """Stop listening, disconnect every client, unlink the socket file."""
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
