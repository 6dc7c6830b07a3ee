"""The sans-IO routing core: faces in, network messages in, :class:`Send` items out.

See the package docstring (:mod:`pyzenoh.routing`) for the API contract and the
behaviour it reproduces. The rules live in one module each:

* :mod:`.faces` -- per-face state (key-expression ids, entities, what the face was
  told); :mod:`.tables` -- the state every rule shares (faces, entity holders, route
  caches, the output, the clock readings, HLC, stats, config, access control) and how
  keys are resolved and written. Each rule below is an object built with the tables and
  the rules it calls;
* :mod:`.declarations` -- the DECLARE dispatch and key-expression ids;
* :mod:`.pubsub` -- subscribers and PUSH routing; :mod:`.lanes` a run of same-shape
  PUSHes as one unit, and a lone PUSH from its bytes;
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

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    NetworkMessage,
    NetworkOam,
    Push,
    Request,
    Response,
    ResponseFinal,
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
from pyzenoh.interceptors import FaceAttrs, Flow, Interceptors
from pyzenoh.routing.access_control import AccessControl, FaceAcl, FaceSubject
from pyzenoh.routing.declarations import Declarations
from pyzenoh.routing.declared import QueryableInfo
from pyzenoh.routing.faces import NORTH, Face, FaceView
from pyzenoh.routing.interests import Interests
from pyzenoh.routing.lanes import PushLanes
from pyzenoh.routing.network import Network
from pyzenoh.routing.pubsub import PubSub
from pyzenoh.routing.queries import (
    Queries,
)
from pyzenoh.routing.regions import Region
from pyzenoh.routing.regions.clients import Clients
from pyzenoh.routing.regions.peers import Peers
from pyzenoh.routing.regions.routers import Routers
from pyzenoh.routing.routers import RouterMesh
from pyzenoh.routing.tables import Tables
from pyzenoh.routing.tokens import Tokens
from pyzenoh.routing.types import (
    Intercepted,
    RoutingConfig,
    RoutingEvent,
    RoutingStats,
    Send,
    UnsupportedFace,
)

DEFAULT_CONFIG = RoutingConfig()


class RoutingCore:
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
        interceptors: Interceptors | None = None,
    ) -> None:
        """``locators`` gives the endpoints this router is reachable on (announced in its
        link state to routers and, with gossip, to peers). ``access_control`` filters
        what faces given a subject (:meth:`add_face`) send and receive; ``interceptors``
        (zenohd's downsampling, low-pass filter and QoS overwrite) act on what faces given
        link attributes send and receive. Without them nothing is filtered and routing
        pays nothing for it."""
        t = self._tables = Tables(zid, whatami, config, observer, access_control)
        self._interceptors = None if interceptors is None or interceptors.empty else interceptors
        # The rules, each given the tables and the rules it calls. The mesh's south (the
        # rules that change the NORTH face's holders) is connected once they exist.
        self._mesh = RouterMesh(t, locators)
        intercepting = self._interceptors is not None
        self._pubsub = PubSub(t, self._mesh, intercepting=intercepting)
        self._lanes = PushLanes(t, self._pubsub)
        self._queries = Queries(t, self._mesh, intercepting=intercepting)
        self._tokens = Tokens(t, self._mesh)
        self._interests = Interests(t)
        self._declarations = Declarations(t, self._pubsub, self._queries, self._tokens)
        self._mesh.connect(self._pubsub, self._queries, self._tokens, self._declarations)
        self._clients = Clients(self._declarations.on_declare)
        self._peers = Peers(zid, config, locators, t.can_send, t.emit, self._declarations.on_declare)
        self._routers = Routers(
            zid,
            self._mesh.network,
            self._mesh.router_face_added,
            self._mesh.router_face_removed,
            self._mesh.on_router_linkstate,
            self._mesh.on_router_declare,
        )
        self._mesh.init_north(self._routers)
        #: The lone lane's entry, bound here: no call in between on the hot path.
        self.forward_lone = self._lanes.forward_lone

    def _region_of(self, whatami: WhatAmI) -> Region:
        match whatami:
            case WhatAmI.ROUTER:
                return self._routers
            case WhatAmI.PEER:
                return self._peers
            case _:
                return self._clients

    def add_face(
        self,
        face: int,
        zid: ZenohId,
        whatami: WhatAmI,
        now: float,
        subject: FaceSubject | None = None,
        link: FaceAttrs | None = None,
    ) -> list[Send]:
        """A session is open on ``face`` (an id >= 0).

        Real routers send nothing to a client then; a peer gets the router's gossip
        LINKSTATE, a router its link state (the region rules in :mod:`.regions`). ``subject`` (the remote's zid and link properties) puts the
        face under access control, ``link`` (its transport's protocol and interfaces) under
        the interceptors; local faces have neither, as zenohd's own sessions.
        """
        t = self._tables
        if face in t.faces or face == NORTH:
            raise UsageError(f"face {face} already exists")
        f = t.faces[face] = Face(face, zid, whatami, self._region_of(whatami))
        if t.acl is not None and subject is not None:
            f.acl = t.acl.face(subject)
        if self._interceptors is not None and link is not None:
            f.intercept_in = self._interceptors.for_face(link, Flow.INGRESS).or_none()
            f.intercept_out = self._interceptors.for_face(link, Flow.EGRESS).or_none()
        t.invalidate_routes()
        t.now = now
        out = t.out = []
        try:
            f.region.face_added(f)
        except UnsupportedFace:
            del t.faces[face]
            raise
        t.out = []
        return out

    def remove_face(self, face: int, now: float) -> list[Send]:
        """The session on ``face`` is gone (closed or lease expired): drop all its state.

        Other faces get the undeclarations this implies, and queriers waiting on this
        face get their RESPONSE_FINAL when it was the last one they waited for.
        """
        t = self._tables
        f = t.faces.get(face)
        if f is None or face == NORTH:
            raise UsageError(f"unknown face {face}")
        t.now = now
        out = t.out = []
        t.closing = f
        try:
            self._queries.face_closing(f)
            for key, n in Counter(f.subs.values()).items():
                self._pubsub.change_sub_holder(f, key, -n)
            for key in dict.fromkeys(k for k, _ in f.qabls.values()):
                self._queries.set_qabl_holder(f, key, None, "close")
            for key, n in Counter(f.tokens.values()).items():
                self._tokens.change_token_holder(f, key, -n)
            for key in itertools.chain(f.remote_ids.values(), f.local_ids.values()):
                t.unref(key)
            for it in f.interests.values():
                if it.key is not None:
                    t.unref(it.key)
            f.region.face_removed(f)
        finally:
            t.closing = None
        del t.faces[face]
        t.invalidate_routes()
        t.out = []
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
        t = self._tables
        f = t.faces.get(face)
        if f is None or face == NORTH:
            raise UsageError(f"unknown face {face}")
        t.now = now
        t.wall = now if wall is None else wall
        out = t.out = []
        match msg:
            case Push():
                self._pubsub.on_push(f, msg, raw, reliable)
            case Declare():
                f.region.on_declare(f, msg)
            case Interest():
                self._interests.on_interest(f, msg)
            case Request():
                self._queries.on_request(f, msg)
            case Response():
                self._queries.on_response(f, msg, raw)
            case ResponseFinal():
                self._queries.on_response_final(f, msg)
            case NetworkOam():
                self._on_oam(f, msg)
            case _:
                raise UsageError(f"not a network message: {type(msg).__name__}")
        t.out = []
        return out

    def handle_push_run(
        self, face: int, run: PushRun, now: float, reliable: bool = True, wall: float | None = None
    ) -> list[Send]:
        """Route a run of same-shape PUSHes received on ``face`` as one unit (see
        :mod:`.runs`): the same outputs as :meth:`handle` on each message in turn, except
        that each destination gets one :class:`Send` holding all of its copies."""
        t = self._tables
        f = t.faces.get(face)
        if f is None or face == NORTH:
            raise UsageError(f"unknown face {face}")
        t.now = now
        t.wall = now if wall is None else wall
        out = t.out = []
        self._lanes.on_push_run(f, run, reliable)
        t.out = []
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` next has something to do (None: nothing pending)."""
        return self._queries.next_deadline()

    def handle_timer(self, now: float) -> list[Send]:
        """Expire the queries whose deadline is <= ``now``."""
        t = self._tables
        t.now = now
        out = t.out = []
        self._queries.expire(now)
        t.out = []
        return out

    def entity_count(self, face: int) -> int:
        """What ``face`` holds in the tables: declarations, key ids, queries it asked."""
        f = self._tables.faces.get(face)
        return 0 if f is None else f.declaration_count() + len(f.remote_ids) + len(f.outgoing)

    def compact(self) -> None:
        """Shrink the tables a flood grew (a dict keeps its largest size when emptied)
        and empty the route caches; for the daemon to call before giving memory back."""
        t = self._tables
        t.sub_holders = dict(t.sub_holders)
        t.qabl_holders = dict(t.qabl_holders)
        t.token_holders = dict(t.token_holders)
        t.resource_refs = dict(t.resource_refs)
        self._mesh.compact()
        t.invalidate_routes()
        t.push_heads.clear()

    def key_of(self, face: int, msg: NetworkMessage, *, incoming: bool) -> str | None:
        """The full key a message received from (``incoming``) or sent to ``face`` names.

        None when the message has no key expression (RESPONSE_FINAL, D_FINAL, most
        undeclarations, OAM, an ERR without key) or names an id the face tables do not
        hold. For recorders and logs; call it before :meth:`handle` for an incoming
        message and after for the outputs.
        """
        f = self._tables.faces.get(face)
        if f is None:
            return None
        we, keyexpr = _wire_expr_of(msg)
        if we is None:
            return None
        if we.scope == 0:
            return we.suffix or None
        # Like zenoh, a D_KEYEXPR scope names an id of the receiver of the D_KEYEXPR.
        sender_side = False if keyexpr else we.mapping_sender
        # Ids the face declared are "sender" ids on input and "receiver" ids on output.
        table = f.remote_ids if sender_side == incoming else f.local_ids
        prefix = table.get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def faces(self) -> list[int]:
        return sorted(self._tables.faces.keys() - {NORTH})

    def faces_view(self) -> Mapping[int, FaceView]:
        """Every face, read only (for the admin space): who it is, what it declared."""
        return MappingProxyType(self._tables.faces)

    @property
    def zid(self) -> ZenohId:
        return self._tables.zid

    @property
    def whatami(self) -> WhatAmI:
        return self._tables.whatami

    @property
    def config(self) -> RoutingConfig:
        return self._tables.config

    @property
    def stats(self) -> RoutingStats:
        return self._tables.stats

    @property
    def observer(self) -> Callable[[RoutingEvent], None] | None:
        """Called with every routing event (None: none are made)."""
        return self._tables.observer

    @observer.setter
    def observer(self, observer: Callable[[RoutingEvent], None] | None) -> None:
        self._tables.observer = observer

    @property
    def intercept_listener(self) -> Callable[[Intercepted], None] | None:
        """Told of each message an interceptor drops (None: nobody)."""
        return self._tables.intercept_listener

    @intercept_listener.setter
    def intercept_listener(self, listener: Callable[[Intercepted], None] | None) -> None:
        self._tables.intercept_listener = listener

    @property
    def network(self) -> Network:
        """The router graph (for the admin space and diagnostics)."""
        return self._mesh.network

    def router_entities(self, kind: str) -> dict[str, list[ZenohId]]:
        """key -> routers owning a ``kind`` ("subscriber", "queryable", "token") there."""
        return self._mesh.router_entities(kind)

    @property
    def access_control(self) -> AccessControl | None:
        """The access control in force (None: off), with its deny counters."""
        return self._tables.acl

    def face_acl(self, face: int) -> FaceAcl | None:
        """The access control of ``face``: its subject, the config subjects it matched
        (None: nothing it sends or receives is filtered)."""
        f = self._tables.faces.get(face)
        return None if f is None else f.acl

    def face_state(self, face: int) -> dict[str, object]:
        """A snapshot of what the core holds for ``face`` (for tests and diagnostics)."""
        f = self._tables.faces[face]
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
        t = self._tables
        return not (
            t.faces.keys() - {NORTH}
            or t.sub_holders
            or t.qabl_holders
            or t.token_holders
            or t.resource_refs
            or len(t.sub_tree)
            or len(t.qabl_tree)
            or len(t.token_tree)
            or self.next_deadline() is not None
        )

    def check_invariants(self) -> None:
        """Raise AssertionError if the tables are inconsistent (for tests; O(state))."""
        t = self._tables
        faces = t.faces
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
                held = t.qabl_holders.get(key, {}).get(fid)
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
        assert t.queries_in_flight == sum(len(f.outgoing) for f in faces.values()), "query count"
        assert subs == t.sub_holders, "subscriber holders out of sync"
        assert tokens == t.token_holders, "token holders out of sync"
        assert qabls == t.qabl_holders, "queryable holders out of sync"
        for tree, holders in ((t.sub_tree, subs), (t.token_tree, tokens), (t.qabl_tree, qabls)):
            pairs = sorted(tree.items())
            assert pairs == sorted((k, fid) for k, hs in holders.items() for fid in hs)
        refs: dict[str, int] = {}
        for f in faces.values():
            for key in itertools.chain(
                f.remote_ids.values(), f.local_ids.values(), (it.key for it in f.interests.values() if it.key)
            ):
                refs[key] = refs.get(key, 0) + 1
        assert refs == t.resource_refs, "resource references out of sync"

    def _on_oam(self, f: Face, msg: NetworkOam) -> None:
        if msg.oam_id != OAM_LINKSTATE or not isinstance(msg.body, bytes) or not f.region.on_linkstate(f, msg.body):
            self._tables.drop(f.fid, "unexpected OAM", msg)


def _wire_expr_of(msg: NetworkMessage) -> tuple[WireExpr | None, bool]:
    """A message's wire expression (None: it names no key), and whether it is a
    D_KEYEXPR's (whose scope is an id of the receiver's)."""
    match msg:
        case Push() | Request() | Response() | Interest():
            return msg.wire_expr, False
        case Declare(body=DeclareKeyExpr() as body):
            return body.wire_expr, True
        case Declare(body=DeclareSubscriber() | DeclareQueryable() | DeclareToken() as body):
            return body.wire_expr, False
        case Declare(body=UndeclareSubscriber() | UndeclareQueryable() | UndeclareToken() as body):
            return body.ext_wire_expr, False  # a U_TOKEN of id 0 names its key there
        case _:
            return None, False
