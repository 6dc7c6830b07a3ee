"""Dispatch of what the session receives: network messages and the passing of time.

:meth:`Dispatch.on_message` hands each message of the current face to its region
(PUSH to :mod:`.pubsub`, REQUEST / RESPONSE / RESPONSE_FINAL to :mod:`.queries`, tokens
to :mod:`.liveliness`). The declarations of a face are recorded here (its expression
ids, subscribers and queryables, which change matching) as are the D_FINALs (a peer's
initial declarations complete, a liveliness get's end, a publisher interest's answer
that starts write-side filtering); a peer answers the interests of the nodes connected
to it from its own declarations. Timer ticks end the gets past their deadline.
"""

from __future__ import annotations

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
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
)
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.session import types as t
from pyzenoh.session.core.forwarding import QABL, SUB, TOKEN, Forwarding
from pyzenoh.session.core.liveliness import Liveliness
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.pubsub import PubSub
from pyzenoh.session.core.queries import Queries
from pyzenoh.session.core.state import END, TIMEOUT_PAYLOAD, CoreState


class Dispatch:
    """Received network messages and timer ticks, each to its region."""

    def __init__(
        self,
        s: CoreState,
        liveliness: Liveliness,
        matching: Matching,
        pubsub: PubSub,
        queries: Queries,
        forwarding: Forwarding,
    ) -> None:
        self.s = s
        self.liveliness = liveliness
        self.matching = matching
        self.pubsub = pubsub
        self.queries = queries
        self.forwarding = forwarding

    # --- incoming network messages -----------------------------------------------------------

    def on_message(self, msg: NetworkMessage, now: float) -> None:
        if self.s.closed:
            return
        match msg:
            case Push():
                self.pubsub.on_push(msg)
            case Declare():
                self._on_declare(msg)
            case Response():
                if not self.forwarding.response(msg):
                    self.queries.on_response(msg)
            case ResponseFinal():
                if self.forwarding.response_final(msg):
                    return
                g = self.s.gets.get(msg.request_id)
                if g is not None:
                    g.remote_pending.discard(self.s.face_id)
                    self.queries.maybe_finish(g)
            case Request():
                key = self.s.resolve(msg.wire_expr)
                if key is not None and self.s.ke(key) is not None:
                    self.forwarding.request(msg, key, now)
                self.queries.on_request(msg, now)
            case Interest():
                self._on_interest(msg)
        # OAM (link state) is informational

    # --- a face's declarations and interests -------------------------------------------------

    def _on_declare(self, msg: Declare) -> None:
        body = msg.body
        match body:
            case DeclareKeyExpr():
                key = self.s.resolve(WireExpr(body.wire_expr.scope, body.wire_expr.suffix, True))
                if key is not None:
                    self.s.remote_exprs[body.expr_id] = key
            case UndeclareKeyExpr():
                self.s.remote_exprs.pop(body.expr_id, None)
            case DeclareSubscriber():
                key = self.s.resolve(body.wire_expr)
                if key is not None and self.s.ke(key) is not None:
                    self.s.remote_subs[(self.s.face_id, body.entity_id)] = key
                    self.matching.allow_changed()
                    self.matching.update_matching()
                    self.forwarding.declared(SUB, body.entity_id, key)
            case UndeclareSubscriber():
                if self.s.remote_subs.pop((self.s.face_id, body.entity_id), None) is not None:
                    self.matching.allow_changed()
                    self.matching.update_matching()
                    self.forwarding.undeclared(SUB, body.entity_id)
            case DeclareQueryable():
                key = self.s.resolve(body.wire_expr)
                if key is not None and self.s.ke(key) is not None:
                    qid = (self.s.face_id, body.entity_id)
                    self.s.remote_qabls[qid] = key
                    if body.complete:
                        self.s.remote_qabl_complete.add(qid)
                    else:
                        self.s.remote_qabl_complete.discard(qid)
                    self.matching.update_querier_matching()
                    self.forwarding.declared(QABL, body.entity_id, key, body.complete)
            case UndeclareQueryable():
                qid = (self.s.face_id, body.entity_id)
                self.s.remote_qabl_complete.discard(qid)
                if self.s.remote_qabls.pop(qid, None) is not None:
                    self.matching.update_querier_matching()
                    self.forwarding.undeclared(QABL, body.entity_id)
            case DeclareToken():
                self.liveliness.on_token(msg.interest_id, body)
                key = self.s.resolve(body.wire_expr)
                # not a reply to our own liveliness get: that token is no declaration
                lget = msg.interest_id is not None and msg.interest_id in self.s.lgets
                if key is not None and body.entity_id and not lget and self.s.ke(key) is not None:
                    self.forwarding.declared(TOKEN, body.entity_id, key)
            case UndeclareToken():
                self.liveliness.on_untoken(body)
                self.forwarding.undeclared(TOKEN, body.entity_id)
            case DeclareFinal():
                iid = msg.interest_id
                if iid is None:
                    return
                if iid == 0:
                    f = self.s.faces.get(self.s.face_id)
                    if f is not None and not f.routerish:
                        f.declared = True  # a peer's initial declarations are all in
                        self.matching.allow_changed()
                    return
                lg = self.s.lgets.pop(iid, None)
                if lg is not None:
                    self.s.deliveries.append((lg.sink, END))
                elif iid in self.s.pub_interests:
                    self.s.finalized.add(iid)
                    self.matching.allow_changed()
                    self.matching.update_matching()

    def _on_interest(self, msg: Interest) -> None:
        """An interest from a client (or a peer) connected to this peer: our current
        declarations it covers and those forwarded to it (:mod:`.forwarding`), then
        D_FINAL; our own future ones go to every face anyway, forwarded ones follow its
        future interests. A
        router's interests are never for a client or peer to answer."""
        f = self.s.faces.get(self.s.face_id)
        if f is None or f.peer.whatami is WhatAmI.ROUTER or self.s.mode is not WhatAmI.PEER:
            return
        if msg.mode is InterestMode.FINAL:
            self.forwarding.interest(f, msg, None)
            return
        key = None if msg.wire_expr is None else self.s.resolve(msg.wire_expr)
        if msg.wire_expr is not None and (key is None or self.s.ke(key) is None):
            return
        self.forwarding.interest(f, msg, key)  # what it asks of the future: forwarded declarations follow it
        if msg.mode not in (InterestMode.CURRENT, InterestMode.CURRENT_FUTURE):
            return
        iid, fid, opts = msg.interest_id, f.fid, msg.options
        if opts & InterestOptions.SUBSCRIBERS:
            for k, d in self.s.sub_decls.items():
                if key is None or intersects(k, key):
                    self.s.declare(DeclareSubscriber(d.wire_id, WireExpr(0, k, True)), iid, face=fid)
            self.forwarding.answer(SUB, f, key, iid)
        if opts & InterestOptions.QUERYABLES:
            for k, d in self.s.qabl_decls.items():
                if key is None or intersects(k, key):
                    self.s.declare(
                        DeclareQueryable(d.wire_id, WireExpr(0, k, True), complete=d.complete), iid, face=fid
                    )
            self.forwarding.answer(QABL, f, key, iid)
        if opts & InterestOptions.TOKENS:
            for k, d in self.s.token_decls.items():
                if key is None or intersects(k, key):
                    self.s.declare(DeclareToken(d.wire_id, WireExpr(0, k, True)), iid, face=fid)
            self.forwarding.answer(TOKEN, f, key, iid)
        self.s.declare(DeclareFinal(), iid, face=fid)

    # --- time --------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        deadlines = [g.deadline for g in self.s.gets.values()]
        deadlines += [lg.deadline for lg in self.s.lgets.values()]
        relayed = self.forwarding.next_deadline()
        if relayed is not None:
            deadlines.append(relayed)
        return min(deadlines) if deadlines else None

    def handle_timer(self, now: float) -> None:
        self.forwarding.handle_timer(now)
        for g in [g for g in self.s.gets.values() if g.deadline <= now]:
            self.queries.finish_get(g, timed_out=True)
        for iid, lg in [(i, lg) for i, lg in self.s.lgets.items() if lg.deadline <= now]:
            del self.s.lgets[iid]
            self.s.deliveries.append((lg.sink, t.Reply(t.ReplyError(t.ZBytes(TIMEOUT_PAYLOAD)))))
            self.s.deliveries.append((lg.sink, END))
