"""Publish/subscribe: subscriber declarations (who hears of them) and PUSH routing.

A PUSH goes to every face holding an intersecting subscriber that may see the source
(:meth:`RoutingTables._sees`), written with the key each destination knows best. Routes
are cached per (face, wire expression) and dropped whenever key tables or subscribers
change. Bytes are forwarded unchanged when nothing about them changes; a router
timestamp is spliced into the received bytes rather than re-encoding the message.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
from pyzenoh.codec.data import FLAG_T as PUT_FLAG_T
from pyzenoh.routing.access_control import DELETE, EGRESS, INGRESS, PUT, Denial, FaceAcl
from pyzenoh.routing.faces import (
    MAX_ROUTE_CACHE,
    NORTH,
    Face,
    RoutingTables,
)
from pyzenoh.routing.hlc import encode_timestamp
from pyzenoh.routing.types import PushRouted, make_send

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


@dataclass(frozen=True, slots=True)
class DataRoute:
    key: str | None  # None: the message is dropped for ``reason``
    dests: Dests = ()
    reason: str = ""
    faces: frozenset[int] = frozenset()  # the destination faces, for observers
    #: None when access control lets everything on this route through (always when it
    #: is off): an allowed PUSH on a warm route pays one attribute check for it.
    acl: AclPush | None = None


class PubSub(RoutingTables):
    """Subscriber tables and data routing."""

    _data_routes: dict[tuple[int, int, str, bool, int | None], DataRoute]
    _push_heads: dict[tuple[int, str, bool, int], bytes]  # encoded PUSH heads

    def _data_route(self, f: Face, we: WireExpr, node_id: int | None) -> DataRoute:
        cache_key = (f.fid, we.scope, we.suffix, we.mapping_sender, node_id)
        route = self._data_routes.get(cache_key)
        if route is not None:
            self.stats.data_route_hits += 1
            return route
        checked = self._routable(f, we, node_id)
        if isinstance(checked, str):
            route = DataRoute(None, reason=checked)
        elif "*" in checked[0]:
            route = DataRoute(None, reason="wildcard key in PUSH")
        else:
            key, source = checked
            self.stats.sub_index_lookups += 1
            dests: dict[int, tuple[WireExpr, int | None]] = {}
            for sub_key, fid in self._sub_tree.intersecting(key):
                if fid == NORTH:
                    # Remote routers: along the entry router's tree, one copy per hop.
                    node = source or None
                    for hop in self._north_hops(source, self._north_sub_owners(sub_key), f):
                        if hop not in dests:
                            dests[hop] = (self._best_key(self._faces[hop], key), node)
                    continue
                d = self._faces[fid]
                if fid not in dests and self._sees(d, f):
                    dests[fid] = (self._best_key(d, key), None)
            route = DataRoute(key, tuple((fid, we, node) for fid, (we, node) in sorted(dests.items())),
                              faces=frozenset(dests))  # fmt: skip
            if self._acl is not None:
                route = self._acl_data_route(f, route)
        if len(self._data_routes) >= MAX_ROUTE_CACHE:
            self._data_routes.clear()
        self._data_routes[cache_key] = route
        return route

    def _acl_data_route(self, f: Face, route: DataRoute) -> DataRoute:
        """``route`` with access control's decisions for it (unchanged when it allows all)."""
        put, delete = self._acl_decision(f, route, PUT), self._acl_decision(f, route, DELETE)
        if put is None and delete is None:
            return route
        return replace(route, acl=AclPush(put, delete))

    def _acl_decision(self, f: Face, route: DataRoute, message: int) -> AclDecision | None:
        key = route.key
        ingress = None if f.acl is None else f.acl.check(INGRESS, message, key)
        kept, denied = [], []
        for dest in route.dests:
            acl = self._faces[dest[0]].acl
            denial = None if acl is None else acl.check(EGRESS, message, key)
            if acl is None or denial is None:
                kept.append(dest)
            else:
                denied.append((acl, denial))
        if ingress is None and not denied:
            return None
        return AclDecision(message, ingress, tuple(kept), tuple(denied))

    @staticmethod
    def _acl_push(f: Face, key: str | None, acl: AclDecision) -> Dests | None:
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

    def _on_push(self, f: Face, msg: Push, raw: bytes | None, reliable: bool) -> None:
        route = self._data_route(f, msg.wire_expr, msg.node_id)
        if route.key is None:
            self._drop(f.fid, route.reason, msg)
            return
        dests = route.dests
        acl = route.acl
        if acl is not None:  # access control restricts this route (never when it is off)
            decision = acl.put if msg.body.__class__ is Put else acl.delete
            if decision is not None:
                acl_dests = self._acl_push(f, route.key, decision)
                if acl_dests is None:
                    return
                dests = acl_dests
        body = msg.body
        stamped = False
        if dests and self.config.timestamping and isinstance(body, Put):
            if body.timestamp is None:
                body = body.with_timestamp(self._hlc.new_timestamp(self._wall))
                stamped = True
            elif not self._hlc.update(body.timestamp, self._wall):
                if self.config.drop_future_timestamp:
                    self._drop(f.fid, "timestamp too far in the future", msg)
                    return
                body = body.with_timestamp(self._hlc.new_timestamp(self._wall))
                stamped = True
        self.stats.pushes_routed += 1
        if dests:
            # Real routers drop the network-level timestamp when fanning out.
            net_ts = msg.timestamp if len(dests) == 1 else None
            head_unchanged = net_ts is msg.timestamp
            body_raw = self._body_bytes(msg, raw, body)
            if body_raw is not None:
                self._emit_push_bytes(msg, raw, body, body_raw, dests, net_ts, head_unchanged, reliable)
            else:
                unchanged = body is msg.body and head_unchanged
                # One message object per distinct key representation: the caller can
                # encode it once for every face it goes to.
                shared: dict[tuple[WireExpr, int | None], Push] = {}
                for fid, we, node in dests:
                    if unchanged and we == msg.wire_expr and node == msg.node_id:
                        self._emit(fid, msg, msg.qos, raw, reliable)
                        continue
                    out = shared.get((we, node))
                    if out is None:
                        out = shared[(we, node)] = msg.routed(we, body, net_ts, node)
                    self._emit(fid, out, msg.qos, None, reliable)
        if self.observer is not None:
            faces = route.faces if dests is route.dests else frozenset(d[0] for d in dests)
            self.observer(PushRouted(f.fid, route.key, faces, msg, stamped))

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
        if isinstance(body, Put) and isinstance(msg.body, Put) and msg.body.timestamp is None \
                and body.timestamp is not None:  # fmt: skip
            return bytes((raw[off] | PUT_FLAG_T,)) + encode_timestamp(body.timestamp) + raw[off + 1 :]
        return None

    def _push_head(self, msg: Push) -> bytes:
        """The encoded head of a routed PUSH; a steady stream reuses it (when the head is
        only the key and QoS, which is what publications carry)."""
        if msg.timestamp is not None or msg.node_id is not None or msg.ts_stack is not None \
                or msg.extensions:  # fmt: skip
            head = bytearray()
            msg.write_head(head)
            return bytes(head)
        we = msg.wire_expr
        cache_key = (we.scope, we.suffix, we.mapping_sender, msg.qos)  # hashed without calls
        cached = self._push_heads.get(cache_key)
        if cached is None:
            if len(self._push_heads) >= MAX_ROUTE_CACHE:
                self._push_heads.clear()
            head = bytearray()
            msg.write_head(head)
            cached = self._push_heads[cache_key] = bytes(head)
        return cached

    def _emit_push_bytes(
        self, msg: Push, raw: bytes | None, body: Put | Del, body_raw: bytes,
        dests: tuple[tuple[int, WireExpr, int | None], ...], net_ts: Timestamp | None,
        head_unchanged: bool, reliable: bool,
    ) -> None:  # fmt: skip
        """Emit a routed PUSH whose bytes are its received head (or one re-encoded head per
        key representation) followed by ``body_raw``, the encoding of ``body``."""
        assert raw is not None
        if len(dests) == 1:  # the common case (one subscriber, a ping-pong): no memo
            fid, we, node = dests[0]
            out_msg, data = self._routed_push(msg, raw, body, body_raw, we, node, net_ts, head_unchanged)
            self._out.append(make_send(fid, out_msg, msg.qos, data, reliable))  # = self._emit(...)
            return
        heads: dict[tuple[WireExpr, int | None], tuple[Push, bytes]] = {}
        for fid, we, node in dests:
            entry = heads.get((we, node))
            if entry is None:
                entry = heads[(we, node)] = self._routed_push(msg, raw, body, body_raw, we, node, net_ts,
                                                              head_unchanged)  # fmt: skip
            self._emit(fid, entry[0], msg.qos, entry[1], reliable)

    def _routed_push(
        self, msg: Push, raw: bytes, body: Put | Del, body_raw: bytes, we: WireExpr, node: int | None,
        net_ts: Timestamp | None, head_unchanged: bool,
    ) -> tuple[Push, bytes]:  # fmt: skip
        """The copy of ``msg`` for one key representation and NodeId, and its bytes: the
        received head when nothing in it changes, else one re-encoded, then ``body_raw``."""
        out_msg = msg.routed(we, body, net_ts, node)
        rx = msg.wire_expr
        # (the fields compared, not the WireExprs: no call to the dataclass's __eq__)
        same_key = we is rx or (we.scope == rx.scope and we.suffix == rx.suffix
                                and we.mapping_sender == rx.mapping_sender)  # fmt: skip
        if head_unchanged and same_key and node == msg.node_id:
            return out_msg, raw[: msg.body_offset] + body_raw
        return out_msg, self._push_head(out_msg) + body_raw

    def _on_declare_subscriber(self, f: Face, body: DeclareSubscriber, msg: Declare) -> None:
        key = self._new_entity(f, f.subs, body, msg, "subscriber")
        if key is not None:
            self._change_sub_holder(f, key, +1)

    def _sub_visible(self, d: Face, holders: dict[int, int]) -> bool:
        return any(self._sees(d, self._faces[h]) for h in holders if h in self._faces)

    def _change_sub_holder(self, f: Face, key: str, delta: int) -> None:
        counted = self._count_holder(self._sub_holders, self._sub_tree, f, key, delta)
        if counted is None:
            return
        before, holders = counted
        self._invalidate_routes()
        if f.fid != NORTH:
            south = any(h != NORTH for h in holders)
            if south != any(h != NORTH for h in before):
                self._south_subs_changed(key, south)
        for d in self._live_faces():
            was = self._sub_visible(d, before)
            now = self._sub_visible(d, holders)
            if now and not was:
                self._propagate_sub(d, key)
            elif was and not now:
                for change in d.local_subs.remove_simple(key):
                    self._declare(d, UndeclareSubscriber(change.id), key=change.key)

    def _propagate_sub(self, d: Face, key: str) -> None:
        if d.local_subs.contains_simple(key):
            return
        matching = self._matching_interests(d, _S, key)
        if not matching:
            return
        simple = [iid for iid, it in matching if not it.aggregate]
        _, changes = d.local_subs.insert_simple(key, True, lambda: self._new_id(d), simple)
        for change in changes:
            self._declare(d, DeclareSubscriber(change.id, self._decl_key(d, change.key)), key=change.key)
