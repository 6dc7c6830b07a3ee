"""The sans-IO routing core: faces in, network messages in, :class:`Send` items out.

See the package docstring (:mod:`pyzenoh.routing`) for the API contract and the
behaviour it reproduces. The rules live in one module each:

* :mod:`.faces` -- per-face state (key-expression ids, entities, what the face was
  told) and how keys are resolved and written;
* :mod:`.pubsub` -- subscribers and PUSH routing; :mod:`.runs` a run of same-shape
  PUSHes as one unit, :mod:`.lone` a lone PUSH from its bytes;
* :mod:`.queries` -- queryables, REQUEST routing, replies and finals, timeouts;
* :mod:`.tokens` -- liveliness tokens;
* :mod:`.interests` -- interests and their current answers;
* :mod:`.routers` -- the router mesh: router neighbours, the link-state graph
  (:mod:`.network`), declarations pushed along routing trees, NodeId;
* :mod:`.regions` -- what differs between clients, peers and routers, one module per
  region (:mod:`.regions.clients`, :mod:`.regions.peers` with the peers' gossip,
  :mod:`.regions.routers`); each face holds its region.

Key expressions are handled as canonical strings. Entities are indexed in
:class:`~pyzenoh.keyexpr.KeyExprTree` instances holding one ``(key, face id)`` pair per
face that has at least one entity on that exact key ("holders"). A declaration change
compares, for every face, visibility before and after the change and sends the
difference (never back to a face about its own subscribers or queryables).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from typing_extensions import override

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    EntityGlobalId,
    Err,
    Interest,
    NetworkMessage,
    NetworkOam,
    Push,
    Request,
    Response,
    ResponseFinal,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.dataplane.runs import PushRun
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExprTree
from pyzenoh.routing.access_control import INGRESS, AccessControl, FaceAcl, FaceSubject
from pyzenoh.routing.declared import QueryableInfo
from pyzenoh.routing.faces import MAX_KEY_LEN, NORTH, Face, FaceView
from pyzenoh.routing.hlc import Hlc
from pyzenoh.routing.interests import Interests
from pyzenoh.routing.lanes import PushLanes
from pyzenoh.routing.queries import (
    EMPTY_WIRE_EXPR,
    MIN_TIMER_COMPACTION,
    TIMEOUT_PAYLOAD,
    Queries,
)
from pyzenoh.routing.regions import Region
from pyzenoh.routing.regions.clients import Clients
from pyzenoh.routing.regions.peers import Peers
from pyzenoh.routing.regions.routers import Routers
from pyzenoh.routing.routers import RouterRegion
from pyzenoh.routing.tokens import Tokens
from pyzenoh.routing.types import (
    RoutingConfig,
    RoutingEvent,
    RoutingStats,
    Send,
    UnsupportedFace,
)

DEFAULT_CONFIG = RoutingConfig()


class RoutingCore(RouterRegion, PushLanes, Queries, Tokens, Interests):
    """Routing tables and decisions of a Zenoh router, with no I/O and no clock."""

    def __init__(
        self,
        zid: ZenohId,
        *,
        whatami: WhatAmI = WhatAmI.ROUTER,
        config: RoutingConfig = DEFAULT_CONFIG,
        observer: Callable[[RoutingEvent], None] | None = None,
        locators: Callable[[], Sequence[str]] = tuple,
        access_control: AccessControl | None = None,
    ) -> None:
        """``locators`` gives the endpoints this router is reachable on (announced in its
        link state to routers and, with gossip, to peers). ``access_control`` filters
        what faces given a subject (:meth:`add_face`) send and receive; without it
        nothing is filtered and routing pays nothing for it."""
        self.zid = zid
        self.whatami = whatami
        self.config = config
        self.observer = observer
        self.stats = RoutingStats()
        self._hlc = Hlc(config.hlc_id or zid, config.hlc_max_delta)
        self._faces: dict[int, Face] = {}
        self._sub_tree: KeyExprTree[int] = KeyExprTree()
        self._sub_holders: dict[str, dict[int, int]] = {}  # key -> face -> subscriber count
        self._qabl_tree: KeyExprTree[int] = KeyExprTree()
        self._qabl_holders: dict[str, dict[int, QueryableInfo]] = {}  # key -> face -> info
        self._token_tree: KeyExprTree[int] = KeyExprTree()
        self._token_holders: dict[str, dict[int, int]] = {}
        # Keys that exist as "resources" for real routers (declared entities, D_KEYEXPR
        # keys, interest keys): only those get a D_KEYEXPR of their own (decl_key).
        self._resource_refs: dict[str, int] = {}
        self._data_routes = {}
        self._push_heads = {}
        self._query_routes = {}
        self._route_caches = (self._data_routes, self._query_routes)  # type: ignore[assignment]
        self._timers = []
        self._timers_compact_at = MIN_TIMER_COMPACTION
        self._seq = itertools.count()
        self._qids = itertools.count(1)
        self._queries_in_flight = 0  # queries asked by some face and not finished
        self._declarations_counted = 0  # every face's declarations, at the last count
        self._declarations_since_count = 0
        self._out: list[Send] = []
        self._now = 0.0  # monotonic: deadlines
        self._wall = 0.0  # wall clock: HLC timestamps only
        self._closing: Face | None = None  # the face remove_face is tearing down
        self._acl = access_control
        self._init_routers(locators)
        self._clients = Clients(self._on_declare)
        self._peers = Peers(zid, config, locators, self._can_send, self._emit, self._on_declare)
        self._routers = Routers(
            zid,
            self._net,
            self._router_face_added,
            self._router_face_removed,
            self._on_router_linkstate,
            self._on_router_declare,
        )
        self._init_north(self._routers)

    def _region_of(self, whatami: WhatAmI) -> Region:
        match whatami:
            case WhatAmI.ROUTER:
                return self._routers
            case WhatAmI.PEER:
                return self._peers
            case _:
                return self._clients

    def add_face(
        self, face: int, zid: ZenohId, whatami: WhatAmI, now: float, subject: FaceSubject | None = None
    ) -> list[Send]:
        """A session is open on ``face`` (an id >= 0).

        Real routers send nothing to a client then; a peer gets the router's gossip
        LINKSTATE, a router its link state (the region rules in :mod:`.peers`,
        :mod:`.routers`). ``subject`` (the remote's zid and link properties) puts the
        face under access control; local faces have none, as zenohd's own sessions.
        """
        if face in self._faces or face == NORTH:
            raise UsageError(f"face {face} already exists")
        f = self._faces[face] = Face(face, zid, whatami, self._region_of(whatami))
        if self._acl is not None and subject is not None:
            f.acl = self._acl.face(subject)
        self._invalidate_routes()
        self._now = now
        out = self._out = []
        try:
            f.region.face_added(f)
        except UnsupportedFace:
            del self._faces[face]
            raise
        self._out = []
        return out

    def remove_face(self, face: int, now: float) -> list[Send]:
        """The session on ``face`` is gone (closed or lease expired): drop all its state.

        Other faces get the undeclarations this implies, and queriers waiting on this
        face get their RESPONSE_FINAL when it was the last one they waited for.
        """
        f = self._faces.get(face)
        if f is None or face == NORTH:
            raise UsageError(f"unknown face {face}")
        self._now = now
        out = self._out = []
        self._closing = f
        try:
            # Queries waiting on this face end for it, without an error reply.
            for q in list(f.pending.values()):
                self._finish_destination(q, face)
            f.pending.clear()
            # Queries this face asked: forget them at their destinations.
            for q in f.outgoing.values():
                for dest, rid in q.remaining.items():
                    d = self._faces.get(dest)
                    if d is not None and d.pending.get(rid) is q:
                        del d.pending[rid]
            self._queries_in_flight -= len(f.outgoing)
            f.outgoing.clear()
            for key, n in Counter(f.subs.values()).items():
                self._change_sub_holder(f, key, -n)
            for key in dict.fromkeys(k for k, _ in f.qabls.values()):
                self._set_qabl_holder(f, key, None, "close")
            for key, n in Counter(f.tokens.values()).items():
                self._change_token_holder(f, key, -n)
            for key in itertools.chain(f.remote_ids.values(), f.local_ids.values()):
                self._unref(key)
            for it in f.interests.values():
                if it.key is not None:
                    self._unref(it.key)
            f.region.face_removed(f)
        finally:
            self._closing = None
        del self._faces[face]
        self._invalidate_routes()
        self._out = []
        return out

    def handle(
        self,
        face: int,
        msg: NetworkMessage,
        now: float,
        raw: bytes | None = None,
        reliable: bool = True,
        wall: float | None = None,
    ) -> list[Send]:
        """Route one message received on ``face``.

        ``now`` is monotonic seconds (query deadlines); ``wall`` the wall-clock seconds the
        HLC stamps data with (``now`` when not given: callers with one synthetic clock).
        ``raw`` is the message's encoded bytes (lets a PUSH go out unchanged without
        re-encoding); ``reliable`` the channel it came on. Bad input from the face is
        dropped (see :class:`Dropped`) or refused by a named limit; a neighbour's bad
        link state raises a :class:`~pyzenoh.errors.PeerError`.
        """
        f = self._faces.get(face)
        if f is None or face == NORTH:
            raise UsageError(f"unknown face {face}")
        self._now = now
        self._wall = now if wall is None else wall
        out = self._out = []
        match msg:
            case Push():
                self._on_push(f, msg, raw, reliable)
            case Declare():
                f.region.on_declare(f, msg)
            case Interest():
                self._on_interest(f, msg)
            case Request():
                self._on_request(f, msg)
            case Response():
                self._on_response(f, msg, raw)
            case ResponseFinal():
                self._on_response_final(f, msg)
            case NetworkOam():
                self._on_oam(f, msg)
            case _:
                raise UsageError(f"not a network message: {type(msg).__name__}")
        self._out = []
        return out

    def handle_push_run(
        self, face: int, run: PushRun, now: float, reliable: bool = True, wall: float | None = None
    ) -> list[Send]:
        """Route a run of same-shape PUSHes received on ``face`` as one unit (see
        :mod:`.runs`): the same outputs as :meth:`handle` on each message in turn, except
        that each destination gets one :class:`Send` holding all of its copies."""
        f = self._faces.get(face)
        if f is None or face == NORTH:
            raise UsageError(f"unknown face {face}")
        self._now = now
        self._wall = now if wall is None else wall
        out = self._out = []
        self._on_push_run(f, run, reliable)
        self._out = []
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` next has something to do (None: nothing pending)."""
        timers = self._timers
        while timers and not self._timer_live(timers[0]):
            heapq.heappop(timers)
        return timers[0][0] if timers else None

    def handle_timer(self, now: float) -> list[Send]:
        """Expire the queries whose deadline is <= ``now``."""
        self._now = now
        out = self._out = []
        timers = self._timers
        while timers and timers[0][0] <= now:
            entry = heapq.heappop(timers)
            if not self._timer_live(entry):
                continue
            _, _, dest, rid, _ = entry
            d = self._faces[dest]
            q = d.pending.pop(rid)
            self.stats.query_timeouts += 1
            # Like real routers: an ERR "Timeout" naming the silent face, then the final.
            src = self._faces.get(q.src)
            if src is not None:
                err = Response(
                    q.src_rid, EMPTY_WIRE_EXPR, Err(TIMEOUT_PAYLOAD), qos=q.qos, responder=EntityGlobalId(d.zid, 0)
                )
                self._emit_reply(src, err, None)
            self._finish_destination(q, dest)
        self._out = []
        return out

    def entity_count(self, face: int) -> int:
        """What ``face`` holds in the tables: declarations, key ids, queries it asked."""
        f = self._faces.get(face)
        return 0 if f is None else f.declaration_count() + len(f.remote_ids) + len(f.outgoing)

    def compact(self) -> None:
        """Shrink the tables a flood grew (a dict keeps its largest size when emptied)
        and empty the route caches; for the daemon to call before giving memory back."""
        self._sub_holders = dict(self._sub_holders)
        self._qabl_holders = dict(self._qabl_holders)
        self._token_holders = dict(self._token_holders)
        self._resource_refs = dict(self._resource_refs)
        self._compact_routers()
        self._invalidate_routes()
        self._push_heads.clear()

    def key_of(self, face: int, msg: NetworkMessage, *, incoming: bool) -> str | None:
        """The full key a message received from (``incoming``) or sent to ``face`` names.

        None when the message has no key expression (RESPONSE_FINAL, D_FINAL, most
        undeclarations, OAM, an ERR without key) or names an id the face tables do not
        hold. For recorders and logs; call it before :meth:`handle` for an incoming
        message and after for the outputs.
        """
        f = self._faces.get(face)
        if f is None:
            return None
        body = msg.body if isinstance(msg, Declare) else msg
        we = getattr(body, "wire_expr", None)
        if we is None:
            we = getattr(body, "ext_wire_expr", None)  # U_TOKEN id 0 names its key there
        if not isinstance(we, WireExpr):
            return None
        if we.scope == 0:
            return we.suffix or None
        # Like zenoh, a D_KEYEXPR scope names an id of the receiver of the D_KEYEXPR.
        sender_side = False if isinstance(body, DeclareKeyExpr) else we.mapping_sender
        # Ids the face declared are "sender" ids on input and "receiver" ids on output.
        table = f.remote_ids if sender_side == incoming else f.local_ids
        prefix = table.get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def faces(self) -> list[int]:
        return sorted(self._faces.keys() - {NORTH})

    def faces_view(self) -> Mapping[int, FaceView]:
        """Every face, read only (for the admin space): who it is, what it declared."""
        return MappingProxyType(self._faces)

    @property
    def access_control(self) -> AccessControl | None:
        """The access control in force (None: off), with its deny counters."""
        return self._acl

    def face_acl(self, face: int) -> FaceAcl | None:
        """The access control of ``face``: its subject, the config subjects it matched
        (None: nothing it sends or receives is filtered)."""
        f = self._faces.get(face)
        return None if f is None else f.acl

    def face_state(self, face: int) -> dict[str, object]:
        """A snapshot of what the core holds for ``face`` (for tests and diagnostics)."""
        f = self._faces[face]
        return {
            "zid": f.zid,
            "whatami": f.whatami,
            "remote_ids": dict(f.remote_ids),
            "local_ids": dict(f.local_ids),
            "subscribers": dict(f.subs),
            "queryables": {i: k for i, (k, _) in f.qabls.items()},
            "tokens": dict(f.tokens),
            "interests": sorted(f.interests),
            "declared_subscribers": f.local_subs.visible(),
            "declared_queryables": f.local_qabls.visible(),
            "declared_tokens": dict(f.local_tokens),
            "pending_queries": len(f.pending),
            "outgoing_queries": len(f.outgoing),
        }

    def is_empty(self) -> bool:
        """True when no face, entity, query or timer is left (after removing every face)."""
        return not (
            self._faces.keys() - {NORTH}
            or self._sub_holders
            or self._qabl_holders
            or self._token_holders
            or self._resource_refs
            or len(self._sub_tree)
            or len(self._qabl_tree)
            or len(self._token_tree)
            or self.next_deadline() is not None
        )

    def check_invariants(self) -> None:
        """Raise AssertionError if the tables are inconsistent (for tests; O(state))."""
        faces = self._faces
        subs: dict[str, dict[int, int]] = {}
        tokens: dict[str, dict[int, int]] = {}
        qabls: dict[str, dict[int, QueryableInfo]] = {}
        for fid, f in faces.items():
            assert f.fid == fid
            for key in f.subs.values():
                subs.setdefault(key, {})[fid] = subs.get(key, {}).get(fid, 0) + 1
            for key in f.tokens.values():
                tokens.setdefault(key, {})[fid] = tokens.get(key, {}).get(fid, 0) + 1
            for key, info in f.qabls.values():
                # A face's info on a key is one of its queryables' there (the latest
                # declared) or, after undeclarations, a merge of those left.
                held = self._qabl_holders.get(key, {}).get(fid)
                assert held is not None, "queryable holder missing"
                qabls.setdefault(key, {})[fid] = held
            for key, ident in f.remote_id_of.items():
                assert f.remote_ids[ident] == key
            for ident, key in f.local_ids.items():
                assert f.local_id_of[key] == ident
            for rid, q in f.pending.items():
                assert q.remaining.get(fid) == rid, "pending query not waiting for this face"
                assert q.src in faces and faces[q.src].outgoing.get(q.qid) is q
            for qid, q in f.outgoing.items():
                assert q.src == fid and q.qid == qid and q.remaining
                for dest, rid in q.remaining.items():
                    assert faces[dest].pending.get(rid) is q, "query lost at a destination"
            assert set(f.key_interests) <= set(f.interests)
        assert self._queries_in_flight == sum(len(f.outgoing) for f in faces.values()), "query count"
        assert subs == self._sub_holders, "subscriber holders out of sync"
        assert tokens == self._token_holders, "token holders out of sync"
        assert qabls == self._qabl_holders, "queryable holders out of sync"
        for tree, holders in ((self._sub_tree, subs), (self._token_tree, tokens), (self._qabl_tree, qabls)):
            pairs = sorted(tree.items())
            assert pairs == sorted((k, fid) for k, hs in holders.items() for fid in hs)
        refs: dict[str, int] = {}
        for f in faces.values():
            for key in itertools.chain(
                f.remote_ids.values(), f.local_ids.values(), (it.key for it in f.interests.values() if it.key)
            ):
                refs[key] = refs.get(key, 0) + 1
        assert refs == self._resource_refs, "resource references out of sync"

    def _on_oam(self, f: Face, msg: NetworkOam) -> None:
        if msg.oam_id != OAM_LINKSTATE or not isinstance(msg.body, bytes) or not f.region.on_linkstate(f, msg.body):
            self._drop(f.fid, "unexpected OAM", msg)

    @override
    def _on_declare(self, f: Face, msg: Declare) -> None:
        body = msg.body
        if isinstance(body, DeclareKeyExpr):
            self._on_declare_keyexpr(f, body, msg)
        elif isinstance(body, UndeclareKeyExpr):
            key = f.remote_ids.pop(body.expr_id, None)
            if key is None:
                self._drop(f.fid, "unknown key id", msg)
                return
            if f.remote_id_of.get(key) == body.expr_id:
                del f.remote_id_of[key]
            self._unref(key)
            self._invalidate_routes()
        elif isinstance(body, DeclareSubscriber):
            self._on_declare_subscriber(f, body, msg)
        elif (
            f.acl is not None
            and isinstance(body, UndeclareSubscriber | UndeclareQueryable | UndeclareToken)
            and self._declaration_denied(f, INGRESS, body, self._undeclared_key(f, body))
        ):
            return  # an undeclaration naming a key its subject may not (un)declare
        elif isinstance(body, UndeclareSubscriber):
            key = f.subs.pop(body.entity_id, None)
            if key is None:
                self._drop(f.fid, "unknown subscriber id", msg)
                return
            self._change_sub_holder(f, key, -1)
        elif isinstance(body, DeclareQueryable):
            self._on_declare_queryable(f, body, msg)
        elif isinstance(body, UndeclareQueryable):
            entry = f.qabls.pop(body.entity_id, None)
            if entry is None:
                self._drop(f.fid, "unknown queryable id", msg)
                return
            self._on_undeclare_queryable(f, entry[0], entry[1])
        elif isinstance(body, DeclareToken):
            if msg.interest_id is not None:
                # Tokens answering an interest flow only north-to-south.
                self._drop(f.fid, "token with interest id", msg)
                return
            self._on_declare_token(f, body, msg)
        elif isinstance(body, UndeclareToken):
            key = f.tokens.pop(body.entity_id, None)
            if key is None:
                self._drop(f.fid, "unknown token id", msg)
                return
            self._change_token_holder(f, key, -1)
        else:  # DeclareFinal: only meaningful from north of us
            self._drop(f.fid, "unexpected declare final", msg)

    @override
    def _on_declare_keyexpr(self, f: Face, body: DeclareKeyExpr, msg: Declare) -> None:
        we = body.wire_expr
        # Real routers read the D_KEYEXPR scope with the receiver mapping (the ids *we*
        # declared to this face), whatever the codec's default flag says.
        prefix = "" if we.scope == 0 else f.local_ids.get(we.scope)
        if prefix is None:
            self._drop(f.fid, "unknown key id", msg)
            return
        key = prefix + we.suffix
        if len(key) > MAX_KEY_LEN:
            self._drop(f.fid, "invalid key expression", msg)
            return
        old = f.remote_ids.get(body.expr_id)
        if old is not None:
            if old != key:
                self._drop(f.fid, "key id remapped", msg)
            return
        if len(f.remote_ids) >= self.config.max_keyexpr_ids_per_face:
            self._limit_hit(f, "max_keyexpr_ids_per_face", msg)
            return
        f.remote_ids[body.expr_id] = key
        f.remote_id_of[key] = body.expr_id
        self._ref(key)
        self._invalidate_routes()
