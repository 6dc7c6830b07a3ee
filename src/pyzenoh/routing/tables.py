"""The routing tables: the state every routing rule reads and writes, and the helpers
they share (how a key is resolved from and written to a face, declarations sent, drops
and limits counted).

One :class:`Tables` per routing core; each rule (:mod:`.pubsub`, :mod:`.queries`,
:mod:`.tokens`, :mod:`.interests`, :mod:`.declarations`, :mod:`.lanes`, :mod:`.routers`) is
constructed with it and the other rules it calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareSubscriber,
    DeclareToken,
    InterestOptions,
    NetworkMessage,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import QOS_DECLARE, DeclarationBody
from pyzenoh.keyexpr import KeyExprTree, is_canonical
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.routing.access_control import EGRESS, INGRESS, AccessControl
from pyzenoh.routing.declared import QueryableInfo
from pyzenoh.routing.faces import (
    DECLARATION_MESSAGES,
    DECLARATION_RECOUNT,
    MAX_KEY_LEN,
    Face,
    InterestState,
    nonwild_split,
)
from pyzenoh.routing.hlc import Hlc
from pyzenoh.routing.types import (
    Dropped,
    Intercepted,
    RoutingConfig,
    RoutingEvent,
    RoutingStats,
    Send,
    make_send,
)

if TYPE_CHECKING:
    from pyzenoh.interceptors import Drop
    from pyzenoh.routing.pubsub import DataRoute
    from pyzenoh.routing.queries import QueryRoute

log = logging.getLogger(__name__)
K = TypeVar("K")
V = TypeVar("V")

#: A route cache key: (source face, scope, suffix, mapping, NodeId).
RouteKey = tuple[int, int, str, bool, int | None]


class Tables:
    """The state shared by the routing rules, and the helpers they share.

    Entity holders: for each entity kind, ``key -> {face id: count or info}`` plus a
    :class:`KeyExprTree` of ``(key, face id)`` for intersection lookups. The router mesh
    takes part through the pseudo-face :data:`~pyzenoh.routing.faces.NORTH` (see
    :mod:`.routers`).
    """

    def __init__(
        self,
        zid: ZenohId,
        whatami: WhatAmI,
        config: RoutingConfig,
        observer: Callable[[RoutingEvent], None] | None,
        access_control: AccessControl | None,
    ) -> None:
        self.zid = zid
        self.whatami = whatami
        self.config = config
        self.observer = observer
        #: told of each message an interceptor drops (the recorder); unlike an observer it
        #: keeps no route off the fast lanes: only routes an interceptor restricts drop
        self.intercept_listener: Callable[[Intercepted], None] | None = None
        self.stats = RoutingStats()
        self.hlc = Hlc(config.hlc_id or zid, config.hlc_max_delta)
        self.faces: dict[int, Face] = {}
        self.sub_tree: KeyExprTree[int] = KeyExprTree()
        self.sub_holders: dict[str, dict[int, int]] = {}  # key -> face -> subscriber count
        self.qabl_tree: KeyExprTree[int] = KeyExprTree()
        self.qabl_holders: dict[str, dict[int, QueryableInfo]] = {}  # key -> face -> info
        self.token_tree: KeyExprTree[int] = KeyExprTree()
        self.token_holders: dict[str, dict[int, int]] = {}
        # Keys that exist as "resources" for real routers (declared entities, D_KEYEXPR
        # keys, interest keys): only those get a D_KEYEXPR of their own (decl_key).
        self.resource_refs: dict[str, int] = {}
        self.data_routes: dict[RouteKey, DataRoute] = {}
        self.push_heads: dict[tuple[int, str, bool, int], bytes] = {}  # encoded PUSH heads
        self.query_routes: dict[RouteKey, QueryRoute] = {}
        self.queries_in_flight = 0  # queries asked by some face and not finished
        self.declarations_counted = 0  # every face's declarations, at the last count
        self.declarations_since_count = 0
        self.out: list[Send] = []  # what the call being handled sends
        self.now = 0.0  # monotonic: deadlines
        self.wall = 0.0  # wall clock: HLC timestamps only
        self.closing: Face | None = None  # the face remove_face is tearing down
        #: None: access control is off (no face has a FaceAcl)
        self.acl = access_control

    def emit(self, face: int, msg: NetworkMessage, qos: int, raw: bytes | None = None, reliable: bool = True) -> None:
        self.out.append(make_send(face, msg, qos, raw, reliable))

    def declare(self, d: Face, body: DeclarationBody, interest_id: int | None = None, key: str | None = None) -> None:
        """Send a declaration to ``d``. ``key`` is the full key of a subscriber, queryable
        or token (un)declaration: egress access control may hide it, and, deciding the
        same for the undeclaration, never undeclares what it hid."""
        if d.acl is not None and self.declaration_denied(d, EGRESS, body, key):
            return
        self.emit(d.fid, Declare(body, interest_id, QOS_DECLARE), QOS_DECLARE)

    def egress_denied(self, d: Face, message: int, key: str | None) -> bool:
        """Does ``d``'s access control deny sending it ``message`` on ``key`` (counted)?"""
        acl = d.acl
        return acl is not None and acl.denies(EGRESS, message, key)

    def declaration_denied(self, f: Face, flow: int, body: DeclarationBody, key: str | None) -> bool:
        """Does ``f``'s access control deny this (un)declaration on ``flow`` (counted)?

        Like zenohd, D_KEYEXPR, U_KEYEXPR and D_FINAL pass; an ingress undeclaration is
        filtered only when it names its key (else it undeclares what was let in, or
        nothing, as the routing tables decide)."""
        message = DECLARATION_MESSAGES.get(type(body))
        if message is None or f.acl is None:
            return False
        if key is None:
            if flow == INGRESS:
                return False
            we = getattr(body, "wire_expr", None)  # a caller that did not name the key
            key = None if we is None else self.sent_key(f, we)
        return f.acl.denies(flow, message, key)

    def sent_key(self, d: Face, we: WireExpr) -> str | None:
        """The full key of a wire expression sent to ``d``."""
        if we.scope == 0:
            return we.suffix
        prefix = (d.local_ids if we.mapping_sender else d.remote_ids).get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def undeclared_key(self, f: Face, body: DeclarationBody) -> str | None:
        """The key an undeclaration received from ``f`` names (its WireExpr extension);
        None when it names none (1.10.2 clients send an empty one)."""
        we = getattr(body, "ext_wire_expr", None)
        if we is None or (we.scope == 0 and not we.suffix):
            return None
        return self.resolve(f, we)

    def drop(self, face: int, reason: str, msg: NetworkMessage) -> None:
        self.stats.dropped[reason] = self.stats.dropped.get(reason, 0) + 1
        if self.observer is not None:
            self.observer(Dropped(face, reason, msg))

    def intercepted(self, source: int, link: int, flow: str, key: str, drop: Drop, msg: NetworkMessage) -> None:
        """An interceptor dropped ``msg`` from face ``source`` in ``flow`` of face ``link``:
        counted as a drop of ``source``'s, and told to the intercept listener."""
        self.drop(source, f"{drop.interceptor} {drop.item} ({flow})", msg)
        if self.intercept_listener is not None:
            self.intercept_listener(Intercepted(link, flow, key, drop.interceptor, drop.item, msg))

    def can_send(self, link: int) -> bool:
        """Is ``link`` an open face, not the one being removed?"""
        return link in self.faces and self.faces[link] is not self.closing

    def live_faces(self) -> list[Face]:
        """Faces that can be sent to (not the one being removed)."""
        return [d for d in self.faces.values() if d is not self.closing]

    def remember(self, cache: dict[K, V], key: K, value: V) -> None:
        """Keep ``value`` (a route, an encoded head) in one of the route caches, emptying
        the cache first when it holds ``config.max_route_cache`` entries: memory stays
        bounded under a flood of keys, and a flush is counted."""
        if len(cache) >= self.config.max_route_cache:
            cache.clear()
            self.stats.route_cache_flushes += 1
        cache[key] = value

    def invalidate_routes(self) -> None:
        """Key tables or entities changed: every cached route may be stale."""
        self.data_routes.clear()
        self.query_routes.clear()

    def ref(self, key: str) -> None:
        self.resource_refs[key] = self.resource_refs.get(key, 0) + 1

    def unref(self, key: str) -> None:
        n = self.resource_refs.get(key, 0) - 1
        if n > 0:
            self.resource_refs[key] = n
        else:
            self.resource_refs.pop(key, None)

    def is_resource(self, key: str) -> bool:
        return (
            key in self.resource_refs
            or key in self.sub_holders
            or key in self.qabl_holders
            or key in self.token_holders
        )

    def sees(self, d: Face, src: Face) -> bool:
        """Does face ``d`` get to know about what face ``src`` declares or sends?"""
        return d is not src and d.region.sees(src.region)

    def resolve(self, f: Face, we: WireExpr) -> str | None:
        """The full key of a wire expression received from ``f`` (None: unknown id)."""
        if we.scope == 0:
            return we.suffix
        table = f.remote_ids if we.mapping_sender else f.local_ids
        prefix = table.get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def resolve_key(self, f: Face, we: WireExpr, msg: NetworkMessage) -> str | None:
        """Resolve and validate; drop the message (return None) when that fails."""
        key = self.resolve(f, we)
        if key is None:
            self.drop(f.fid, "unknown key id", msg)
            return None
        if len(key) > MAX_KEY_LEN or not is_canonical(key):
            self.drop(f.fid, "invalid key expression", msg)
            return None
        return key

    def routable(self, f: Face, we: WireExpr, node_id: int | None) -> tuple[str, int] | str:
        """(full key, index of the router where it entered the mesh) of a PUSH or REQUEST
        from ``f``, or the reason it cannot be routed (shared by data and query routes)."""
        key = self.resolve(f, we)
        if key is None:
            return "unknown key id"
        source = f.region.source_index(f, node_id)
        if source is None:
            return "unknown node id"
        if len(key) > MAX_KEY_LEN or not is_canonical(key):
            return "invalid key expression"
        return key, source

    def new_id(self, d: Face) -> int:
        ident = d.next_id
        d.next_id += 1
        return ident

    def best_key(self, d: Face, key: str) -> WireExpr:
        """How to write ``key`` to ``d``: its longest chunk-aligned prefix ``d`` knows an id for.

        The face's own ids (M = 0) win over ours (M = 1) for the same prefix; with no id,
        the full string (scope 0, M = 1).
        """
        if d.remote_id_of or d.local_id_of:
            end = len(key)
            while end > 0:
                prefix = key[:end] if end < len(key) else key
                rid = d.remote_id_of.get(prefix)
                if rid is not None:
                    return WireExpr(rid, key[end:], False)
                lid = d.local_id_of.get(prefix)
                if lid is not None:
                    return WireExpr(lid, key[end:], True)
                end = key.rfind("/", 0, end)
        return WireExpr(0, key, True)

    def decl_key(self, d: Face, key: str) -> WireExpr:
        """How to write the key of a declaration sent to ``d`` (may first declare a D_KEYEXPR).

        Like real routers: the non-wild prefix of the key, written with an id ``d`` knows
        for exactly that prefix; failing that, when ``d`` has a key-expression interest
        covering that prefix, a fresh id of ours declared with D_KEYEXPR; else the full
        string.
        """
        prefix, rest = nonwild_split(key)
        if not prefix:
            return WireExpr(0, key, True)
        rid = d.remote_id_of.get(prefix)
        if rid is not None:
            return WireExpr(rid, rest, False)
        lid = d.local_id_of.get(prefix)
        if lid is not None:
            return WireExpr(lid, rest, True)
        if len(d.local_ids) < self.config.max_keyexpr_ids_per_face and self.wants_keyexpr(d, prefix):
            lid = 1
            while lid in d.local_ids or lid in d.remote_ids:
                lid += 1
            d.local_ids[lid] = prefix
            d.local_id_of[prefix] = lid
            self.ref(prefix)
            self.invalidate_routes()  # d's best keys may now use this id
            self.declare(d, DeclareKeyExpr(lid, WireExpr(0, prefix, True)))
            return WireExpr(lid, rest, True)
        return WireExpr(0, key, True)

    def wants_keyexpr(self, d: Face, prefix: str) -> bool:
        if d.region.wants_every_keyexpr():
            return True
        known: bool | None = None
        for restriction in d.key_interests.values():
            if restriction is None:
                return True
            if known is None:
                known = self.is_resource(prefix)
            if known and intersects(restriction, prefix):
                return True
        return False

    def matching_interests(self, d: Face, option: InterestOptions, key: str) -> list[tuple[int, InterestState]]:
        return [
            (iid, it)
            for iid, it in d.interests.items()
            if it.options & option and (it.key is None or intersects(it.key, key))
        ]

    def declaration_allowed(self, f: Face, msg: NetworkMessage) -> bool:
        """False (the declaration is refused, alone) when ``f`` or the router is at its
        declaration cap. The router-wide count is recounted every DECLARATION_RECOUNT
        declarations, and whenever the estimate reaches the cap."""
        if f.declaration_count() >= self.config.max_declarations_per_face:
            self.limit_hit(f, "max_declarations_per_face", msg)
            return False
        self.declarations_since_count += 1
        estimate = self.declarations_counted + self.declarations_since_count
        if estimate > self.config.max_declarations_total or self.declarations_since_count >= DECLARATION_RECOUNT:
            self.declarations_counted = sum(d.declaration_count() for d in self.faces.values())
            self.declarations_since_count = 1
            if self.declarations_counted >= self.config.max_declarations_total:
                self.declarations_since_count = 0
                self.limit_hit(f, "max_declarations_total", msg)
                return False
        return True

    def limit_hit(self, f: Face, limit: str, msg: NetworkMessage) -> None:
        """``msg`` from ``f`` is refused by ``limit`` (a RoutingConfig field): counted,
        dropped, and logged once per face and limit."""
        self.stats.limits[limit] = self.stats.limits.get(limit, 0) + 1
        self.drop(f.fid, limit, msg)
        if limit not in f.limits_logged:
            f.limits_logged.add(limit)
            log.warning(
                "face %d (%s %s): %s (%d) reached; refusing what goes over it",
                f.fid,
                f.whatami,
                f.zid,
                limit,
                getattr(self.config, limit),
            )

    @staticmethod
    def count_holder(
        table: dict[str, dict[int, int]], tree: KeyExprTree[int], f: Face, key: str, delta: int
    ) -> tuple[dict[int, int], dict[int, int]] | None:
        """Add ``delta`` to ``f``'s count of entities on ``key``; when ``f`` starts or stops
        holding the key, update ``tree`` and return the holders (before, after), else None
        (the face already held / still holds this key: nothing visible changes)."""
        holders = table.setdefault(key, {})
        before = dict(holders)
        count = holders.get(f.fid, 0) + delta
        if count > 0:
            holders[f.fid] = count
        else:
            holders.pop(f.fid, None)
        changed = (f.fid in before) != (f.fid in holders)
        if changed:
            if f.fid in holders:
                tree.insert(key, f.fid)
            else:
                tree.remove(key, f.fid)
        if not holders:
            del table[key]
        return (before, holders) if changed else None

    def new_entity(
        self,
        f: Face,
        table: dict[int, str],
        body: DeclareSubscriber | DeclareToken,
        msg: Declare,
        kind: str,
    ) -> str | None:
        """The key of a newly declared subscriber or token, recorded in ``table``; None
        when the declaration is dropped or repeats one already held under that id."""
        key = self.resolve_key(f, body.wire_expr, msg)
        if key is None:
            return None
        if f.acl is not None and self.declaration_denied(f, INGRESS, body, key):
            return None  # not registered, as zenohd: silently
        old = table.get(body.entity_id)
        if old is not None:
            if old != key:
                self.drop(f.fid, f"duplicate {kind} id", msg)
            return None
        if not self.declaration_allowed(f, msg):
            return None
        table[body.entity_id] = key
        return key
