"""A blocking msgq client in the style of BIND 10's ``isc.cc.Session``.

::

    from pyzenoh.msgq import Session

    with Session("/tmp/msgq.sock") as cc:            # or Session() / Session("tcp/127.0.0.1:9912")
        cc.group_subscribe("Boss")
        seq = cc.group_sendmsg({"command": ["ping"]}, "Resolver")
        answer, env = cc.group_recvmsg(nonblock=False, seq=seq, timeout=2.0)

Where to connect: the argument, else ``$BIND10_MSGQ_SOCKET_FILE``, else
:data:`~pyzenoh.msgq.server.DEFAULT_SOCKET_FILE`. A value of the form ``tcp/HOST:PORT``
connects over TCP instead of a Unix socket.

Same API as ``isc.cc.Session`` (June 2010): ``lname``, ``sendmsg``, ``recvmsg`` (returns
``(env, msg)``), ``group_subscribe``, ``group_unsubscribe``, ``group_sendmsg`` (returns the seq,
which starts at 2), ``group_recvmsg`` (returns ``(msg, env)``), ``group_reply``,
``has_queued_msgs`` and ``close``, with these differences:

* **Timeouts.** Connecting, the getlname exchange and blocking receives give up after the
  session timeout (:data:`DEFAULT_TIMEOUT`; ``Session(timeout=None)`` waits forever) with
  :class:`SessionTimeout`. ``recvmsg``/``group_recvmsg`` take ``timeout=`` to override it for
  one call (``math.inf`` for no limit). BIND 10 could hang forever.
* **Queueing.** As in BIND 10, ``seq=None`` returns the first message that is not a reply (no
  ``reply`` key) and ``seq=N`` the first whose ``reply == N``; everything else read meanwhile
  is kept, in order, for later calls. Header-only messages are filtered the same way (BIND 10
  returned them whatever ``seq`` asked for).
* **End of stream** raises :class:`SessionError` and closes the session (BIND 10 on Python 3
  returned ``(None, None)`` or spun forever). Non-blocking receives do not swallow errors.
* **Dialect.** ``Session(dialect="seed")`` sends every scalar as DATA, like the 2009 encoding;
  the daemon answers it in kind. Seed headers read back are normalised to ``str``/``int``.
* A frame is written with one ``sendall``; a whole-frame :class:`~pyzenoh.msgq.frame.FrameReader`
  keeps partial input between calls.
* Extras: ``want_answer=`` on ``group_sendmsg``, ``subtype=`` on ``group_subscribe``,
  :meth:`Session.stats` and :meth:`Session.ping`.

A session may send from several threads (sends are locked); receive from one thread at a time.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Self

from pyzenoh.errors import PyZenohError, UsageError
from pyzenoh.msgq.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    MAX_HEADER_SIZE,
    Frame,
    FrameReader,
    encode_frame,
)
from pyzenoh.msgq.protocol import WILDCARD, Header, normalize_seed_header
from pyzenoh.msgq.server import DEFAULT_SOCKET_FILE, SOCKET_FILE_ENV, parse_tcp_endpoint
from pyzenoh.msgq.skan import Dialect, SkanError, SkanValue, decode, decode_ex, encode

__all__ = [
    "DEFAULT_TIMEOUT",
    "ProtocolError",
    "Session",
    "SessionError",
    "SessionTimeout",
]

DEFAULT_TIMEOUT = 4.0
"""Seconds, as the JSON-era BIND 10 session used."""
_READ_SIZE = 256 * 1024

Body = dict[str, SkanValue]
Message = tuple[Header, Body | None]


class SessionError(PyZenohError):
    """The session cannot be used: not connected, closed, or the connection broke."""


class SessionTimeout(SessionError):
    """Nothing matching arrived in time."""


class ProtocolError(SessionError):
    """The daemon answered something unexpected (e.g. no lname)."""


class Session:
    """A connection to msgq (see the module docstring)."""

    def __init__(
        self,
        socket_file: str | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        dialect: Dialect | str = Dialect.BIND10,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    ) -> None:
        try:
            self.dialect = Dialect(dialect)
        except ValueError:
            raise UsageError(f"unknown dialect {dialect!r}") from None
        self.timeout = timeout
        self.target = socket_file or os.environ.get(SOCKET_FILE_ENV) or DEFAULT_SOCKET_FILE
        self._reader = FrameReader(max_frame_size)
        self._queue: list[Message] = []
        self._errors: list[SkanError] = []
        self._sequence = 1
        self._send_lock = threading.RLock()
        self._closed = False
        self._sock = self._connect(self.target, timeout)
        try:
            self.sendmsg({"type": "getlname"})
            _, body = self._wait(lambda env: env.get("type") == "getlname", None)
        except BaseException:
            self.close()
            raise
        lname = body.get("lname") if body is not None else None
        if isinstance(lname, bytes):  # a seed-dialect answer
            lname = lname.decode("utf-8", "replace")
        if not isinstance(lname, str):
            self.close()
            raise ProtocolError("Could not get local name")
        self._lname = lname

    @staticmethod
    def _connect(target: str, timeout: float | None) -> socket.socket:
        try:
            if target.startswith("tcp/"):
                sock = socket.create_connection(parse_tcp_endpoint(target), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            else:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.settimeout(timeout)
                    sock.connect(target)
                except BaseException:
                    sock.close()
                    raise
        except OSError as exc:
            raise SessionError(f"cannot connect to msgq at {target}: {exc}") from exc
        return sock

    # -- properties / lifecycle -----------------------------------------------------------

    @property
    def lname(self) -> str:
        """Our local name, as assigned by the daemon."""
        return self._lname

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the connection; later calls raise :class:`SessionError`."""
        if not self._closed:
            self._closed = True
            sock = getattr(self, "_sock", None)
            if sock is not None:
                sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionError("Session has been closed.")

    # -- sending --------------------------------------------------------------------------

    def sendmsg(self, env: Mapping[str, Any] | bytes, msg: Mapping[str, Any] | bytes | None = None) -> None:
        """Send one frame: ``env`` is the header, ``msg`` the body (mappings are encoded in
        this session's dialect, bytes are sent as they are)."""
        self._check_open()
        if isinstance(env, (bytes, bytearray, memoryview)):
            header = bytes(env)
        else:
            header = encode(env, dialect=self.dialect)
        if msg is None or isinstance(msg, (bytes, bytearray, memoryview)):
            body = bytes(msg) if msg is not None else None
        else:
            body = encode(msg, dialect=self.dialect)
        data = encode_frame(header, body)
        with self._send_lock:
            self._check_open()
            try:
                self._sock.settimeout(self.timeout)
                self._sock.sendall(data)
            except OSError as exc:
                self.close()
                raise SessionError(f"send to msgq failed: {exc}") from exc

    def _next_sequence(self) -> int:
        with self._send_lock:
            self._sequence += 1
            return self._sequence

    def group_subscribe(self, group: str, instance: str = WILDCARD, subtype: str | None = None) -> None:
        """Subscribe to (group, instance); ``subtype`` is ``normal``/``meonly``/``promisc``."""
        header: dict[str, Any] = {"type": "subscribe", "group": group, "instance": instance}
        if subtype is not None:
            header["subtype"] = subtype
        self.sendmsg(header)

    def group_unsubscribe(self, group: str, instance: str = WILDCARD) -> None:
        self.sendmsg({"type": "unsubscribe", "group": group, "instance": instance})

    def group_sendmsg(
        self,
        msg: Mapping[str, Any] | bytes,
        group: str,
        instance: str = WILDCARD,
        to: str = WILDCARD,
        *,
        want_answer: bool = False,
    ) -> int:
        """Send ``msg`` to a group (or, with ``to``, to one lname); returns its seq."""
        seq = self._next_sequence()
        header: dict[str, Any] = {
            "type": "send",
            "from": self._lname,
            "to": to,
            "group": group,
            "instance": instance,
            "seq": seq,
        }
        if want_answer:
            header["want_answer"] = True
        self.sendmsg(header, msg)
        return seq

    def group_reply(self, routing: Mapping[str, Any], msg: Mapping[str, Any] | bytes) -> int:
        """Answer the message whose header is ``routing``; returns the new seq."""
        try:
            header = {
                "type": "send",
                "from": self._lname,
                "to": routing["from"],
                "group": routing["group"],
                "instance": routing["instance"],
                "seq": self._next_sequence(),
                "reply": routing["seq"],
            }
        except KeyError as exc:
            raise UsageError(f"cannot reply: the routing header has no {exc.args[0]!r}") from None
        self.sendmsg(header, msg)
        return int(header["seq"])

    # -- receiving ------------------------------------------------------------------------

    def has_queued_msgs(self) -> bool:
        """True if messages read earlier are waiting in the local queue."""
        return bool(self._queue)

    def recvmsg(
        self, nonblock: bool = True, seq: int | None = None, timeout: float | None = None
    ) -> tuple[Header, Body | None] | tuple[None, None]:
        """``(env, msg)`` of the next matching message, or ``(None, None)`` when ``nonblock``
        and nothing matches yet. Blocking waits at most ``timeout`` (default: the session's)
        and then raises :class:`SessionTimeout`."""
        if seq is None:
            match: Callable[[Header], bool] = lambda env: "reply" not in env
        else:
            match = lambda env: env.get("reply") == seq
        found = self._receive(match, block=not nonblock, timeout=timeout)
        return found if found is not None else (None, None)

    def group_recvmsg(
        self, nonblock: bool = True, seq: int | None = None, timeout: float | None = None
    ) -> tuple[Body | None, Header] | tuple[None, None]:
        """Like :meth:`recvmsg` but returns ``(msg, env)``, as BIND 10 did."""
        env, msg = self.recvmsg(nonblock, seq, timeout)
        if env is None:
            return None, None
        return msg, env

    def stats(self, timeout: float | None = None) -> dict[str, SkanValue]:
        """Ask the daemon for its counters."""
        seq = self._next_sequence()
        self.sendmsg({"type": "stats", "seq": seq})
        _, body = self._wait(lambda env: env.get("reply") == seq, timeout)
        stats = body.get("stats") if body else None
        if not isinstance(stats, dict):
            raise ProtocolError("malformed stats answer")
        return stats

    def ping(self, msg: Mapping[str, Any] | None = None, timeout: float | None = None) -> Body | None:
        """Round trip through the daemon; returns the echoed body."""
        seq = self._next_sequence()
        self.sendmsg({"type": "ping", "seq": seq}, msg)
        _, body = self._wait(lambda env: env.get("reply") == seq, timeout)
        return body

    def _take(self, match: Callable[[Header], bool]) -> Message | None:
        for index, (env, msg) in enumerate(self._queue):
            if match(env):
                del self._queue[index]
                return env, msg
        return None

    def _wait(self, match: Callable[[Header], bool], timeout: float | None) -> Message:
        found = self._receive(match, block=True, timeout=timeout)
        assert found is not None  # a blocking receive returns a message or raises
        return found

    def _receive(self, match: Callable[[Header], bool], *, block: bool, timeout: float | None) -> Message | None:
        self._check_open()
        limit = self.timeout if timeout is None else timeout
        deadline = None if limit is None or math.isinf(limit) else time.monotonic() + limit
        pumped = False
        while True:
            found = self._take(match)
            if found is not None:
                return found
            if self._errors:
                # An undecodable frame surfaces once nothing queued answers the call.
                raise self._errors.pop(0)
            if not block and pumped:
                return None
            self._pump(deadline=deadline, block=block)
            pumped = True

    def _pump(self, *, deadline: float | None, block: bool) -> None:
        """Read what is available (non-blocking) or at least one chunk (blocking)."""
        sock = self._sock
        while True:
            if block:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise SessionTimeout("no matching message from msgq in time")
                sock.settimeout(remaining)
            else:
                sock.settimeout(0.0)
            try:
                data = sock.recv(_READ_SIZE)
            except (BlockingIOError, InterruptedError):
                return
            except TimeoutError:
                raise SessionTimeout("no matching message from msgq in time") from None
            except OSError as exc:
                self.close()
                raise SessionError(f"receive from msgq failed: {exc}") from exc
            if not data:
                self.close()
                raise SessionError("msgq closed the connection")
            try:
                frames = self._reader.feed(data)
            except SkanError:  # the stream is out of sync for good
                self.close()
                raise
            for frame in frames:
                try:
                    self._queue.append(self._parse(frame))
                except SkanError as exc:  # framing is intact: drop this frame, keep the rest
                    self._errors.append(exc)
            if block:
                return

    def _parse(self, frame: Frame) -> Message:
        decoded = decode_ex(frame.header, max_size=MAX_HEADER_SIZE)
        env = decoded.value
        if decoded.dialect == Dialect.SEED:
            env = normalize_seed_header(env)
        msg = decode(frame.body) if frame.body is not None else None
        return env, msg
