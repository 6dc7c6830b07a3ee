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
from dataclasses import dataclass, field

from pyzenoh.codec.batch import decode_batch
from pyzenoh.codec.network import NetworkMessage
from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.codec.transport import DEFAULT_RESOLUTION, Fragment, Frame, Join
from pyzenoh.errors import DecodeError
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


@dataclass(frozen=True, slots=True)
class MulticastConfig:
    zid: ZenohId
    whatami: WhatAmI = WhatAmI.PEER
    lease_ms: int = DEFAULT_LEASE_MS
    join_interval_s: float = DEFAULT_JOIN_INTERVAL_S
    max_remotes: int = DEFAULT_MAX_REMOTES


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
    # Next expected sn per (reliable, priority); seeded by JOIN, kept by FRAMEs.
    next_sn: dict[tuple[bool, int], int] = field(default_factory=dict)


@dataclass(slots=True)
class Counters:
    joins_sent: int = 0
    frames_in: int = 0
    stale_frames: int = 0
    unknown_senders: int = 0
    undecodable: int = 0
    fragments_dropped: int = 0
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
                del self._remotes[loc]
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

    # --- outgoing ----------------------------------------------------------------------
    def frame(self, messages: tuple[NetworkMessage, ...], reliable: bool = True) -> bytes:
        """One datagram carrying ``messages`` under this member's next sequence number."""
        sn = self._sn[reliable]
        self._sn[reliable] = (sn + 1) % SN_MODULUS
        out = bytearray()
        Frame(reliable, sn, messages).write(out)
        return bytes(out)

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
            elif isinstance(msg, Fragment):
                # Defragmentation on a group is not done yet: such messages are lost, counted.
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
            del self._remotes[locator]
            events.append(PeerLeft(locator, rem.zid, "replaced by another zid"))
        if len(self._remotes) >= self.config.max_remotes:
            self.counters.refused_remotes += 1
            return events
        fresh = _Remote(join.zid, join.whatami, lease_s, now + lease_s)
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
