"""Per-face state and the tables every routing rule reads: key-expression ids, entity
holders, resources, and how a key is written to a face.

A *face* is one open session (client, peer or router neighbour) or a local session.
:class:`RoutingTables` is the base of the core's rule modules (:mod:`.pubsub`,
:mod:`.queries`, :mod:`.tokens`, :mod:`.interests`, :mod:`.routers`): it holds the state
they share and the helpers they all use.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import QOS_DECLARE, DeclarationBody
from pyzenoh.keyexpr import KeyExprTree, is_canonical
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.routing.access_control import (
    DECLARE_QUERYABLE,
    DECLARE_SUBSCRIBER,
    EGRESS,
    INGRESS,
    LIVELINESS_TOKEN,
    AccessControl,
    FaceAcl,
)
from pyzenoh.routing.declared import (
    DeclaredResources,
    QueryableInfo,
    aggregate_queryable,
    aggregate_subscriber,
)
from pyzenoh.routing.hlc import Hlc
from pyzenoh.routing.types import (
    Dropped,
    RoutingConfig,
    RoutingEvent,
    RoutingStats,
    Send,
    make_send,
)

if TYPE_CHECKING:
    from pyzenoh.routing.regions import Region

#: Longest full key (prefix chain + suffix) accepted from a face, in characters.
MAX_KEY_LEN = 65_535
#: Entries kept in each route cache before it is flushed (bounds memory under key floods).
MAX_ROUTE_CACHE = 4_096

#: Accepted declarations between two exact counts of the router-wide total (the count
#: walks every face, so it is not done for each declaration).
DECLARATION_RECOUNT = 256

log = logging.getLogger(__name__)

#: The pseudo-face id of the router region in the holder tables (see :mod:`.routers`);
#: callers use ids >= 0.
NORTH = -1

_K = InterestOptions.KEYEXPRS

#: The access-control message kind of each declaration body it filters (zenohd files an
#: undeclaration under its declaration's kind).
DECLARATION_MESSAGES: dict[type, int] = {
    DeclareSubscriber: DECLARE_SUBSCRIBER,
    UndeclareSubscriber: DECLARE_SUBSCRIBER,
    DeclareQueryable: DECLARE_QUERYABLE,
    UndeclareQueryable: DECLARE_QUERYABLE,
    DeclareToken: LIVELINESS_TOKEN,
    UndeclareToken: LIVELINESS_TOKEN,
}


@dataclass(slots=True)
class InterestState:
    key: str | None  # None: all keys
    options: InterestOptions
    mode: InterestMode
    aggregate: bool


@dataclass(slots=True)
class PendingQuery:
    qid: int
    src: int
    src_rid: int
    qos: int
    budget: int | None
    remaining: dict[int, int] = field(default_factory=dict)  # destination face -> its rid
    replies: int = 0


class FaceView(Protocol):
    """What readers outside the core (the admin space) see of a :class:`Face`: who it
    is and what it declared, read only."""

    @property
    def zid(self) -> ZenohId: ...
    @property
    def whatami(self) -> WhatAmI: ...
    @property
    def subs(self) -> Mapping[int, str]: ...
    @property
    def qabls(self) -> Mapping[int, tuple[str, QueryableInfo]]: ...
    @property
    def tokens(self) -> Mapping[int, str]: ...
    @property
    def interests(self) -> Mapping[int, InterestState]: ...


class Face:
    __slots__ = (
        "acl",
        "fid",
        "interests",
        "key_interests",
        "limits_logged",
        "local_id_of",
        "local_ids",
        "local_qabls",
        "local_subs",
        "local_tokens",
        "next_id",
        "next_rid",
        "outgoing",
        "pending",
        "qabls",
        "region",
        "remote_id_of",
        "remote_ids",
        "subs",
        "tokens",
        "whatami",
        "zid",
    )

    def __init__(self, fid: int, zid: ZenohId, whatami: WhatAmI, region: Region) -> None:
        self.fid = fid
        self.zid = zid
        self.whatami = whatami
        #: What the face's kind changes in the rules (:mod:`.regions`): a router
        #: neighbour's entities, for one, live in the router region (:mod:`.routers`).
        self.region = region
        self.remote_ids: dict[int, str] = {}  # ids the face declared -> full key
        self.remote_id_of: dict[str, int] = {}
        self.local_ids: dict[int, str] = {}  # ids we declared to the face -> full key
        self.local_id_of: dict[str, int] = {}
        self.subs: dict[int, str] = {}
        self.qabls: dict[int, tuple[str, QueryableInfo]] = {}
        self.tokens: dict[int, str] = {}
        self.interests: dict[int, InterestState] = {}  # future-mode interests still active
        self.key_interests: dict[int, str | None] = {}  # K interests (non-Current)
        self.local_subs: DeclaredResources[bool] = DeclaredResources(aggregate_subscriber)
        self.local_qabls: DeclaredResources[QueryableInfo] = DeclaredResources(aggregate_queryable)
        self.local_tokens: dict[str, int] = {}
        self.next_id = 1  # shared by the subscriber, queryable and token ids we declare
        self.next_rid = 0
        self.pending: dict[int, PendingQuery] = {}  # rid we sent to this face -> its query
        self.outgoing: dict[int, PendingQuery] = {}  # qid -> queries this face asked
        self.limits_logged: set[str] = set()  # limits already logged for this face
        #: Access control of what enters and leaves this face (None: nothing is filtered).
        self.acl: FaceAcl | None = None

    def declaration_count(self) -> int:
        return len(self.subs) + len(self.qabls) + len(self.tokens) + len(self.interests)


def nonwild_split(key: str) -> tuple[str, str]:
    """(non-wild prefix, rest): the prefix is the chunks before the first wild chunk."""
    star = key.find("*")
    if star < 0:
        return key, ""
    slash = key.rfind("/", 0, star)
    if slash < 0:
        return "", key
    return key[:slash], key[slash:]


class RoutingTables:
    """The state shared by the routing rules, and the helpers they share.

    Entity holders: for each entity kind, ``key -> {face id: count or info}`` plus a
    :class:`KeyExprTree` of ``(key, face id)`` for intersection lookups. The router region
    takes part through the pseudo-face :data:`~pyzenoh.routing.routers.NORTH` (see there).
    """

    zid: ZenohId
    whatami: WhatAmI
    config: RoutingConfig
    observer: Callable[[RoutingEvent], None] | None
    stats: RoutingStats
    _hlc: Hlc
    _faces: dict[int, Face]
    _sub_tree: KeyExprTree[int]
    _sub_holders: dict[str, dict[int, int]]
    _qabl_tree: KeyExprTree[int]
    _qabl_holders: dict[str, dict[int, QueryableInfo]]
    _token_tree: KeyExprTree[int]
    _token_holders: dict[str, dict[int, int]]
    _resource_refs: dict[str, int]
    _out: list[Send]
    _now: float
    _wall: float
    _closing: Face | None
    _queries_in_flight: int
    _declarations_counted: int
    _declarations_since_count: int
    _route_caches: tuple[dict[object, object], ...]  # dropped by _invalidate_routes
    _acl: AccessControl | None  # None: access control is off (no face has a FaceAcl)

    # Hooks the router region (:mod:`.routers`) implements: the south started or stopped
    # holding an entity on a key, so this router's own entry in the mesh changes.
    def _south_subs_changed(self, key: str, held: bool) -> None:
        pass

    def _south_tokens_changed(self, key: str, held: bool) -> None:
        pass

    def _south_qabls_changed(self, key: str) -> None:
        pass

    def _north_hops(self, source: int, owners: list[ZenohId], src: Face) -> dict[int, ZenohId]:
        return {}

    def _north_sub_owners(self, key: str) -> list[ZenohId]:
        return []

    def _north_qabl_owners(self, key: str) -> dict[ZenohId, QueryableInfo]:
        return {}

    def _router_distance(self, owner: ZenohId) -> float:
        return 0.0

    def _emit(self, face: int, msg: NetworkMessage, qos: int, raw: bytes | None = None, reliable: bool = True) -> None:
        self._out.append(make_send(face, msg, qos, raw, reliable))

    def _declare(self, d: Face, body: DeclarationBody, interest_id: int | None = None, key: str | None = None) -> None:
        """Send a declaration to ``d``. ``key`` is the full key of a subscriber, queryable
        or token (un)declaration: egress access control may hide it, and, deciding the
        same for the undeclaration, never undeclares what it hid."""
        if d.acl is not None and self._declaration_denied(d, EGRESS, body, key):
            return
        self._emit(d.fid, Declare(body, interest_id, QOS_DECLARE), QOS_DECLARE)

    def _egress_denied(self, d: Face, message: int, key: str | None) -> bool:
        """Does ``d``'s access control deny sending it ``message`` on ``key`` (counted)?"""
        acl = d.acl
        return acl is not None and acl.denies(EGRESS, message, key)

    def _declaration_denied(self, f: Face, flow: int, body: DeclarationBody, key: str | None) -> bool:
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
            key = None if we is None else self._sent_key(f, we)
        return f.acl.denies(flow, message, key)

    def _sent_key(self, d: Face, we: WireExpr) -> str | None:
        """The full key of a wire expression sent to ``d``."""
        if we.scope == 0:
            return we.suffix
        prefix = (d.local_ids if we.mapping_sender else d.remote_ids).get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def _undeclared_key(self, f: Face, body: DeclarationBody) -> str | None:
        """The key an undeclaration received from ``f`` names (its WireExpr extension);
        None when it names none (1.10.2 clients send an empty one)."""
        we = getattr(body, "ext_wire_expr", None)
        if we is None or (we.scope == 0 and not we.suffix):
            return None
        return self._resolve(f, we)

    def _drop(self, face: int, reason: str, msg: NetworkMessage) -> None:
        self.stats.dropped[reason] = self.stats.dropped.get(reason, 0) + 1
        if self.observer is not None:
            self.observer(Dropped(face, reason, msg))

    def _can_send(self, link: int) -> bool:
        """Is ``link`` an open face, not the one being removed?"""
        return link in self._faces and self._faces[link] is not self._closing

    def _live_faces(self) -> list[Face]:
        """Faces that can be sent to (not the one being removed)."""
        return [d for d in self._faces.values() if d is not self._closing]

    def _invalidate_routes(self) -> None:
        """Key tables or entities changed: every cached route may be stale."""
        for cache in self._route_caches:
            cache.clear()

    def _ref(self, key: str) -> None:
        self._resource_refs[key] = self._resource_refs.get(key, 0) + 1

    def _unref(self, key: str) -> None:
        n = self._resource_refs.get(key, 0) - 1
        if n > 0:
            self._resource_refs[key] = n
        else:
            self._resource_refs.pop(key, None)

    def _is_resource(self, key: str) -> bool:
        return (
            key in self._resource_refs
            or key in self._sub_holders
            or key in self._qabl_holders
            or key in self._token_holders
        )

    def _sees(self, d: Face, src: Face) -> bool:
        """Does face ``d`` get to know about what face ``src`` declares or sends?"""
        return d is not src and d.region.sees(src.region)

    def _resolve(self, f: Face, we: WireExpr) -> str | None:
        """The full key of a wire expression received from ``f`` (None: unknown id)."""
        if we.scope == 0:
            return we.suffix
        table = f.remote_ids if we.mapping_sender else f.local_ids
        prefix = table.get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def _resolve_key(self, f: Face, we: WireExpr, msg: NetworkMessage) -> str | None:
        """Resolve and validate; drop the message (return None) when that fails."""
        key = self._resolve(f, we)
        if key is None:
            self._drop(f.fid, "unknown key id", msg)
            return None
        if len(key) > MAX_KEY_LEN or not is_canonical(key):
            self._drop(f.fid, "invalid key expression", msg)
            return None
        return key

    def _routable(self, f: Face, we: WireExpr, node_id: int | None) -> tuple[str, int] | str:
        """(full key, index of the router where it entered the mesh) of a PUSH or REQUEST
        from ``f``, or the reason it cannot be routed (shared by data and query routes)."""
        key = self._resolve(f, we)
        if key is None:
            return "unknown key id"
        source = f.region.source_index(f, node_id)
        if source is None:
            return "unknown node id"
        if len(key) > MAX_KEY_LEN or not is_canonical(key):
            return "invalid key expression"
        return key, source

    def _new_id(self, d: Face) -> int:
        ident = d.next_id
        d.next_id += 1
        return ident

    def _best_key(self, d: Face, key: str) -> WireExpr:
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

    def _decl_key(self, d: Face, key: str) -> WireExpr:
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
        if len(d.local_ids) < self.config.max_keyexpr_ids_per_face and self._wants_keyexpr(d, prefix):
            lid = 1
            while lid in d.local_ids or lid in d.remote_ids:
                lid += 1
            d.local_ids[lid] = prefix
            d.local_id_of[prefix] = lid
            self._ref(prefix)
            self._invalidate_routes()  # d's best keys may now use this id
            self._declare(d, DeclareKeyExpr(lid, WireExpr(0, prefix, True)))
            return WireExpr(lid, rest, True)
        return WireExpr(0, key, True)

    def _wants_keyexpr(self, d: Face, prefix: str) -> bool:
        if d.region.wants_every_keyexpr():
            return True
        known: bool | None = None
        for restriction in d.key_interests.values():
            if restriction is None:
                return True
            if known is None:
                known = self._is_resource(prefix)
            if known and intersects(restriction, prefix):
                return True
        return False

    def _matching_interests(self, d: Face, option: InterestOptions, key: str) -> list[tuple[int, InterestState]]:
        return [
            (iid, it)
            for iid, it in d.interests.items()
            if it.options & option and (it.key is None or intersects(it.key, key))
        ]

    def _declaration_allowed(self, f: Face, msg: NetworkMessage) -> bool:
        """False (the declaration is refused, alone) when ``f`` or the router is at its
        declaration cap. The router-wide count is recounted every DECLARATION_RECOUNT
        declarations, and whenever the estimate reaches the cap."""
        if f.declaration_count() >= self.config.max_declarations_per_face:
            self._limit_hit(f, "max_declarations_per_face", msg)
            return False
        self._declarations_since_count += 1
        estimate = self._declarations_counted + self._declarations_since_count
        if estimate > self.config.max_declarations_total or self._declarations_since_count >= DECLARATION_RECOUNT:
            self._declarations_counted = sum(d.declaration_count() for d in self._faces.values())
            self._declarations_since_count = 1
            if self._declarations_counted >= self.config.max_declarations_total:
                self._declarations_since_count = 0
                self._limit_hit(f, "max_declarations_total", msg)
                return False
        return True

    def _limit_hit(self, f: Face, limit: str, msg: NetworkMessage) -> None:
        """``msg`` from ``f`` is refused by ``limit`` (a RoutingConfig field): counted,
        dropped, and logged once per face and limit."""
        self.stats.limits[limit] = self.stats.limits.get(limit, 0) + 1
        self._drop(f.fid, limit, msg)
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
    def _count_holder(
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

    def _new_entity(
        self,
        f: Face,
        table: dict[int, str],
        body: DeclareSubscriber | DeclareToken,
        msg: Declare,
        kind: str,
    ) -> str | None:
        """The key of a newly declared subscriber or token, recorded in ``table``; None
        when the declaration is dropped or repeats one already held under that id."""
        key = self._resolve_key(f, body.wire_expr, msg)
        if key is None:
            return None
        if f.acl is not None and self._declaration_denied(f, INGRESS, body, key):
            return None  # not registered, as zenohd: silently
        old = table.get(body.entity_id)
        if old is not None:
            if old != key:
                self._drop(f.fid, f"duplicate {kind} id", msg)
            return None
        if not self._declaration_allowed(f, msg):
            return None
        table[body.entity_id] = key
        return key
