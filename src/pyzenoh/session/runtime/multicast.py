"""A peer session on a multicast group (``listen/endpoints: ["udp/<group>:<port>#iface=..."]``),
as a zenoh 1.10.2 peer is on one.

Measured with two real 1.10.2 peers on ``lo`` (join_interval 500 ms, shared memory off):

- **Data.** Every put and delete leaves on the group as a FRAME, its key spelled in full,
  whether or not a member subscribed (a put on a key nobody declared went out too); what
  a member puts reaches the session's subscribers. A message over 65,487 bytes leaves as
  FRAGMENTs (:mod:`pyzenoh.transport.multicast.state`).
- **Subscribers.** Each subscriber is declared to the group once, as it is declared
  (entity id 0, the key in full); a member joining later is not told. Members'
  subscribers change nothing here: a publisher's matching status stays False.
- **Not crossing.** Queries, replies, liveliness tokens and interests: a get and a
  liveliness get end at once with nothing from the group.
- **Info.** Each member is a transport (``is_multicast``), not one of ``peers_zid()``.
- **Leaving.** A CLOSE (``03 00``) on the group.

So the group is one face of the core that wants every sample (:attr:`Face.group`) and
answers no query; :class:`GroupLink` carries what the core sends it: PUSHes (keys spelled
in full) and subscriber declarations. The rest of what the core sends every face (link
state, key-expression ids, queryables, tokens, D_FINAL) stays here, counted.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareSubscriber,
    NetworkMessage,
    Push,
    UndeclareKeyExpr,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_network_message,
)
from pyzenoh.codec.transport import DEFAULT_RESOLUTION
from pyzenoh.errors import CloseReason, DecodeError
from pyzenoh.transport.endpoint import Endpoint
from pyzenoh.transport.link import Established
from pyzenoh.transport.multicast import (
    Delivered,
    MulticastConfig,
    MulticastTransport,
    PeerEvicted,
    PeerJoined,
    PeerLeft,
)
from pyzenoh.transport.multicast.io import MulticastGroup
from pyzenoh.transport.multicast.members import MemberKeys
from pyzenoh.transport.multicast.state import MAX_DATAGRAM, Event

log = logging.getLogger(__name__)

#: Key-expression ids kept per member (its D_KEYEXPRs); more are ignored, counted.
MAX_KEYS_PER_MEMBER = 10_000


@dataclass
class GroupCounters:
    samples_in: int = 0  # members' PUSHes handed to the core
    samples_out: int = 0  # PUSHes sent to the group
    declarations_out: int = 0  # subscriber declarations sent to the group
    kept: int = 0  # what the core sent the group face that a group does not carry
    ignored: int = 0  # members' messages that do not cross, or past a bound


@dataclass
class _Member:
    zid: ZenohId
    whatami: WhatAmI
    keys: MemberKeys = field(default_factory=lambda: MemberKeys(MAX_KEYS_PER_MEMBER))


class GroupLink:
    """The group as the runtime's link of the group face: what the core sends it, framed
    onto the group. Never full and never paused (UDP: what the socket cannot take is lost)."""

    protocol = "udp"

    def __init__(self, group: MulticastGroup, key_of: Callable[[int], str | None], counters: GroupCounters) -> None:
        self.group = group
        self._key_of = key_of
        self.counters = counters
        self.dropped = 0
        self.is_full = False

    @property
    def local_address(self) -> tuple[str, int]:
        return self.group.local_address

    def send(
        self,
        msg: NetworkMessage | bytes,
        reliable: bool = True,
        priority: int = 5,
        drop_if_full: bool = False,
        express: bool = False,
    ) -> None:
        """``msg`` (or its encoding) onto the group, if a group carries it."""
        if isinstance(msg, bytes):
            try:
                msg = decode_network_message(msg)
            except DecodeError:  # our own encoding: never expected
                log.exception("a message could not be read back")
                return
        out = self._for_group(msg)
        if out is None:
            self.counters.kept += 1
            return
        raw = bytearray()
        out.write(raw)
        self.group.send_raw([bytes(raw)], reliable)

    def send_run(
        self,
        data: bytes,
        ends: Sequence[int],
        reliable: bool = True,
        priority: int = 5,
        drop_if_full: bool = False,
        express: bool = False,
    ) -> None:
        start = 0
        for end in ends:
            self.send(bytes(data[start:end]), reliable, priority, drop_if_full, express)
            start = end

    def _for_group(self, msg: NetworkMessage) -> NetworkMessage | None:
        """``msg`` as it goes on the group (keys in full), None when it does not go."""
        if isinstance(msg, Push):
            we = self._full(msg.wire_expr)
            if we is None:
                return None
            self.counters.samples_out += 1
            return dataclasses.replace(msg, wire_expr=we)
        if isinstance(msg, Declare) and isinstance(msg.body, DeclareSubscriber):
            we = self._full(msg.body.wire_expr)
            if we is None:
                return None
            self.counters.declarations_out += 1
            return dataclasses.replace(msg, body=DeclareSubscriber(0, we))
        return None

    def _full(self, we: WireExpr) -> WireExpr | None:
        if we.scope == 0:
            return we
        prefix = self._key_of(we.scope)
        return None if prefix is None else WireExpr(0, prefix + we.suffix)

    # --- what the runtime asks of any link -----------------------------------------------
    def pause_reading(self) -> None:
        """A full subscriber does not stop the group: its datagrams are not held anyway."""

    def resume_reading(self) -> None:
        pass

    async def wait_writable(self) -> None:
        return

    def close(self, reason: int = CloseReason.GENERIC) -> None:
        pass

    async def aclose(self, reason: int = CloseReason.GENERIC, timeout: float = 5.0) -> None:
        await self.group.close()

    def abort(self) -> None:
        self.group.abort()


class SessionGroup:
    """One group a peer session joined: its face in the core, and the members it knows."""

    def __init__(
        self,
        endpoint: str,
        zid: ZenohId,
        lease_ms: int,
        join_interval_s: float,
        now: float,
        on_message: Callable[[NetworkMessage], None],
        key_of: Callable[[int], str | None],
    ) -> None:
        ep = Endpoint.parse(endpoint)
        self.endpoint = endpoint
        self._on_message = on_message
        config = MulticastConfig(zid, WhatAmI.PEER, lease_ms=lease_ms, join_interval_s=join_interval_s)
        self.transport = MulticastTransport(config, now)
        iface = dict(ep.params).get("iface", "0.0.0.0")
        self.group = MulticastGroup(self.transport, ep.host, ep.port, iface, self._on_event)
        self.counters = GroupCounters()
        self.link = GroupLink(self.group, key_of, self.counters)
        self.members: dict[str, _Member] = {}

    async def start(self) -> None:
        await self.group.start()
        log.info("joined the multicast group %s", self.endpoint)

    def established(self) -> Established:
        """The group face's peer: a zid of its own (the group is no one member)."""
        zid = ZenohId(int.from_bytes(os.urandom(16), "little") | 1)
        return Established(
            zid, WhatAmI.PEER, self.transport.config.lease_ms, MAX_DATAGRAM, DEFAULT_RESOLUTION, False, 1, 0, 0
        )

    def _on_event(self, event: Event) -> None:
        match event:
            case PeerJoined(locator, zid, whatami):
                self.members[locator] = _Member(zid, whatami)
                log.info("multicast %s: %s (%s) joined from %s", self.endpoint, zid, whatami, locator)
            case PeerLeft(locator, zid, reason):
                self.members.pop(locator, None)
                log.info("multicast %s: %s left (%s)", self.endpoint, zid, reason)
            case PeerEvicted(locator, zid, reason):
                log.warning("multicast %s: ignored: %s", self.endpoint, reason)
            case Delivered(locator, _, messages):
                member = self.members.get(locator)
                if member is not None:
                    for msg in messages:
                        self._from(member, msg)

    def _from(self, member: _Member, msg: NetworkMessage) -> None:
        if isinstance(msg, Push):
            key = member.keys.full(msg.wire_expr)
            if key is None:
                self.counters.ignored += 1
                return
            self.counters.samples_in += 1
            self._on_message(dataclasses.replace(msg, wire_expr=WireExpr(0, key)))
            return
        body = msg.body if isinstance(msg, Declare) else None
        if isinstance(body, DeclareKeyExpr | UndeclareKeyExpr) and member.keys.learn(body):
            return
        self.counters.ignored += 1  # subscribers, queries, tokens, interests: not crossing

    async def close(self) -> None:
        await self.group.close()
