"""Sans-IO unicast transport link: handshake, framing, SNs, fragments, lease (zenoh-wire.md 2).

One :class:`Link` is one TCP connection, in the *opener* role (the side that connected:
a client) or the *acceptor* role (the side that listened: a router). It never touches a
socket or a clock: the caller feeds it bytes with :meth:`Link.receive_data`, passes the
current time as float seconds, writes whatever :meth:`Link.data_to_send` returns, and calls
:meth:`Link.handle_timer` at :meth:`Link.next_deadline`. Everything the peer did comes back
as events (:class:`Established`, :class:`Received`, :class:`LinkClosed`).

Outgoing network messages (objects or pre-encoded bytes) are queued in send order by
:meth:`Link.send` and packed when :meth:`Link.data_to_send` is called: several messages
per FRAME, one FRAME per batch, FRAGMENTs (one per batch) for a message that does not fit
in one batch. With QoS each priority is its own lane, sent highest first; without QoS
there is one lane and messages keep their send order whatever their priority. A batch
never holds two FRAMEs: some implementations (zenoh-pico) read everything after a FRAME
header as that frame.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from pyzenoh.codec import (
    BatchReader,
    Close,
    Fragment,
    Frame,
    InitAck,
    InitSyn,
    KeepAlive,
    NetworkMessage,
    OpenAck,
    OpenSyn,
    WhatAmI,
    ZenohId,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.codec.transport import PROTOCOL_VERSION
from pyzenoh.errors import CloseReason, DecodeError, PeerError, UsageError
from pyzenoh.security.usrpwd import (
    NONCE_LEN,
    AcceptorAuth,
    AuthError,
    OpenerAuth,
    UsrPwd,
)
from pyzenoh.transport.fastpath import PushRun
from pyzenoh.transport.fastpath import decode_batch as fast_decode_batch

log = logging.getLogger(__name__)

#: Default lease announced in OPEN (1.10.2 default).
DEFAULT_LEASE_MS = 10_000
#: KEEPALIVEs sent per own lease period when idle (1.10.2 default).
KEEPALIVES_PER_LEASE = 4
#: open_timeout / accept_timeout of 1.10.2.
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
#: Largest batch a TCP link can carry, the 2-byte length prefix included.
MAX_BATCH_SIZE = 0xFFFF
LENGTH_PREFIX = 2
#: Reassembled messages larger than this are discarded (1.10.2 max_message_size).
DEFAULT_MAX_MESSAGE_SIZE = 1 << 30
#: An unfinished fragmented message that gets no fragment for this long is dropped.
DEFAULT_REASSEMBLY_TIMEOUT_S = 10.0
#: Bytes of random cookie an acceptor hands out in InitAck.
COOKIE_LEN = 24
#: The smallest batch size we accept from a peer: a FRAME header plus a few bytes.
MIN_BATCH_SIZE = 64
DEFAULT_RESOLUTION = 0x0A
PATCH_LEVEL = 1
PRIORITY_DATA = 5
NUM_PRIORITIES = 8
#: The longest FRAME header: header byte, a five-byte SN, a two-byte priority extension.
MAX_FRAME_HEADER = 8

# Resolution code (2 bits) -> SN mask; the SN must fit a bounded number of VLE bytes.
_SN_MASKS = (0x7F, 0x3FFF, 0x0FFF_FFFF, 0xFFFF_FFFF)


def sn_mask(resolution: int) -> int:
    """The frame SN mask for a resolution byte (bits 0-1 are the frame SN code)."""
    return _SN_MASKS[resolution & 0x03]


def initial_sn(my_zid: ZenohId, other_zid: ZenohId, mask: int) -> int:
    """The deterministic initial SN real nodes use (zenoh-wire.md 2.4)."""
    digest = hashlib.shake_128(my_zid.to_wire() + other_zid.to_wire()).digest(4)
    return int.from_bytes(digest, "little") & mask


class Role(Enum):
    OPENER = "opener"
    ACCEPTOR = "acceptor"


class State(Enum):
    INIT_SENT = "init-sent"  # opener: waiting for InitAck
    OPEN_SENT = "open-sent"  # opener: waiting for OpenAck
    WAIT_INIT = "wait-init"  # acceptor: waiting for InitSyn
    WAIT_OPEN = "wait-open"  # acceptor: waiting for OpenSyn
    ESTABLISHED = "established"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class LinkConfig:
    """What this side announces and enforces."""

    zid: ZenohId
    whatami: WhatAmI
    lease_ms: int = DEFAULT_LEASE_MS
    keepalives_per_lease: int = KEEPALIVES_PER_LEASE
    batch_size: int = MAX_BATCH_SIZE
    resolution: int = DEFAULT_RESOLUTION
    qos: bool = True
    patch: int = PATCH_LEVEL
    handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    reassembly_timeout_s: float = DEFAULT_REASSEMBLY_TIMEOUT_S
    #: usrpwd authentication (security/usrpwd.py): the credentials presented when this
    #: side opens, the users required when it accepts. None: no authentication.
    usrpwd: UsrPwd | None = None
    #: Hand runs of same-shape PUSHes on as one :class:`ReceivedRun` each (a router routes
    #: them together) instead of one :class:`Received` per message.
    push_runs: bool = False
    #: With push_runs: runs may hold timestamped PUSHes (what a session gets from a router).
    stamped_runs: bool = False

    def __post_init__(self) -> None:
        if not MIN_BATCH_SIZE <= self.batch_size <= MAX_BATCH_SIZE:
            raise UsageError(f"batch size {self.batch_size} out of {MIN_BATCH_SIZE}..{MAX_BATCH_SIZE}")
        if self.lease_ms <= 0 or self.keepalives_per_lease <= 0:
            raise UsageError("lease and keepalives per lease must be positive")
        if self.resolution & ~0x0F:
            raise UsageError(f"resolution 0x{self.resolution:02x} has reserved bits")


# --- Events ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Established:
    """The handshake finished; everything negotiated with the peer."""

    zid: ZenohId
    whatami: WhatAmI
    lease_ms: int  # the peer's lease: silence longer than this closes the link
    batch_size: int  # negotiated, prefix included
    resolution: int
    qos: bool
    patch: int
    initial_sn: int  # the peer's
    own_initial_sn: int
    #: The user name the peer authenticated with (usrpwd), None without authentication.
    username: str | None = None


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Received:
    """One network message from the peer, with its bytes as received."""

    message: NetworkMessage
    raw: bytes
    reliable: bool
    priority: int


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class ReceivedRun:
    """Several PUSHes from the peer that differ only in their payload (see
    :class:`~pyzenoh.transport.fastpath.PushRun`), in one FRAME; only with
    :attr:`LinkConfig.push_runs`."""

    run: PushRun
    reliable: bool
    priority: int


@dataclass(frozen=True, slots=True)
class LinkClosed:
    """The link is over. ``by_peer``: the peer sent CLOSE or the connection dropped.

    ``auth_failed``: the handshake ended on usrpwd authentication: the acceptor refused
    the peer's credentials (or their absence), or the opener's credentials were refused
    or the peer would not check them. ``detail`` says which, never with a password.
    """

    reason: int
    by_peer: bool
    detail: str = ""
    auth_failed: bool = False


Event = Established | Received | ReceivedRun | LinkClosed


# --- Receive-side helpers --------------------------------------------------------------


class ReassemblyBudget:
    """Bytes of unfinished fragmented messages that the links sharing it may hold in all.

    A router gives one to all its links, so that a few links sending fragments they never
    finish cannot exhaust its memory: the link whose fragment would go over is closed.
    """

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise UsageError("a reassembly budget must be >= 1 byte")
        self.limit = limit
        self.used = 0


class _Defrag:
    """Reassembly state of one (priority, reliability) channel."""

    __slots__ = ("active", "buf", "discarding", "next_sn", "since")

    def __init__(self) -> None:
        self.buf = bytearray()
        self.next_sn = -1
        self.active = False
        self.discarding = False
        self.since = 0.0  # when its latest fragment arrived

    def reset(self) -> None:
        self.buf = bytearray()
        self.active = False
        self.discarding = False


def _channel(priority: int, reliable: bool) -> int:
    return priority * 2 + (1 if reliable else 0)


class Link:
    """A sans-IO Zenoh unicast link in the opener or acceptor role."""

    def __init__(
        self,
        config: LinkConfig,
        role: Role,
        now: float,
        *,
        random_bytes: Callable[[int], bytes] = os.urandom,
        keep_raw: bool = True,
        reassembly_budget: ReassemblyBudget | None = None,
    ) -> None:
        self.config = config
        self._budget = reassembly_budget
        self.role = role
        self._random_bytes = random_bytes
        self._keep_raw = keep_raw
        self._reader = BatchReader(MAX_BATCH_SIZE)
        self._out = bytearray()
        self.state = State.WAIT_INIT
        self.peer: Established | None = None
        self.close_event: LinkClosed | None = None
        self._handshake_deadline: float | None = now + config.handshake_timeout_s
        # negotiated values, final once ESTABLISHED
        self._batch_size = config.batch_size
        self._max_payload = config.batch_size - LENGTH_PREFIX
        self._resolution = config.resolution
        self._mask = sn_mask(config.resolution)
        self._qos = config.qos
        self._patch = config.patch
        self._cookie = b""
        self._peer_zid: ZenohId | None = None
        self._peer_whatami: WhatAmI | None = None
        self._opener_auth = OpenerAuth(config.usrpwd)
        self._acceptor_auth: AcceptorAuth | None = None
        # transmit side
        # Runs of consecutive messages with the same (priority, reliability), in send order.
        self._pending: list[tuple[int, bool, list[bytes]]] = []
        self._pending_bytes = 0
        self._tx_sn: list[int] = [0] * (NUM_PRIORITIES * 2)
        self._own_isn = 0
        self._sent_since_keepalive = False
        self._keepalive_interval = config.lease_ms / 1000.0 / config.keepalives_per_lease
        self._keepalive_deadline: float | None = None
        # receive side
        self._rx_last: list[int] = [0] * (NUM_PRIORITIES * 2)
        self._defrag: list[_Defrag] = [_Defrag() for _ in range(NUM_PRIORITIES * 2)]
        self._defrag_bytes = 0  # held by unfinished messages, over every channel
        self._lease_s = 0.0
        self._last_rx = now
        if role is Role.OPENER:
            self.state = State.INIT_SENT
            self._emit(
                InitSyn(
                    zid=config.zid, whatami=config.whatami, resolution=config.resolution,
                    batch_size=config.batch_size, qos=config.qos,
                    patch=config.patch if config.patch else None, auth=self._opener_auth.init_syn(),
                )
            )  # fmt: skip

    # --- public state --------------------------------------------------------------------

    @property
    def is_established(self) -> bool:
        return self.state is State.ESTABLISHED

    @property
    def is_closed(self) -> bool:
        return self.state is State.CLOSED

    @property
    def pending_bytes(self) -> int:
        """Bytes queued by :meth:`send` and not yet returned by :meth:`data_to_send`."""
        return self._pending_bytes + len(self._out)

    @property
    def has_output(self) -> bool:
        """Whether :meth:`data_to_send` has anything to return."""
        return bool(self._pending_bytes or self._out)

    @property
    def batch_size(self) -> int:
        return self._batch_size

    # --- input ---------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Bytes read from the connection (any split). Returns what they caused."""
        if self.state is State.CLOSED:
            return []
        self._last_rx = now
        events: list[Event] = []
        try:
            for payload in self._reader.feed(data):
                self._on_batch(payload, now, events)
                if self.is_closed:  # a CLOSE from the peer ends the stream
                    break
        except AuthError as exc:
            self._fail(exc.close_reason, f"usrpwd authentication failed: {exc}", events, auth_failed=True)
        except PeerError as exc:
            self._fail(exc.close_reason, f"bad input from peer: {exc}", events)
        return events

    def connection_lost(self, detail: str = "connection lost") -> list[Event]:
        """The byte stream ended (EOF or error) without a CLOSE."""
        if self.state is State.CLOSED:
            return []
        return [self._closed(CloseReason.GENERIC, True, detail)]

    def handle_timer(self, now: float) -> list[Event]:
        """Run whatever is due at ``now``: handshake timeout, lease expiry, keepalive."""
        if self.state is State.CLOSED:
            return []
        events: list[Event] = []
        if self.state is not State.ESTABLISHED:
            if self._handshake_deadline is not None and now >= self._handshake_deadline:
                self._fail(CloseReason.GENERIC, "handshake timeout", events)
            return events
        if now >= self._last_rx + self._lease_s:
            self._fail(CloseReason.EXPIRED, "peer silent for its lease", events)
            return events
        if self._defrag_bytes:
            for d in self._defrag:
                if d.active and now >= d.since + self.config.reassembly_timeout_s:
                    log.warning("unfinished fragmented message (%d bytes) dropped: no fragment for %.0f s",
                                len(d.buf), self.config.reassembly_timeout_s)  # fmt: skip
                    self._defrag_reset(d)
        if self._keepalive_deadline is not None and now >= self._keepalive_deadline:
            if not self._sent_since_keepalive and not self._pending_bytes:
                self._emit(KeepAlive())
            self._sent_since_keepalive = False
            self._keepalive_deadline = now + self._keepalive_interval
        return events

    def refresh_lease(self, now: float) -> None:
        """Count the peer as alive at ``now`` (used while the caller is not reading)."""
        self._last_rx = max(self._last_rx, now)

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must next be called (None: nothing scheduled)."""
        if self.state is State.CLOSED:
            return None
        if self.state is not State.ESTABLISHED:
            return self._handshake_deadline
        deadline = self._last_rx + self._lease_s
        ka = self._keepalive_deadline
        if ka is not None and ka < deadline:
            deadline = ka
        if self._defrag_bytes:
            oldest = min(d.since for d in self._defrag if d.active)
            deadline = min(deadline, oldest + self.config.reassembly_timeout_s)
        return deadline

    # --- output --------------------------------------------------------------------------

    def send(
        self,
        message: NetworkMessage | bytes,
        *,
        reliable: bool = True,
        priority: int | None = None,
    ) -> None:
        """Queue a network message (an object, or its already-encoded bytes).

        ``priority`` defaults to the message's own QoS priority (Data for raw bytes).
        Without negotiated QoS every message travels in a Data-priority frame.
        """
        if self.state is State.CLOSED:
            return
        if isinstance(message, bytes | bytearray | memoryview):
            raw = bytes(message)
            prio = PRIORITY_DATA if priority is None else priority
        else:
            raw = encode_network_message(message)
            prio = (message.qos & 0x07) if priority is None else priority
        if not raw:
            raise UsageError("empty network message")
        self._queue(prio, reliable, [raw], len(raw))

    def send_run(self, data: bytes, ends: Sequence[int], *, reliable: bool = True, priority: int = PRIORITY_DATA) -> None:
        """Queue several encoded network messages at once: ``data`` holds them back to back,
        message ``i`` ending at ``ends[i]`` (increasing; a ``range`` for equal lengths).

        They travel as consecutive messages of one channel, cut into pieces that each fit
        one FRAME, so no message is ever fragmented or split between batches.
        """
        if self.state is State.CLOSED or not ends:
            return
        if ends[-1] != len(data):
            raise UsageError("a run's last message must end where its data ends")
        room = self._max_payload - MAX_FRAME_HEADER
        total = len(data)
        if total <= room:
            pieces = [data]
        else:
            pieces = []
            start = 0
            first = 0  # index of the first message of the piece
            n = len(ends)
            while first < n:
                # the most messages from ``first`` on that fit ``room`` (at least one)
                last = bisect.bisect_right(ends, start + room, first, n) - 1
                last = max(last, first)  # one message larger than a FRAME: _pack fragments it
                end = ends[last]
                pieces.append(data[start:end])
                start = end
                first = last + 1
        self._queue(priority, reliable, pieces, total)

    def _queue(self, prio: int, reliable: bool, pieces: list[bytes], nbytes: int) -> None:
        """Queue ``pieces`` (each one message, or several that fit one FRAME) on the run
        of their channel, joining the last run when it is the same channel."""
        if not 0 <= prio < NUM_PRIORITIES:
            raise UsageError(f"priority {prio} out of range 0..7")
        pending = self._pending
        if pending and pending[-1][0] == prio and pending[-1][1] is reliable:
            pending[-1][2].extend(pieces)
        else:
            pending.append((prio, reliable, pieces))
        self._pending_bytes += nbytes

    def close(self, reason: int = CloseReason.GENERIC) -> list[Event]:
        """Flush queued messages, then CLOSE. The caller closes the socket afterwards."""
        if self.state is State.CLOSED:
            return []
        if self.state is State.ESTABLISHED:
            self._pack()
        events: list[Event] = []
        self._fail(reason, "closed locally", events)
        return events

    def data_to_send(self) -> bytes:
        """Every byte that should now be written to the connection, batches framed."""
        if self._pending_bytes and self.state is State.ESTABLISHED:
            self._pack()
        if not self._out:
            return b""
        data = bytes(self._out)
        self._out.clear()
        self._sent_since_keepalive = True
        return data

    def _closed(self, reason: int, by_peer: bool, detail: str, auth_failed: bool = False) -> LinkClosed:
        self.state = State.CLOSED
        self._pending = []
        self._pending_bytes = 0
        for d in self._defrag:
            self._defrag_reset(d)
        self.close_event = LinkClosed(reason, by_peer, detail, auth_failed)
        return self.close_event

    def _fail(self, reason: int, detail: str, events: list[Event], auth_failed: bool = False) -> None:
        """Close from our side: queue CLOSE(reason) and report it."""
        if self.state is State.CLOSED:
            return
        log.debug("closing link (%s): %s", CloseReason(reason).name if reason in CloseReason._value2member_map_ else reason, detail)
        self._emit(Close(reason))
        events.append(self._closed(reason, False, detail, auth_failed))

    def _peer_close(self, reason: int) -> LinkClosed:
        """The peer sent CLOSE: during the handshake, say what it most likely refused."""
        detail = f"peer sent CLOSE({reason})"
        if self.role is Role.OPENER and self.state is State.OPEN_SENT and self._opener_auth.presents:
            user = self._opener_auth.user
            return self._closed(reason, True, f"{detail} in reply to our usrpwd credentials: "
                                f"the peer refused user {user!r} (wrong user or password?)", True)  # fmt: skip
        if self.role is Role.OPENER and self.state is State.INIT_SENT and reason == CloseReason.GENERIC:
            detail += " in reply to our InitSyn (does the peer require usrpwd credentials?)"
        return self._closed(reason, True, detail)

    # --- handshake -----------------------------------------------------------------------

    def _emit(self, message: InitSyn | InitAck | OpenSyn | OpenAck | Close | KeepAlive) -> None:
        """Write one transport message as its own batch."""
        out = self._out
        start = len(out)
        out += b"\x00\x00"
        message.write(out)
        n = len(out) - start - LENGTH_PREFIX
        out[start] = n & 0xFF
        out[start + 1] = n >> 8

    def _on_batch(self, payload: bytes, now: float, events: list[Event]) -> None:
        messages = fast_decode_batch(payload, keep_raw=self._keep_raw, runs=self.config.push_runs,
                                     stamped=self.config.stamped_runs)  # fmt: skip
        for msg in messages:
            if self.state is State.CLOSED:
                return
            if isinstance(msg, Frame):
                if self.state is not State.ESTABLISHED:
                    raise DecodeError("FRAME before the handshake finished")
                self._on_frame(msg, events)
            elif isinstance(msg, KeepAlive):
                if self.state is not State.ESTABLISHED:
                    raise DecodeError("KEEPALIVE before the handshake finished")
            elif isinstance(msg, Fragment):
                if self.state is not State.ESTABLISHED:
                    raise DecodeError("FRAGMENT before the handshake finished")
                self._on_fragment(msg, now, events)
            elif isinstance(msg, Close):
                events.append(self._peer_close(msg.reason))
                return
            elif isinstance(msg, InitAck):  # before InitSyn: InitAck subclasses it
                self._on_init_ack(msg, events)
            elif isinstance(msg, InitSyn):
                self._on_init_syn(msg, events)
            elif isinstance(msg, OpenAck):
                self._on_open_ack(msg, now, events)
            elif isinstance(msg, OpenSyn):
                self._on_open_syn(msg, now, events)
            # JOIN and transport OAM mean nothing on a unicast link: ignored.

    def _check_version(self, version: int) -> None:
        if version != PROTOCOL_VERSION:
            raise DecodeError(f"unsupported protocol version 0x{version:02x}")

    def _check_pair(self, peer: WhatAmI) -> None:
        if self.config.whatami is WhatAmI.CLIENT and peer is WhatAmI.CLIENT:
            raise DecodeError("client-client links are not allowed")

    def _on_init_syn(self, msg: InitSyn, events: list[Event]) -> None:
        if self.role is not Role.ACCEPTOR or self.state is not State.WAIT_INIT:
            raise DecodeError("unexpected InitSyn")
        self._check_version(msg.version)
        self._check_pair(msg.whatami)
        cfg = self.config
        # each 2-bit field: the smaller of the two resolutions
        res = 0
        for shift in (0, 2):
            res |= min((cfg.resolution >> shift) & 3, (msg.resolution >> shift) & 3) << shift
        self._resolution = res
        self._mask = sn_mask(res)
        self._set_batch_size(min(cfg.batch_size, msg.batch_size, MAX_BATCH_SIZE))
        self._qos = cfg.qos and msg.qos
        self._patch = min(cfg.patch, msg.patch or 0, PATCH_LEVEL)
        self._peer_zid = msg.zid
        self._peer_whatami = msg.whatami
        self._cookie = self._random_bytes(COOKIE_LEN)
        nonce = int.from_bytes(self._random_bytes(NONCE_LEN), "little") if cfg.usrpwd is not None else 0
        self._acceptor_auth = AcceptorAuth(cfg.usrpwd, nonce)
        self._acceptor_auth.on_init_syn(msg.auth)
        # never ack Shm, LowLatency or Compression: we implement none of them
        self._emit(
            InitAck(
                zid=cfg.zid, whatami=cfg.whatami, resolution=res, batch_size=self._batch_size,
                qos=self._qos, patch=self._patch if msg.patch is not None else None,
                cookie=self._cookie, auth=self._acceptor_auth.init_ack(),
            )
        )  # fmt: skip
        self.state = State.WAIT_OPEN

    def _on_init_ack(self, msg: InitAck, events: list[Event]) -> None:
        if self.role is not Role.OPENER or self.state is not State.INIT_SENT:
            raise DecodeError("unexpected InitAck")
        self._check_version(msg.version)
        self._check_pair(msg.whatami)
        cfg = self.config
        for shift in (0, 2):
            if (msg.resolution >> shift) & 3 > (cfg.resolution >> shift) & 3:
                raise DecodeError(f"InitAck resolution 0x{msg.resolution:02x} exceeds ours")
        if msg.lowlatency or msg.compression:
            raise DecodeError("InitAck enables LowLatency/Compression, which we did not offer", -1,
                              CloseReason.UNSUPPORTED)  # fmt: skip
        self._resolution = msg.resolution
        self._mask = sn_mask(msg.resolution)
        self._set_batch_size(min(cfg.batch_size, msg.batch_size))
        self._qos = cfg.qos and msg.qos
        self._patch = min(cfg.patch, msg.patch or 0)
        self._peer_zid = msg.zid
        self._peer_whatami = msg.whatami
        self._opener_auth.on_init_ack(msg.auth)
        self._own_isn = initial_sn(cfg.zid, msg.zid, self._mask)
        self._emit(OpenSyn(lease_ms=cfg.lease_ms, initial_sn=self._own_isn, cookie=msg.cookie,
                           auth=self._opener_auth.open_syn()))  # fmt: skip
        self.state = State.OPEN_SENT

    def _on_open_syn(self, msg: OpenSyn, now: float, events: list[Event]) -> None:
        if self.role is not Role.ACCEPTOR or self.state is not State.WAIT_OPEN:
            raise DecodeError("unexpected OpenSyn")
        if not hmac.compare_digest(msg.cookie, self._cookie):
            raise DecodeError("OpenSyn carries a bad cookie")
        assert self._peer_zid is not None and self._acceptor_auth is not None
        username = self._acceptor_auth.on_open_syn(msg.auth)
        self._own_isn = initial_sn(self.config.zid, self._peer_zid, self._mask)
        self._emit(OpenAck(lease_ms=self.config.lease_ms, initial_sn=self._own_isn,
                           auth=self._acceptor_auth.open_ack()))  # fmt: skip
        self._establish(msg.lease_ms, msg.initial_sn, now, events, username)

    def _on_open_ack(self, msg: OpenAck, now: float, events: list[Event]) -> None:
        if self.role is not Role.OPENER or self.state is not State.OPEN_SENT:
            raise DecodeError("unexpected OpenAck")
        self._opener_auth.on_open_ack(msg.auth)
        self._establish(msg.lease_ms, msg.initial_sn, now, events)

    def _set_batch_size(self, size: int) -> None:
        if size < MIN_BATCH_SIZE:
            raise DecodeError(f"batch size {size} is too small")
        self._batch_size = size
        self._max_payload = size - LENGTH_PREFIX

    def _establish(
        self, peer_lease_ms: int, peer_isn: int, now: float, events: list[Event], username: str | None = None
    ) -> None:
        if peer_isn > self._mask:
            raise DecodeError(f"initial SN {peer_isn} exceeds the SN resolution")
        if peer_lease_ms == 0:
            raise DecodeError("zero lease")
        assert self._peer_zid is not None and self._peer_whatami is not None
        self._reader.set_max_batch_size(self._batch_size)
        self._tx_sn = [self._own_isn] * (NUM_PRIORITIES * 2)
        self._rx_last = [(peer_isn - 1) & self._mask] * (NUM_PRIORITIES * 2)
        self._lease_s = peer_lease_ms / 1000.0
        self._last_rx = now
        self._handshake_deadline = None
        self._keepalive_deadline = now + self._keepalive_interval
        self._sent_since_keepalive = False
        self.state = State.ESTABLISHED
        self.peer = Established(
            zid=self._peer_zid, whatami=self._peer_whatami, lease_ms=peer_lease_ms,
            batch_size=self._batch_size, resolution=self._resolution, qos=self._qos,
            patch=self._patch, initial_sn=peer_isn, own_initial_sn=self._own_isn, username=username,
        )  # fmt: skip
        events.append(self.peer)

    # --- established: receive ------------------------------------------------------------

    def _rx_channel(self, priority: int, reliable: bool, sn: int) -> int:
        """The channel index of an incoming frame, or -1 to drop it (duplicate/old SN)."""
        if not self._qos and priority != PRIORITY_DATA:
            raise DecodeError(f"priority {priority} frame without negotiated QoS")
        if sn > self._mask:
            raise DecodeError(f"SN {sn} exceeds the SN resolution")
        ch = _channel(priority, reliable)
        gap = (sn - self._rx_last[ch]) & self._mask
        if gap == 0 or gap > self._mask // 2:
            return -1
        self._rx_last[ch] = sn
        return ch

    def _on_frame(self, frame: Frame, events: list[Event]) -> None:
        if self._rx_channel(frame.priority, frame.reliable, frame.sn) < 0:
            log.debug("dropping frame with stale SN %d", frame.sn)
            return
        raws = frame.raw
        rel = frame.reliable
        prio = frame.priority
        # With push_runs a FRAME's messages include PushRun items (see fastpath).
        messages: tuple[NetworkMessage | PushRun, ...] = frame.messages
        for i, msg in enumerate(messages):
            if isinstance(msg, PushRun):
                events.append(ReceivedRun(msg, rel, prio))
            else:
                events.append(Received(msg, raws[i] if raws else b"", rel, prio))

    def _defrag_reset(self, d: _Defrag) -> None:
        held = len(d.buf)
        if held:
            self._defrag_bytes -= held
            if self._budget is not None:
                self._budget.used -= held
        d.reset()

    def _on_fragment(self, frag: Fragment, now: float, events: list[Event]) -> None:
        ch = self._rx_channel(frag.priority, frag.reliable, frag.sn)
        if ch < 0:
            return
        d = self._defrag[ch]
        patched = self._patch >= 1
        if frag.drop:
            self._defrag_reset(d)
            return
        if d.active and frag.sn != d.next_sn:
            log.debug("fragment SN gap (%d, expected %d): message dropped", frag.sn, d.next_sn)
            self._defrag_reset(d)
        if patched and frag.first:
            self._defrag_reset(d)
        if not d.active:
            if patched and not frag.first:
                return  # the tail of a message whose start we never saw
            d.active = True
        d.next_sn = (frag.sn + 1) & self._mask
        d.since = now
        if not d.discarding:
            n = len(frag.payload)
            budget = self._budget
            if len(d.buf) + n > self.config.max_message_size:
                # zenohd drops a message over max_message_size and keeps the link
                log.warning("fragmented message over %d bytes discarded", self.config.max_message_size)
                self._defrag_reset(d)
                d.active = True
                d.discarding = True
            elif budget is not None and budget.used + n > budget.limit:
                self._fail(CloseReason.GENERIC, f"unfinished fragmented messages over the router's "
                           f"reassembly budget ({budget.limit} bytes)", events)  # fmt: skip
                return
            else:
                d.buf += frag.payload
                self._defrag_bytes += n
                if budget is not None:
                    budget.used += n
        if frag.more:
            return
        data = bytes(d.buf)
        discard = d.discarding
        self._defrag_reset(d)
        if discard or not data:
            return
        msg = decode_network_message(data)
        events.append(Received(msg, data, frag.reliable, frag.priority))

    # --- established: transmit -----------------------------------------------------------

    def _frame_header(self, priority: int, reliable: bool, sn: int) -> bytes:
        if priority == PRIORITY_DATA:
            # the common case, written by hand: FRAME(R) sn
            out = bytearray((0x25 if reliable else 0x05,))
            while sn >= 0x80:
                out.append((sn & 0x7F) | 0x80)
                sn >>= 7
            out.append(sn)
            return bytes(out)
        out = bytearray()
        Frame(reliable, sn, (), priority).write_header(out)
        return bytes(out)

    def _pack(self) -> None:
        """Turn every queued message into framed batches appended to the output."""
        pending = self._pending
        self._pending = []
        self._pending_bytes = 0
        maxp = self._max_payload
        out = self._out
        batch = bytearray()
        mask = self._mask
        tx_sn = self._tx_sn
        qos = self._qos
        if qos:
            pending.sort(key=_run_priority)  # stable: send order within each priority
        open_ch = -1  # the channel of the FRAME the batch holds
        for prio, reliable, raws in pending:
            if not qos:
                prio = PRIORITY_DATA
            ch = _channel(prio, reliable)
            frame_open = ch == open_ch and bool(batch)
            if not frame_open and batch:
                _flush_batch(out, batch)  # one FRAME per batch
                batch = bytearray()
            for raw in raws:
                n = len(raw)
                if frame_open and len(batch) + n <= maxp:
                    batch += raw
                    continue
                sn = tx_sn[ch]
                header = self._frame_header(prio, reliable, sn)
                if len(batch) + len(header) + n > maxp:
                    if batch:
                        _flush_batch(out, batch)
                        batch = bytearray()
                    if len(header) + n > maxp:
                        self._fragment(raw, prio, reliable, ch)
                        frame_open = False
                        continue
                batch += header
                batch += raw
                tx_sn[ch] = (sn + 1) & mask
                frame_open = True
            open_ch = ch
        if batch:
            _flush_batch(out, batch)

    def _fragment(self, raw: bytes, prio: int, reliable: bool, ch: int) -> None:
        """Cut one message that does not fit a batch into FRAGMENTs, one batch each."""
        maxp = self._max_payload
        out = self._out
        mask = self._mask
        pos = 0
        total = len(raw)
        first = self._patch >= 1
        view = memoryview(raw)
        while pos < total:
            sn = self._tx_sn[ch]
            self._tx_sn[ch] = (sn + 1) & mask
            head = bytearray()
            Fragment(reliable, sn, b"", True, prio, first).write(head)
            room = maxp - len(head)
            chunk = view[pos : pos + room]
            pos += len(chunk)
            if pos >= total:
                head[0] &= ~0x40  # clear M on the last fragment
            batch = head
            batch += chunk
            _flush_batch(out, batch)
            first = False


def _run_priority(run: tuple[int, bool, list[bytes]]) -> int:
    return run[0]


def _flush_batch(out: bytearray, batch: bytearray) -> None:
    n = len(batch)
    out.append(n & 0xFF)
    out.append(n >> 8)
    out += batch
