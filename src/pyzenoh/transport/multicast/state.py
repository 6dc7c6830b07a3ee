"""Sans-IO multicast transport: datagrams and ``now`` (seconds) in, events and datagrams out.

Nothing is negotiated on a group (zenoh-transport's multicast): each member sends a JOIN
every ``join_interval`` carrying its zid, lease and next sequence numbers; a remote is
known from its first JOIN until its lease runs out without a JOIN, and each remote
(keyed by its source locator) keeps its own sequence numbers. Measured on 1.10.2 (peer,
join_interval 500 ms, lo): JOIN ``a7 09 31 <zid> 0a <sn_r> <sn_be> 27 01`` every 0.50 s,
lease 10 s in seconds (T flag), no S flag, patch extension 1; data leaves as a reliable
FRAME whose sn is the JOIN's next reliable sn (the next JOIN carries sn + 1).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyzenoh.codec.batch import decode_batch
from pyzenoh.codec.network import NetworkMessage, decode_network_message
from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.transport import DEFAULT_RESOLUTION, Close, Fragment, Frame, Join
from pyzenoh.errors import CloseReason, DecodeError
from pyzenoh.transport.link import sn_mask

#: zenohd's defaults (transport/multicast): JOIN every 2.5 s, lease 10 s.
DEFAULT_JOIN_INTERVAL_S = 2.5
DEFAULT_LEASE_MS = 10_000
#: The patch zenohd 1.10.2 announces in its JOIN (measured).
JOIN_PATCH = 1
#: Remotes tracked at once; JOINs from more are dropped (counted in ``refused_remotes``).
DEFAULT_MAX_REMOTES = 256
#: Sequence numbers wrap at the default resolution's mask (2^28 for "32-bit"): a 1.10.2 peer closes
#: its whole multicast transport on a JOIN whose sn lies above it (measured).
SN_MODULUS = sn_mask(DEFAULT_RESOLUTION) + 1
#: FRAMEs from a source whose JOIN has not arrived yet are held, at most this many per
#: source, from at most EARLY_SOURCES sources, for at most EARLY_HOLD_S seconds: a 1.10.2
#: peer that declares right after it opens sometimes sends that DECLARE before its first
#: JOIN (measured: 2 runs in 25 on lo), and zenoh never declares again.
EARLY_FRAMES_PER_SOURCE = 16
EARLY_SOURCES = 64
EARLY_HOLD_S = 5.0
#: The largest datagram sent on a group: zenoh's udp MTU (u16::MAX - 8 - 40). Measured on a
#: 1.10.2 peer: a 300 kB put leaves as FRAGMENTs of 65,487 bytes, the first with the
#: ``first`` extension, the last without M.
MAX_DATAGRAM = 65_487
#: Bytes of unfinished fragmented messages held for all remotes together: a fragment that
#: would go over drops its remote's unfinished message (counted), nothing else.
DEFAULT_REASSEMBLY_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class MulticastConfig:
    zid: ZenohId
    whatami: WhatAmI = WhatAmI.PEER
    lease_ms: int = DEFAULT_LEASE_MS
    join_interval_s: float = DEFAULT_JOIN_INTERVAL_S
    max_remotes: int = DEFAULT_MAX_REMOTES
    max_datagram: int = MAX_DATAGRAM
    max_reassembly_bytes: int = DEFAULT_REASSEMBLY_BYTES


@dataclass(frozen=True, slots=True)
class PeerJoined:
    locator: str
    zid: ZenohId
    whatami: WhatAmI


@dataclass(frozen=True, slots=True)
class PeerLeft:
    locator: str
    zid: ZenohId
    reason: str


@dataclass(frozen=True, slots=True)
class PeerEvicted:
    """A JOIN claimed a zid already live at another locator: that claimant is ignored."""

    locator: str
    zid: ZenohId
    reason: str


@dataclass(frozen=True, slots=True)
class Delivered:
    locator: str
    zid: ZenohId
    messages: tuple[NetworkMessage, ...]


Event = PeerJoined | PeerLeft | PeerEvicted | Delivered


@dataclass(slots=True)
class _Remote:
    zid: ZenohId
    whatami: WhatAmI
    lease_s: float
    expires: float
    patch: int = 0
    # Next expected sn per (reliable, priority); seeded by JOIN, kept by FRAMEs and FRAGMENTs.
    next_sn: dict[tuple[bool, int], int] = field(default_factory=dict)
    # The message being reassembled per (reliable, priority); None: discarding it to its end.
    defrag: dict[tuple[bool, int], bytearray | None] = field(default_factory=dict)


@dataclass(slots=True)
class Counters:
    joins_sent: int = 0
    frames_in: int = 0
    stale_frames: int = 0
    unknown_senders: int = 0
    undecodable: int = 0
    fragments_dropped: int = 0  # fragments of messages lost: a gap, a tail without its start, over the budget
    reassembled: int = 0  # fragmented messages delivered
    refused_remotes: int = 0
    evictions: int = 0
    early_delivered: int = 0  # held FRAMEs delivered once their sender's JOIN came
    early_dropped: int = 0  # held FRAMEs whose JOIN never came (or past the bounds)


class MulticastTransport:
    """One member's view of one group: JOIN schedule, remotes, outgoing sequence numbers."""

    def __init__(self, config: MulticastConfig, now: float, initial_sn: tuple[int, int] | None = None) -> None:
        self.config = config
        self.counters = Counters()
        self._remotes: dict[str, _Remote] = {}
        self._early: dict[str, list[tuple[float, Frame]]] = {}  # FRAMEs before their JOIN
        # (reliable, best effort); random by default, as zenoh picks them per transport.
        rel, be = initial_sn or (secrets.randbelow(SN_MODULUS), secrets.randbelow(SN_MODULUS))
        self._sn = {True: rel % SN_MODULUS, False: be % SN_MODULUS}
        self._next_join = now
        self._defrag_bytes = 0  # held in all remotes' unfinished messages

    # --- deadlines and time ------------------------------------------------------------
    def next_deadline(self) -> float:
        expiries = [r.expires for r in self._remotes.values()]
        return min([self._next_join, *expiries])

    def poll(self, now: float) -> tuple[list[bytes], list[Event]]:
        """Datagrams due (the JOIN) and remotes whose lease ran out at ``now``."""
        out: list[bytes] = []
        if now >= self._next_join:
            out.append(self.join_datagram())
            self.counters.joins_sent += 1
            self._next_join = now + self.config.join_interval_s
        events: list[Event] = []
        for loc, rem in list(self._remotes.items()):
            if now >= rem.expires:
                self._forget(loc)
                events.append(PeerLeft(loc, rem.zid, "lease expired"))
        for loc, held in list(self._early.items()):
            if now - held[0][0] >= EARLY_HOLD_S:
                del self._early[loc]
                self.counters.early_dropped += len(held)
        return out, events

    def join_datagram(self) -> bytes:
        c = self.config
        out = bytearray()
        Join(c.zid, c.whatami, c.lease_ms, self._sn[True], self._sn[False], patch=JOIN_PATCH).write(out)
        return bytes(out)

    def close_datagram(self) -> bytes:
        """The CLOSE a member sends to the group as it leaves (measured: ``03 00``)."""
        out = bytearray()
        Close(CloseReason.GENERIC, session=False).write(out)
        return bytes(out)

    # --- outgoing ----------------------------------------------------------------------
    def frame(self, messages: tuple[NetworkMessage, ...], reliable: bool = True) -> bytes:
        """One datagram carrying ``messages`` under this member's next sequence number."""
        sn = self._sn[reliable]
        self._sn[reliable] = (sn + 1) % SN_MODULUS
        out = bytearray()
        Frame(reliable, sn, messages).write(out)
        return bytes(out)

    def datagrams(self, raws: Sequence[bytes], reliable: bool = True) -> list[bytes]:
        """Datagrams carrying ``raws`` (encoded network messages), in order: as many per
        FRAME as fit in ``max_datagram``, and a message that does not fit one alone as
        FRAGMENTs (each its own sequence number, as zenoh's)."""
        limit = self.config.max_datagram
        out: list[bytes] = []
        cur = bytearray()
        for raw in raws:
            if cur and len(cur) + len(raw) <= limit:
                cur += raw
                continue
            if cur:
                out.append(bytes(cur))
                cur = bytearray()
            header = self._frame_header(reliable)
            if len(header) + len(raw) <= limit:
                cur = header + raw
            else:
                out.extend(self._fragments(raw, reliable))
        if cur:
            out.append(bytes(cur))
        return out

    def _next_sn(self, reliable: bool) -> int:
        sn = self._sn[reliable]
        self._sn[reliable] = (sn + 1) % SN_MODULUS
        return sn

    def _frame_header(self, reliable: bool) -> bytearray:
        out = bytearray()
        Frame(reliable, self._next_sn(reliable), ()).write_header(out)
        return out

    def _fragments(self, raw: bytes, reliable: bool) -> list[bytes]:
        out: list[bytes] = []
        pos, total, first = 0, len(raw), True
        view = memoryview(raw)
        while pos < total:
            head = bytearray()
            Fragment(reliable, self._next_sn(reliable), b"", True, first=first).write(head)
            room = self.config.max_datagram - len(head)
            chunk = view[pos : pos + room]
            pos += len(chunk)
            if pos >= total:  # the last one: M off (the header's size does not change)
                head = bytearray()
                Fragment(reliable, (self._sn[reliable] - 1) % SN_MODULUS, b"", False, first=first).write(head)
            out.append(bytes(head) + chunk)
            first = False
        return out

    # --- incoming ----------------------------------------------------------------------
    def remotes(self) -> dict[str, ZenohId]:
        return {loc: r.zid for loc, r in self._remotes.items()}

    def on_datagram(self, locator: str, data: bytes, now: float) -> list[Event]:
        """Events from one datagram received from ``locator`` (its source address)."""
        try:
            messages = decode_batch(data)
        except DecodeError:
            self.counters.undecodable += 1
            return []
        events: list[Event] = []
        for msg in messages:
            if isinstance(msg, Join):
                events.extend(self._on_join(locator, msg, now))
            elif isinstance(msg, Frame):
                if locator in self._remotes:
                    events.extend(self._on_frame(locator, msg))
                else:
                    self._hold(locator, msg, now)
            elif isinstance(msg, Close):
                rem = self._remotes.get(locator)
                if rem is not None:  # a member leaving says so: gone now, not at its lease's end
                    self._forget(locator)
                    events.append(PeerLeft(locator, rem.zid, "closed"))
                break
            elif isinstance(msg, Fragment):
                if locator in self._remotes:
                    events.extend(self._on_fragment(locator, msg))
                else:  # not held like FRAMEs: a message's start may be gone already
                    self.counters.unknown_senders += 1
                    self.counters.fragments_dropped += 1
        return events

    def _on_join(self, locator: str, join: Join, now: float) -> list[Event]:
        if join.zid == self.config.zid:
            return []  # our own JOIN looped back
        lease_s = join.lease_ms / 1000
        rem = self._remotes.get(locator)
        if rem is not None and rem.zid == join.zid:
            rem.expires = now + lease_s
            return []
        for loc, other in self._remotes.items():
            if other.zid == join.zid and loc != locator:
                self.counters.evictions += 1
                reason = f"JOIN from {locator} claims zid {join.zid} live at {loc}"
                return [PeerEvicted(locator, join.zid, reason)]
        events: list[Event] = []
        if rem is not None:  # the same locator now speaks for another zid: the old one is gone
            self._forget(locator)
            events.append(PeerLeft(locator, rem.zid, "replaced by another zid"))
        if len(self._remotes) >= self.config.max_remotes:
            self.counters.refused_remotes += 1
            return events
        fresh = _Remote(join.zid, join.whatami, lease_s, now + lease_s, join.patch or 0)
        fresh.next_sn[(True, -1)] = join.next_sn_reliable
        fresh.next_sn[(False, -1)] = join.next_sn_best_effort
        self._remotes[locator] = fresh
        events.append(PeerJoined(locator, join.zid, join.whatami))
        for _, frame in self._early.pop(locator, []):
            base = join.next_sn_reliable if frame.reliable else join.next_sn_best_effort
            if 0 < (base - frame.sn) % SN_MODULUS < SN_MODULUS // 2:  # sent before the JOIN
                self.counters.early_delivered += 1
                self.counters.frames_in += 1
                events.append(Delivered(locator, join.zid, frame.messages))
            else:
                events.extend(self._on_frame(locator, frame))
        return events

    def _hold(self, locator: str, frame: Frame, now: float) -> None:
        """A FRAME from a source not (yet) known: kept for its JOIN (see EARLY_HOLD_S)."""
        self.counters.unknown_senders += 1
        held = self._early.get(locator)
        if held is None:
            if len(self._early) >= EARLY_SOURCES:
                self.counters.early_dropped += 1
                return
            held = self._early[locator] = []
        if len(held) >= EARLY_FRAMES_PER_SOURCE:
            self.counters.early_dropped += 1
            return
        held.append((now, frame))

    def _on_frame(self, locator: str, frame: Frame) -> list[Event]:
        rem = self._remotes.get(locator)
        if rem is None:
            return []
        key = (frame.reliable, frame.priority)
        expected = rem.next_sn.get(key, rem.next_sn[(frame.reliable, -1)])
        # Accept sn in the half-window ahead of the expected one; anything behind is stale.
        if (frame.sn - expected) % SN_MODULUS >= SN_MODULUS // 2:
            self.counters.stale_frames += 1
            return []
        rem.next_sn[key] = (frame.sn + 1) % SN_MODULUS
        self.counters.frames_in += 1
        return [Delivered(locator, rem.zid, frame.messages)]

    def _on_fragment(self, locator: str, frag: Fragment) -> list[Event]:
        rem = self._remotes[locator]
        key = (frag.reliable, frag.priority)
        expected = rem.next_sn.get(key, rem.next_sn[(frag.reliable, -1)])
        if (frag.sn - expected) % SN_MODULUS >= SN_MODULUS // 2:
            self.counters.stale_frames += 1
            return []
        rem.next_sn[key] = (frag.sn + 1) % SN_MODULUS
        active = key in rem.defrag
        if active and (frag.sn != expected or frag.first or frag.drop):
            self._drop_partial(rem, key)  # a gap, a new start, or the sender gave it up
            active = False
        if frag.drop:
            return []
        if not active:
            if not frag.first and rem.patch >= 1:
                self.counters.fragments_dropped += 1  # the tail of a message whose start was lost
                return []
            rem.defrag[key] = bytearray()
        buf = rem.defrag[key]
        if buf is not None:
            if self._defrag_bytes + len(frag.payload) > self.config.max_reassembly_bytes:
                self._drop_partial(rem, key)
                rem.defrag[key] = None  # the rest of this message is discarded as it comes
                buf = None
            else:
                buf += frag.payload
                self._defrag_bytes += len(frag.payload)
        if frag.more:
            return []
        del rem.defrag[key]
        if buf is None:
            return []
        self._defrag_bytes -= len(buf)
        try:
            msg = decode_network_message(bytes(buf))
        except DecodeError:
            self.counters.undecodable += 1
            return []
        self.counters.reassembled += 1
        self.counters.frames_in += 1
        return [Delivered(locator, rem.zid, (msg,))]

    def _drop_partial(self, rem: _Remote, key: tuple[bool, int]) -> None:
        buf = rem.defrag.pop(key, None)
        self.counters.fragments_dropped += 1
        if buf:
            self._defrag_bytes -= len(buf)

    def _forget(self, locator: str) -> None:
        rem = self._remotes.pop(locator)
        for buf in rem.defrag.values():
            if buf:
                self._defrag_bytes -= len(buf)

    @property
    def reassembly_bytes(self) -> int:
        """Bytes held now in unfinished fragmented messages."""
        return self._defrag_bytes
