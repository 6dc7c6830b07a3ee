"""The one equivalence harness: every PUSH lane against the codec-and-rule reference.

A stream of bytes from a client goes to two routers' worth of state, each a sans-IO
:class:`Link` (the router's role) in front of a :class:`RoutingCore`, fed exactly as
:class:`~pyzenoh.router.daemon.RouterDaemon` feeds them:

- **reference**: the link with every lane off (each message a :class:`Received`, decoded
  as the codec decodes it: checked here against ``codec.decode_batch``), routed by
  :meth:`RoutingCore.handle`, the message lane;
- **lanes**: the link as the router configures it (read batches joined, runs of
  same-shape PUSHes, lone PUSHes undecoded), each event to the lane it names.

What the two routed must agree on: the bytes each face gets, message by message (a
run's copies split at their ends), the routing stats (but the lanes' own counters), the
HLC, and whether the link closed on bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from pyzenoh.codec import (
    BatchReader,
    Frame,
    NetworkMessage,
    WhatAmI,
    ZenohId,
    decode_batch,
    encode_batch,
    encode_network_message,
)
from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.errors import PeerError
from pyzenoh.routing import RoutingConfig, RoutingCore, Send
from pyzenoh.routing.access_control import AccessControl, FaceSubject
from pyzenoh.transport.link import (
    Established,
    Event,
    Link,
    LinkClosed,
    LinkConfig,
    Received,
    ReceivedPush,
    ReceivedRun,
    Role,
    sn_mask,
)
from tests.routing.support import ROUTER_ZID

#: The face the stream comes from (the link's), and the other faces the setup declares.
SOURCE = 0
CLIENT_ZID = ZenohId.from_str("c1c2c3c4c5c6c7c8")
#: Stats only a lane keeps (and the route cache hits, which the lanes' lookups change).
LANE_COUNTERS = frozenset({"push_runs_routed", "pushes_in_runs", "lone_pushes_routed", "data_route_hits"})


@dataclass
class Routed:
    """What one side routed."""

    per_face: dict[int, list[bytes]] = field(default_factory=dict)
    closed: bool = False  # the link closed (bad input)
    errors: list[str] = field(default_factory=list)  # PeerErrors the core raised
    lone: int = 0  # lone PUSHes the lone lane carried
    runs: int = 0  # runs handed to the run lane

    def add(self, sends: list[Send]) -> None:
        for s in sends:
            out = self.per_face.setdefault(s.face, [])
            raw = s.raw if s.raw is not None else encode_network_message(s.message)
            if s.ends is None:
                out.append(raw)
            else:
                start = 0
                for end in s.ends:
                    out.append(raw[start:end])
                    start = end


class Side:
    """A router link and routing core, fed as the daemon feeds them."""

    def __init__(
        self,
        lanes: bool,
        config: RoutingConfig,
        setup: Callable[[RoutingCore], None],
        batch_size: int = 0xFFFF,
        acl: Callable[[], AccessControl] | None = None,
    ) -> None:
        self.lanes = lanes
        self.core = RoutingCore(ROUTER_ZID, config=config, access_control=None if acl is None else acl())
        self.core.add_face(SOURCE, CLIENT_ZID, WhatAmI.CLIENT, 0.0, FaceSubject(zid=CLIENT_ZID))
        setup(self.core)
        self.link = Link(
            LinkConfig(
                ROUTER_ZID,
                WhatAmI.ROUTER,
                batch_size=batch_size,
                push_runs=lanes,
                stamped_runs=lanes,
                lone_pushes=lanes,
            ),
            Role.ACCEPTOR,
            0.0,
        )
        self.routed = Routed()

    def feed(self, data: bytes, now: float, wall: float) -> list[Event]:
        events = self.link.receive_data(data, now)
        for ev in events:
            self.dispatch(ev, now, wall)
        return events

    def dispatch(self, ev: Event, now: float, wall: float) -> None:
        core, routed = self.core, self.routed
        try:
            if isinstance(ev, ReceivedPush):
                out = core.forward_lone(SOURCE, ev.batch, ev.at, ev.fields, wall)
                if out is None:
                    rx = ev.received()
                    routed.add(core.handle(SOURCE, rx.message, now, rx.raw, rx.reliable, wall))
                else:
                    routed.lone += 1
                    qos = ev.fields.qos
                    for fid, data in out:
                        routed.add(
                            [
                                Send(
                                    fid,
                                    None,
                                    data,
                                    qos & 0x07,
                                    ev.reliable,  # type: ignore[arg-type]
                                    bool(qos & QOS_EXPRESS),
                                    bool(qos & QOS_BLOCK),
                                )
                            ]
                        )
            elif isinstance(ev, ReceivedRun):
                routed.runs += 1
                routed.add(core.handle_push_run(SOURCE, ev.run, now, ev.reliable, wall))
            elif isinstance(ev, Received):
                routed.add(core.handle(SOURCE, ev.message, now, ev.raw, ev.reliable, wall))
            elif isinstance(ev, LinkClosed):
                routed.closed = True
        except PeerError as exc:
            routed.errors.append(type(exc).__name__)

    def stats(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self.core.stats).items() if k not in LANE_COUNTERS}


class Pair:
    """The reference and the lanes, side by side, behind one client link."""

    def __init__(
        self,
        config: RoutingConfig,
        setup: Callable[[RoutingCore], None],
        batch_size: int = 0xFFFF,
        acl: Callable[[], AccessControl] | None = None,
    ) -> None:
        """``setup`` declares the other faces on each side's core; ``acl`` makes each
        side's access control."""
        self.reference = Side(False, config, setup, batch_size, acl)
        self.lanes = Side(True, config, setup, batch_size, acl)
        self.batch_size = batch_size
        self._stream = bytearray()
        self._received: list[tuple[object, bytes]] = []
        self._handshake()

    def _handshake(self) -> None:
        """A client link opens each side (cookies differ); the SNs it starts from do not."""
        isns = set()
        for side in (self.reference, self.lanes):
            client = Link(LinkConfig(CLIENT_ZID, WhatAmI.CLIENT, batch_size=self.batch_size), Role.OPENER, 0.0)
            established: list[Established] = []
            for _ in range(10):
                out = client.data_to_send()
                if not out:
                    break
                side.link.receive_data(out, 0.0)
                established += [
                    ev for ev in client.receive_data(side.link.data_to_send(), 0.0) if isinstance(ev, Established)
                ]
            assert side.link.is_established and established
            isns.add((established[0].own_initial_sn, established[0].resolution))
        assert len(isns) == 1
        ((self.isn, resolution),) = isns
        self.mask = sn_mask(resolution)
        #: The next SN of each (priority, reliable) channel of the client.
        self.sns: dict[tuple[int, bool], int] = {}

    def batch(self, messages: list[NetworkMessage], priority: int = 5, reliable: bool = True) -> bytes:
        """One batch of the client's: a FRAME of ``messages`` with the channel's next SN,
        length prefix included."""
        ch = (priority, reliable)
        sn = self.sns.get(ch, self.isn)
        self.sns[ch] = (sn + 1) & self.mask
        payload = encode_batch([Frame(reliable, sn, tuple(messages), priority)])
        return len(payload).to_bytes(2, "little") + payload

    def control(self, face: int, msg: object) -> None:
        """A message from another face (a declaration) to both cores."""
        for side in (self.reference, self.lanes):
            side.routed.add(side.core.handle(face, msg, 1.0))  # type: ignore[arg-type]

    def feed(self, data: bytes, now: float = 1.0, wall: float = 1.0) -> None:
        """Bytes the client wrote (length-prefixed batches, any split) to both sides."""
        self._stream += data
        self._received += [
            (ev.message, ev.raw) for ev in self.reference.feed(data, now, wall) if isinstance(ev, Received)
        ]
        self.lanes.feed(data, now, wall)

    def check(self) -> None:
        ref, lanes = self.reference, self.lanes
        if not ref.routed.closed:  # the reference's messages are the codec's
            decoded = [
                (msg, raw)
                for batch in BatchReader().feed(bytes(self._stream))
                for tm in decode_batch(batch, keep_raw=True)
                if isinstance(tm, Frame)
                for msg, raw in zip(tm.messages, tm.raw, strict=True)
            ]
            assert self._received == decoded
        assert lanes.routed.per_face == ref.routed.per_face
        assert lanes.stats() == ref.stats()
        assert lanes.core._tables.hlc.last == ref.core._tables.hlc.last
        assert lanes.routed.closed == ref.routed.closed
        assert lanes.routed.errors == ref.routed.errors
