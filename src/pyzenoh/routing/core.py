"""The sans-IO routing core: faces in, network messages in, :class:`Send` items out.

See the package docstring (:mod:`pyzenoh.routing`) for the API contract and the
behaviour it reproduces. Implementation notes:

* Key expressions are handled as canonical strings. Entities are indexed in
  :class:`~pyzenoh.keyexpr.KeyExprTree` instances holding one ``(key, face id)`` pair per
  face that has at least one entity on that exact key ("holders").
* What each face has been told is kept per face: the ids the router declared
  (D_KEYEXPR), the subscriber / queryable declarations (:class:`DeclaredResources`) and
  the token declarations (key -> id).
* Visibility rules decide who should know about an entity; a declaration change
  compares, for every face, visibility before and after the change and sends the
  difference (never back to a face about its own subscribers or queryables).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    EntityGlobalId,
    Err,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    NetworkOam,
    Push,
    Put,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    Timestamp,
    UndeclareKeyExpr,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.data import FLAG_T as PUT_FLAG_T
from pyzenoh.codec.network import (
    OAM_LINKSTATE,
    QOS_BLOCK,
    QOS_DECLARE,
    QOS_EXPRESS,
    DeclarationBody,
)
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.keyexpr import KeyExprTree, includes, intersects, is_canonical
from pyzenoh.routing.declared import (
    DeclaredResources,
    QueryableInfo,
    aggregate_queryable,
    aggregate_subscriber,
    merge_queryable_infos,
)
from pyzenoh.routing.hlc import DEFAULT_MAX_DELTA, Hlc

#: Longest full key (prefix chain + suffix) accepted from a face, in characters.
#: Seconds added to a REQUEST's own Timeout before the router gives up on a destination.
REQUEST_TIMEOUT_GRACE = 0.05
MAX_KEY_LEN = 65_535
#: Entries kept in each route cache before it is flushed (bounds memory under key floods).
MAX_ROUTE_CACHE = 4_096
#: Request ids are z32 on the wire; the per-face counter wraps like real routers'.
RID_MASK = 0xFFFF_FFFF
#: Size of the timer heap above which entries of finished queries are purged (doubles).
MIN_TIMER_COMPACTION = 1_024
#: Body of the LINKSTATE a router answers a peer with: an empty link-state list.
EMPTY_LINKSTATE = b"\x00"
#: Payload of the error reply a router sends when a queryable does not finish in time.
TIMEOUT_PAYLOAD = b"Timeout"
#: The "no key" of an ERR reply (real routers send scope 0, empty suffix, M = 1).
EMPTY_WIRE_EXPR = WireExpr(0, "", True)

_K = InterestOptions.KEYEXPRS
_S = InterestOptions.SUBSCRIBERS
_Q = InterestOptions.QUERYABLES
_T = InterestOptions.TOKENS


# --- public value types ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """One output: send ``message`` (or, when not None, its pre-encoded ``raw`` bytes) to ``face``.

    ``priority`` (0 Control .. 7 Background), ``express`` and ``block`` (congestion
    control Block, else Drop) come from the message's QoS; ``reliable`` is the channel
    (a routed PUSH keeps the reliability it arrived with).
    """

    face: int
    message: NetworkMessage
    raw: bytes | None = None
    priority: int = 5
    reliable: bool = True
    express: bool = False
    block: bool = False


@dataclass(frozen=True, slots=True)
class RoutingConfig:
    """Router behaviour knobs. Times are seconds; caps are per face."""

    query_timeout: float = 10.0  # zenohd queries_default_timeout, when a REQUEST has none
    max_declarations_per_face: int = 10_000  # subscribers + queryables + tokens + interests
    max_pending_queries_per_face: int = 1_000  # queries a face may have in flight
    max_keyexpr_ids_per_face: int = 10_000  # D_KEYEXPR ids, each direction
    timestamping: bool = True  # stamp PUTs that carry no timestamp (router default)
    hlc_id: ZenohId | None = None  # defaults to the router's zid
    hlc_max_delta: float = DEFAULT_MAX_DELTA
    drop_future_timestamp: bool = False  # else re-stamp data stamped too far ahead
    enforce_budget: bool = False  # real routers only forward the Budget ext
    isolate_peers: bool = False  # real routers do not route between two of their peers

    def __post_init__(self) -> None:
        for name in ("max_declarations_per_face", "max_pending_queries_per_face",
                     "max_keyexpr_ids_per_face"):  # fmt: skip
            if getattr(self, name) < 1:
                raise UsageError(f"RoutingConfig.{name} must be >= 1")
        if not self.query_timeout >= 0:
            raise UsageError("RoutingConfig.query_timeout must be >= 0")


class FaceLimitExceeded(PeerError):
    """A face went over one of its caps: the link must be closed, then ``remove_face`` called.

    Raised before the offending message changed any state.
    """

    close_reason = CloseReason.GENERIC


class UnsupportedFace(PeerError):
    """A remote the core cannot serve (a router: router-to-router routing is not spoken)."""

    close_reason = CloseReason.UNSUPPORTED


@dataclass(frozen=True, slots=True)
class PushRouted:
    """Observer event: a PUSH from ``source`` on ``key`` went to ``destinations``.

    ``destinations`` are the faces that had an intersecting subscriber (never the source).
    ``stamped`` is True when the router added (or replaced) the PUT's timestamp.
    """

    source: int
    key: str
    destinations: frozenset[int]
    message: Push
    stamped: bool


@dataclass(frozen=True, slots=True)
class QueryRouted:
    """Observer event: a REQUEST from ``source`` on ``key`` went to ``destinations``."""

    source: int
    key: str
    destinations: frozenset[int]
    message: Request


@dataclass(frozen=True, slots=True)
class Dropped:
    """Observer event: a message from ``face`` was ignored, for ``reason``."""

    face: int
    reason: str
    message: NetworkMessage


RoutingEvent = PushRouted | QueryRouted | Dropped


@dataclass(slots=True)
class RoutingStats:
    """Counters for tests and metrics."""

    sub_index_lookups: int = 0  # subscriber-index queries done to build data routes
    qabl_index_lookups: int = 0
    data_route_hits: int = 0
    pushes_routed: int = 0
    requests_routed: int = 0
    query_timeouts: int = 0
    dropped: dict[str, int] = field(default_factory=dict)


# --- internal state --------------------------------------------------------------------------


@dataclass(slots=True)
class _Interest:
    key: str | None  # None: all keys
    options: InterestOptions
    mode: InterestMode
    aggregate: bool


@dataclass(slots=True)
class _Query:
    qid: int
    src: int
    src_rid: int
    qos: int
    budget: int | None
    remaining: dict[int, int] = field(default_factory=dict)  # destination face -> its rid
    replies: int = 0


class _Face:
    __slots__ = (
        "fid",
        "interests",
        "is_peer",
        "key_interests",
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
        "remote_id_of",
        "remote_ids",
        "subs",
        "tokens",
        "whatami",
        "zid",
    )  # fmt: skip

    def __init__(self, fid: int, zid: ZenohId, whatami: WhatAmI) -> None:
        self.fid = fid
        self.zid = zid
        self.whatami = whatami
        self.is_peer = whatami == WhatAmI.PEER
        self.remote_ids: dict[int, str] = {}  # ids the face declared -> full key
        self.remote_id_of: dict[str, int] = {}
        self.local_ids: dict[int, str] = {}  # ids we declared to the face -> full key
        self.local_id_of: dict[str, int] = {}
        self.subs: dict[int, str] = {}
        self.qabls: dict[int, tuple[str, QueryableInfo]] = {}
        self.tokens: dict[int, str] = {}
        self.interests: dict[int, _Interest] = {}  # future-mode interests still active
        self.key_interests: dict[int, str | None] = {}  # K interests (non-Current)
        self.local_subs: DeclaredResources[bool] = DeclaredResources(aggregate_subscriber)
        self.local_qabls: DeclaredResources[QueryableInfo] = DeclaredResources(aggregate_queryable)
        self.local_tokens: dict[str, int] = {}
        self.next_id = 1  # shared by the subscriber, queryable and token ids we declare
        self.next_rid = 0
        self.pending: dict[int, _Query] = {}  # rid we sent to this face -> its query
        self.outgoing: dict[int, _Query] = {}  # qid -> queries this face asked

    def declaration_count(self) -> int:
        return len(self.subs) + len(self.qabls) + len(self.tokens) + len(self.interests)

    def echoes_own_tokens(self) -> bool:
        # Real routers echo a client's own tokens (the API counts session-local tokens);
        # a peer is not told about its own.
        return not self.is_peer


@dataclass(frozen=True, slots=True)
class _DataRoute:
    key: str | None  # None: the message is dropped for ``reason``
    dests: tuple[tuple[int, WireExpr], ...] = ()
    reason: str = ""
    faces: frozenset[int] = frozenset()  # the destination faces, for observers


@dataclass(frozen=True, slots=True)
class _QueryRoute:
    key: str | None
    # (face, complete, face is a peer) in selection order
    candidates: tuple[tuple[int, bool, bool], ...] = ()
    reason: str = ""


def _send(face: int, msg: NetworkMessage, qos: int, raw: bytes | None = None,
          reliable: bool = True) -> Send:  # fmt: skip
    return Send(face, msg, raw, qos & 0x07, reliable, bool(qos & QOS_EXPRESS), bool(qos & QOS_BLOCK))


def _nonwild_split(key: str) -> tuple[str, str]:
    """(non-wild prefix, rest): the prefix is the chunks before the first wild chunk."""
    star = key.find("*")
    if star < 0:
        return key, ""
    slash = key.rfind("/", 0, star)
    if slash < 0:
        return "", key
    return key[:slash], key[slash:]


# --- the core --------------------------------------------------------------------------------


def _merge_all(infos: Iterable[QueryableInfo]) -> QueryableInfo | None:
    out: QueryableInfo | None = None
    for info in infos:
        out = info if out is None else merge_queryable_infos(out, info)
    return out


class RoutingCore:
    """Routing tables and decisions of a Zenoh router, with no I/O and no clock."""

    def __init__(
        self,
        zid: ZenohId,
        *,
        whatami: WhatAmI = WhatAmI.ROUTER,
        config: RoutingConfig = RoutingConfig(),
        observer: Callable[[RoutingEvent], None] | None = None,
    ) -> None:
        self.zid = zid
        self.whatami = whatami
        self.config = config
        self.observer = observer
        self.stats = RoutingStats()
        self._hlc = Hlc(config.hlc_id or zid, config.hlc_max_delta)
        self._faces: dict[int, _Face] = {}
        self._sub_tree: KeyExprTree[int] = KeyExprTree()
        self._sub_holders: dict[str, dict[int, int]] = {}  # key -> face -> subscriber count
        self._qabl_tree: KeyExprTree[int] = KeyExprTree()
        self._qabl_holders: dict[str, dict[int, QueryableInfo]] = {}  # key -> face -> info
        self._token_tree: KeyExprTree[int] = KeyExprTree()
        self._token_holders: dict[str, dict[int, int]] = {}
        # Keys that exist as "resources" for real routers (declared entities, D_KEYEXPR
        # keys, interest keys): only those get a D_KEYEXPR of their own (decl_key).
        self._resource_refs: dict[str, int] = {}
        self._data_routes: dict[tuple[int, int, str, bool], _DataRoute] = {}
        self._push_heads: dict[tuple[WireExpr, int], bytes] = {}  # encoded PUSH heads
        self._query_routes: dict[tuple[int, int, str, bool], _QueryRoute] = {}
        self._timers: list[tuple[float, int, int, int, int]] = []  # deadline, seq, face, rid, qid
        self._timers_compact_at = MIN_TIMER_COMPACTION
        self._seq = itertools.count()
        self._qids = itertools.count(1)
        self._out: list[Send] = []
        self._now = 0.0
        self._closing: _Face | None = None  # the face remove_face is tearing down

    # -- public API ---------------------------------------------------------------------------

    def add_face(self, face: int, zid: ZenohId, whatami: WhatAmI, now: float) -> list[Send]:
        """A session is open on ``face``.

        Real routers send nothing to a client then; a peer gets the router's LINKSTATE.
        """
        if face in self._faces:
            raise UsageError(f"face {face} already exists")
        if whatami == WhatAmI.ROUTER:
            raise UnsupportedFace("router-to-router sessions are not supported")
        f = self._faces[face] = _Face(face, zid, whatami)
        self._invalidate_routes()
        if not f.is_peer:
            return []
        # Routers tell a new peer their link state (checked on the wire: sent even when the
        # peer sends none). Without gossip ours is the empty list.
        return [_send(face, NetworkOam(OAM_LINKSTATE, EMPTY_LINKSTATE, QOS_DECLARE), QOS_DECLARE)]

    def remove_face(self, face: int, now: float) -> list[Send]:
        """The session on ``face`` is gone (closed or lease expired): drop all its state.

        Other faces get the undeclarations this implies, and queriers waiting on this
        face get their RESPONSE_FINAL when it was the last one they waited for.
        """
        f = self._faces.get(face)
        if f is None:
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
        finally:
            self._closing = None
        del self._faces[face]
        self._invalidate_routes()
        self._out = []
        return out

    def handle(
        self, face: int, msg: NetworkMessage, now: float, raw: bytes | None = None,
        reliable: bool = True,
    ) -> list[Send]:  # fmt: skip
        """Route one message received on ``face``.

        ``raw`` is the message's encoded bytes (lets a PUSH go out unchanged without
        re-encoding); ``reliable`` the channel it came on. Bad input from the face is
        dropped (see :class:`Dropped`), or raises :class:`FaceLimitExceeded`.
        """
        f = self._faces.get(face)
        if f is None:
            raise UsageError(f"unknown face {face}")
        self._now = now
        out = self._out = []
        if isinstance(msg, Push):
            self._on_push(f, msg, raw, reliable)
        elif isinstance(msg, Declare):
            self._on_declare(f, msg)
        elif isinstance(msg, Interest):
            self._on_interest(f, msg)
        elif isinstance(msg, Request):
            self._on_request(f, msg)
        elif isinstance(msg, Response):
            self._on_response(f, msg, raw)
        elif isinstance(msg, ResponseFinal):
            self._on_response_final(f, msg)
        elif isinstance(msg, NetworkOam):
            self._on_oam(f, msg)
        else:
            raise UsageError(f"not a network message: {type(msg).__name__}")
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
            if q.src in self._faces:
                err = Response(q.src_rid, EMPTY_WIRE_EXPR, Err(TIMEOUT_PAYLOAD), qos=q.qos,
                               responder=EntityGlobalId(d.zid, 0))  # fmt: skip
                self._emit(q.src, err, q.qos)
            self._finish_destination(q, dest)
        self._out = []
        return out

    # -- observability helpers ----------------------------------------------------------------

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
        return sorted(self._faces)

    def face_state(self, face: int) -> dict[str, object]:
        """A snapshot of what the core holds for ``face`` (for tests and diagnostics)."""
        f = self._faces[face]
        return {
            "zid": f.zid, "whatami": f.whatami,
            "remote_ids": dict(f.remote_ids), "local_ids": dict(f.local_ids),
            "subscribers": dict(f.subs), "queryables": {i: k for i, (k, _) in f.qabls.items()},
            "tokens": dict(f.tokens), "interests": sorted(f.interests),
            "declared_subscribers": f.local_subs.visible(),
            "declared_queryables": f.local_qabls.visible(),
            "declared_tokens": dict(f.local_tokens),
            "pending_queries": len(f.pending), "outgoing_queries": len(f.outgoing),
        }  # fmt: skip

    def is_empty(self) -> bool:
        """True when no face, entity, query or timer is left (after removing every face)."""
        return not (self._faces or self._sub_holders or self._qabl_holders
                    or self._token_holders or self._resource_refs or len(self._sub_tree)
                    or len(self._qabl_tree) or len(self._token_tree)
                    or self.next_deadline() is not None)  # fmt: skip

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
        assert subs == self._sub_holders, "subscriber holders out of sync"
        assert tokens == self._token_holders, "token holders out of sync"
        assert qabls == self._qabl_holders, "queryable holders out of sync"
        for tree, holders in ((self._sub_tree, subs), (self._token_tree, tokens),
                              (self._qabl_tree, qabls)):  # fmt: skip
            pairs = sorted(tree.items())
            assert pairs == sorted((k, fid) for k, hs in holders.items() for fid in hs)
        refs: dict[str, int] = {}
        for f in faces.values():
            for key in itertools.chain(f.remote_ids.values(), f.local_ids.values(),
                                       (it.key for it in f.interests.values() if it.key)):  # fmt: skip
                refs[key] = refs.get(key, 0) + 1
        assert refs == self._resource_refs, "resource references out of sync"

    # -- helpers ------------------------------------------------------------------------------

    def _emit(self, face: int, msg: NetworkMessage, qos: int, raw: bytes | None = None,
              reliable: bool = True) -> None:  # fmt: skip
        self._out.append(_send(face, msg, qos, raw, reliable))

    def _declare(self, d: _Face, body: DeclarationBody, interest_id: int | None = None) -> None:
        self._emit(d.fid, Declare(body, interest_id, QOS_DECLARE), QOS_DECLARE)

    def _drop(self, face: int, reason: str, msg: NetworkMessage) -> None:
        self.stats.dropped[reason] = self.stats.dropped.get(reason, 0) + 1
        if self.observer is not None:
            self.observer(Dropped(face, reason, msg))

    def _live_faces(self) -> list[_Face]:
        """Faces that can be sent to (not the one being removed)."""
        return [d for d in self._faces.values() if d is not self._closing]

    def _invalidate_routes(self) -> None:
        self._data_routes.clear()
        self._query_routes.clear()

    def _ref(self, key: str) -> None:
        self._resource_refs[key] = self._resource_refs.get(key, 0) + 1

    def _unref(self, key: str) -> None:
        n = self._resource_refs.get(key, 0) - 1
        if n > 0:
            self._resource_refs[key] = n
        else:
            self._resource_refs.pop(key, None)

    def _is_resource(self, key: str) -> bool:
        return (key in self._resource_refs or key in self._sub_holders
                or key in self._qabl_holders or key in self._token_holders)  # fmt: skip

    def _sees(self, d: _Face, src: _Face) -> bool:
        """Does face ``d`` get to know about what face ``src`` declares or sends?"""
        if d is src:
            return False
        return not (self.config.isolate_peers and d.is_peer and src.is_peer)

    def _resolve(self, f: _Face, we: WireExpr) -> str | None:
        """The full key of a wire expression received from ``f`` (None: unknown id)."""
        if we.scope == 0:
            return we.suffix
        table = f.remote_ids if we.mapping_sender else f.local_ids
        prefix = table.get(we.scope)
        return None if prefix is None else prefix + we.suffix

    def _resolve_key(self, f: _Face, we: WireExpr, msg: NetworkMessage) -> str | None:
        """Resolve and validate; drop the message (return None) when that fails."""
        key = self._resolve(f, we)
        if key is None:
            self._drop(f.fid, "unknown key id", msg)
            return None
        if len(key) > MAX_KEY_LEN or not is_canonical(key):
            self._drop(f.fid, "invalid key expression", msg)
            return None
        return key

    def _new_id(self, d: _Face) -> int:
        ident = d.next_id
        d.next_id += 1
        return ident

    def _best_key(self, d: _Face, key: str) -> WireExpr:
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

    def _decl_key(self, d: _Face, key: str) -> WireExpr:
        """How to write the key of a declaration sent to ``d`` (may first declare a D_KEYEXPR).

        Like real routers: the non-wild prefix of the key, written with an id ``d`` knows
        for exactly that prefix; failing that, when ``d`` has a key-expression interest
        covering that prefix, a fresh id of ours declared with D_KEYEXPR; else the full
        string.
        """
        prefix, rest = _nonwild_split(key)
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

    def _wants_keyexpr(self, d: _Face, prefix: str) -> bool:
        known: bool | None = None
        for restriction in d.key_interests.values():
            if restriction is None:
                return True
            if known is None:
                known = self._is_resource(prefix)
            if known and intersects(restriction, prefix):
                return True
        return False

    def _matching_interests(self, d: _Face, option: InterestOptions, key: str) -> list[tuple[int, _Interest]]:
        return [(iid, it) for iid, it in d.interests.items()
                if it.options & option and (it.key is None or intersects(it.key, key))]  # fmt: skip

    def _check_declaration_cap(self, f: _Face) -> None:
        if f.declaration_count() >= self.config.max_declarations_per_face:
            raise FaceLimitExceeded(
                f"face {f.fid} exceeds {self.config.max_declarations_per_face} declarations")

    # -- data -----------------------------------------------------------------------------------

    def _data_route(self, f: _Face, we: WireExpr, msg: Push) -> _DataRoute:
        cache_key = (f.fid, we.scope, we.suffix, we.mapping_sender)
        route = self._data_routes.get(cache_key)
        if route is not None:
            self.stats.data_route_hits += 1
            return route
        key = self._resolve(f, we)
        if key is None:
            route = _DataRoute(None, reason="unknown key id")
        elif len(key) > MAX_KEY_LEN or not is_canonical(key):
            route = _DataRoute(None, reason="invalid key expression")
        elif "*" in key:
            route = _DataRoute(None, reason="wildcard key in PUSH")
        else:
            self.stats.sub_index_lookups += 1
            dests: dict[int, WireExpr] = {}
            for _, fid in self._sub_tree.intersecting(key):
                d = self._faces[fid]
                if fid not in dests and self._sees(d, f):
                    dests[fid] = self._best_key(d, key)
            route = _DataRoute(key, tuple(sorted(dests.items())), faces=frozenset(dests))
        if len(self._data_routes) >= MAX_ROUTE_CACHE:
            self._data_routes.clear()
        self._data_routes[cache_key] = route
        return route

    def _on_push(self, f: _Face, msg: Push, raw: bytes | None, reliable: bool) -> None:
        route = self._data_route(f, msg.wire_expr, msg)
        if route.key is None:
            self._drop(f.fid, route.reason, msg)
            return
        dests = route.dests
        body = msg.body
        stamped = False
        if dests and self.config.timestamping and isinstance(body, Put):
            if body.timestamp is None:
                body = body.with_timestamp(self._hlc.new_timestamp(self._now))
                stamped = True
            elif not self._hlc.update(body.timestamp, self._now):
                if self.config.drop_future_timestamp:
                    self._drop(f.fid, "timestamp too far in the future", msg)
                    return
                body = body.with_timestamp(self._hlc.new_timestamp(self._now))
                stamped = True
        self.stats.pushes_routed += 1
        if dests:
            # Real routers drop the network-level timestamp when fanning out.
            net_ts = msg.timestamp if len(dests) == 1 else None
            head_unchanged = net_ts is msg.timestamp and msg.node_id is None
            body_raw = self._body_bytes(msg, raw, body)
            if body_raw is not None:
                self._emit_push_bytes(msg, raw, body, body_raw, dests, net_ts, head_unchanged, reliable)
            else:
                unchanged = body is msg.body and head_unchanged
                # One message object per distinct key representation: the caller can
                # encode it once for every face it goes to.
                shared: dict[WireExpr, Push] = {}
                for fid, we in dests:
                    if unchanged and we == msg.wire_expr:
                        self._emit(fid, msg, msg.qos, raw, reliable)
                        continue
                    out = shared.get(we)
                    if out is None:
                        out = shared[we] = msg.routed(we, body, net_ts)
                    self._emit(fid, out, msg.qos, None, reliable)
        if self.observer is not None:
            self.observer(PushRouted(f.fid, route.key, route.faces, msg, stamped))

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
            ts = bytearray((raw[off] | PUT_FLAG_T,))
            body.timestamp.write(ts)
            return bytes(ts) + raw[off + 1 :]
        return None

    def _push_head(self, msg: Push) -> bytes:
        """The encoded head of a routed PUSH; a steady stream reuses it (when the head is
        only the key and QoS, which is what publications carry)."""
        if msg.timestamp is not None or msg.ts_stack is not None or msg.extensions:
            head = bytearray()
            msg.write_head(head)
            return bytes(head)
        cache_key = (msg.wire_expr, msg.qos)
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
        dests: tuple[tuple[int, WireExpr], ...], net_ts: Timestamp | None,
        head_unchanged: bool, reliable: bool,
    ) -> None:  # fmt: skip
        """Emit a routed PUSH whose bytes are its received head (or one re-encoded head per
        key representation) followed by ``body_raw``, the encoding of ``body``."""
        assert raw is not None
        heads: dict[WireExpr, tuple[Push, bytes]] = {}
        for fid, we in dests:
            entry = heads.get(we)
            if entry is None:
                out_msg = msg.routed(we, body, net_ts)
                if head_unchanged and we == msg.wire_expr:
                    entry = (out_msg, raw[: msg.body_offset] + body_raw)
                else:
                    entry = (out_msg, self._push_head(out_msg) + body_raw)
                heads[we] = entry
            self._emit(fid, entry[0], msg.qos, entry[1], reliable)

    # -- queries --------------------------------------------------------------------------------

    def _query_route(self, f: _Face, msg: Request) -> _QueryRoute:
        we = msg.wire_expr
        cache_key = (f.fid, we.scope, we.suffix, we.mapping_sender)
        route = self._query_routes.get(cache_key)
        if route is not None:
            return route
        key = self._resolve(f, we)
        if key is None:
            route = _QueryRoute(None, reason="unknown key id")
        elif len(key) > MAX_KEY_LEN or not is_canonical(key):
            route = _QueryRoute(None, reason="invalid key expression")
        else:
            self.stats.qabl_index_lookups += 1
            candidates: list[tuple[int, str, bool]] = []
            for qkey, fid in self._qabl_tree.intersecting(key):
                d = self._faces[fid]
                if self._sees(d, f):
                    info = self._qabl_holders[qkey][fid]
                    candidates.append((fid, qkey, info.complete and includes(qkey, key)))
            candidates.sort()
            route = _QueryRoute(key, tuple((fid, complete, self._faces[fid].is_peer)
                                           for fid, _, complete in candidates))  # fmt: skip
        if len(self._query_routes) >= MAX_ROUTE_CACHE:
            self._query_routes.clear()
        self._query_routes[cache_key] = route
        return route

    @staticmethod
    def _select(candidates: Iterable[tuple[int, bool, bool]], target: int) -> list[int]:
        cands = list(candidates)
        if target == QueryTarget.BEST_MATCHING:
            # Real routers choose per region: clients and peers are two regions, each gets
            # its first complete queryable, or all of its queryables when none is complete.
            chosen: list[tuple[int, bool, bool]] = []
            for peers in (False, True):
                group = [c for c in cands if c[2] == peers]
                best = next((c for c in group if c[1]), None)
                chosen += group if best is None else [best]
            cands = chosen
        elif target == QueryTarget.ALL_COMPLETE:
            cands = [c for c in cands if c[1]]
        return list(dict.fromkeys(fid for fid, _, _ in cands))

    def _final(self, face: int, rid: int, qos: int) -> None:
        self._emit(face, ResponseFinal(rid, qos), qos)

    def _on_request(self, f: _Face, msg: Request) -> None:
        route = self._query_route(f, msg)
        if route.key is None:
            # Real routers answer a query they cannot route with its final at once.
            self._drop(f.fid, route.reason, msg)
            self._final(f.fid, msg.request_id, msg.qos)
            return
        if len(f.outgoing) >= self.config.max_pending_queries_per_face:
            self._drop(f.fid, "too many pending queries", msg)
            self._final(f.fid, msg.request_id, msg.qos)
            return
        dests = self._select(route.candidates, msg.target)
        self.stats.requests_routed += 1
        if self.observer is not None:
            self.observer(QueryRouted(f.fid, route.key, frozenset(dests), msg))
        if not dests:
            self._final(f.fid, msg.request_id, msg.qos)
            return
        q = _Query(next(self._qids), f.fid, msg.request_id, msg.qos, msg.budget)
        f.outgoing[q.qid] = q
        if msg.timeout_ms is None:
            timeout = self.config.query_timeout
        else:
            # The querier runs its own timer of the same length, started a little earlier:
            # the grace lets it end its query first, so it never sees two "Timeout"s.
            timeout = msg.timeout_ms / 1000.0 + REQUEST_TIMEOUT_GRACE
        deadline = self._now + timeout
        for fid in dests:
            d = self._faces[fid]
            rid = (d.next_rid + 1) & RID_MASK
            while rid in d.pending:  # only after a wrap with very old queries pending
                rid = (rid + 1) & RID_MASK
            d.next_rid = rid
            d.pending[rid] = q
            q.remaining[fid] = rid
            heapq.heappush(self._timers, (deadline, next(self._seq), fid, rid, q.qid))
            if len(self._timers) > self._timers_compact_at:
                self._compact_timers()
            out = replace(msg, request_id=rid, wire_expr=self._best_key(d, route.key), node_id=None)
            self._emit(fid, out, msg.qos)

    def _on_response(self, d: _Face, msg: Response, raw: bytes | None) -> None:
        q = d.pending.get(msg.request_id)
        if q is None:
            self._drop(d.fid, "unknown request id", msg)
            return
        we = msg.wire_expr
        if we.scope != 0 or we.suffix:
            key = self._resolve_key(d, we, msg)
            if key is None:
                return
            we = WireExpr(0, key, True)
        if self.config.enforce_budget and q.budget is not None and q.replies >= q.budget:
            self._drop(d.fid, "over query budget", msg)
            return
        q.replies += 1
        if we == msg.wire_expr and q.src_rid == msg.request_id and q.qos == msg.qos:
            self._emit(q.src, msg, q.qos, raw)
        else:
            self._emit(q.src, replace(msg, request_id=q.src_rid, wire_expr=we, qos=q.qos), q.qos)

    def _on_response_final(self, d: _Face, msg: ResponseFinal) -> None:
        q = d.pending.pop(msg.request_id, None)
        if q is None:
            self._drop(d.fid, "unknown request id", msg)
            return
        self._finish_destination(q, d.fid)

    def _finish_destination(self, q: _Query, dest: int) -> None:
        """``dest`` is done with ``q``; the querier gets its one final after the last."""
        if q.remaining.pop(dest, None) is None or q.remaining:
            return
        src = self._faces.get(q.src)
        if src is not None and src.outgoing.pop(q.qid, None) is not None:
            self._final(q.src, q.src_rid, q.qos)

    def _compact_timers(self) -> None:
        """Drop the entries of queries already finished (answered queries leave theirs)."""
        self._timers = [e for e in self._timers if self._timer_live(e)]
        heapq.heapify(self._timers)
        self._timers_compact_at = max(MIN_TIMER_COMPACTION, 2 * len(self._timers))

    def _timer_live(self, entry: tuple[float, int, int, int, int]) -> bool:
        _, _, dest, rid, qid = entry
        d = self._faces.get(dest)
        if d is None:
            return False
        q = d.pending.get(rid)
        return q is not None and q.qid == qid

    # -- OAM ------------------------------------------------------------------------------------

    def _on_oam(self, f: _Face, msg: NetworkOam) -> None:
        if msg.oam_id == OAM_LINKSTATE and f.is_peer:
            return  # a peer's link state: nothing to do without router-to-router routing
        self._drop(f.fid, "unexpected OAM", msg)

    # -- declarations ---------------------------------------------------------------------------

    def _on_declare(self, f: _Face, msg: Declare) -> None:
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

    def _on_declare_keyexpr(self, f: _Face, body: DeclareKeyExpr, msg: Declare) -> None:
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
            raise FaceLimitExceeded(
                f"face {f.fid} exceeds {self.config.max_keyexpr_ids_per_face} key expression ids")
        f.remote_ids[body.expr_id] = key
        f.remote_id_of[key] = body.expr_id
        self._ref(key)
        self._invalidate_routes()

    # subscribers

    def _new_entity(
        self, f: _Face, table: dict[int, str], body: DeclareSubscriber | DeclareToken, msg: Declare,
        kind: str,
    ) -> str | None:  # fmt: skip
        """The key of a newly declared subscriber or token, recorded in ``table``; None
        when the declaration is dropped or repeats one already held under that id."""
        key = self._resolve_key(f, body.wire_expr, msg)
        if key is None:
            return None
        old = table.get(body.entity_id)
        if old is not None:
            if old != key:
                self._drop(f.fid, f"duplicate {kind} id", msg)
            return None
        self._check_declaration_cap(f)
        table[body.entity_id] = key
        return key

    def _on_declare_subscriber(self, f: _Face, body: DeclareSubscriber, msg: Declare) -> None:
        key = self._new_entity(f, f.subs, body, msg, "subscriber")
        if key is not None:
            self._change_sub_holder(f, key, +1)

    def _sub_visible(self, d: _Face, holders: dict[int, int]) -> bool:
        return any(self._sees(d, self._faces[h]) for h in holders if h in self._faces)

    @staticmethod
    def _count_holder(
        table: dict[str, dict[int, int]], tree: KeyExprTree[int], f: _Face, key: str, delta: int
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

    def _change_sub_holder(self, f: _Face, key: str, delta: int) -> None:
        counted = self._count_holder(self._sub_holders, self._sub_tree, f, key, delta)
        if counted is None:
            return
        before, holders = counted
        self._invalidate_routes()
        for d in self._live_faces():
            was = self._sub_visible(d, before)
            now = self._sub_visible(d, holders)
            if now and not was:
                self._propagate_sub(d, key)
            elif was and not now:
                for change in d.local_subs.remove_simple(key):
                    self._declare(d, UndeclareSubscriber(change.id))

    def _propagate_sub(self, d: _Face, key: str) -> None:
        if d.local_subs.contains_simple(key):
            return
        matching = self._matching_interests(d, _S, key)
        if not matching:
            return
        simple = [iid for iid, it in matching if not it.aggregate]
        _, changes = d.local_subs.insert_simple(key, True, lambda: self._new_id(d), simple)
        for change in changes:
            self._declare(d, DeclareSubscriber(change.id, self._decl_key(d, change.key)))

    # queryables

    @staticmethod
    def _face_qabl_info(f: _Face, key: str) -> QueryableInfo | None:
        info: QueryableInfo | None = None
        for k, i in f.qabls.values():
            if k == key:
                info = i if info is None else merge_queryable_infos(info, i)
        return info

    def _on_declare_queryable(self, f: _Face, body: DeclareQueryable, msg: Declare) -> None:
        key = self._resolve_key(f, body.wire_expr, msg)
        if key is None:
            return
        info = QueryableInfo(body.complete, body.distance)
        old = f.qabls.get(body.entity_id)
        if old is not None:
            if old[0] != key:
                self._drop(f.fid, "duplicate queryable id", msg)
                return
            if old[1] == info:
                return
        else:
            self._check_declaration_cap(f)
        f.qabls[body.entity_id] = (key, info)
        # Like zenoh, the face's info on a key is that of its latest declaration there.
        self._set_qabl_holder(f, key, info, "declare")

    def _on_undeclare_queryable(self, f: _Face, key: str, info: QueryableInfo) -> None:
        if any(k == key and i == info for k, i in f.qabls.values()):
            return  # another queryable of the face with the same key and info remains
        self._set_qabl_holder(f, key, self._face_qabl_info(f, key), "undeclare")

    def _qabl_info_for(self, d: _Face, holders: dict[int, QueryableInfo]) -> QueryableInfo | None:
        """The info ``d`` should know for a key: its holders other than ``d``, merged."""
        info: QueryableInfo | None = None
        for h, i in holders.items():
            if h in self._faces and self._sees(d, self._faces[h]):
                info = i if info is None else merge_queryable_infos(info, i)
        return info

    def _set_qabl_holder(self, f: _Face, key: str, info: QueryableInfo | None,
                         cause: Literal["declare", "undeclare", "close"]) -> None:  # fmt: skip
        """Face ``f``'s info on ``key`` becomes ``info`` (None: it holds none there).

        What other faces are told follows real routers, including what they leave out: a
        face that alone still holds the key keeps the declaration it got from the others
        (no U_QUERYABLE, checked on the wire), unless the last other holder was in the
        other region (clients / peers).
        """
        holders = self._qabl_holders.setdefault(key, {})
        old = holders.get(f.fid)
        if old == info:
            if not holders:
                del self._qabl_holders[key]
            return
        if info is None:
            del holders[f.fid]
            self._qabl_tree.remove(key, f.fid)
        else:
            if old is None:
                self._qabl_tree.insert(key, f.fid)
            holders[f.fid] = info
        if not holders:
            del self._qabl_holders[key]
        self._query_routes.clear()
        if cause == "declare":
            self._propagate_qabl_everywhere(key, holders)
            return
        if not holders:
            for d in self._live_faces():
                if d is not f:
                    self._unpropagate_qabl(d, key)
            return
        regions = {self._faces[h].is_peer for h in holders}
        if cause == "undeclare":
            same_region = [i for h, i in holders.items()
                           if h != f.fid and self._faces[h].is_peer == f.is_peer]  # fmt: skip
            others = _merge_all(same_region)
            new_total = _merge_all([i for i in (others, info) if i is not None])
            if new_total is None:  # no holder left in f's region: the others' region decides
                if len(holders) == 1:
                    self._unpropagate_qabl(self._faces[next(iter(holders))], key)
            elif new_total != _merge_all([i for i in (others, old) if i is not None]):
                self._propagate_qabl_everywhere(key, holders)
            return
        # cause == "close"
        if regions != {f.is_peer}:
            if len(holders) == 1:
                (last,) = holders
                self._unpropagate_qabl(self._faces[last], key)
            return
        self._propagate_qabl_everywhere(key, holders)

    def _propagate_qabl_everywhere(self, key: str, holders: dict[int, QueryableInfo]) -> None:
        for d in self._live_faces():
            info = self._qabl_info_for(d, holders)
            if info is not None:
                self._propagate_qabl(d, key, info)

    def _unpropagate_qabl(self, d: _Face, key: str) -> None:
        if d is self._closing:
            return
        for change in d.local_qabls.remove_simple(key):
            self._declare_qabl_change(d, change.id, change.key, change.info)

    def _propagate_qabl(self, d: _Face, key: str, info: QueryableInfo) -> None:
        matching = self._matching_interests(d, _Q, key)
        if not matching:
            return
        simple = [iid for iid, it in matching if not it.aggregate]
        _, changes = d.local_qabls.insert_simple(key, info, lambda: self._new_id(d), simple)
        for change in changes:
            self._declare_qabl_change(d, change.id, change.key, change.info)

    def _declare_qabl_change(self, d: _Face, ident: int, key: str, info: QueryableInfo | None) -> None:
        if info is None:
            self._declare(d, UndeclareQueryable(ident))
        else:
            self._declare(d, DeclareQueryable(ident, self._decl_key(d, key), info.complete, info.distance))

    # tokens

    def _on_declare_token(self, f: _Face, body: DeclareToken, msg: Declare) -> None:
        key = self._new_entity(f, f.tokens, body, msg, "token")
        if key is not None:
            self._change_token_holder(f, key, +1)

    def _token_visible(self, d: _Face, holders: dict[int, int]) -> bool:
        for h in holders:
            if h == d.fid:
                if d.echoes_own_tokens():
                    return True
            elif h in self._faces and self._sees(d, self._faces[h]):
                return True
        return False

    def _change_token_holder(self, f: _Face, key: str, delta: int) -> None:
        counted = self._count_holder(self._token_holders, self._token_tree, f, key, delta)
        if counted is None:
            return
        before, holders = counted
        declared = f.fid in holders
        for d in self._live_faces():
            now = self._token_visible(d, holders)
            if declared:
                # Every face that should see it and was not told (or was told it went,
                # see below) hears of it: real routers propagate each new holder.
                if now:
                    self._propagate_token(d, key)
            elif not now and self._token_visible(d, before):
                self._unpropagate_token(d, key)
        if len(holders) == 1 and not declared:
            # Real routers tell the last holder the token went when the leaving holder
            # closed, or was in the other region (clients / peers) -- even a client that
            # still holds it itself and so still "sees" it (checked on the wire).
            (last,) = holders
            h = self._faces[last]
            if h is not self._closing and self._token_visible(h, holders) and (
                    f is self._closing or f.is_peer != h.is_peer):  # fmt: skip
                self._unpropagate_token(h, key)

    def _propagate_token(self, d: _Face, key: str) -> None:
        if key in d.local_tokens or not self._matching_interests(d, _T, key):
            return
        ident = self._new_id(d)
        d.local_tokens[key] = ident
        self._declare(d, DeclareToken(ident, self._decl_key(d, key)))

    def _unpropagate_token(self, d: _Face, key: str) -> None:
        ident = d.local_tokens.pop(key, None)
        if ident is not None:
            self._declare(d, UndeclareToken(ident))
        elif self._matching_interests(d, _T, key):
            # A token d never heard of (it predates a no-history liveliness subscriber):
            # real routers undeclare it with id 0 and its key in the WireExpr extension.
            self._declare(d, UndeclareToken(0, self._best_key(d, key)))

    # -- interests ------------------------------------------------------------------------------

    def _on_interest(self, f: _Face, msg: Interest) -> None:
        iid = msg.interest_id
        mode = msg.mode
        if mode == InterestMode.FINAL:
            self._on_interest_final(f, msg)
            return
        options = msg.options
        aggregate = msg.aggregate and not f.is_peer and not options & _T
        current = mode in (InterestMode.CURRENT, InterestMode.CURRENT_FUTURE)
        future = mode in (InterestMode.FUTURE, InterestMode.CURRENT_FUTURE)
        if mode == InterestMode.CURRENT and (options & (_S | _Q) or not options & _T):
            self._drop(f.fid, "current interest not for tokens only", msg)
            return
        if future and iid in f.interests:
            self._drop(f.fid, "interest id in use", msg)
            return
        key: str | None = None
        if msg.wire_expr is not None:
            key = self._resolve_key(f, msg.wire_expr, msg)
            if key is None:
                return
        if future:
            self._check_declaration_cap(f)
        if future and options & _K:
            f.key_interests[iid] = key
        if future:
            f.interests[iid] = _Interest(key, options, mode, aggregate)
            if key is not None:
                self._ref(key)
        if current:
            if options & _S:
                self._current_subscribers(f, iid, key, aggregate, future)
            if options & _Q:
                self._current_queryables(f, iid, key, aggregate, future)
            if options & _T:
                self._current_tokens(f, iid, key, future)
        # A router has nobody north to wait for: every accepted interest, Future ones
        # included, is final at once (checked on the wire against a 1.10.2 router).
        self._declare(f, DeclareFinal(), iid)

    def _on_interest_final(self, f: _Face, msg: Interest) -> None:
        iid = msg.interest_id
        f.key_interests.pop(iid, None)
        it = f.interests.pop(iid, None)
        if it is None:
            self._drop(f.fid, "unknown interest id", msg)
            return
        if it.key is not None:
            self._unref(it.key)
        if f.is_peer:
            # For peers real routers forget what the interest alone had declared; clients
            # keep those declarations (and get their undeclarations later).
            for declared, option in ((f.local_subs, _S), (f.local_qabls, _Q)):
                if it.options & option:
                    if it.aggregate and it.key is not None:
                        declared.remove_aggregated_interest(it.key, iid)
                    else:
                        declared.remove_simple_interest(iid)

    def _other_entities(self, f: _Face, table: Literal["subs", "qabls", "tokens"]) -> Iterable[tuple[_Face, str]]:
        """(holder, key) of every entity of another face visible to ``f``, face by face."""
        for fid in sorted(self._faces):
            h = self._faces[fid]
            if self._sees(f, h):
                entities: Iterable[str]
                if table == "subs":
                    entities = h.subs.values()
                elif table == "qabls":
                    entities = (k for k, _ in h.qabls.values())
                else:
                    entities = h.tokens.values()
                for key in entities:
                    yield h, key

    def _current_subscribers(self, f: _Face, iid: int, key: str | None, aggregate: bool,
                             future: bool) -> None:  # fmt: skip
        matches = list(dict.fromkeys(
            k for _, k in self._other_entities(f, "subs") if key is None or intersects(key, k)))
        if aggregate:
            if key is None:
                return  # real routers declare nothing for an unrestricted aggregate
            if future:
                for k in matches:
                    f.local_subs.insert_simple(k, True, lambda: self._new_id(f), ())
                ident, info = f.local_subs.insert_aggregated(key, lambda: self._new_id(f), (iid,))
            else:
                ident, info = 0, (True if matches else None)
            if info is not None:
                self._declare(f, DeclareSubscriber(ident, self._decl_key(f, key)), iid)
            return
        for k in matches:
            ident = 0
            if future:
                ident, _ = f.local_subs.insert_simple(k, True, lambda: self._new_id(f), (iid,))
            self._declare(f, DeclareSubscriber(ident, self._decl_key(f, k)), iid)

    def _current_queryables(self, f: _Face, iid: int, key: str | None, aggregate: bool,
                            future: bool) -> None:  # fmt: skip
        matches: dict[str, QueryableInfo] = {}
        for h, k in self._other_entities(f, "qabls"):
            if key is None or intersects(key, k):
                info = self._qabl_holders[k][h.fid]
                old = matches.get(k)
                matches[k] = info if old is None else merge_queryable_infos(old, info)
        if aggregate:
            if key is None:
                return
            if future:
                for k, info in matches.items():
                    f.local_qabls.insert_simple(k, info, lambda: self._new_id(f), ())
                ident, agg = f.local_qabls.insert_aggregated(key, lambda: self._new_id(f), (iid,))
            else:
                ident, agg = 0, f.local_qabls.aggregate_many(key, sorted(matches.items()))
            if agg is not None:
                self._declare(f, DeclareQueryable(ident, self._decl_key(f, key), agg.complete,
                                                  agg.distance), iid)  # fmt: skip
            return
        for k, info in matches.items():
            ident = 0
            if future:
                ident, _ = f.local_qabls.insert_simple(k, info, lambda: self._new_id(f), (iid,))
            self._declare(f, DeclareQueryable(ident, self._decl_key(f, k), info.complete,
                                              info.distance), iid)  # fmt: skip

    def _current_tokens(self, f: _Face, iid: int, key: str | None, future: bool) -> None:
        seen: dict[str, None] = {}
        for fid in sorted(self._faces):
            h = self._faces[fid]
            if h is f and not f.echoes_own_tokens():
                continue
            if h is not f and not self._sees(f, h):
                continue
            for k in h.tokens.values():
                if k not in seen and (key is None or intersects(key, k)):
                    seen[k] = None
        for k in seen:
            ident = 0
            if future:
                ident = f.local_tokens.get(k, 0) or self._new_id(f)
                f.local_tokens[k] = ident
            self._declare(f, DeclareToken(ident, self._decl_key(f, k)), iid)

