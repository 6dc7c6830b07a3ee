"""The msgq daemon as a sans-IO state machine.

Clients are integer ids. The I/O layer (:mod:`pyzenoh.msgq.server`, or anything else) calls

* :meth:`MsgqCore.connect` when a client arrives (the time is passed in; it goes into the
  lname) and :meth:`MsgqCore.disconnect` when it leaves;
* :meth:`MsgqCore.receive` with every chunk of bytes read from a client (any split), or
  :meth:`MsgqCore.handle_frame` with a whole frame;

and performs the returned actions in order: :class:`Deliver` (write these frame bytes to that
client) and :class:`Disconnect` (close that client; the core has already forgotten it).

Routing (BIND 10 ``bind10-20100602`` behaviour, plus what the 2009 design text describes)
------------------------------------------------------------------------------------------
* ``getlname``: answered with header ``{"type": "getlname"}`` and body ``{"lname": ...}``.
  The lname is assigned at connect time, so getlname may come at any time, repeatedly; other
  commands are not refused before it (BIND 10 did not enforce the design text's "first").
* ``subscribe`` / ``unsubscribe`` (``group``, ``instance``, optional ``subtype``): no answer.
  Subscribing twice to the same (group, instance) keeps one subscription (the later subtype
  wins); unsubscribe removes it whatever its subtype. See :class:`~pyzenoh.msgq.protocol.Subtype`.
* ``send`` (``group``, ``instance``, ``to``): with ``to == "*"`` the recipients are the union of
  the subscribers of (group, instance) and of (group, "*"), ``meonly`` ones excluded (so a
  message sent with instance ``"*"`` reaches only the wildcard subscribers, as in BIND 10).
  With ``to`` an lname, exactly that client, subscribed or not, plus the ``promisc``
  subscribers of the (group, instance). An unknown lname: dropped. The sender never gets its
  own message. The header is decoded and re-encoded (in each recipient's dialect); the body
  is forwarded byte for byte, a missing body stays missing. ``from`` is passed through
  unchanged (BIND 10 did not check it) unless ``enforce_from=True``, in which case a send whose
  ``from`` is not the sender's lname is dropped.
* ``want_answer`` (BIND 10 2013): when a ``send`` carrying a true ``want_answer`` and no
  ``reply`` reaches nobody (and the observer did not claim it), the sender gets a copy of the
  header with ``reply = seq``, ``from = "msgq"``, ``to`` = the header's ``from``, and the body
  ``{"result": [-1, "No such recipient"]}``.
* ``stats`` (design text, never built by BIND 10): answered with header ``{"type": "stats"}``
  (plus ``reply`` = the request's ``seq`` if it had one) and body ``{"stats": {...}}``: the
  :class:`Counters` plus ``clients`` and ``subscriptions``.
* ``ping`` (BIND 10 2011): answered with header ``{"type": "pong"}`` (plus ``reply`` = seq if
  any) and the request's body echoed unchanged.
* Anything else: ignored and logged, as BIND 10 did.

Dialects: each client is answered in the dialect its own headers use (typed ``bind10`` items
or all-DATA ``seed``), detected from every header that contains a scalar; until then a client
is assumed to speak ``bind10``.

Robustness: a broken length prefix or an undecodable header disconnects that client only
(:class:`Disconnect`; BIND 10 crashed on the latter). A decodable header with a missing or
mistyped required field (``type``; ``group``/``instance``/``to``) is ignored and logged (BIND
10 crashed on a missing key and ignored explicit NULLs). Nothing a client sends raises out of
:meth:`MsgqCore.receive`. Every such event is counted (:class:`Counters`) and logged through an
:class:`~pyzenoh.msgq.flow.EventLog`: the first of each kind in full, the rest summarised.

Deadlines (:meth:`MsgqCore.tick`)
---------------------------------
The I/O layer calls :meth:`MsgqCore.tick` with a monotonic ``now`` every so often (at least a
few times per shortest timeout); it returns the :class:`Disconnect` actions for:

* ``handshake_timeout`` (default :data:`DEFAULT_HANDSHAKE_TIMEOUT`): a client is *established*
  once the daemon has accepted one valid command from it (``getlname``, ``subscribe``,
  ``unsubscribe``, ``send``, ``stats`` or ``ping`` with its required fields). BIND 10's clients
  (``isc.cc.Session`` and the C++ session) send ``getlname`` the moment they connect; BIND 10's
  msgq did not insist on it coming first, and neither do we, so any valid command counts. A
  connection that is not established within the timeout (it sent nothing, only part of a
  frame, or only frames that were ignored) is closed (counter ``handshake_timeouts``). An
  established client is never closed for being quiet: BIND 10 modules sit for hours waiting
  for a command, and msgq has no keepalive.
* ``frame_stall_timeout`` (default :data:`DEFAULT_FRAME_STALL_TIMEOUT`): a client that has
  sent part of a frame and then nothing more for that long is closed (``frame_stalls``). A
  live client writes a frame in one go and the daemon always reads, so this is a hung or
  hostile peer holding a buffer of up to ``max_frame_size`` bytes.

Timeouts are measured from the first tick that sees the client (or the state), so they hold
to within one tick period; ``None`` disables one. :meth:`MsgqCore.oldest_unestablished` names
the connection the I/O layer should give up first when it runs out of room for clients.

Bridge hook
-----------
``MsgqCore(observer=...)`` takes any object with
``on_send(header: dict, body: bytes | None, sender_lname: str) -> bool | None``. It is called
once for every routed ``send`` from a local client (a fresh copy of the decoded, normalised
header; the untouched body bytes; the sender's lname), before local delivery. Returning
``True`` means "forwarded elsewhere": the message then never triggers the "no such recipient"
answer. An exception in the observer is logged and otherwise ignored.

:meth:`MsgqCore.inject` delivers a message that came from outside (e.g. a Zenoh bridge) to local
clients by the same rules, without excluding anyone and without calling the observer again
(so a bridge cannot loop back on itself).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from pyzenoh.msgq.flow import EventLog
from pyzenoh.msgq.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    MAX_HEADER_SIZE,
    Frame,
    FrameReader,
)
from pyzenoh.msgq.protocol import (
    DAEMON_LNAME,
    NO_RECIPIENT_CODE,
    NO_RECIPIENT_TEXT,
    WILDCARD,
    Header,
    MsgType,
    Subtype,
    encode_message,
    is_true,
    normalize_seed_header,
)
from pyzenoh.msgq.skan import Dialect, SkanEncodeError, SkanError, SkanValue, decode_ex

__all__ = [
    "DEFAULT_FRAME_STALL_TIMEOUT",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "Action",
    "Counters",
    "Deliver",
    "Disconnect",
    "MsgqCore",
    "MsgqObserver",
]

log = logging.getLogger("pyzenoh.msgq")

DEFAULT_HANDSHAKE_TIMEOUT = 10.0
"""Seconds a new connection has to issue its first valid command (BIND 10 clients send
``getlname`` within milliseconds; this only reaps connections that never speak)."""
DEFAULT_FRAME_STALL_TIMEOUT = 30.0
"""Seconds a client may stay in the middle of a frame without sending another byte."""


class MsgqObserver(Protocol):
    """What the daemon core calls for every routed ``send`` (the bridge hook)."""

    def on_send(self, header: dict[str, SkanValue], body: bytes | None, sender_lname: str) -> bool | None:
        """See the module docstring; return True when the message was forwarded elsewhere."""


@dataclass(frozen=True, slots=True)
class Deliver:
    """Write ``data`` (one whole frame) to ``client``."""

    client: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Close ``client`` (the core has already dropped its state)."""

    client: int
    reason: str


Action = Deliver | Disconnect


@dataclass(slots=True)
class Counters:
    """Daemon counters, reported by the ``stats`` command.

    Limits (each one also logged, see :class:`~pyzenoh.msgq.flow.EventLog`): ``bad_frames``
    and ``undecodable_headers`` (client disconnected), ``invalid_headers`` and
    ``unknown_types`` (frame ignored), ``handshake_timeouts`` and ``frame_stalls`` (deadlines,
    see :meth:`MsgqCore.tick`); set by the I/O layer: ``queue_drops`` (frames not queued for a
    client that is not keeping up, ``slow_reader="drop"``), ``slow_disconnects`` (clients
    disconnected for the same reason), ``stalled_disconnects`` (clients that read nothing of
    their pending data for ``slow_reader_timeout``), ``evicted_clients`` (unestablished
    connections closed to make room at ``max_clients``), ``refused_clients`` (newcomers
    refused because every connection was established) and ``queue_peak_bytes`` (the most bytes
    any client has had pending: a high-water mark, not a count).
    """

    connections: int = 0
    disconnects: int = 0
    frames_in: int = 0
    bytes_in: int = 0
    frames_out: int = 0
    bytes_out: int = 0
    sends: int = 0
    deliveries: int = 0
    no_recipient: int = 0
    injected: int = 0
    unknown_types: int = 0
    invalid_headers: int = 0
    undecodable_headers: int = 0
    bad_frames: int = 0
    forged_from: int = 0
    encode_failures: int = 0
    queue_drops: int = 0
    slow_disconnects: int = 0
    observer_errors: int = 0
    handshake_timeouts: int = 0
    frame_stalls: int = 0
    stalled_disconnects: int = 0
    evicted_clients: int = 0
    refused_clients: int = 0
    queue_peak_bytes: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)

    def bump(self, name: str) -> None:
        """Add one to the counter called ``name`` (an AttributeError for an unknown name)."""
        setattr(self, name, int(getattr(self, name)) + 1)


@dataclass(slots=True)
class _Client:
    cid: int
    lname: str
    reader: FrameReader
    dialect: Dialect = Dialect.BIND10
    subs: set[tuple[str, str]] = field(default_factory=set)
    established: bool = False
    # Tick clock bookkeeping (see MsgqCore.tick): when the handshake clock started, and the
    # bytes received as of the last tick that saw them change.
    since: float | None = None
    rx_bytes: int = 0
    rx_mark: int = 0
    rx_at: float | None = None


class MsgqCore:
    """Sans-IO msgq routing state (see the module docstring)."""

    def __init__(
        self,
        *,
        hostname: str = "localhost",
        observer: MsgqObserver | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        enforce_from: bool = False,
        handshake_timeout: float | None = DEFAULT_HANDSHAKE_TIMEOUT,
        frame_stall_timeout: float | None = DEFAULT_FRAME_STALL_TIMEOUT,
    ) -> None:
        self.hostname = hostname
        self.observer = observer
        self.max_frame_size = max_frame_size
        self.enforce_from = enforce_from
        self.handshake_timeout = handshake_timeout
        self.frame_stall_timeout = frame_stall_timeout
        self.counters = Counters()
        self.events = EventLog(log)
        self._clients: dict[int, _Client] = {}
        # Clients not yet established, in connection order (oldest first).
        self._pending: dict[int, None] = {}
        self._by_lname: dict[str, int] = {}
        # (group, instance) -> {client id: subtype}; dicts keep subscription order.
        self._subs: dict[tuple[str, str], dict[int, Subtype]] = {}
        self._next_id = 1

    # -- clients --------------------------------------------------------------------------

    def connect(self, now: float) -> int:
        """Register a new client; ``now`` (seconds since the epoch) goes into its lname."""
        cid = self._next_id
        self._next_id += 1
        # BIND 10's shape "%x_%x@host" (time, connection counter); the counter makes it unique.
        lname = f"{max(0, int(now)):x}_{cid:x}@{self.hostname}"
        self._clients[cid] = _Client(cid, lname, FrameReader(self.max_frame_size))
        self._pending[cid] = None
        self._by_lname[lname] = cid
        self.counters.connections += 1
        log.debug("msgq: client %d connected as %s", cid, lname)
        return cid

    def disconnect(self, client: int) -> bool:
        """Forget a client and its subscriptions. Returns False if it was already gone."""
        state = self._clients.pop(client, None)
        if state is None:
            return False
        self._by_lname.pop(state.lname, None)
        self._pending.pop(client, None)
        for key in state.subs:
            members = self._subs.get(key)
            if members is not None:
                members.pop(client, None)
                if not members:
                    del self._subs[key]
        self.counters.disconnects += 1
        log.debug("msgq: client %d (%s) disconnected", client, state.lname)
        return True

    @property
    def clients(self) -> list[int]:
        return list(self._clients)

    def lname(self, client: int) -> str:
        """The lname of a connected client (KeyError if unknown)."""
        return self._clients[client].lname

    def client_by_lname(self, lname: str) -> int | None:
        return self._by_lname.get(lname)

    def dialect(self, client: int) -> Dialect:
        """The dialect this client is answered in."""
        return self._clients[client].dialect

    def mid_frame(self, client: int) -> bool:
        """True while the client has sent part of a frame."""
        return self._clients[client].reader.mid_frame

    def established(self, client: int) -> bool:
        """True once the client has issued a valid command (see the module docstring)."""
        return self._clients[client].established

    @property
    def established_count(self) -> int:
        return len(self._clients) - len(self._pending)

    def oldest_unestablished(self) -> int | None:
        """The client that has waited longest without issuing a valid command, if any."""
        return next(iter(self._pending), None)

    def subscribers(self, group: str, instance: str) -> dict[int, Subtype]:
        """The exact (group, instance) subscription list (no wildcard union)."""
        return dict(self._subs.get((group, instance), {}))

    def subscription_count(self) -> int:
        return sum(len(members) for members in self._subs.values())

    # -- input ----------------------------------------------------------------------------

    def receive(self, client: int, data: bytes | bytearray | memoryview) -> list[Action]:
        """Process bytes read from ``client`` (any split)."""
        state = self._clients.get(client)
        if state is None:
            return []
        state.rx_bytes += len(data)
        try:
            frames = state.reader.feed(data)
        except SkanError as exc:
            return self.kick(client, "bad_frames", f"bad frame: {exc}")
        actions: list[Action] = []
        for frame in frames:
            actions.extend(self.handle_frame(client, frame))
            if client not in self._clients:
                break
        return actions

    def handle_frame(self, client: int, frame: Frame) -> list[Action]:
        """Process one whole frame from ``client``."""
        state = self._clients.get(client)
        if state is None:
            return []
        self.counters.frames_in += 1
        self.counters.bytes_in += frame.size
        try:
            decoded = decode_ex(frame.header, max_size=MAX_HEADER_SIZE)
        except SkanError as exc:
            return self.kick(client, "undecodable_headers", f"undecodable header: {exc}")
        if decoded.dialect is not None:
            state.dialect = decoded.dialect
        header = decoded.value
        if decoded.dialect == Dialect.SEED:
            header = normalize_seed_header(header)
        kind = header.get("type")
        if not isinstance(kind, str):
            return self._invalid(state, "missing or non-text 'type'")
        if kind == MsgType.SEND:
            return self._send(state, header, frame.body)
        if kind == MsgType.GETLNAME:
            self._establish(state)
            return self._answer(state, {"type": "getlname"}, {"lname": state.lname})
        if kind == MsgType.SUBSCRIBE or kind == MsgType.UNSUBSCRIBE:
            return self._subscription(state, header, kind == MsgType.SUBSCRIBE)
        if kind == MsgType.STATS:
            self._establish(state)
            reply = self._reply_header("stats", header)
            stats: dict[str, Any] = dict(self.counters.as_dict())
            stats["clients"] = len(self._clients)
            stats["established"] = self.established_count
            stats["subscriptions"] = self.subscription_count()
            return self._answer(state, reply, {"stats": stats})
        if kind == MsgType.PING:
            self._establish(state)
            return self._answer(state, self._reply_header("pong", header), frame.body)
        self.counters.unknown_types += 1
        self.events.event(
            "unknown_types",
            logging.INFO,
            "msgq: %s sent unknown command %r (ignored)",
            state.lname,
            kind[:64],
        )
        return []

    # -- deadlines ------------------------------------------------------------------------

    def tick(self, now: float) -> list[Action]:
        """Apply the deadlines (see the module docstring); ``now`` is a monotonic time."""
        actions: list[Action] = []
        timeout = self.handshake_timeout
        if timeout is not None:
            expired: list[int] = []
            for cid in self._pending:
                state = self._clients[cid]
                if state.since is None:
                    state.since = now
                elif now - state.since >= timeout:
                    expired.append(cid)
            for cid in expired:
                why = f"no valid command within {timeout:g} s of connecting"
                actions.extend(self.kick(cid, "handshake_timeouts", why))
        timeout = self.frame_stall_timeout
        for state in list(self._clients.values()):
            if state.rx_at is None or not state.reader.mid_frame or state.rx_bytes != state.rx_mark:
                state.rx_mark = state.rx_bytes
                state.rx_at = now
            elif timeout is not None and now - state.rx_at >= timeout:
                why = f"stopped for {timeout:g} s in the middle of a frame"
                actions.extend(self.kick(state.cid, "frame_stalls", why))
        self.events.flush(now)
        return actions

    def kick(self, client: int, kind: str, why: str) -> list[Action]:
        """Disconnect ``client`` for a reason counted as ``kind`` (a :class:`Counters` field)."""
        state = self._clients.get(client)
        if state is None:
            return []
        self.counters.bump(kind)
        self.events.event(kind, logging.WARNING, "msgq: disconnecting %s: %s", state.lname, why)
        self.disconnect(client)
        return [Disconnect(client, why)]

    def inject(self, header: Mapping[str, Any], body: bytes | None = None) -> list[Action]:
        """Deliver a ``send`` that came from outside to the local clients it matches.

        ``header`` needs text ``group``, ``instance`` and ``to``; its ``type`` must be ``send``
        if present. Nobody is excluded and the observer is not called. Raises
        :class:`~pyzenoh.msgq.skan.SkanEncodeError` (a UsageError) for a bad header.
        """
        hdr: Header = dict(header)
        hdr.setdefault("type", "send")
        if hdr["type"] != MsgType.SEND:
            raise SkanEncodeError(f"inject() only carries 'send' messages, not {hdr['type']!r}")
        fields = [hdr.get(name) for name in ("group", "instance", "to")]
        if not all(isinstance(value, str) for value in fields):
            raise SkanEncodeError("inject() needs text 'group', 'instance' and 'to' fields")
        group, instance, to = (str(value) for value in fields)
        self.counters.injected += 1
        recipients = self._route(group, instance, to, exclude=None)
        actions = self._deliver(recipients, hdr, body, raise_errors=True)
        if not recipients:
            self.counters.no_recipient += 1
        return actions

    # -- commands -------------------------------------------------------------------------

    def _send(self, state: _Client, header: Header, body: bytes | None) -> list[Action]:
        group, instance, to = header.get("group"), header.get("instance"), header.get("to")
        if not (isinstance(group, str) and isinstance(instance, str) and isinstance(to, str)):
            return self._invalid(state, "send without text 'group', 'instance' and 'to'")
        self._establish(state)
        if self.enforce_from and header.get("from") != state.lname:
            self.counters.forged_from += 1
            self.events.event(
                "forged_from",
                logging.WARNING,
                "msgq: %s sent with from=%r (dropped)",
                state.lname,
                header.get("from"),
            )
            return []
        self.counters.sends += 1
        recipients = self._route(group, instance, to, exclude=state.cid)
        claimed = False
        if self.observer is not None:
            try:
                claimed = bool(self.observer.on_send(dict(header), body, state.lname))
            except Exception:  # the bridge must not take the daemon down
                self.counters.observer_errors += 1
                log.exception("msgq: observer.on_send failed")
        actions = self._deliver(recipients, header, body)
        if recipients or claimed:
            return actions
        self.counters.no_recipient += 1
        if is_true(header.get("want_answer")) and "reply" not in header:
            error = dict(header)
            if "seq" in header:
                error["reply"] = header["seq"]
            error["from"] = DAEMON_LNAME
            error["to"] = header.get("from", state.lname)
            result = {"result": [NO_RECIPIENT_CODE, NO_RECIPIENT_TEXT]}
            actions.extend(self._answer(state, error, result))
        return actions

    def _subscription(self, state: _Client, header: Header, subscribe: bool) -> list[Action]:
        group, instance = header.get("group"), header.get("instance")
        if not (isinstance(group, str) and isinstance(instance, str)):
            return self._invalid(state, "(un)subscribe without text 'group' and 'instance'")
        self._establish(state)
        key = (group, instance)
        if not subscribe:
            members = self._subs.get(key)
            if members is not None and members.pop(state.cid, None) is not None:
                state.subs.discard(key)
                if not members:
                    del self._subs[key]
            return []
        raw = header.get("subtype")
        subtype = Subtype.NORMAL
        if isinstance(raw, str):
            try:
                subtype = Subtype(raw)
            except ValueError:
                # BIND 10 ignored subtype entirely; an unknown one subscribes normally.
                self.events.event(
                    "unknown_subtypes",
                    logging.INFO,
                    "msgq: %s used unknown subtype %r (normal)",
                    state.lname,
                    raw[:64],
                )
        self._subs.setdefault(key, {})[state.cid] = subtype
        state.subs.add(key)
        return []

    # -- helpers --------------------------------------------------------------------------

    def _route(self, group: str, instance: str, to: str, exclude: int | None) -> list[int]:
        keys = [(group, instance)] if instance == WILDCARD else [(group, instance), (group, WILDCARD)]
        chosen: dict[int, None] = {}
        if to == WILDCARD:
            for key in keys:
                for cid, subtype in self._subs.get(key, {}).items():
                    if subtype != Subtype.MEONLY:
                        chosen[cid] = None
        else:
            target = self._by_lname.get(to)
            if target is not None:
                chosen[target] = None
            for key in keys:
                for cid, subtype in self._subs.get(key, {}).items():
                    if subtype == Subtype.PROMISC:
                        chosen[cid] = None
        if exclude is not None:
            chosen.pop(exclude, None)
        return list(chosen)

    def _deliver(
        self, recipients: list[int], header: Header, body: bytes | None, raise_errors: bool = False
    ) -> list[Action]:
        actions: list[Action] = []
        encoded: dict[Dialect, bytes | None] = {}
        for cid in recipients:
            dialect = self._clients[cid].dialect
            if dialect not in encoded:
                try:
                    encoded[dialect] = encode_message(header, body, dialect=dialect)
                except SkanEncodeError as exc:
                    if raise_errors:
                        raise
                    # e.g. an empty key cannot go to a seed client; skip those recipients.
                    self.counters.encode_failures += 1
                    self.events.event(
                        "encode_failures",
                        logging.WARNING,
                        "msgq: cannot re-encode header for %s clients: %s",
                        dialect,
                        exc,
                    )
                    encoded[dialect] = None
            data = encoded[dialect]
            if data is not None:
                actions.append(self._out(cid, data))
                self.counters.deliveries += 1
        return actions

    def _answer(
        self, state: _Client, header: Mapping[str, Any], body: Mapping[str, Any] | bytes | None
    ) -> list[Action]:
        try:
            data = encode_message(header, body, dialect=state.dialect)
        except SkanEncodeError as exc:
            self.counters.encode_failures += 1
            self.events.event(
                "encode_failures",
                logging.WARNING,
                "msgq: cannot encode an answer for %s: %s",
                state.lname,
                exc,
            )
            return []
        return [self._out(state.cid, data)]

    @staticmethod
    def _reply_header(kind: str, request: Header) -> dict[str, SkanValue]:
        reply: dict[str, SkanValue] = {"type": kind}
        if "seq" in request:
            reply["reply"] = request["seq"]
        return reply

    def _out(self, cid: int, data: bytes) -> Deliver:
        self.counters.frames_out += 1
        self.counters.bytes_out += len(data)
        return Deliver(cid, data)

    def _invalid(self, state: _Client, why: str) -> list[Action]:
        self.counters.invalid_headers += 1
        self.events.event("invalid_headers", logging.WARNING, "msgq: %s: %s (frame ignored)", state.lname, why)
        return []

    def _establish(self, state: _Client) -> None:
        if not state.established:
            state.established = True
            self._pending.pop(state.cid, None)
