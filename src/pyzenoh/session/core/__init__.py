"""Sans-IO session logic of a Zenoh client or peer (zenoh-wire.md 6) over its links ("faces").

:class:`SessionCore` is fed network messages (:meth:`SessionCore.on_message`) and API
calls (``put``, ``declare_subscriber``, ``get`` ...), always with the current time when
time matters. It never does I/O: the network messages it wants sent pile up in
:attr:`SessionCore.outbox`, and what user code must receive piles up in
:attr:`SessionCore.deliveries` as ``(sink, item)`` pairs (``item is END`` closes the
sink). The runtime (:mod:`pyzenoh.session.runtime`) drains both after every call.

It behaves like a 1.10.2 client: one per-link id counter shared by subscribers,
queryables, tokens and interests; one D_SUBSCRIBER per distinct key; publishers send a
CurrentFuture K|S INTEREST and, once the router answered it with D_FINAL, only publish
on that key while a matching remote subscriber is known (write-side filtering); gets end
at RESPONSE_FINAL or with a synthesised ``ERR "Timeout"``; replies whose key does not
intersect the query are dropped unless ``_anyke`` is set.

Faces: a client has one (its router), a peer one per link (routers, and peers it connected
to or accepted). A face opened later, or again after its link was lost (reconnection),
gets the session's whole state at once: key expressions, the interests (router faces),
subscribers, queryables and tokens, then D_FINAL(0) to a peer as 1.10.2 peers do. A lost
face takes what it declared with it (token DELETEs, matching False) and ends the gets
that waited on it. Peer faces get no interests: a peer sends its declarations unasked,
then D_FINAL(0); from then on data and queries go to it only where it declared a
matching subscriber or queryable (before that, everything goes).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

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
    Query,
    QueryBody,
    Reply,
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
from pyzenoh.codec import primitives as _p
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE, QOS_REQUEST, qos_value
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.keyexpr.relations import includes, intersects
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.samples import run_samples
from pyzenoh.transport.fastpath import PushRun
from pyzenoh.transport.link import Established

log = logging.getLogger(__name__)

#: Delivered as an item to close a sink (end of a get, closed session ...).
END: Any = object()
#: Bounds of the per-key caches (match results, validated key objects).
MAX_CACHE_KEYS = 4096
PRIORITY_CONTROL = 0
PRIORITY_DATA = 5
TIMEOUT_PAYLOAD = b"Timeout"

_PRIORITIES = {p.value: p for p in t.Priority}


class SampleBatch:
    """Samples delivered to a sink together (:meth:`Sink.push_many`), in order."""

    __slots__ = ("samples",)

    def __init__(self, samples: list[t.Sample]) -> None:
        self.samples = samples

#: Locality of an entity (allowed_origin / allowed_destination), as in zenoh
LOCAL_AND_REMOTE = t.Locality.ANY.value
SESSION_LOCAL = t.Locality.SESSION_LOCAL.value
REMOTE_ONLY = t.Locality.REMOTE.value


# --- State records --------------------------------------------------------------------------


@dataclass(slots=True)
class _Face:
    """One link of the session: its peer and what it declared to us."""

    fid: int
    peer: Established
    #: interests go to it and it answers them (a router; any node a client connects to)
    routerish: bool
    remote_exprs: dict[int, str] = field(default_factory=dict)
    #: a peer face sent D_FINAL(0): its initial declarations are all in
    declared: bool = False
    allow_cache: dict[str, bool] = field(default_factory=dict)


@dataclass(slots=True)
class _Declared:
    """One key declared to the router on behalf of one or more local entities."""

    wire_id: int
    count: int = 1
    complete: bool = False


@dataclass(slots=True)
class _Subscriber:
    key: str
    sink: Any


@dataclass(slots=True)
class _Queryable:
    key: str
    complete: bool
    sink: Any
    wire_id: int = 0
    origin: int = LOCAL_AND_REMOTE


@dataclass(slots=True)
class _Publisher:
    key: str
    interest_id: int
    expr_id: int
    listeners: list[Any] = field(default_factory=list)
    matching: bool = False


@dataclass(slots=True)
class _Querier:
    key: str
    interest_id: int
    target: int
    listeners: list[Any] = field(default_factory=list)
    matching: bool = False
    destination: int = LOCAL_AND_REMOTE


@dataclass(slots=True)
class _LivelinessSub:
    key: str
    sink: Any


@dataclass(slots=True)
class _Get:
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
class _LivelinessGet:
    key: str
    sink: Any
    deadline: float


@dataclass(slots=True)
class _Incoming:
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


def _ts_key(ts: t.Timestamp | None) -> tuple[int, int]:
    """Ordering of timestamps for consolidation: no timestamp sorts first."""
    return (-1, -1) if ts is None else (ts.wire.time, ts.wire.id.value)


class SessionCore:
    """The protocol state of one session over one link."""

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
        #: (message or raw bytes, reliable, priority, droppable, express, face id or None:
        #: every face)
        self.outbox: list[tuple[NetworkMessage | bytes, bool, int, bool, bool, int | None]] = []
        #: (sink, item); item END closes the sink
        self.deliveries: list[tuple[Any, Any]] = []
        self._next_wire_id = 1  # one counter for subscriber/queryable/token/interest ids
        self._next_expr_id = 1
        self._next_rid = 1
        self._next_local = 1
        self._next_qref = 1
        # the links (faces), the one whose messages are being handled, its expression ids
        self._faces: dict[int, _Face] = {}
        self._face_id = 0
        #: some face is a peer's (per-face routing of data and queries)
        self._peer_faces = False
        # our declared expression ids and the current face's
        self._local_exprs: dict[str, int] = {}
        self._local_expr_keys: dict[int, str] = {}
        self._remote_exprs: dict[int, str] = {}
        # local entities
        self._subs: dict[int, _Subscriber] = {}
        self._sub_decls: dict[str, _Declared] = {}
        self._qabls: dict[int, _Queryable] = {}
        self._qabl_decls: dict[str, _Declared] = {}
        self._tokens: dict[int, str] = {}
        self._token_decls: dict[str, _Declared] = {}
        self._pubs: dict[int, _Publisher] = {}
        self._pub_interests: dict[int, _Publisher] = {}
        self._queriers: dict[int, _Querier] = {}
        self._querier_interests: dict[int, _Querier] = {}
        # subscribers fed only by this session's puts, and those never fed by them
        self._local_only_subs: dict[int, _Subscriber] = {}
        self._remote_only_sinks: set[int] = set()
        # info listeners: (sink, make(kind, face id) -> the event to deliver, or None)
        self._info_listeners: dict[int, tuple[Any, Any]] = {}
        # key expressions declared by the user (Session.declare_keyexpr), with a count
        self._user_exprs: dict[str, int] = {}
        self._finalized: set[int] = set()
        self._lsubs: dict[int, _LivelinessSub] = {}
        # what the faces told us, by (face id, entity id)
        self._remote_subs: dict[tuple[int, int], str] = {}
        self._remote_qabls: dict[tuple[int, int], str] = {}
        self._remote_qabl_complete: set[tuple[int, int]] = set()
        self._remote_tokens: dict[tuple[int, int], str] = {}
        # queries
        self._gets: dict[int, _Get] = {}
        self._lgets: dict[int, _LivelinessGet] = {}
        self._incoming: dict[int, tuple[_Incoming, int]] = {}
        # caches
        self._sub_cache: dict[str, list[Any]] = {}
        self._allow_cache: dict[str, bool] = {}
        self._ke_cache: dict[str, KeyExpr | None] = {}

    # --- plumbing ----------------------------------------------------------------------------

    def take_outbox(self) -> list[tuple[NetworkMessage | bytes, bool, int, bool, bool, int | None]]:
        out = self.outbox
        self.outbox = []
        return out

    def take_deliveries(self) -> list[tuple[Any, Any]]:
        out = self.deliveries
        self.deliveries = []
        return out

    def _send(
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
        if not self.closed and self._faces:
            self.outbox.append((msg, reliable, priority, droppable, express, face))

    def _declare(self, body: Any, interest_id: int | None = None, face: int | None = None) -> None:
        self._send(Declare(body, interest_id, qos=QOS_DECLARE), PRIORITY_CONTROL, face=face)

    def _to_routers(self, msg: NetworkMessage) -> None:
        """An interest (or its final): to the faces that answer interests."""
        for f in self._faces.values():
            if f.routerish:
                self._send(msg, PRIORITY_CONTROL, face=f.fid)

    def _wire_id(self) -> int:
        n = self._next_wire_id
        self._next_wire_id += 1
        return n

    def _local_id(self) -> int:
        n = self._next_local
        self._next_local += 1
        return n

    def _check_open(self) -> None:
        if self.closed:
            raise UsageError("the session is closed")

    def _ke(self, key: str) -> KeyExpr | None:
        """A validated KeyExpr for a key from the wire (None if invalid), cached."""
        cache = self._ke_cache
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

    def _resolve(self, we: WireExpr) -> str | None:
        if we.scope == 0:
            return we.suffix
        table = self._remote_exprs if we.mapping_sender else self._local_expr_keys
        prefix = table.get(we.scope)
        if prefix is None:
            log.warning("unknown expression id %d (%s mapping): message dropped", we.scope,
                        "sender" if we.mapping_sender else "receiver")  # fmt: skip
            return None
        return prefix + we.suffix

    def _key_wire(self, key: str) -> WireExpr:
        expr_id = self._local_exprs.get(key)
        return WireExpr(0, key, True) if expr_id is None else WireExpr(expr_id, "", True)

    def declare_keyexpr(self, key: str) -> int:
        """Bind ``key`` to one of our expression ids (D_KEYEXPR), once per key."""
        self._check_open()
        expr_id = self._local_exprs.get(key)
        if expr_id is None:
            expr_id = self._next_expr_id
            self._next_expr_id += 1
            self._local_exprs[key] = expr_id
            self._local_expr_keys[expr_id] = key
            self._declare(DeclareKeyExpr(expr_id, WireExpr(0, key, True)))
        return expr_id

    def _invalidate(self) -> None:
        self._sub_cache.clear()
        self._allow_changed()

    def _allow_changed(self) -> None:
        self._allow_cache.clear()
        for f in self._faces.values():
            f.allow_cache.clear()

    # --- link lifecycle ----------------------------------------------------------------------

    def on_established(self, peer: Established, fid: int = 0, locators: Iterable[str] = ()) -> None:
        """A face opened (``fid``: the runtime's id for the link): it gets the session's
        state, as a 1.10.2 client re-declares everything to a router it reconnected to.
        ``locators``: where a peer listens, announced in its link state (a router gossips
        them to other peers, which then connect to it)."""
        if self.closed:
            return
        self.peer = peer
        routerish = self.mode is WhatAmI.CLIENT or peer.whatami is WhatAmI.ROUTER
        face = _Face(fid, peer, routerish)
        self._faces[fid] = face
        self._peer_faces = any(not f.routerish for f in self._faces.values())
        self.select_face(fid)
        if self.mode is WhatAmI.PEER:
            # peers announce their link state right after open (zenoh-wire.md 6.7)
            self._send(NetworkOam(OAM_LINKSTATE, self._linkstate(peer, locators), qos=QOS_DECLARE), PRIORITY_CONTROL,
                       face=fid)  # fmt: skip
        self._replay(face)
        self._allow_changed()
        for sink, make in list(self._info_listeners.values()):
            item = None if make is None else make(t.SampleKind.PUT, fid)
            if item is not None:
                self.deliveries.append((sink, item))

    def _replay(self, f: _Face) -> None:
        """Everything this session declared, to a face that just opened."""
        fid = f.fid
        for key, expr_id in self._local_exprs.items():
            self._declare(DeclareKeyExpr(expr_id, WireExpr(0, key, True)), face=fid)
        if f.routerish:
            ks = InterestOptions.KEYEXPRS
            for pub in self._pubs.values():
                self._send(Interest(pub.interest_id, InterestMode.CURRENT_FUTURE, ks | InterestOptions.SUBSCRIBERS,
                                    WireExpr(pub.expr_id, "", True), qos=QOS_DECLARE), PRIORITY_CONTROL,
                           face=fid)  # fmt: skip
            for qr in self._queriers.values():
                self._send(Interest(qr.interest_id, InterestMode.CURRENT_FUTURE, ks | InterestOptions.QUERYABLES,
                                    WireExpr(0, qr.key, True), qos=QOS_DECLARE), PRIORITY_CONTROL,
                           face=fid)  # fmt: skip
            for iid, ls in self._lsubs.items():
                # as zenoh: every interest goes again as CurrentFuture (tokens come again)
                self._send(Interest(iid, InterestMode.CURRENT_FUTURE, ks | InterestOptions.TOKENS,
                                    WireExpr(0, ls.key, True), qos=QOS_DECLARE), PRIORITY_CONTROL,
                           face=fid)  # fmt: skip
        for key, d in self._sub_decls.items():
            self._declare(DeclareSubscriber(d.wire_id, WireExpr(0, key, True)), face=fid)
        for key, d in self._qabl_decls.items():
            self._declare(DeclareQueryable(d.wire_id, WireExpr(0, key, True), complete=d.complete), face=fid)
        for key, d in self._token_decls.items():
            self._declare(DeclareToken(d.wire_id, WireExpr(0, key, True)), face=fid)
        if not f.routerish:
            # a 1.10.2 peer ends its initial declarations to a peer with D_FINAL(0)
            self._declare(DeclareFinal(), 0, face=fid)

    def select_face(self, fid: int) -> None:
        """The face whose messages are handled next (its expression ids resolve keys)."""
        self._face_id = fid
        f = self._faces.get(fid)
        self._remote_exprs = {} if f is None else f.remote_exprs

    def has_face(self) -> bool:
        return bool(self._faces)

    def face_lost(self, fid: int) -> None:
        """A face's link is gone: what it declared goes (token DELETEs, matching
        updates), gets waiting for its final end without it (as zenoh's do)."""
        f = self._faces.pop(fid, None)
        if f is None:
            return
        if self._face_id == fid:
            self._remote_exprs = {}
        self._peer_faces = any(not g.routerish for g in self._faces.values())
        if not self._faces:
            self.peer = None
        if self.closed:
            return
        subs = {k: v for k, v in self._remote_subs.items() if k[0] != fid}
        if len(subs) != len(self._remote_subs):
            self._remote_subs = subs
        qabls = {k: v for k, v in self._remote_qabls.items() if k[0] != fid}
        if len(qabls) != len(self._remote_qabls):
            self._remote_qabls = qabls
            self._remote_qabl_complete = {k for k in self._remote_qabl_complete if k[0] != fid}
        gone = [(k, key) for k, key in self._remote_tokens.items() if k[0] == fid]
        for k, key in gone:
            del self._remote_tokens[k]
        for _, key in gone:
            self._token_event(key, t.SampleKind.DELETE)
        if f.routerish:
            self._finalized.clear()  # the pub interests' finals came from there
            if not any(g.routerish for g in self._faces.values()):
                for lg in self._lgets.values():
                    self.deliveries.append((lg.sink, END))
                self._lgets.clear()
        self._allow_changed()
        self._update_matching()
        self._update_querier_matching()
        for qref, (inc, _) in list(self._incoming.items()):
            if inc.local_get is None and inc.fid == fid:
                del self._incoming[qref]
        for g in list(self._gets.values()):
            if fid in g.remote_pending:
                g.remote_pending.discard(fid)
                self._maybe_finish(g)
        for sink, make in list(self._info_listeners.values()):
            item = None if make is None else make(t.SampleKind.DELETE, fid)
            if item is not None:
                self.deliveries.append((sink, item))

    def _linkstate(self, peer: Established, locators: Iterable[str] = ()) -> bytes:
        out = bytearray()
        w = _p.write_vle
        w(out, 2)
        # ourselves: zid | whatami | locators, psid 0, linked to psid 1
        w(out, 0x07)
        w(out, 0)
        w(out, 1)
        _p.write_zbytes(out, self.zid.to_wire())
        out.append(int(WhatAmI.PEER))
        locs = list(locators)
        w(out, len(locs))
        for loc in locs:
            _p.write_zstr(out, loc)
        w(out, 1)
        w(out, 1)
        # the router: zid | whatami | gateway, psid 1, linked to psid 0
        w(out, 0x13)
        w(out, 1)
        w(out, 0)
        _p.write_zbytes(out, peer.zid.to_wire())
        out.append(int(peer.whatami))
        w(out, 1)
        w(out, 0)
        return bytes(out)

    def close(self) -> None:
        """End the session: every get, subscriber and queryable sink is closed."""
        if self.closed:
            return
        for g in list(self._gets.values()):
            self._finish_get(g, timed_out=False)
        for lg in list(self._lgets.values()):
            self.deliveries.append((lg.sink, END))
        self._lgets.clear()
        sinks: list[Any] = [s.sink for s in self._subs.values()]
        sinks += [s.sink for s in self._local_only_subs.values()]
        sinks += [q.sink for q in self._qabls.values()]
        sinks += [ls.sink for ls in self._lsubs.values()]
        for pub in self._pubs.values():
            sinks += pub.listeners
        for qr in self._queriers.values():
            sinks += qr.listeners
        for sink, make in self._info_listeners.values():
            for fid in self._faces:
                item = None if make is None else make(t.SampleKind.DELETE, fid)
                if item is not None:
                    self.deliveries.append((sink, item))
            sinks.append(sink)
        for sink in sinks:
            self.deliveries.append((sink, END))
        self._subs.clear()
        self._local_only_subs.clear()
        self._qabls.clear()
        self._lsubs.clear()
        self._pubs.clear()
        self._queriers.clear()
        self._info_listeners.clear()
        self._incoming.clear()
        self.closed = True
        self.outbox.clear()

    # --- incoming network messages -----------------------------------------------------------

    def on_message(self, msg: NetworkMessage, now: float) -> None:
        if self.closed:
            return
        kind = type(msg)
        if kind is Push:
            self._on_push(msg)  # type: ignore[arg-type]
        elif kind is Declare:
            self._on_declare(msg)  # type: ignore[arg-type]
        elif kind is Response:
            self._on_response(msg)  # type: ignore[arg-type]
        elif kind is ResponseFinal:
            g = self._gets.get(msg.request_id)  # type: ignore[union-attr]
            if g is not None:
                g.remote_pending.discard(self._face_id)
                self._maybe_finish(g)
        elif kind is Request:
            self._on_request(msg, now)  # type: ignore[arg-type]
        elif kind is Interest:
            self._on_interest(msg)  # type: ignore[arg-type]
        # OAM (link state) is informational

    def _on_interest(self, msg: Interest) -> None:
        """An interest from a client (or a peer) connected to this peer: our current
        declarations it covers, then D_FINAL; future ones go to every face anyway. A
        router's interests are never for a client or peer to answer."""
        f = self._faces.get(self._face_id)
        if f is None or f.peer.whatami is WhatAmI.ROUTER or self.mode is not WhatAmI.PEER:
            return
        if msg.mode not in (InterestMode.CURRENT, InterestMode.CURRENT_FUTURE):
            return
        key = None if msg.wire_expr is None else self._resolve(msg.wire_expr)
        if msg.wire_expr is not None and (key is None or self._ke(key) is None):
            return
        iid, fid, opts = msg.interest_id, f.fid, msg.options
        if opts & InterestOptions.SUBSCRIBERS:
            for k, d in self._sub_decls.items():
                if key is None or intersects(k, key):
                    self._declare(DeclareSubscriber(d.wire_id, WireExpr(0, k, True)), iid, face=fid)
        if opts & InterestOptions.QUERYABLES:
            for k, d in self._qabl_decls.items():
                if key is None or intersects(k, key):
                    self._declare(DeclareQueryable(d.wire_id, WireExpr(0, k, True), complete=d.complete), iid,
                                  face=fid)  # fmt: skip
        if opts & InterestOptions.TOKENS:
            for k, d in self._token_decls.items():
                if key is None or intersects(k, key):
                    self._declare(DeclareToken(d.wire_id, WireExpr(0, k, True)), iid, face=fid)
        self._declare(DeclareFinal(), iid, face=fid)

    def _matching_subs(self, key: str) -> list[Any]:
        cache = self._sub_cache
        sinks = cache.get(key)
        if sinks is None:
            sinks = [s.sink for s in self._subs.values() if intersects(s.key, key)]
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = sinks
        return sinks

    def on_push_run(self, run: PushRun) -> None:
        """A run of PUSHes on one key (see :mod:`.samples`): each subscriber gets its
        samples as one batch."""
        if self.closed:
            return
        key = self._resolve(run.first.wire_expr)
        if key is None:
            return
        sinks = self._matching_subs(key)
        if not sinks:
            return
        ke = self._ke(key)
        if ke is None:
            return
        batch = SampleBatch(run_samples(ke, run, _PRIORITIES))
        for sink in sinks:
            self.deliveries.append((sink, batch))

    def _on_push(self, msg: Push) -> None:
        key = self._resolve(msg.wire_expr)
        if key is None:
            return
        sinks = self._matching_subs(key)
        if not sinks:
            return
        ke = self._ke(key)
        if ke is None:
            return
        sample = _sample(ke, msg.body, msg.qos)
        if msg.ts_stack is not None:  # timestamp instrumentation: the stack, with our Receive record
            stack = self._received_stack(msg.ts_stack)
            sample = dataclasses.replace(sample, timestamp_stack=ins.to_stack(stack))
        for sink in sinks:
            self.deliveries.append((sink, sample))

    def _on_declare(self, msg: Declare) -> None:
        body = msg.body
        kind = type(body)
        if kind is DeclareKeyExpr:
            key = self._resolve(WireExpr(body.wire_expr.scope, body.wire_expr.suffix, True))  # type: ignore[union-attr]
            if key is not None:
                self._remote_exprs[body.expr_id] = key  # type: ignore[union-attr]
        elif kind is UndeclareKeyExpr:
            self._remote_exprs.pop(body.expr_id, None)  # type: ignore[union-attr]
        elif kind is DeclareSubscriber:
            key = self._resolve(body.wire_expr)  # type: ignore[union-attr]
            if key is not None and self._ke(key) is not None:
                self._remote_subs[(self._face_id, body.entity_id)] = key  # type: ignore[union-attr]
                self._allow_changed()
                self._update_matching()
        elif kind is UndeclareSubscriber:
            if self._remote_subs.pop((self._face_id, body.entity_id), None) is not None:  # type: ignore[union-attr]
                self._allow_changed()
                self._update_matching()
        elif kind is DeclareQueryable:
            key = self._resolve(body.wire_expr)  # type: ignore[union-attr]
            if key is not None and self._ke(key) is not None:
                qid = (self._face_id, body.entity_id)  # type: ignore[union-attr]
                self._remote_qabls[qid] = key
                if body.complete:  # type: ignore[union-attr]
                    self._remote_qabl_complete.add(qid)
                else:
                    self._remote_qabl_complete.discard(qid)
                self._update_querier_matching()
        elif kind is UndeclareQueryable:
            qid = (self._face_id, body.entity_id)  # type: ignore[union-attr]
            self._remote_qabl_complete.discard(qid)
            if self._remote_qabls.pop(qid, None) is not None:
                self._update_querier_matching()
        elif kind is DeclareToken:
            self._on_token(msg.interest_id, body)  # type: ignore[arg-type]
        elif kind is UndeclareToken:
            self._on_untoken(body)  # type: ignore[arg-type]
        elif kind is DeclareFinal:
            iid = msg.interest_id
            if iid is None:
                return
            if iid == 0:
                f = self._faces.get(self._face_id)
                if f is not None and not f.routerish:
                    f.declared = True  # a peer's initial declarations are all in
                    self._allow_changed()
                return
            lg = self._lgets.pop(iid, None)
            if lg is not None:
                self.deliveries.append((lg.sink, END))
            elif iid in self._pub_interests:
                self._finalized.add(iid)
                self._allow_changed()
                self._update_matching()

    def _on_token(self, interest_id: int | None, body: DeclareToken) -> None:
        key = self._resolve(body.wire_expr)
        if key is None:
            return
        ke = self._ke(key)
        if ke is None:
            return
        if interest_id is not None:
            lg = self._lgets.get(interest_id)
            if lg is not None:
                self.deliveries.append((lg.sink, t.Reply(t.Sample(ke, t.ZBytes(b"")))))
                return
            ls = self._lsubs.get(interest_id)
            if ls is not None:
                if body.entity_id:
                    self._remote_tokens[(self._face_id, body.entity_id)] = key
                if intersects(ls.key, key):
                    self.deliveries.append((ls.sink, t.Sample(ke, t.ZBytes(b""))))
                return
        tid = (self._face_id, body.entity_id)
        if body.entity_id and self._remote_tokens.get(tid) == key:
            return  # already known (announced for another interest)
        if body.entity_id:
            self._remote_tokens[tid] = key
        self._token_event(key, t.SampleKind.PUT)

    def _on_untoken(self, body: UndeclareToken) -> None:
        key = self._remote_tokens.pop((self._face_id, body.entity_id), None)
        if key is None and body.ext_wire_expr is not None and body.ext_wire_expr.suffix:
            key = self._resolve(body.ext_wire_expr)
        if key is not None:
            self._token_event(key, t.SampleKind.DELETE)

    def _token_event(self, key: str, kind: t.SampleKind) -> None:
        ke = self._ke(key)
        if ke is None:
            return
        sample = t.Sample(ke, t.ZBytes(b""), kind)
        for ls in self._lsubs.values():
            if intersects(ls.key, key):
                self.deliveries.append((ls.sink, sample))

    # --- publish -----------------------------------------------------------------------------

    def _send_allowed(self, key: str) -> bool:
        """Write-side filtering after D_FINAL (zenoh-wire.md 6.3 item 7)."""
        if not self._finalized:
            return True
        cache = self._allow_cache
        allowed = cache.get(key)
        if allowed is None:
            covered = any(
                includes(self._pub_interests[iid].key, key)
                for iid in self._finalized
                if iid in self._pub_interests
            )
            allowed = not covered or any(intersects(rk, key) for rk in self._remote_subs.values())
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = allowed
        return allowed

    def _face_wants(self, f: _Face, key: str) -> bool:
        """Whether data on ``key`` goes to face ``f`` (with peer faces): a router face by
        write-side filtering, a peer face where it declared a matching subscriber (all
        data until its D_FINAL(0))."""
        if f.routerish:
            return self._send_allowed(key)
        if not f.declared:
            return True
        cache = f.allow_cache
        wanted = cache.get(key)
        if wanted is None:
            fid = f.fid
            wanted = any(k[0] == fid and intersects(rk, key) for k, rk in self._remote_subs.items())
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = wanted
        return wanted

    def _send_data(self, msg: NetworkMessage | bytes, key: str, priority: int, reliable: bool, droppable: bool,
                   express: bool) -> None:  # fmt: skip
        if not self._peer_faces:
            if self._send_allowed(key):
                self._send(msg, priority, reliable=reliable, droppable=droppable, express=express)
            return
        for f in self._faces.values():
            if self._face_wants(f, key):
                self._send(msg, priority, reliable=reliable, droppable=droppable, express=express, face=f.fid)

    def put(
        self,
        key: str,
        body: Put | Del,
        *,
        priority: int = PRIORITY_DATA,
        block: bool = False,
        express: bool = False,
        reliable: bool = True,
        destination: int = LOCAL_AND_REMOTE,
        ts_stack: bytes | None = None,
    ) -> None:
        """Publish a PUT or DEL on ``key`` (a canonical key expression); ``destination``
        (a Locality value) limits it to this session's subscribers or to remote ones,
        ``ts_stack`` is the timestamp-stack extension to send (Send record included)."""
        self._check_open()
        if destination != REMOTE_ONLY:
            sinks = self._local_sinks(key)
            if sinks:
                sample = _local_sample(KeyExpr._trusted(key), body, priority, block, express)
                if ts_stack is not None:
                    sample = dataclasses.replace(sample, timestamp_stack=ins.to_stack(self._received_stack(ts_stack)))
                for sink in sinks:
                    self.deliveries.append((sink, sample))
        if destination != SESSION_LOCAL and self._faces:
            if not self._peer_faces:
                if self._send_allowed(key):
                    push = Push(self._key_wire(key), body, qos=qos_value(priority, block, express), ts_stack=ts_stack)
                    self.outbox.append((push, reliable, priority, not block, express, None))
                return
            push = Push(self._key_wire(key), body, qos=qos_value(priority, block, express), ts_stack=ts_stack)
            self._send_data(push, key, priority, reliable, not block, express)

    def _local_sinks(self, key: str) -> list[Any]:
        """The sinks of this session's subscribers that take its own publications on ``key``."""
        sinks = self._matching_subs(key)
        if self._remote_only_sinks:
            sinks = [s for s in sinks if id(s) not in self._remote_only_sinks]
        if self._local_only_subs:
            sinks = sinks + [s.sink for s in self._local_only_subs.values() if intersects(s.key, key)]
        return sinks

    def _received_stack(self, raw: bytes | None) -> bytes | None:
        """``raw`` with this session's Receive record (when that point is instrumented)."""
        return ins.push_record(raw, ins.InterceptionPoint.RECEIVE, self.zid, self.clock_ns(),
                               self.ts_callback, self.mode)  # fmt: skip

    def put_encoded(
        self,
        key: str,
        raw: bytes,
        payload: bytes,
        encoding: _p.Encoding,
        *,
        priority: int = PRIORITY_DATA,
        block: bool = False,
        express: bool = False,
        reliable: bool = True,
        destination: int = LOCAL_AND_REMOTE,
    ) -> None:
        """Publish an already-encoded PUSH of a PUT (a publisher's fast path).

        ``payload`` and ``encoding`` rebuild the PUT only if a local subscriber matches.
        """
        self._check_open()
        if destination != REMOTE_ONLY:
            sinks = self._local_sinks(key)
            if sinks:
                sample = _local_sample(KeyExpr._trusted(key), Put(payload, encoding), priority, block, express)
                for sink in sinks:
                    self.deliveries.append((sink, sample))
        if destination != SESSION_LOCAL and self._faces:
            if not self._peer_faces:
                if self._send_allowed(key):
                    self.outbox.append((raw, reliable, priority, not block, express, None))
                return
            self._send_data(raw, key, priority, reliable, not block, express)

    def has_local_subscriber(self, key: str) -> bool:
        return bool(self._local_sinks(key))

    def declare_publisher(self, key: str) -> int:
        """A publisher: D_KEYEXPR for its key and a CurrentFuture K|S interest."""
        self._check_open()
        expr_id = self.declare_keyexpr(key)
        iid = self._wire_id()
        pub = _Publisher(key, iid, expr_id)
        local = self._local_id()
        self._pubs[local] = pub
        self._pub_interests[iid] = pub
        self._to_routers(
            Interest(iid, InterestMode.CURRENT_FUTURE,
                     InterestOptions.KEYEXPRS | InterestOptions.SUBSCRIBERS,
                     WireExpr(expr_id, "", True), qos=QOS_DECLARE),
        )  # fmt: skip
        pub.matching = self._pub_matching(pub)
        return local

    def undeclare_publisher(self, local: int) -> None:
        pub = self._pubs.pop(local, None)
        if pub is None:
            return
        self._pub_interests.pop(pub.interest_id, None)
        self._finalized.discard(pub.interest_id)
        self._allow_changed()
        for sink in pub.listeners:
            self.deliveries.append((sink, END))
        if not self.closed:
            self._to_routers(Interest(pub.interest_id, InterestMode.FINAL, qos=QOS_DECLARE))

    def publisher_matching(self, local: int) -> bool:
        pub = self._pubs.get(local)
        return False if pub is None else pub.matching

    def add_matching_listener(self, local: int, sink: Any) -> None:
        self._add_listener(self._pubs.get(local), sink, "publisher")

    def remove_matching_listener(self, local: int, sink: Any) -> None:
        self._remove_listener(self._pubs.get(local), sink)

    def _add_listener(self, entity: _Publisher | _Querier | None, sink: Any, what: str) -> None:
        if entity is None:
            raise UsageError(f"the {what} was undeclared")
        entity.listeners.append(sink)
        # like zenoh: a new listener first learns the current status
        self.deliveries.append((sink, t.MatchingStatus(entity.matching)))

    def _remove_listener(self, entity: _Publisher | _Querier | None, sink: Any) -> None:
        if entity is not None and sink in entity.listeners:
            entity.listeners.remove(sink)
            self.deliveries.append((sink, END))

    def _pub_matching(self, pub: _Publisher) -> bool:
        key = pub.key
        return any(intersects(k, key) for k in self._remote_subs.values()) or any(
            intersects(s.key, key) for s in self._subs.values()
        ) or any(intersects(s.key, key) for s in self._local_only_subs.values())

    # --- queriers ------------------------------------------------------------------------------

    def declare_querier(self, key: str, target: int, destination: int = LOCAL_AND_REMOTE) -> int:
        """A querier: a CurrentFuture K|Q interest on its key tells it the matching
        queryables (its matching status), as a 1.10.2 client does."""
        self._check_open()
        iid = self._wire_id()
        qr = _Querier(key, iid, target, destination=destination)
        local = self._local_id()
        self._queriers[local] = qr
        self._querier_interests[iid] = qr
        self._to_routers(
            Interest(iid, InterestMode.CURRENT_FUTURE,
                     InterestOptions.KEYEXPRS | InterestOptions.QUERYABLES,
                     WireExpr(0, key, True), qos=QOS_DECLARE),
        )  # fmt: skip
        qr.matching = self._querier_matching(qr)
        return local

    def undeclare_querier(self, local: int) -> None:
        qr = self._queriers.pop(local, None)
        if qr is None:
            return
        self._querier_interests.pop(qr.interest_id, None)
        for sink in qr.listeners:
            self.deliveries.append((sink, END))
        if not self.closed:
            self._to_routers(Interest(qr.interest_id, InterestMode.FINAL, qos=QOS_DECLARE))

    def querier_matching(self, local: int) -> bool:
        qr = self._queriers.get(local)
        return False if qr is None else qr.matching

    def add_querier_matching_listener(self, local: int, sink: Any) -> None:
        self._add_listener(self._queriers.get(local), sink, "querier")

    def remove_querier_matching_listener(self, local: int, sink: Any) -> None:
        self._remove_listener(self._queriers.get(local), sink)

    def _querier_matching(self, qr: _Querier) -> bool:
        key = qr.key
        complete_only = qr.target == t.QueryTarget.ALL_COMPLETE.value
        if qr.destination != SESSION_LOCAL and any(
            intersects(k, key) and (not complete_only or eid in self._remote_qabl_complete)
            for eid, k in self._remote_qabls.items()
        ):
            return True
        return qr.destination != REMOTE_ONLY and bool(self._local_queryables(key, qr.target, remote=False))

    def _update_querier_matching(self) -> None:
        for qr in self._queriers.values():
            now = self._querier_matching(qr)
            if now != qr.matching:
                qr.matching = now
                status = t.MatchingStatus(now)
                for sink in qr.listeners:
                    self.deliveries.append((sink, status))

    # --- session info listeners ----------------------------------------------------------------

    def add_info_listener(self, sink: Any, make: Callable[[t.SampleKind, int], Any] | None,
                          history: bool = False) -> int:  # fmt: skip
        """A transport or link events listener: ``make(kind, face id)`` builds the event
        of a face opening (PUT: the faces open now when ``history``, then every face that
        opens, reconnections included) or closing (DELETE); the end when it is removed
        or the session closes."""
        self._check_open()
        local = self._local_id()
        self._info_listeners[local] = (sink, make)
        if history and make is not None:
            for fid in self._faces:
                item = make(t.SampleKind.PUT, fid)
                if item is not None:
                    self.deliveries.append((sink, item))
        return local

    def remove_info_listener(self, local: int) -> None:
        entry = self._info_listeners.pop(local, None)
        if entry is not None:
            self.deliveries.append((entry[0], END))

    # --- key expressions declared by the user --------------------------------------------------

    def declare_user_keyexpr(self, key: str) -> int:
        expr_id = self.declare_keyexpr(key)
        self._user_exprs[key] = self._user_exprs.get(key, 0) + 1
        return expr_id

    def undeclare_user_keyexpr(self, key: str) -> None:
        """Undeclare a key expression of :meth:`declare_user_keyexpr` (U_KEYEXPR once the
        last user declaration goes, unless a publisher of this session still uses it)."""
        n = self._user_exprs.get(key, 0)
        if n == 0:
            raise UsageError(f"key expression {key!r} was not declared by this session")
        if n > 1:
            self._user_exprs[key] = n - 1
            return
        del self._user_exprs[key]
        if any(pub.key == key for pub in self._pubs.values()):
            return
        expr_id = self._local_exprs.pop(key, None)
        if expr_id is not None:
            self._local_expr_keys.pop(expr_id, None)
            if not self.closed:
                self._declare(UndeclareKeyExpr(expr_id))

    def _update_matching(self) -> None:
        for pub in self._pubs.values():
            now = self._pub_matching(pub)
            if now != pub.matching:
                pub.matching = now
                status = t.MatchingStatus(now)
                for sink in pub.listeners:
                    self.deliveries.append((sink, status))

    # --- subscribe ---------------------------------------------------------------------------

    def _declare_entity(self, decls: dict[str, _Declared], key: str) -> _Declared | None:
        """Count one more local entity on ``key``; returns the record if it is new."""
        d = decls.get(key)
        if d is not None:
            d.count += 1
            return None
        d = _Declared(self._wire_id())
        decls[key] = d
        return d

    def _release_entity(self, decls: dict[str, _Declared], key: str) -> _Declared | None:
        """One local entity less on ``key``; returns the record when it was the last."""
        d = decls.get(key)
        if d is None:
            return None
        d.count -= 1
        if d.count > 0:
            return None
        del decls[key]
        return d

    def declare_subscriber(self, key: str, sink: Any, origin: int = LOCAL_AND_REMOTE) -> int:
        """A subscriber; ``origin`` (a Locality value) SESSION_LOCAL takes only this
        session's publications (nothing is declared to the router), REMOTE only others'."""
        self._check_open()
        local = self._local_id()
        if origin == SESSION_LOCAL:
            self._local_only_subs[local] = _Subscriber(key, sink)
            self._update_matching()
            return local
        if origin == REMOTE_ONLY:
            self._remote_only_sinks.add(id(sink))
        self._subs[local] = _Subscriber(key, sink)
        new = self._declare_entity(self._sub_decls, key)
        if new is not None:
            self._declare(DeclareSubscriber(new.wire_id, WireExpr(0, key, True)))
        self._invalidate()
        self._update_matching()
        return local

    def subscriber_wire_id(self, local: int) -> int:
        """The id a subscriber is known by (its declaration's id; its own if local-only)."""
        sub = self._subs.get(local)
        d = None if sub is None else self._sub_decls.get(sub.key)
        return local if d is None else d.wire_id

    def undeclare_subscriber(self, local: int) -> None:
        lsub = self._local_only_subs.pop(local, None)
        if lsub is not None:
            self.deliveries.append((lsub.sink, END))
            self._update_matching()
            return
        sub = self._subs.pop(local, None)
        if sub is None:
            return
        self._remote_only_sinks.discard(id(sub.sink))
        self.deliveries.append((sub.sink, END))
        last = self._release_entity(self._sub_decls, sub.key)
        if last is not None and not self.closed:
            self._declare(UndeclareSubscriber(last.wire_id))
        self._invalidate()
        self._update_matching()

    # --- queryables --------------------------------------------------------------------------

    def declare_queryable(self, key: str, complete: bool, sink: Any, origin: int = LOCAL_AND_REMOTE) -> int:
        """A queryable; ``origin`` SESSION_LOCAL answers only this session's gets (and is
        not declared to the router), REMOTE only others'."""
        self._check_open()
        local = self._local_id()
        if origin == SESSION_LOCAL:
            self._qabls[local] = _Queryable(key, complete, sink, local, origin)
            self._update_querier_matching()
            return local
        new = self._declare_entity(self._qabl_decls, key)
        d = self._qabl_decls[key]
        self._qabls[local] = _Queryable(key, complete, sink, d.wire_id, origin)
        if new is not None or (complete and not d.complete):
            d.complete = d.complete or complete
            # a second declaration with the same id updates the "complete" info
            self._declare(DeclareQueryable(d.wire_id, WireExpr(0, key, True), complete=d.complete))
        self._update_querier_matching()
        return local

    def queryable_wire_id(self, local: int) -> int:
        q = self._qabls.get(local)
        return local if q is None else q.wire_id

    def undeclare_queryable(self, local: int) -> None:
        q = self._qabls.pop(local, None)
        if q is None:
            return
        self.deliveries.append((q.sink, END))
        self._update_querier_matching()
        if q.origin == SESSION_LOCAL:
            return
        last = self._release_entity(self._qabl_decls, q.key)
        if last is not None and not self.closed:
            self._declare(UndeclareQueryable(last.wire_id))

    def _local_queryables(self, key: str, target: int, remote: bool = True) -> list[_Queryable]:
        """This session's queryables a query on ``key`` reaches (``remote``: the query
        came from the router; else from our own get)."""
        unwanted = SESSION_LOCAL if remote else REMOTE_ONLY
        return [
            q for q in self._qabls.values()
            if q.origin != unwanted and intersects(q.key, key)
            and (target != t.QueryTarget.ALL_COMPLETE.value or q.complete)
        ]  # fmt: skip

    def _on_request(self, msg: Request, now: float) -> None:
        prio = msg.qos & 0x07
        key = self._resolve(msg.wire_expr)
        matches = [] if key is None or self._ke(key) is None else self._local_queryables(key, msg.target)
        if not matches or key is None:
            self._send(ResponseFinal(msg.request_id, qos=QOS_REQUEST), prio, face=self._face_id)
            return
        inc = _Incoming(msg.request_id, key, len(matches), prio, ts_stack=self._received_stack(msg.ts_stack),
                        fid=self._face_id)  # fmt: skip
        self._deliver_query(inc, matches, msg.body)

    def _deliver_query(self, inc: _Incoming, matches: list[_Queryable], body: Query) -> None:
        ke = self._ke(inc.key)
        assert ke is not None
        params = t.Parameters(body.parameters)
        payload = encoding = None
        if body.body is not None:
            payload = t.ZBytes(body.body.payload)
            encoding = t.Encoding.from_wire(body.body.encoding)
        attachment = None if body.attachment is None else t.ZBytes(body.attachment)
        source = None if body.source_info is None else t.SourceInfo.from_wire(body.source_info)
        stack = ins.to_stack(inc.ts_stack)
        for q in matches:
            qref = self._next_qref
            self._next_qref += 1
            self._incoming[qref] = (inc, q.wire_id)
            query = t.Query(self.responder, qref, ke, params, payload, encoding, attachment)
            query.source_info = source
            query.timestamp_stack = stack
            self.deliveries.append((q.sink, query))

    def query_reply(
        self, qref: int, key: str, body: Put | Del | Err, priority: int | None, express: bool,
        block: bool,
    ) -> None:  # fmt: skip
        entry = self._incoming.get(qref)
        if entry is None:
            return
        inc, eid = entry
        ts_stack = ins.push_record(inc.ts_stack, ins.InterceptionPoint.SEND, self.zid, self.clock_ns(),
                                   self.ts_callback, self.mode)  # fmt: skip
        if inc.local_get is not None:
            g = self._gets.get(inc.local_get)
            if g is not None:
                self._get_reply(g, key or inc.key, body, t.EntityGlobalId(self.zid, eid),
                                ts_stack=self._received_stack(ts_stack))  # fmt: skip
            return
        prio = PRIORITY_DATA if priority is None else priority
        rbody: Reply | Err = body if isinstance(body, Err) else Reply(body)
        resp = Response(
            inc.rid, WireExpr(0, key or inc.key, True), rbody,
            qos=qos_value(prio, block, express), responder=EntityGlobalId(self.zid, eid), ts_stack=ts_stack,
        )  # fmt: skip
        # same frame priority as the RESPONSE_FINAL so the final cannot overtake a reply
        self._send(resp, inc.priority, droppable=not block, express=express, face=inc.fid)

    def query_finalize(self, qref: int) -> None:
        entry = self._incoming.pop(qref, None)
        if entry is None:
            return
        inc = entry[0]
        inc.pending -= 1
        if inc.pending > 0:
            return
        if inc.local_get is not None:
            g = self._gets.get(inc.local_get)
            if g is not None:
                g.local_pending -= 1
                self._maybe_finish(g)
        else:
            self._send(ResponseFinal(inc.rid, qos=QOS_REQUEST), inc.priority, face=inc.fid)

    # --- get ---------------------------------------------------------------------------------

    def get(
        self,
        key: str,
        parameters: str,
        sink: Any,
        now: float,
        *,
        target: int = 0,
        consolidation: int = 0,
        timeout_s: float | None = None,
        payload: bytes | None = None,
        encoding: _p.Encoding = _p.Encoding.DEFAULT,
        attachment: bytes | None = None,
        priority: int = PRIORITY_DATA,
        block: bool = True,
        express: bool = False,
        accept_any: bool = False,
        destination: int = LOCAL_AND_REMOTE,
        source_info: _p.SourceInfo | None = None,
        ts_stack: bytes | None = None,
    ) -> int:
        """Send a query; replies then END are delivered to ``sink``. Returns the request id.

        ``destination`` (a Locality value) limits it to this session's queryables or to
        remote ones; ``ts_stack`` is the timestamp-stack extension (Send record included).
        """
        self._check_open()
        params = t.Parameters(parameters)
        if accept_any and "_anyke" not in params:
            params.insert("_anyke", "")
        accept_any = "_anyke" in params
        if consolidation == t.ConsolidationMode.AUTO.value:
            consolidation = (t.ConsolidationMode.NONE if "_time" in params else t.ConsolidationMode.LATEST).value
        timeout = self.query_timeout_s if timeout_s is None else timeout_s
        rid = self._next_rid
        self._next_rid += 1
        g = _Get(rid, key, sink, consolidation, accept_any, now + timeout, ts_stack=ts_stack)
        self._gets[rid] = g
        qbody = Query(
            consolidation=consolidation, parameters=str(params),
            body=None if payload is None else QueryBody(payload, encoding), attachment=attachment,
            source_info=source_info,
        )  # fmt: skip
        if destination != SESSION_LOCAL and self._faces:
            req = Request(rid, WireExpr(0, key, True), qbody, qos=qos_value(priority, block, express),
                          target=target, timeout_ms=int(timeout * 1000), ts_stack=ts_stack)  # fmt: skip
            # to every face, or (with peer faces) to routers and to the peers whose
            # queryables match; no face (link lost): the get ends at once, as zenoh's
            for f in self._faces.values():
                if f.routerish or not self._peer_faces or self._face_answers(f, key, target):
                    g.remote_pending.add(f.fid)
            if len(g.remote_pending) == len(self._faces):
                self._send(req, priority, droppable=not block, express=express)
            else:
                for fid in g.remote_pending:
                    self._send(req, priority, droppable=not block, express=express, face=fid)
        matches = [] if destination == REMOTE_ONLY else self._local_queryables(key, target, remote=False)
        if matches:
            g.local_pending = 1
            inc = _Incoming(rid, key, len(matches), priority, local_get=rid,
                            ts_stack=self._received_stack(ts_stack))  # fmt: skip
            self._deliver_query(inc, matches, qbody)
        self._maybe_finish(g)
        return rid

    def _face_answers(self, f: _Face, key: str, target: int) -> bool:
        if not f.declared:
            return True
        complete_only = target == t.QueryTarget.ALL_COMPLETE.value
        return any(
            k[0] == f.fid and intersects(rk, key) and (not complete_only or k in self._remote_qabl_complete)
            for k, rk in self._remote_qabls.items()
        )

    def cancel_get(self, rid: int) -> None:
        """End a get now (a CancellationToken): no more replies, its sink is closed."""
        g = self._gets.get(rid)
        if g is not None:
            g.held.clear()
            self._finish_get(g, timed_out=False)

    def cancel_liveliness_get(self, iid: int) -> None:
        lg = self._lgets.pop(iid, None)
        if lg is not None:
            self.deliveries.append((lg.sink, END))

    def _on_response(self, msg: Response) -> None:
        g = self._gets.get(msg.request_id)
        if g is None:
            return
        key = self._resolve(msg.wire_expr)
        if key is None:
            return
        body = msg.body
        inner: Put | Del | Err = body if isinstance(body, Err) else body.body
        replier = None
        if msg.responder is not None:
            replier = t.EntityGlobalId(msg.responder.zid, msg.responder.eid)
        ts_stack = None if msg.ts_stack is None else self._received_stack(msg.ts_stack)
        self._get_reply(g, key, inner, replier, msg.qos, ts_stack=ts_stack)

    def _get_reply(
        self,
        g: _Get,
        key: str,
        body: Put | Del | Err,
        replier: t.EntityGlobalId | None,
        qos: int = QOS_REQUEST,
        *,
        ts_stack: bytes | None = None,
    ) -> None:
        stack = None if ts_stack is None else ins.to_stack(ts_stack)
        if isinstance(body, Err):
            err = t.ReplyError(t.ZBytes(body.payload), t.Encoding.from_wire(body.encoding), stack)
            self.deliveries.append((g.sink, t.Reply(err, replier)))
            return
        if not g.accept_any and not intersects(g.key, key):
            log.debug("reply on %s does not intersect query %s: dropped", key, g.key)
            return
        ke = self._ke(key)
        if ke is None:
            return
        sample = _sample(ke, body, qos)
        if stack is not None or body.source_info is not None:
            source = None if body.source_info is None else t.SourceInfo.from_wire(body.source_info)
            sample = dataclasses.replace(sample, timestamp_stack=stack, source_info=source)
        reply = t.Reply(sample, replier)
        mode = g.consolidation
        if mode == t.ConsolidationMode.LATEST.value:
            old = g.held.get(key)
            if old is None or _ts_key(sample.timestamp) > _ts_key(old.result.timestamp):  # type: ignore[union-attr]
                g.held[key] = reply
            return
        if mode == t.ConsolidationMode.MONOTONIC.value:
            if key in g.seen and _ts_key(sample.timestamp) <= _ts_key(g.seen[key]):
                return
            g.seen[key] = sample.timestamp
        self.deliveries.append((g.sink, reply))

    def _maybe_finish(self, g: _Get) -> None:
        if not g.remote_pending and g.local_pending <= 0:
            self._finish_get(g, timed_out=False)

    def _finish_get(self, g: _Get, *, timed_out: bool) -> None:
        self._gets.pop(g.rid, None)
        for reply in g.held.values():
            self.deliveries.append((g.sink, reply))
        g.held.clear()
        if timed_out:
            self.deliveries.append((g.sink, t.Reply(t.ReplyError(t.ZBytes(TIMEOUT_PAYLOAD)))))
        self.deliveries.append((g.sink, END))
        # local queryables still holding this query may keep replying: ignored from now on
        for qref, (inc, _) in list(self._incoming.items()):
            if inc.local_get == g.rid:
                del self._incoming[qref]

    # --- liveliness --------------------------------------------------------------------------

    def declare_token(self, key: str) -> int:
        self._check_open()
        local = self._local_id()
        self._tokens[local] = key
        new = self._declare_entity(self._token_decls, key)
        if new is not None:
            self._declare(DeclareToken(new.wire_id, WireExpr(0, key, True)))
            if self.mode is WhatAmI.PEER:
                # a router echoes a client's own tokens, not a peer's: peers deliver locally
                self._token_event(key, t.SampleKind.PUT)
        return local

    def undeclare_token(self, local: int) -> None:
        key = self._tokens.pop(local, None)
        if key is None:
            return
        last = self._release_entity(self._token_decls, key)
        if last is not None and not self.closed:
            self._declare(UndeclareToken(last.wire_id))
            if self.mode is WhatAmI.PEER:
                self._token_event(key, t.SampleKind.DELETE)

    def _local_tokens(self, key: str) -> Iterable[str]:
        """Tokens a liveliness get or history gets without asking a router: a peer's
        own and those its peer faces declared."""
        if self.mode is not WhatAmI.PEER:
            return ()
        out = [k for k in self._token_decls if intersects(key, k)]
        if self._peer_faces:
            peers = {f.fid for f in self._faces.values() if not f.routerish}
            out += [k for tid, k in self._remote_tokens.items() if tid[0] in peers and intersects(key, k)]
        return out

    def declare_liveliness_subscriber(self, key: str, history: bool, sink: Any) -> int:
        self._check_open()
        iid = self._wire_id()
        self._lsubs[iid] = _LivelinessSub(key, sink)
        mode = InterestMode.CURRENT_FUTURE if history else InterestMode.FUTURE
        self._to_routers(Interest(iid, mode, InterestOptions.KEYEXPRS | InterestOptions.TOKENS,
                                  WireExpr(0, key, True), qos=QOS_DECLARE))  # fmt: skip
        if history:
            for k in self._local_tokens(key):
                ke = self._ke(k)
                if ke is not None:
                    self.deliveries.append((sink, t.Sample(ke, t.ZBytes(b""))))
        return iid

    def undeclare_liveliness_subscriber(self, iid: int) -> None:
        ls = self._lsubs.pop(iid, None)
        if ls is None:
            return
        self.deliveries.append((ls.sink, END))
        if not self.closed:
            self._to_routers(Interest(iid, InterestMode.FINAL, qos=QOS_DECLARE))

    def liveliness_get(self, key: str, sink: Any, now: float, timeout_s: float | None = None) -> int:
        self._check_open()
        iid = self._wire_id()
        timeout = self.query_timeout_s if timeout_s is None else timeout_s
        for k in self._local_tokens(key):
            ke = self._ke(k)
            if ke is not None:
                self.deliveries.append((sink, t.Reply(t.Sample(ke, t.ZBytes(b"")))))
        if not any(f.routerish for f in self._faces.values()):
            # no router to ask (link lost, or only peers: their tokens are known here)
            self.deliveries.append((sink, END))
            return iid
        self._lgets[iid] = _LivelinessGet(key, sink, now + timeout)
        self._to_routers(Interest(iid, InterestMode.CURRENT, InterestOptions.KEYEXPRS | InterestOptions.TOKENS,
                                  WireExpr(0, key, True), qos=QOS_DECLARE))  # fmt: skip
        return iid

    # --- time --------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        deadlines = [g.deadline for g in self._gets.values()]
        deadlines += [lg.deadline for lg in self._lgets.values()]
        return min(deadlines) if deadlines else None

    def handle_timer(self, now: float) -> None:
        for g in [g for g in self._gets.values() if g.deadline <= now]:
            self._finish_get(g, timed_out=True)
        for iid, lg in [(i, lg) for i, lg in self._lgets.items() if lg.deadline <= now]:
            del self._lgets[iid]
            self.deliveries.append((lg.sink, t.Reply(t.ReplyError(t.ZBytes(TIMEOUT_PAYLOAD)))))
            self.deliveries.append((lg.sink, END))


# --- Sample construction ------------------------------------------------------------------


def _qos_fields(qos: int) -> tuple[t.CongestionControl, t.Priority, bool]:
    prio = _PRIORITIES.get(qos & 0x07, t.Priority.DATA)
    cc = t.CongestionControl.BLOCK if qos & 0x08 else t.CongestionControl.DROP
    return cc, prio, bool(qos & 0x10)


def _sample(ke: KeyExpr, body: Put | Del, qos: int) -> t.Sample:
    cc, prio, express = _qos_fields(qos)
    ts = None if body.timestamp is None else t.Timestamp.from_wire(body.timestamp)
    att = None if body.attachment is None else t.ZBytes(body.attachment)
    info = None if body.source_info is None else t.SourceInfo.from_wire(body.source_info)
    if type(body) is Put:
        return t.Sample(ke, t.ZBytes(body.payload), t.SampleKind.PUT, t.Encoding.from_wire(body.encoding),
                        ts, cc, prio, express, att, info)  # fmt: skip
    return t.Sample(ke, t.ZBytes(b""), t.SampleKind.DELETE, t.Encoding.from_wire(_p.Encoding.DEFAULT),
                    ts, cc, prio, express, att, info)  # fmt: skip


def _local_sample(ke: KeyExpr, body: Put | Del, priority: int, block: bool, express: bool) -> t.Sample:
    return _sample(ke, body, qos_value(priority, block, express))
