"""Queries: queryables, queriers, gets and their replies.

A queryable is declared once per distinct key (a second declaration updates
``complete``); a query from a face, or a get of this session, reaches the matching
local queryables as :class:`~pyzenoh.session.types.Query` objects whose replies go back
the way the query came (RESPONSE then RESPONSE_FINAL once every queryable dropped it).
A querier sends a CurrentFuture K|Q interest (its matching status). A get goes to the
faces that may answer and to local queryables, consolidates replies (Latest, Monotonic
or None), drops those whose key does not intersect the query (unless ``_anyke``), and
ends when every face sent its RESPONSE_FINAL, at its deadline with ``ERR "Timeout"``,
or when cancelled.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from pyzenoh.codec import (
    DeclareQueryable,
    Del,
    EntityGlobalId,
    Err,
    Interest,
    InterestMode,
    InterestOptions,
    Put,
    Query,
    QueryBody,
    Reply,
    Request,
    Response,
    ResponseFinal,
    UndeclareQueryable,
    WireExpr,
)
from pyzenoh.codec import primitives as _p
from pyzenoh.codec.network import QOS_DECLARE, QOS_REQUEST, qos_value
from pyzenoh.codec.transport import PRIORITY_DATA
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.core.forwarding import Forwarding
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.state import (
    END,
    LOCAL_AND_REMOTE,
    REMOTE_ONLY,
    SESSION_LOCAL,
    TIMEOUT_PAYLOAD,
    CoreState,
    IncomingQuery,
    LocalQuerier,
    LocalQueryable,
    PendingGet,
)
from pyzenoh.session.samples import wire_sample

log = logging.getLogger(__name__)


def _ts_key(ts: t.Timestamp | None) -> tuple[int, int]:
    """Ordering of timestamps for consolidation: no timestamp sorts first."""
    return (-1, -1) if ts is None else (ts.wire.time, ts.wire.id.value)


class Queries:
    """Queryables, queriers and gets."""

    def __init__(self, s: CoreState, matching: Matching, forwarding: Forwarding) -> None:
        self.s = s
        self.matching = matching
        self.forwarding = forwarding

    # --- queryables --------------------------------------------------------------------------

    def declare_queryable(self, key: str, complete: bool, sink: Any, origin: int = LOCAL_AND_REMOTE) -> int:
        """A queryable; ``origin`` SESSION_LOCAL answers only this session's gets (and is
        not declared to the router), REMOTE only others'."""
        self.s.check_open()
        local = self.s.local_id()
        if origin == SESSION_LOCAL:
            self.s.qabls[local] = LocalQueryable(key, complete, sink, local, origin)
            self.matching.update_querier_matching()
            return local
        new = self.s.declare_entity(self.s.qabl_decls, key)
        d = self.s.qabl_decls[key]
        self.s.qabls[local] = LocalQueryable(key, complete, sink, d.wire_id, origin)
        if new is not None or (complete and not d.complete):
            d.complete = d.complete or complete
            # a second declaration with the same id updates the "complete" info
            self.s.declare(DeclareQueryable(d.wire_id, WireExpr(0, key, True), complete=d.complete))
        self.matching.update_querier_matching()
        return local

    def queryable_wire_id(self, local: int) -> int:
        q = self.s.qabls.get(local)
        return local if q is None else q.wire_id

    def undeclare_queryable(self, local: int) -> None:
        q = self.s.qabls.pop(local, None)
        if q is None:
            return
        self.s.deliveries.append((q.sink, END))
        self.matching.update_querier_matching()
        if q.origin == SESSION_LOCAL:
            return
        last = self.s.release_entity(self.s.qabl_decls, q.key)
        if last is not None and not self.s.closed:
            self.s.declare(UndeclareQueryable(last.wire_id))

    # --- queries to this session's queryables ------------------------------------------------

    def on_request(self, msg: Request, now: float) -> None:
        prio = msg.qos & 0x07
        key = self.s.resolve(msg.wire_expr)
        matches = [] if key is None or self.s.ke(key) is None else self.matching.local_queryables(key, msg.target)
        if not matches or key is None:
            if not self.forwarding.local_final(self.s.face_id, msg.request_id):
                self.s.send(ResponseFinal(msg.request_id, qos=QOS_REQUEST), prio, face=self.s.face_id)
            return
        inc = IncomingQuery(
            msg.request_id, key, len(matches), prio, ts_stack=self.s.received_stack(msg.ts_stack), fid=self.s.face_id
        )
        self._deliver_query(inc, matches, msg.body)

    def _deliver_query(self, inc: IncomingQuery, matches: list[LocalQueryable], body: Query) -> None:
        ke = self.s.ke(inc.key)
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
            qref = self.s.next_qref
            self.s.next_qref += 1
            self.s.incoming[qref] = (inc, q.wire_id)
            query = t.Query(self.s.responder, qref, ke, params, payload, encoding, attachment)
            query.source_info = source
            query.timestamp_stack = stack
            self.s.deliveries.append((q.sink, query))

    def query_reply(
        self,
        qref: int,
        key: str,
        body: Put | Del | Err,
        priority: int | None,
        express: bool,
        block: bool,
    ) -> None:
        entry = self.s.incoming.get(qref)
        if entry is None:
            return
        inc, eid = entry
        ts_stack = ins.push_record(
            inc.ts_stack, ins.InterceptionPoint.SEND, self.s.zid, self.s.clock_ns(), self.s.ts_callback, self.s.mode
        )
        if inc.local_get is not None:
            g = self.s.gets.get(inc.local_get)
            if g is not None:
                self._get_reply(
                    g, key or inc.key, body, t.EntityGlobalId(self.s.zid, eid), ts_stack=self.s.received_stack(ts_stack)
                )
            return
        prio = PRIORITY_DATA if priority is None else priority
        rbody: Reply | Err = body if isinstance(body, Err) else Reply(body)
        resp = Response(
            inc.rid,
            WireExpr(0, key or inc.key, True),
            rbody,
            qos=qos_value(prio, block, express),
            responder=EntityGlobalId(self.s.zid, eid),
            ts_stack=ts_stack,
        )
        # same frame priority as the RESPONSE_FINAL so the final cannot overtake a reply
        self.s.send(resp, inc.priority, droppable=not block, express=express, face=inc.fid)

    def query_finalize(self, qref: int) -> None:
        entry = self.s.incoming.pop(qref, None)
        if entry is None:
            return
        inc = entry[0]
        inc.pending -= 1
        if inc.pending > 0:
            return
        if inc.local_get is not None:
            g = self.s.gets.get(inc.local_get)
            if g is not None:
                g.local_pending -= 1
                self.maybe_finish(g)
        elif not self.forwarding.local_final(inc.fid, inc.rid):
            self.s.send(ResponseFinal(inc.rid, qos=QOS_REQUEST), inc.priority, face=inc.fid)

    # --- queriers ----------------------------------------------------------------------------

    def declare_querier(self, key: str, target: int, destination: int = LOCAL_AND_REMOTE) -> int:
        """A querier: a CurrentFuture K|Q interest on its key tells it the matching
        queryables (its matching status), as a 1.10.2 client does."""
        self.s.check_open()
        iid = self.s.wire_id()
        qr = LocalQuerier(key, iid, target, destination=destination)
        local = self.s.local_id()
        self.s.queriers[local] = qr
        self.s.querier_interests[iid] = qr
        self.s.to_routers(
            Interest(
                iid,
                InterestMode.CURRENT_FUTURE,
                InterestOptions.KEYEXPRS | InterestOptions.QUERYABLES,
                WireExpr(0, key, True),
                qos=QOS_DECLARE,
            ),
        )
        qr.matching = self.matching.querier_matches(qr)
        return local

    def undeclare_querier(self, local: int) -> None:
        qr = self.s.queriers.pop(local, None)
        if qr is None:
            return
        self.s.querier_interests.pop(qr.interest_id, None)
        for sink in qr.listeners:
            self.s.deliveries.append((sink, END))
        if not self.s.closed:
            self.s.to_routers(Interest(qr.interest_id, InterestMode.FINAL, qos=QOS_DECLARE))

    # --- gets --------------------------------------------------------------------------------

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
        self.s.check_open()
        params = t.Parameters(parameters)
        if accept_any and "_anyke" not in params:
            params.insert("_anyke", "")
        accept_any = "_anyke" in params
        if consolidation == t.ConsolidationMode.AUTO.value:
            consolidation = (t.ConsolidationMode.NONE if "_time" in params else t.ConsolidationMode.LATEST).value
        timeout = self.s.query_timeout_s if timeout_s is None else timeout_s
        rid = self.s.next_rid
        self.s.next_rid += 1
        g = PendingGet(rid, key, sink, consolidation, accept_any, now + timeout, ts_stack=ts_stack)
        self.s.gets[rid] = g
        qbody = Query(
            consolidation=consolidation,
            parameters=str(params),
            body=None if payload is None else QueryBody(payload, encoding),
            attachment=attachment,
            source_info=source_info,
        )
        if destination != SESSION_LOCAL and self.s.faces:
            req = Request(
                rid,
                WireExpr(0, key, True),
                qbody,
                qos=qos_value(priority, block, express),
                target=target,
                timeout_ms=int(timeout * 1000),
                ts_stack=ts_stack,
            )
            # to every face, or (with peer faces) to routers and to the peers whose
            # queryables match; no face (link lost): the get ends at once, as zenoh's
            for f in self.s.faces.values():
                if f.routerish or not self.s.peer_faces or self.matching.face_answers(f, key, target):
                    g.remote_pending.add(f.fid)
            if len(g.remote_pending) == len(self.s.faces):
                self.s.send(req, priority, droppable=not block, express=express)
            else:
                for fid in g.remote_pending:
                    self.s.send(req, priority, droppable=not block, express=express, face=fid)
        matches = [] if destination == REMOTE_ONLY else self.matching.local_queryables(key, target, remote=False)
        if matches:
            g.local_pending = 1
            inc = IncomingQuery(
                rid, key, len(matches), priority, local_get=rid, ts_stack=self.s.received_stack(ts_stack)
            )
            self._deliver_query(inc, matches, qbody)
        self.maybe_finish(g)
        return rid

    def cancel_get(self, rid: int) -> None:
        """End a get now (a CancellationToken): no more replies, its sink is closed."""
        g = self.s.gets.get(rid)
        if g is not None:
            g.held.clear()
            self.finish_get(g, timed_out=False)

    def on_response(self, msg: Response) -> None:
        g = self.s.gets.get(msg.request_id)
        if g is None:
            return
        key = self.s.resolve(msg.wire_expr)
        if key is None:
            return
        body = msg.body
        inner: Put | Del | Err = body if isinstance(body, Err) else body.body
        replier = None
        if msg.responder is not None:
            replier = t.EntityGlobalId(msg.responder.zid, msg.responder.eid)
        ts_stack = None if msg.ts_stack is None else self.s.received_stack(msg.ts_stack)
        self._get_reply(g, key, inner, replier, msg.qos, ts_stack=ts_stack)

    def _get_reply(
        self,
        g: PendingGet,
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
            self.s.deliveries.append((g.sink, t.Reply(err, replier)))
            return
        if not g.accept_any and not intersects(g.key, key):
            log.debug("reply on %s does not intersect query %s: dropped", key, g.key)
            return
        ke = self.s.ke(key)
        if ke is None:
            return
        sample = wire_sample(ke, body, qos)
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
        self.s.deliveries.append((g.sink, reply))

    def maybe_finish(self, g: PendingGet) -> None:
        if not g.remote_pending and g.local_pending <= 0:
            self.finish_get(g, timed_out=False)

    def finish_get(self, g: PendingGet, *, timed_out: bool) -> None:
        self.s.gets.pop(g.rid, None)
        for reply in g.held.values():
            self.s.deliveries.append((g.sink, reply))
        g.held.clear()
        if timed_out:
            self.s.deliveries.append((g.sink, t.Reply(t.ReplyError(t.ZBytes(TIMEOUT_PAYLOAD)))))
        self.s.deliveries.append((g.sink, END))
        # local queryables still holding this query may keep replying: ignored from now on
        for qref, (inc, _) in list(self.s.incoming.items()):
            if inc.local_get == g.rid:
                del self.s.incoming[qref]
