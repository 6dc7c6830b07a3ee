"""Publish/subscribe: subscriber declarations (who hears of them) and PUSH routing.

A PUSH goes to every face holding an intersecting subscriber that may see the source
(:meth:`Tables.sees <pyzenoh.routing.tables.Tables.sees>`), written with the key each destination knows best. That
decision is made once per (face, key representation, NodeId) as a :class:`DataRoute`,
cached until key tables or subscribers change: its destinations, what restricts it
(access control, interceptors, an observer), whether the fast lanes may execute it, and the head each
destination gets. The timestamp policy (:meth:`PubSub.stamping`) and the counting
(:meth:`PubSub.count_routed`) are defined here once too. Three lanes execute a route:
the message lane here (:meth:`PubSub.on_push`: every case, the reference), and the run
and lone lanes of :mod:`.lanes`, which cover the unrestricted routes and hand anything
else to the message lane. Bytes are forwarded unchanged when nothing about them
changes; a router timestamp is spliced into the received bytes rather than re-encoding
the message (:mod:`pyzenoh.dataplane.splice`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

from pyzenoh.codec import (
    Declare,
    DeclareSubscriber,
    Del,
    InterestOptions,
    Push,
    Put,
    Timestamp,
    UndeclareSubscriber,
    WireExpr,
)
from pyzenoh.dataplane.splice import encode_timestamp, stamp_body
from pyzenoh.interceptors import Drop, Kind, Message
from pyzenoh.routing.access_control import DELETE, EGRESS, INGRESS, PUT, Denial, FaceAcl
from pyzenoh.routing.faces import NORTH, Face
from pyzenoh.routing.intercepted import InterceptedRoute
from pyzenoh.routing.tables import Tables
from pyzenoh.routing.types import PushRouted, make_send

if TYPE_CHECKING:
    from pyzenoh.routing.routers import RouterMesh

_S = InterestOptions.SUBSCRIBERS

# (face, key as written to it, NodeId: set only towards router neighbours)
Dests = tuple[tuple[int, WireExpr, int | None], ...]


@dataclass(frozen=True, slots=True)
class AclDecision:
    """What access control does to one message kind (PUT or DELETE) on a data route: the
    source's ingress denial, the destinations left, and the egress denials to count.
    Decided once per route, counted per message."""

    message: int
    ingress: Denial | None
    dests: Dests
    egress: tuple[tuple[FaceAcl, Denial], ...]


@dataclass(frozen=True, slots=True)
class AclPush:
    """Access control's decisions on a data route; None for a kind it allows everywhere."""

    put: AclDecision | None
    delete: AclDecision | None


#: One destination as the fast lanes write to it: the face, the head it gets (None: the
#: received one, when it knows the key as the source wrote it), the key and the NodeId.
LaneDest = tuple[int, bytes | None, WireExpr, int | None]


@dataclass(frozen=True, slots=True)
class DataRoute:
    """The forwarding decision for one (face, key representation, NodeId): made once,
    cached with the route, executed by every lane."""

    key: str | None  # None: the message is dropped for ``reason``
    dests: Dests = ()
    reason: str = ""
    faces: frozenset[int] = frozenset()  # the destination faces, for observers
    #: None when access control lets everything on this route through (always when it
    #: is off): an allowed PUSH on a warm route pays one attribute check for it.
    acl: AclPush | None = None
    #: Whether the run and lone lanes may execute this route: it has a key, and nothing
    #: restricts it per message (access control, an observer wanting one event each).
    lanes: bool = False
    #: The lanes' destinations per QoS (the head encodes it), filled on first use.
    heads: dict[int, tuple[LaneDest, ...]] = field(default_factory=dict)
    #: None when no interceptor can touch this route's key (always when none is set).
    intercept: InterceptedRoute | None = None


class Stamping(IntEnum):
    """What the timestamp policy does to a routed message (:meth:`PubSub.stamping`)."""

    AS_IS = 0  # not a PUT forwarded with timestamping on: the body goes as it came
    STAMP = 1  # no timestamp: the router's HLC gives it one
    KEEP = 2  # stamped already (by a router neighbour), and the clock took note of it
    FUTURE = 3  # stamped too far ahead of the clock: re-stamped or dropped (the message lane)


class Lane(IntEnum):
    """The lane that routed PUSHes, for :meth:`PubSub.count_routed`."""

    MESSAGE = 0
    RUN = 1
    LONE = 2


class PubSub:
    """Subscriber tables and data routing."""

    def __init__(self, tables: Tables, mesh: RouterMesh, *, intercepting: bool = False) -> None:
        """``mesh``: where routers' subscribers are, and what is told when the south
        starts or stops holding one. ``intercepting``: some face may have interceptors
        (without, a route never looks for them)."""
        self.tables = tables
        self.mesh = mesh
        self.intercepting = intercepting
        # The hot path's lookups, bound once (the tables never replace these objects).
        self._routes = tables.data_routes
        self._push_heads = tables.push_heads
        self._stats = tables.stats
        self._hlc = tables.hlc
        self._config = tables.config

    def data_route(self, f: Face, we: WireExpr, node_id: int | None) -> DataRoute:
        cache_key = (f.fid, we.scope, we.suffix, we.mapping_sender, node_id)
        route = self._routes.get(cache_key)
        if route is not None:
            self._stats.data_route_hits += 1
            return route
        checked = self.tables.routable(f, we, node_id)
        if isinstance(checked, str):
            route = DataRoute(None, reason=checked)
        else:  # a wildcard key too: zenohd routes a put on a/* to a subscriber on a/b
            key, source = checked
            self._stats.sub_index_lookups += 1
            dests: dict[int, tuple[WireExpr, int | None]] = {}
            for sub_key, fid in self.tables.sub_tree.intersecting(key):
                if fid == NORTH:
                    # Remote routers: along the entry router's tree, one copy per hop.
                    node = source or None
                    for hop in self.mesh.north_hops(source, self.mesh.north_sub_owners(sub_key), f):
                        if hop not in dests:
                            dests[hop] = (self.tables.best_key(self.tables.faces[hop], key), node)
                    continue
                d = self.tables.faces[fid]
                if fid not in dests and self.tables.sees(d, f):
                    dests[fid] = (self.tables.best_key(d, key), None)
            routed = tuple((fid, we, node) for fid, (we, node) in sorted(dests.items()))
            acl = None if self.tables.acl is None else self._acl_push(f, key, routed)
            intercept = None
            if self.intercepting:
                faces = self.tables.faces
                intercept = InterceptedRoute.of(key, f.intercept_in, ((d, faces[d].intercept_out) for d in dests))
            route = DataRoute(
                key,
                routed,
                faces=frozenset(dests),
                acl=acl,
                lanes=acl is None and intercept is None and self.tables.observer is None,
                intercept=intercept,
            )
        self.tables.remember(self._routes, cache_key, route)
        return route

    def _acl_push(self, f: Face, key: str, dests: Dests) -> AclPush | None:
        """Access control's decisions for a data route (None when it allows all)."""
        put, delete = self._acl_decision(f, key, dests, PUT), self._acl_decision(f, key, dests, DELETE)
        if put is None and delete is None:
            return None
        return AclPush(put, delete)

    def _acl_decision(self, f: Face, key: str, dests: Dests, message: int) -> AclDecision | None:
        ingress = None if f.acl is None else f.acl.check(INGRESS, message, key)
        kept, denied = [], []
        for dest in dests:
            acl = self.tables.faces[dest[0]].acl
            denial = None if acl is None else acl.check(EGRESS, message, key)
            if acl is None or denial is None:
                kept.append(dest)
            else:
                denied.append((acl, denial))
        if ingress is None and not denied:
            return None
        return AclDecision(message, ingress, tuple(kept), tuple(denied))

    @staticmethod
    def _acl_dests(f: Face, key: str | None, acl: AclDecision) -> Dests | None:
        """The destinations of a message on a route access control restricts for its kind
        (None: denied on the way in); every denial is counted. Denied data is dropped
        silently."""
        if acl.ingress is not None:
            assert f.acl is not None
            f.acl.record(INGRESS, acl.message, key, acl.ingress)
            return None
        for face_acl, denial in acl.egress:
            face_acl.record(EGRESS, acl.message, key, denial)
        return acl.dests

    def on_push(self, f: Face, msg: Push, raw: bytes | None, reliable: bool) -> None:
        route = self.data_route(f, msg.wire_expr, msg.node_id)
        if route.key is None:
            self.tables.drop(f.fid, route.reason, msg)
            return
        dests = route.dests
        acl = route.acl
        if acl is not None:  # access control restricts this route (never when it is off)
            decision = acl.put if isinstance(msg.body, Put) else acl.delete
            if decision is not None:
                acl_dests = self._acl_dests(f, route.key, decision)
                if acl_dests is None:
                    return
                dests = acl_dests
        qos_of: dict[int, int] | None = None
        if route.intercept is not None:  # an interceptor can touch this route's key
            intercepted = self._intercept(f, route.key, route.intercept, msg, dests)
            if intercepted is None:
                return
            dests, qos_of = intercepted
        body = msg.body
        stamped = False
        if dests:
            stamping = self.stamping(isinstance(body, Put), body.timestamp)
            if stamping is Stamping.FUTURE and self._config.drop_future_timestamp:
                self.tables.drop(f.fid, "timestamp too far in the future", msg)
                return
            if stamping is Stamping.STAMP or stamping is Stamping.FUTURE:
                assert isinstance(body, Put)
                body = body.with_timestamp(self._hlc.new_timestamp(self.tables.wall))
                stamped = True
        self.count_routed(Lane.MESSAGE)
        if dests:
            # Real routers drop the network-level timestamp when fanning out.
            net_ts = msg.timestamp if len(dests) == 1 else None
            head_unchanged = net_ts is msg.timestamp
            body_raw = None if qos_of else self._body_bytes(msg, raw, body)
            if body_raw is not None:
                self._emit_push_bytes(msg, raw, body, body_raw, dests, net_ts, head_unchanged, reliable)
            else:
                unchanged = body is msg.body and head_unchanged
                # One message object per distinct key representation and QoS: the caller
                # can encode it once for every face it goes to.
                shared: dict[tuple[WireExpr, int | None, int], Push] = {}
                for fid, we, node in dests:
                    qos = msg.qos if qos_of is None else qos_of.get(fid, msg.qos)
                    if unchanged and qos == msg.qos and we == msg.wire_expr and node == msg.node_id:
                        self.tables.emit(fid, msg, qos, raw, reliable)
                        continue
                    out = shared.get((we, node, qos))
                    if out is None:
                        out = shared[(we, node, qos)] = msg.routed(we, body, net_ts, node, qos)
                    self.tables.emit(fid, out, qos, None, reliable)
        if self.tables.observer is not None:
            faces = route.faces if dests is route.dests else frozenset(d[0] for d in dests)
            self.tables.observer(PushRouted(f.fid, route.key, faces, msg, stamped))

    def _intercept(
        self, f: Face, key: str, intercept: InterceptedRoute, msg: Push, dests: Dests
    ) -> tuple[Dests, dict[int, int] | None] | None:
        """The destinations the interceptors leave a message, with the QoS rewritten per
        face (None: dropped on the way in). Every drop is reported to the tables."""
        body = msg.body
        if isinstance(body, Put):
            seen = Message(Kind.PUT, key, len(body.payload), len(body.attachment or b""))
        else:
            seen = Message(Kind.DELETE, key, 0, len(body.attachment or b""))
        verdict = intercept.apply(seen, msg.qos, (d[0] for d in dests), self.tables.now)
        if isinstance(verdict, Drop):
            self.tables.intercepted(f.fid, f.fid, "ingress", key, verdict, msg)
            return None
        for fid, drop in verdict.dropped:
            self.tables.intercepted(f.fid, fid, "egress", key, drop, msg)
        if len(verdict.faces) < len(dests):
            dests = tuple(d for d in dests if d[0] in verdict.faces)
        return dests, verdict.qos or None

    def stamping(self, put: bool, ts: Timestamp | None) -> Stamping:
        """The timestamp policy of a message that goes somewhere, one rule for every lane:
        with timestamping on, a PUT without a timestamp gets the router's; one with a
        timestamp is noted by the clock, unless it is too far ahead (FUTURE: the message
        lane re-stamps or drops it as ``drop_future_timestamp`` says; the other lanes
        hand such messages to it). For a run, ``ts`` is its latest timestamp."""
        if not put or not self._config.timestamping:
            return Stamping.AS_IS
        if ts is None:
            return Stamping.STAMP
        return Stamping.KEEP if self._hlc.update(ts, self.tables.wall) else Stamping.FUTURE

    def count_routed(self, lane: Lane, n: int = 1) -> None:
        """Count ``n`` PUSHes routed by ``lane``: the stats every lane keeps alike."""
        stats = self._stats
        stats.pushes_routed += n
        if lane is Lane.RUN:
            stats.push_runs_routed += 1
            stats.pushes_in_runs += n
        elif lane is Lane.LONE:
            stats.lone_pushes_routed += 1

    def route_of(self, fid: int, scope: int, suffix: str, mapping: bool, node_id: int | None) -> DataRoute | None:
        """The data route for a key representation as scanned (no WireExpr built on a
        warm route); None for an unknown face or the north face (handle() says so)."""
        route = self._routes.get((fid, scope, suffix, mapping, node_id))
        if route is not None:
            self._stats.data_route_hits += 1
            return route
        f = self.tables.faces.get(fid)
        if f is None or fid == NORTH:
            return None
        return self.data_route(f, WireExpr(scope, suffix, mapping), node_id)

    def lane_heads(self, route: DataRoute, rx: WireExpr, rx_node: int | None, qos: int) -> tuple[LaneDest, ...]:
        """The route's destinations with the head each gets for ``qos`` (None: the received
        head, ``rx`` with ``rx_node``), made once per route and QoS."""
        heads = route.heads.get(qos)
        if heads is None:
            out: list[LaneDest] = []
            for fid, we, node in route.dests:
                same = (
                    node == rx_node
                    and we.scope == rx.scope
                    and we.suffix == rx.suffix
                    and we.mapping_sender == rx.mapping_sender
                )
                out.append((fid, None if same else self._push_head(Push(we, Put(b""), qos, None, node)), we, node))
            heads = route.heads[qos] = tuple(out)
        return heads

    @staticmethod
    def _body_bytes(msg: Push, raw: bytes | None, body: Put | Del) -> bytes | None:
        """The outgoing body's bytes taken from the received ones, or None: encode it.

        Unchanged bodies are sliced out; a router timestamp on a PUT that had none is
        inserted right after the PUT header (where the T flag says it sits), which is the
        common case of every publication through a router: no object is rebuilt and the
        payload is not copied twice.
        """
        off = msg.body_offset
        if raw is None or off <= 0:
            return None
        if body is msg.body:
            return raw[off:]
        if (
            isinstance(body, Put)
            and isinstance(msg.body, Put)
            and msg.body.timestamp is None
            and body.timestamp is not None
        ):
            return stamp_body(raw[off:], encode_timestamp(body.timestamp))
        return None

    def _push_head(self, msg: Push) -> bytes:
        """The encoded head of a routed PUSH; a steady stream reuses it (when the head is
        only the key and QoS, which is what publications carry)."""
        if msg.timestamp is not None or msg.node_id is not None or msg.ts_stack is not None or msg.extensions:
            head = bytearray()
            msg.write_head(head)
            return bytes(head)
        we = msg.wire_expr
        cache_key = (we.scope, we.suffix, we.mapping_sender, msg.qos)  # hashed without calls
        cached = self._push_heads.get(cache_key)
        if cached is None:
            head = bytearray()
            msg.write_head(head)
            cached = bytes(head)
            self.tables.remember(self._push_heads, cache_key, cached)
        return cached

    def _emit_push_bytes(
        self,
        msg: Push,
        raw: bytes | None,
        body: Put | Del,
        body_raw: bytes,
        dests: tuple[tuple[int, WireExpr, int | None], ...],
        net_ts: Timestamp | None,
        head_unchanged: bool,
        reliable: bool,
    ) -> None:
        """Emit a routed PUSH whose bytes are its received head (or one re-encoded head per
        key representation) followed by ``body_raw``, the encoding of ``body``."""
        assert raw is not None
        if len(dests) == 1:  # the common case (one subscriber, a ping-pong): no memo
            fid, we, node = dests[0]
            out_msg, data = self._routed_push(msg, raw, body, body_raw, we, node, net_ts, head_unchanged)
            self.tables.out.append(make_send(fid, out_msg, msg.qos, data, reliable))  # = self.tables.emit(...)
            return
        heads: dict[tuple[WireExpr, int | None], tuple[Push, bytes]] = {}
        for fid, we, node in dests:
            entry = heads.get((we, node))
            if entry is None:
                entry = heads[(we, node)] = self._routed_push(
                    msg, raw, body, body_raw, we, node, net_ts, head_unchanged
                )
            self.tables.emit(fid, entry[0], msg.qos, entry[1], reliable)

    def _routed_push(
        self,
        msg: Push,
        raw: bytes,
        body: Put | Del,
        body_raw: bytes,
        we: WireExpr,
        node: int | None,
        net_ts: Timestamp | None,
        head_unchanged: bool,
    ) -> tuple[Push, bytes]:
        """The copy of ``msg`` for one key representation and NodeId, and its bytes: the
        received head when nothing in it changes, else one re-encoded, then ``body_raw``."""
        out_msg = msg.routed(we, body, net_ts, node)
        rx = msg.wire_expr
        # (the fields compared, not the WireExprs: no call to the dataclass's __eq__)
        same_key = we is rx or (
            we.scope == rx.scope and we.suffix == rx.suffix and we.mapping_sender == rx.mapping_sender
        )
        if head_unchanged and same_key and node == msg.node_id:
            return out_msg, raw[: msg.body_offset] + body_raw
        return out_msg, self._push_head(out_msg) + body_raw

    def on_declare_subscriber(self, f: Face, body: DeclareSubscriber, msg: Declare) -> None:
        key = self.tables.new_entity(f, f.subs, body, msg, "subscriber")
        if key is not None:
            self.change_sub_holder(f, key, +1)

    def _sub_visible(self, d: Face, holders: dict[int, int]) -> bool:
        return any(self.tables.sees(d, self.tables.faces[h]) for h in holders if h in self.tables.faces)

    def change_sub_holder(self, f: Face, key: str, delta: int) -> None:
        counted = self.tables.count_holder(self.tables.sub_holders, self.tables.sub_tree, f, key, delta)
        if counted is None:
            return
        before, holders = counted
        self.tables.invalidate_routes()
        if f.fid != NORTH:
            south = any(h != NORTH for h in holders)
            if south != any(h != NORTH for h in before):
                self.mesh.south_subs_changed(key, south)
        for d in self.tables.live_faces():
            if not d.interests and not d.local_subs.contains_simple(key):
                continue  # nothing to tell it or to take back (the common face: a client without interests)
            was = self._sub_visible(d, before)
            now = self._sub_visible(d, holders)
            if now and not was:
                self._propagate_sub(d, key)
            elif was and not now:
                for change in d.local_subs.remove_simple(key):
                    self.tables.declare(d, UndeclareSubscriber(change.id), key=change.key)

    def _propagate_sub(self, d: Face, key: str) -> None:
        if d.local_subs.contains_simple(key):
            return
        matching = self.tables.matching_interests(d, _S, key)
        if not matching:
            return
        simple = [iid for iid, it in matching if not it.aggregate]
        _, changes = d.local_subs.insert_simple(key, True, lambda: self.tables.new_id(d), simple)
        for change in changes:
            self.tables.declare(d, DeclareSubscriber(change.id, self.tables.decl_key(d, change.key)), key=change.key)
