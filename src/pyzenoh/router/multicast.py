"""A router's multicast listener (``udp/<group>:<port>#iface=...``): the group's members
meet the router's other faces.

What zenohd 1.10.2 does, measured in-process (a router listening on tcp/ and on a group
on lo, a real peer on the group, a real client on tcp/): samples cross both ways; a get
and a liveliness get from the client find nothing on the group; and router and peer
re-declare each other's subscribers over the group without end (77,000 DECLAREs each in
7 s). So, here:

- **Data.** Each member (known from its JOIN, :mod:`pyzenoh.transport.multicast`) is a
  face of the routing core, and its PUSHes (and the key ids they use) are routed from it
  as from any peer. What the router routes to the group leaves once, as a FRAME on the
  group, for every member: through one face, the *group face*.
- **Subscriptions.** A member's subscriber becomes the group face's (refcounted by key):
  the group face is in a data route once, however many members subscribe, and the
  router's neighbours learn the group's interests as any peer's. Nothing is declared
  back to the group (that is the storm above): members send their samples to the group
  anyway, as zenoh peers on a group do.
- **Early frames.** A 1.10.2 peer that declares right after it opens sometimes sends
  that DECLARE before its first JOIN (2 runs in 25, measured); zenoh drops a FRAME
  from a sender it has no JOIN from, and never declares again, so the subscriber is
  lost for good (zenohd: the member's subscriber missing in 1 run of 7). The transport
  holds such FRAMEs, bounded, until the JOIN (:data:`~pyzenoh.transport.multicast.state.EARLY_HOLD_S`).
- **Not crossing.** Queries, replies, liveliness and interests from members are not
  routed (counted in ``ignored``), as on zenohd; a sample from a member is not sent back
  to the group (the other members had it from the member itself).

The state machine (JOIN, leases, sequence numbers) is the sans-IO transport's; this
module is the glue between its events and the daemon's local faces.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareSubscriber,
    NetworkMessage,
    Push,
    UndeclareKeyExpr,
    UndeclareSubscriber,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.router.view import GroupView
from pyzenoh.routing import Send
from pyzenoh.transport.endpoint import Endpoint
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
from pyzenoh.transport.multicast.state import Event

if TYPE_CHECKING:
    from pyzenoh.router.daemon import RouterDaemon

log = logging.getLogger(__name__)


@dataclass
class _Member:
    face: int
    keys: MemberKeys
    subs: dict[int, str] = field(default_factory=dict)  # its subscribers' ids -> keys


@dataclass
class GroupCounters:
    samples_in: int = 0  # PUSHes from members, routed
    samples_out: int = 0  # PUSHes routed to the group
    ignored: int = 0  # members' messages that do not cross (queries, tokens, interests), or past a bound


class MulticastListener:
    """One group the router has joined: its group face, and one face per member."""

    def __init__(
        self,
        daemon: RouterDaemon,
        endpoint: str,
        lease_ms: int,
        join_interval_s: float,
        now: Callable[[], float],
    ) -> None:
        ep = Endpoint.parse(endpoint)
        self.endpoint = endpoint
        self._daemon = daemon
        self._iface = dict(ep.params).get("iface", "0.0.0.0")
        config = MulticastConfig(daemon.zid, WhatAmI.ROUTER, lease_ms=lease_ms, join_interval_s=join_interval_s)
        self.transport = MulticastTransport(config, now())
        self.group = MulticastGroup(self.transport, ep.host, ep.port, self._iface, self._on_event)
        self.group_address = f"{ep.host}:{ep.port}"
        self.counters = GroupCounters()
        #: Subscribers, and key ids, kept per member; more are ignored (counted).
        self.max_per_member = daemon.config.max_declarations_per_face
        self._members: dict[str, _Member] = {}
        self._group_face = -1
        self._group_subs: dict[str, tuple[int, int]] = {}  # key -> (the group face's id, members on it)
        self._next_sub = 1
        self._from_member = False  # routing a member's sample: not sent back to the group

    async def start(self) -> None:
        await self.group.start()
        # a zid of its own: the group is not the router (nor any one member)
        self._group_face = self._daemon.add_local_face(
            ZenohId(int.from_bytes(os.urandom(16), "little") | 1),
            self._to_group,
            WhatAmI.PEER,
            name=f"multicast/{self.endpoint}",
        )
        log.info("joined the multicast group %s", self.endpoint)

    def view(self) -> GroupView:
        """What the admin space shows of this group (zenohd lists the group among the
        router's locators and each member as a session with its ``group``)."""
        host, port = self.group.local_address
        members = tuple((str(zid), loc) for loc, zid in self.transport.remotes().items() if loc in self._members)
        counters = {**dataclasses.asdict(self.counters), **dataclasses.asdict(self.transport.counters)}
        counters["send_failures"] = self.group.send_failures
        return GroupView(f"udp/{self.group_address}", f"udp/{host}:{port}", members, counters)

    async def close(self) -> None:
        for locator in list(self._members):
            self._left(locator)
        if self._group_face >= 0:
            self._daemon.remove_local_face(self._group_face)
            self._group_face = -1
        await self.group.close()

    # --- to the group --------------------------------------------------------------------
    def _to_group(self, send: Send) -> None:
        if isinstance(send.message, Push) and not self._from_member:
            self.counters.samples_out += 1
            self.group.send((send.message,), send.reliable)

    # --- from the group ------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        match event:
            case PeerJoined(locator, zid, whatami):
                # a peer's face whatever the JOIN says: a member only sends samples here
                # (a router on the group is no neighbour of the mesh: it sends no link state)
                face = self._daemon.add_local_face(zid, _nowhere, WhatAmI.PEER, name=f"multicast/{locator}")
                self._members[locator] = _Member(face, MemberKeys(self.max_per_member))
                log.info("multicast %s: %s (%s) joined from %s", self.endpoint, zid, whatami, locator)
            case PeerLeft(locator, zid, reason):
                log.info("multicast %s: %s left (%s)", self.endpoint, zid, reason)
                self._left(locator)
            case PeerEvicted(locator, zid, reason):
                log.warning("multicast %s: ignored: %s", self.endpoint, reason)
            case Delivered(locator, _, messages):
                member = self._members.get(locator)
                if member is not None:
                    for msg in messages:
                        self._from(member, msg)

    def _from(self, member: _Member, msg: NetworkMessage) -> None:
        if isinstance(msg, Push):
            self.counters.samples_in += 1
            self._from_member = True
            try:
                self._daemon.local_input(member.face, msg)
            finally:
                self._from_member = False
            return
        if isinstance(msg, Declare):
            body = msg.body
            if isinstance(body, DeclareKeyExpr | UndeclareKeyExpr):
                self._daemon.local_input(member.face, msg)  # the member's PUSHes use them
                if member.keys.learn(body):
                    return
            elif isinstance(body, DeclareSubscriber):
                if body.entity_id in member.subs:
                    return  # zenoh re-declares: once is enough
                key = member.keys.full(body.wire_expr)
                if key is not None and len(member.subs) < self.max_per_member:
                    member.subs[body.entity_id] = key
                    self._subscribe(key)
                    return
            elif isinstance(body, UndeclareSubscriber):
                gone = member.subs.pop(body.entity_id, None)
                if gone is not None:
                    self._unsubscribe(gone)
                return
        self.counters.ignored += 1

    def _subscribe(self, key: str) -> None:
        held = self._group_subs.get(key)
        if held is not None:
            self._group_subs[key] = (held[0], held[1] + 1)
            return
        sub_id, self._next_sub = self._next_sub, self._next_sub + 1
        self._group_subs[key] = (sub_id, 1)
        self._daemon.local_input(self._group_face, Declare(DeclareSubscriber(sub_id, WireExpr(0, key))))

    def _unsubscribe(self, key: str) -> None:
        sub_id, count = self._group_subs[key]
        if count > 1:
            self._group_subs[key] = (sub_id, count - 1)
            return
        del self._group_subs[key]
        self._daemon.local_input(self._group_face, Declare(UndeclareSubscriber(sub_id)))

    def _left(self, locator: str) -> None:
        member = self._members.pop(locator, None)
        if member is None:
            return
        for key in member.subs.values():
            self._unsubscribe(key)
        self._daemon.remove_local_face(member.face)


def _nowhere(send: Send) -> None:
    """A member's own face: what the router routes to members leaves through the group face."""
