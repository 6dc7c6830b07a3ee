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
from pyzenoh.session.core.liveliness import Liveliness
from pyzenoh.session.core.pubsub import PubSub
from pyzenoh.session.core.queries import Queries
from pyzenoh.session.core.state import END, TIMEOUT_PAYLOAD


class Dispatch(PubSub, Queries, Liveliness):
    """Received network messages and timer ticks, each to its region."""

    # --- incoming network messages -----------------------------------------------------------

    def on_message(self, msg: NetworkMessage, now: float) -> None:
        if self.closed:
            return
        match msg:
            case Push():
                self._on_push(msg)
            case Declare():
                self._on_declare(msg)
            case Response():
                self._on_response(msg)
            case ResponseFinal():
                g = self._gets.get(msg.request_id)
                if g is not None:
                    g.remote_pending.discard(self._face_id)
                    self._maybe_finish(g)
            case Request():
                self._on_request(msg, now)
            case Interest():
                self._on_interest(msg)
        # OAM (link state) is informational

    # --- a face's declarations and interests -------------------------------------------------

    def _on_declare(self, msg: Declare) -> None:
        body = msg.body
        match body:
            case DeclareKeyExpr():
                key = self._resolve(WireExpr(body.wire_expr.scope, body.wire_expr.suffix, True))
                if key is not None:
                    self._remote_exprs[body.expr_id] = key
            case UndeclareKeyExpr():
                self._remote_exprs.pop(body.expr_id, None)
            case DeclareSubscriber():
                key = self._resolve(body.wire_expr)
                if key is not None and self._ke(key) is not None:
                    self._remote_subs[(self._face_id, body.entity_id)] = key
                    self._allow_changed()
                    self._update_matching()
            case UndeclareSubscriber():
                if self._remote_subs.pop((self._face_id, body.entity_id), None) is not None:
                    self._allow_changed()
                    self._update_matching()
            case DeclareQueryable():
                key = self._resolve(body.wire_expr)
                if key is not None and self._ke(key) is not None:
                    qid = (self._face_id, body.entity_id)
                    self._remote_qabls[qid] = key
                    if body.complete:
                        self._remote_qabl_complete.add(qid)
                    else:
                        self._remote_qabl_complete.discard(qid)
                    self._update_querier_matching()
            case UndeclareQueryable():
                qid = (self._face_id, body.entity_id)
                self._remote_qabl_complete.discard(qid)
                if self._remote_qabls.pop(qid, None) is not None:
                    self._update_querier_matching()
            case DeclareToken():
                self._on_token(msg.interest_id, body)
            case UndeclareToken():
                self._on_untoken(body)
            case DeclareFinal():
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
                    self._declare(DeclareQueryable(d.wire_id, WireExpr(0, k, True), complete=d.complete), iid, face=fid)
        if opts & InterestOptions.TOKENS:
            for k, d in self._token_decls.items():
                if key is None or intersects(k, key):
                    self._declare(DeclareToken(d.wire_id, WireExpr(0, k, True)), iid, face=fid)
        self._declare(DeclareFinal(), iid, face=fid)

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
