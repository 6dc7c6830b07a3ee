"""The run and lone lanes: routing PUSHes from their bytes by the route's decision.

The pub/sub rule (:mod:`.pubsub`) decides once per route where a PUSH goes, with which
head, and whether these lanes may carry it (:attr:`DataRoute.lanes`); its timestamp
policy and its counting are the ones these lanes use. The lanes decide nothing of their
own: what a route does not let them carry, or what the policy sends back
(:attr:`Stamping.FUTURE`), goes to the message lane, :meth:`PubSub._on_push`.

- The run lane takes a :class:`~pyzenoh.dataplane.runs.PushRun` (a publisher's batch of
  same-shape PUSHes): one route lookup, one copy per distinct head, written with numpy
  (:func:`~pyzenoh.dataplane.splice.splice_run`), the router's timestamps consecutive as
  the message lane would issue them.
- The lone lane takes a batch that is one FRAME of one PUSH (every ping-pong message): the
  routed bytes are the destination's head and the received body, the router's timestamp
  spliced in; nothing is decoded or built.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyzenoh.codec import Push, Put, Timestamp, WireExpr
from pyzenoh.dataplane.runs import PushRun
from pyzenoh.dataplane.scan import ID_PUT, PushFields
from pyzenoh.dataplane.splice import U8, splice_run, stamp_body, timestamp_columns
from pyzenoh.routing.faces import Face
from pyzenoh.routing.pubsub import Lane, PubSub, Stamping
from pyzenoh.routing.tables import Tables
from pyzenoh.routing.types import make_send


class PushLanes:
    """The run and lone lanes (the rule and the message lane live in :mod:`.pubsub`)."""

    def __init__(self, tables: Tables, pubsub: PubSub) -> None:
        """``pubsub`` decides the routes, stamps, counts, and routes what the lanes do not."""
        self.tables = tables
        self._hlc = tables.hlc
        # The rule's steps, bound once: the lone lane is the hot path.
        self._data_route = pubsub.data_route
        self._route_of = pubsub.route_of
        self._stamping = pubsub.stamping
        self._count_routed = pubsub.count_routed
        self._lane_heads = pubsub.lane_heads
        self._on_push = pubsub.on_push

    def on_push_run(self, f: Face, run: PushRun, reliable: bool) -> None:
        msg = run.first
        route = self._data_route(f, msg.wire_expr, msg.node_id)
        if not route.lanes:
            self._push_run_one_by_one(f, run, reliable)
            return
        ts: U8 | None = None
        if route.dests:
            stamp = msg.body.timestamp
            latest = None if stamp is None else Timestamp(max(run.times()), stamp.id)
            stamping = self._stamping(isinstance(msg.body, Put), latest)
            if stamping is Stamping.FUTURE:
                self._push_run_one_by_one(f, run, reliable)  # re-stamped or dropped there
                return
            if stamping is Stamping.STAMP:
                hlc = self._hlc
                ts = timestamp_columns(hlc.peek(self.tables.wall), run.count, hlc.hlc_id)
                if ts is None:  # the times' width changes within the run (nothing issued)
                    self._push_run_one_by_one(f, run, reliable)
                    return
                hlc.reserve(self.tables.wall, run.count)  # the times of the columns
        self._count_routed(Lane.RUN, run.count)
        out = self.tables.out
        # one copy per distinct head, however many faces it goes to
        copies: dict[bytes | None, tuple[Push, bytes, Sequence[int]]] = {}
        for fid, head, we, node in self._lane_heads(route, msg.wire_expr, msg.node_id, msg.qos):
            made = copies.get(head)
            if made is None:
                made = copies[head] = (msg.routed(we, msg.body, None, node), *splice_run(run, head, ts))
            out.append(make_send(fid, made[0], msg.qos, made[1], reliable, made[2]))

    def _push_run_one_by_one(self, f: Face, run: PushRun, reliable: bool) -> None:
        for msg, raw in run.messages():
            self._on_push(f, msg, raw, reliable)

    def forward_lone(
        self, face: int, batch: bytes, at: int, fields: PushFields, wall: float
    ) -> list[tuple[int, bytes]] | None:
        """Route the PUSH at ``batch[at:]`` (its fields as ``scan_push`` found them, the
        batch ending with it) received on ``face``: each destination face and the bytes
        of its copy, stamped with the HLC at ``wall``. None: the lane does not carry it and
        nothing was done; route it with :meth:`handle`."""
        route = self._route_of(face, fields.scope, fields.suffix, fields.mapping, fields.node_id)
        if route is None or not route.lanes:
            return None
        dests = route.dests
        if not dests:
            self._count_routed(Lane.LONE)
            return []
        self.tables.wall = wall
        off = at + fields.body_offset  # the PUT/DEL header
        stamping = self._stamping(fields.kind == ID_PUT, fields.timestamp)
        if stamping is Stamping.STAMP:
            body = stamp_body(batch[off:], self._hlc.new_encoded(wall))
        elif stamping is Stamping.FUTURE:
            return None  # re-stamped or dropped by the message lane
        else:
            body = batch[off:]
        self._count_routed(Lane.LONE)
        rx = None
        heads = route.heads.get(fields.qos)
        if heads is None:
            heads = self._lane_heads(
                route, WireExpr(fields.scope, fields.suffix, fields.mapping), fields.node_id, fields.qos
            )
        out = []
        for fid, head, _, _ in heads:
            if head is None:
                if rx is None:
                    rx = batch[at:off]
                head = rx
            out.append((fid, head + body))
        return out
