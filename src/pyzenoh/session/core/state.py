"""What a :class:`~pyzenoh.session.core.SessionCore` keeps, and the plumbing its regions share.

The records of its faces and of this session's entities, the constants of its deliveries
(:data:`END`, :class:`SampleBatch`), and :class:`CoreState`: every field of the core
(each region module reads and writes them directly) with what every region uses:
queueing messages (``_send``, ``_declare``), the id counters, expression ids and key
resolution, the per-key declaration counts, the user's key expressions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, final

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    NetworkMessage,
    UndeclareKeyExpr,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import QOS_DECLARE
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.transport.link import Established

log = logging.getLogger(__name__)

#: Delivered as an item to close a sink (end of a get, closed session ...).
END: Any = object()
#: Bounds of the per-key caches (match results, validated key objects).
MAX_CACHE_KEYS = 4096
PRIORITY_CONTROL = 0
TIMEOUT_PAYLOAD = b"Timeout"


class SampleBatch:
    """Samples delivered to a sink together (:meth:`Sink.push_many`), in order."""

    __slots__ = ("samples",)

    def __init__(self, samples: list[t.Sample]) -> None:
        self.samples = samples


@final
class EncodedRun:
    """Encoded network messages back to back, sent as one run (a publisher's puts drained
    together): message ``i`` ends at ``ends[i]`` (:meth:`TcpLink.send_run`)."""

    __slots__ = ("data", "ends")

    def __init__(self, data: bytes, ends: Sequence[int]) -> None:
        self.data = data
        self.ends = ends


#: What the core wants sent: (message, raw bytes or a run of them, reliable, priority,
#: droppable, express, face id or None: every face)
Outgoing = tuple[NetworkMessage | bytes | EncodedRun, bool, int, bool, bool, int | None]

#: Locality of an entity (allowed_origin / allowed_destination), as in zenoh
LOCAL_AND_REMOTE = t.Locality.ANY.value
SESSION_LOCAL = t.Locality.SESSION_LOCAL.value
REMOTE_ONLY = t.Locality.REMOTE.value


# --- State records --------------------------------------------------------------------------


@dataclass(slots=True)
class Face:
    """One link of the session: its peer and what it declared to us."""

    fid: int
    peer: Established
    #: interests go to it and it answers them (a router; any node a client connects to)
    routerish: bool
    remote_exprs: dict[int, str] = field(default_factory=dict)
    #: a peer face sent D_FINAL(0): its initial declarations are all in
    declared: bool = False
    allow_cache: dict[str, bool] = field(default_factory=dict)
    #: a multicast group (:mod:`pyzenoh.session.runtime.multicast`): every sample goes to
    #: it, no query does (it declares nothing, from the start)
    group: bool = False


@dataclass(slots=True)
class Declared:
    """One key declared to the router on behalf of one or more local entities."""

    wire_id: int
    count: int = 1
    complete: bool = False


@dataclass(slots=True)
class LocalSubscriber:
    key: str
    sink: Any


@dataclass(slots=True)
class LocalQueryable:
    key: str
    complete: bool
    sink: Any
    wire_id: int = 0
    origin: int = LOCAL_AND_REMOTE


@dataclass(slots=True)
class LocalPublisher:
    key: str
    interest_id: int
    expr_id: int
    listeners: list[Any] = field(default_factory=list)
    matching: bool = False


@dataclass(slots=True)
class LocalQuerier:
    key: str
    interest_id: int
    target: int
    listeners: list[Any] = field(default_factory=list)
    matching: bool = False
    destination: int = LOCAL_AND_REMOTE


@dataclass(slots=True)
class LivelinessSub:
    key: str
    sink: Any
    #: The remote tokens (face, token id) it was given: a token the router declares as a
    #: future one and again in the answer to this subscriber's interest is given once.
    given: set[tuple[int, int]] = field(default_factory=set)


@dataclass(slots=True)
class PendingGet:
    rid: int
    key: str
    sink: Any
    consolidation: int
    accept_any: bool
    deadline: float
    #: the faces the query went to whose RESPONSE_FINAL is still due
    remote_pending: set[int] = field(default_factory=set)
    local_pending: int = 0
    held: dict[str, t.Reply] = field(default_factory=dict)
    seen: dict[str, t.Timestamp | None] = field(default_factory=dict)
    #: the query's own timestamp stack (local queryables reply with it)
    ts_stack: bytes | None = None


@dataclass(slots=True)
class PendingLivelinessGet:
    key: str
    sink: Any
    deadline: float


@dataclass(slots=True)
class IncomingQuery:
    """A query being answered by local queryables (from the router, or our own get)."""

    rid: int
    key: str
    pending: int
    priority: int
    local_get: int | None = None
    #: the query's timestamp stack, Receive record included: replies carry it on
    ts_stack: bytes | None = None
    #: the face the query came from (replies and the final go back there)
    fid: int = 0


# --- The core's fields and shared plumbing ----------------------------------------------------


class CoreState:
    """The fields of a session core and the plumbing its regions share."""

    def __init__(
        self,
        zid: ZenohId,
        mode: WhatAmI,
        responder: t.Responder,
        *,
        query_timeout_s: float = 10.0,
    ) -> None:
        if mode not in (WhatAmI.CLIENT, WhatAmI.PEER):
            raise UsageError("a session is a client or a peer")
        self.zid = zid
        self.mode = mode
        self.responder = responder
        self.query_timeout_s = query_timeout_s
        #: wall clock for timestamp-stack records, and the user's timestamp_callback
        self.clock_ns: Callable[[], int] = time.time_ns
        self.ts_callback: ins.TimestampCallback | None = None
        self.peer: Established | None = None
        self.closed = False
        self.outbox: list[Outgoing] = []
        #: (sink, item); item END closes the sink
        self.deliveries: list[tuple[Any, Any]] = []
        self.next_wire_id = 1  # one counter for subscriber/queryable/token/interest ids
        self.next_expr_id = 1
        self.next_rid = 1
        self.next_local = 1
        self.next_qref = 1
        # the links (faces), the one whose messages are being handled, its expression ids
        self.faces: dict[int, Face] = {}
        self.face_id = 0
        #: some face is a peer's (per-face routing of data and queries)
        self.peer_faces = False
        # our declared expression ids and the current face's
        self.local_exprs: dict[str, int] = {}
        self.local_expr_keys: dict[int, str] = {}
        self.remote_exprs: dict[int, str] = {}
        # local entities
        self.subs: dict[int, LocalSubscriber] = {}
        self.sub_decls: dict[str, Declared] = {}
        self.qabls: dict[int, LocalQueryable] = {}
        self.qabl_decls: dict[str, Declared] = {}
        self.tokens: dict[int, str] = {}
        self.token_decls: dict[str, Declared] = {}
        self.pubs: dict[int, LocalPublisher] = {}
        self.pub_interests: dict[int, LocalPublisher] = {}
        self.queriers: dict[int, LocalQuerier] = {}
        self.querier_interests: dict[int, LocalQuerier] = {}
        # subscribers fed only by this session's puts, and those never fed by them
        self.local_only_subs: dict[int, LocalSubscriber] = {}
        self.remote_only_sinks: set[int] = set()
        # info listeners: (sink, make(kind, face id) -> the event to deliver, or None)
        self.info_listeners: dict[int, tuple[Any, Any]] = {}
        # key expressions declared by the user (Session.declare_keyexpr), with a count
        self.user_exprs: dict[str, int] = {}
        self.finalized: set[int] = set()
        self.lsubs: dict[int, LivelinessSub] = {}
        # what the faces told us, by (face id, entity id)
        self.remote_subs: dict[tuple[int, int], str] = {}
        self.remote_qabls: dict[tuple[int, int], str] = {}
        self.remote_qabl_complete: set[tuple[int, int]] = set()
        self.remote_tokens: dict[tuple[int, int], str] = {}
        # queries
        self.gets: dict[int, PendingGet] = {}
        self.lgets: dict[int, PendingLivelinessGet] = {}
        self.incoming: dict[int, tuple[IncomingQuery, int]] = {}
        # caches
        self.sub_cache: dict[str, list[Any]] = {}
        self.allow_cache: dict[str, bool] = {}
        self.ke_cache: dict[str, KeyExpr | None] = {}

    # --- plumbing ----------------------------------------------------------------------------

    def take_outbox(self) -> list[Outgoing]:
        out = self.outbox
        self.outbox = []
        return out

    def take_deliveries(self) -> list[tuple[Any, Any]]:
        out = self.deliveries
        self.deliveries = []
        return out

    def send(
        self,
        msg: NetworkMessage | bytes,
        priority: int,
        *,
        reliable: bool = True,
        droppable: bool = False,
        express: bool = False,
        face: int | None = None,
    ) -> None:
        # without a face (link lost, not yet connected) nothing is sent: a face that
        # opens gets the session's state then (on_established)
        if not self.closed and self.faces:
            self.outbox.append((msg, reliable, priority, droppable, express, face))

    def declare(self, body: Any, interest_id: int | None = None, face: int | None = None) -> None:
        self.send(Declare(body, interest_id, qos=QOS_DECLARE), PRIORITY_CONTROL, face=face)

    def to_routers(self, msg: NetworkMessage) -> None:
        """An interest (or its final): to the faces that answer interests."""
        for f in self.faces.values():
            if f.routerish:
                self.send(msg, PRIORITY_CONTROL, face=f.fid)

    def wire_id(self) -> int:
        n = self.next_wire_id
        self.next_wire_id += 1
        return n

    def local_id(self) -> int:
        n = self.next_local
        self.next_local += 1
        return n

    def check_open(self) -> None:
        if self.closed:
            raise UsageError("the session is closed")

    def ke(self, key: str) -> KeyExpr | None:
        """A validated KeyExpr for a key from the wire (None if invalid), cached."""
        cache = self.ke_cache
        ke = cache.get(key, False)
        if ke is False:
            try:
                ke = KeyExpr(key)
            except UsageError:
                ke = None
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = ke
        return ke  # type: ignore[return-value]

    def resolve(self, we: WireExpr) -> str | None:
        if we.scope == 0:
            return we.suffix
        table = self.remote_exprs if we.mapping_sender else self.local_expr_keys
        prefix = table.get(we.scope)
        if prefix is None:
            log.warning(
                "unknown expression id %d (%s mapping): message dropped",
                we.scope,
                "sender" if we.mapping_sender else "receiver",
            )
            return None
        return prefix + we.suffix

    def local_key(self, expr_id: int) -> str | None:
        """The key this session declared under ``expr_id`` (None: no such id of ours)."""
        return next((k for k, i in self.local_exprs.items() if i == expr_id), None)

    def key_wire(self, key: str) -> WireExpr:
        expr_id = self.local_exprs.get(key)
        return WireExpr(0, key, True) if expr_id is None else WireExpr(expr_id, "", True)

    def declare_keyexpr(self, key: str) -> int:
        """Bind ``key`` to one of our expression ids (D_KEYEXPR), once per key."""
        self.check_open()
        expr_id = self.local_exprs.get(key)
        if expr_id is None:
            expr_id = self.next_expr_id
            self.next_expr_id += 1
            self.local_exprs[key] = expr_id
            self.local_expr_keys[expr_id] = key
            self.declare(DeclareKeyExpr(expr_id, WireExpr(0, key, True)))
        return expr_id

    def received_stack(self, raw: bytes | None) -> bytes | None:
        """``raw`` with this session's Receive record (when that point is instrumented)."""
        return ins.push_record(
            raw, ins.InterceptionPoint.RECEIVE, self.zid, self.clock_ns(), self.ts_callback, self.mode
        )

    # --- key expressions declared by the user --------------------------------------------------

    def declare_user_keyexpr(self, key: str) -> int:
        expr_id = self.declare_keyexpr(key)
        self.user_exprs[key] = self.user_exprs.get(key, 0) + 1
        return expr_id

    def undeclare_user_keyexpr(self, key: str) -> None:
        """Undeclare a key expression of :meth:`declare_user_keyexpr` (U_KEYEXPR once the
        last user declaration goes, unless a publisher of this session still uses it)."""
        n = self.user_exprs.get(key, 0)
        if n == 0:
            raise UsageError(f"key expression {key!r} was not declared by this session")
        if n > 1:
            self.user_exprs[key] = n - 1
            return
        del self.user_exprs[key]
        if any(pub.key == key for pub in self.pubs.values()):
            return
        expr_id = self.local_exprs.pop(key, None)
        if expr_id is not None:
            self.local_expr_keys.pop(expr_id, None)
            if not self.closed:
                self.declare(UndeclareKeyExpr(expr_id))

    # --- local entities counted per declared key ------------------------------------------------

    def declare_entity(self, decls: dict[str, Declared], key: str) -> Declared | None:
        """Count one more local entity on ``key``; returns the record if it is new."""
        d = decls.get(key)
        if d is not None:
            d.count += 1
            return None
        d = Declared(self.wire_id())
        decls[key] = d
        return d

    def release_entity(self, decls: dict[str, Declared], key: str) -> Declared | None:
        """One local entity less on ``key``; returns the record when it was the last."""
        d = decls.get(key)
        if d is None:
            return None
        d.count -= 1
        if d.count > 0:
            return None
        del decls[key]
        return d
