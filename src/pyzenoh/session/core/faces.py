"""Faces: the session's links opening and closing, and the session closing.

A face that opens (again, after a reconnection) gets the session's whole state: key
expressions, the interests of publishers, queriers and liveliness subscribers (to faces
that answer interests), subscribers, queryables and tokens, then D_FINAL(0) to a peer; a
peer announces its link state first. A face that is lost takes what it declared with it
(token DELETEs, matching updates) and ends the gets that waited on it. Transport and
link event listeners hear of both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pyzenoh.codec import (
    DeclareFinal,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkOam,
    WhatAmI,
    WireExpr,
)
from pyzenoh.codec import primitives as _p
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE
from pyzenoh.session import types as t
from pyzenoh.session.core.forwarding import Forwarding
from pyzenoh.session.core.liveliness import Liveliness
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.queries import Queries
from pyzenoh.session.core.state import END, PRIORITY_CONTROL, CoreState, Face
from pyzenoh.transport.link import Established


class Faces:
    """Faces opening and closing, the session closing, info listeners."""

    def __init__(
        self, s: CoreState, liveliness: Liveliness, matching: Matching, queries: Queries, forwarding: Forwarding
    ) -> None:
        self.s = s
        self.liveliness = liveliness
        self.matching = matching
        self.queries = queries
        self.forwarding = forwarding

    # --- a face opens ------------------------------------------------------------------------

    def on_established(
        self, peer: Established, fid: int = 0, locators: Iterable[str] = (), group: bool = False
    ) -> None:
        """A face opened (``fid``: the runtime's id for the link): it gets the session's
        state, as a 1.10.2 client re-declares everything to a router it reconnected to.
        ``locators``: where a peer listens, announced in its link state (a router gossips
        them to other peers, which then connect to it). ``group``: a multicast group's
        face (its link carries only what a group does)."""
        if self.s.closed:
            return
        if not group:
            self.s.peer = peer
        routerish = self.s.mode is WhatAmI.CLIENT or peer.whatami is WhatAmI.ROUTER
        face = Face(fid, peer, routerish, declared=group, group=group)
        self.s.faces[fid] = face
        self.s.peer_faces = any(not f.routerish for f in self.s.faces.values())
        self.select_face(fid)
        if self.s.mode is WhatAmI.PEER:
            # peers announce their link state right after open (zenoh-wire.md 6.7)
            self.s.send(
                NetworkOam(OAM_LINKSTATE, self._linkstate(peer, locators), qos=QOS_DECLARE), PRIORITY_CONTROL, face=fid
            )
        self._replay(face)
        self.matching.allow_changed()
        for sink, make in list(self.s.info_listeners.values()):
            item = None if make is None else make(t.SampleKind.PUT, fid)
            if item is not None:
                self.s.deliveries.append((sink, item))

    def _replay(self, f: Face) -> None:
        """Everything this session declared, to a face that just opened."""
        fid = f.fid
        for key, expr_id in self.s.local_exprs.items():
            self.s.declare(DeclareKeyExpr(expr_id, WireExpr(0, key, True)), face=fid)
        if f.routerish:
            ks = InterestOptions.KEYEXPRS
            for pub in self.s.pubs.values():
                self.s.send(
                    Interest(
                        pub.interest_id,
                        InterestMode.CURRENT_FUTURE,
                        ks | InterestOptions.SUBSCRIBERS,
                        WireExpr(pub.expr_id, "", True),
                        qos=QOS_DECLARE,
                    ),
                    PRIORITY_CONTROL,
                    face=fid,
                )
            for qr in self.s.queriers.values():
                self.s.send(
                    Interest(
                        qr.interest_id,
                        InterestMode.CURRENT_FUTURE,
                        ks | InterestOptions.QUERYABLES,
                        WireExpr(0, qr.key, True),
                        qos=QOS_DECLARE,
                    ),
                    PRIORITY_CONTROL,
                    face=fid,
                )
            for iid, ls in self.s.lsubs.items():
                # as zenoh: every interest goes again as CurrentFuture (tokens come again)
                self.s.send(
                    Interest(
                        iid,
                        InterestMode.CURRENT_FUTURE,
                        ks | InterestOptions.TOKENS,
                        WireExpr(0, ls.key, True),
                        qos=QOS_DECLARE,
                    ),
                    PRIORITY_CONTROL,
                    face=fid,
                )
        for key, d in self.s.sub_decls.items():
            self.s.declare(DeclareSubscriber(d.wire_id, WireExpr(0, key, True)), face=fid)
        for key, d in self.s.qabl_decls.items():
            self.s.declare(DeclareQueryable(d.wire_id, WireExpr(0, key, True), complete=d.complete), face=fid)
        for key, d in self.s.token_decls.items():
            self.s.declare(DeclareToken(d.wire_id, WireExpr(0, key, True)), face=fid)
        self.forwarding.face_opened(f)
        if not f.routerish:
            # a 1.10.2 peer ends its initial declarations to a peer with D_FINAL(0)
            self.s.declare(DeclareFinal(), 0, face=fid)

    def _linkstate(self, peer: Established, locators: Iterable[str] = ()) -> bytes:
        out = bytearray()
        w = _p.write_vle
        w(out, 2)
        # ourselves: zid | whatami | locators, psid 0, linked to psid 1
        w(out, 0x07)
        w(out, 0)
        w(out, 1)
        _p.write_zbytes(out, self.s.zid.to_wire())
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

    # --- the face being handled --------------------------------------------------------------

    def select_face(self, fid: int) -> None:
        """The face whose messages are handled next (its expression ids resolve keys)."""
        self.s.face_id = fid
        f = self.s.faces.get(fid)
        self.s.remote_exprs = {} if f is None else f.remote_exprs

    def has_face(self) -> bool:
        return bool(self.s.faces)

    # --- a face is lost, the session closes --------------------------------------------------

    def face_lost(self, fid: int) -> None:
        """A face's link is gone: what it declared goes (token DELETEs, matching
        updates), gets waiting for its final end without it (as zenoh's do)."""
        f = self.s.faces.pop(fid, None)
        if f is None:
            return
        if self.s.face_id == fid:
            self.s.remote_exprs = {}
        self.s.peer_faces = any(not g.routerish for g in self.s.faces.values())
        if not self.s.faces:
            self.s.peer = None
        if self.s.closed:
            return
        self.forwarding.face_lost(fid)
        subs = {k: v for k, v in self.s.remote_subs.items() if k[0] != fid}
        if len(subs) != len(self.s.remote_subs):
            self.s.remote_subs = subs
        qabls = {k: v for k, v in self.s.remote_qabls.items() if k[0] != fid}
        if len(qabls) != len(self.s.remote_qabls):
            self.s.remote_qabls = qabls
            self.s.remote_qabl_complete = {k for k in self.s.remote_qabl_complete if k[0] != fid}
        gone = [(k, key) for k, key in self.s.remote_tokens.items() if k[0] == fid]
        for k, key in gone:
            del self.s.remote_tokens[k]
        for _, key in gone:
            self.liveliness.token_event(key, t.SampleKind.DELETE)
        if f.routerish:
            self.s.finalized.clear()  # the pub interests' finals came from there
            if not any(g.routerish for g in self.s.faces.values()):
                for lg in self.s.lgets.values():
                    self.s.deliveries.append((lg.sink, END))
                self.s.lgets.clear()
        self.matching.allow_changed()
        self.matching.update_matching()
        self.matching.update_querier_matching()
        for qref, (inc, _) in list(self.s.incoming.items()):
            if inc.local_get is None and inc.fid == fid:
                del self.s.incoming[qref]
        for g in list(self.s.gets.values()):
            if fid in g.remote_pending:
                g.remote_pending.discard(fid)
                self.queries.maybe_finish(g)
        for sink, make in list(self.s.info_listeners.values()):
            item = None if make is None else make(t.SampleKind.DELETE, fid)
            if item is not None:
                self.s.deliveries.append((sink, item))

    def close(self) -> None:
        """End the session: every get, subscriber and queryable sink is closed."""
        if self.s.closed:
            return
        for g in list(self.s.gets.values()):
            self.queries.finish_get(g, timed_out=False)
        for lg in list(self.s.lgets.values()):
            self.s.deliveries.append((lg.sink, END))
        self.s.lgets.clear()
        sinks: list[Any] = [s.sink for s in self.s.subs.values()]
        sinks += [s.sink for s in self.s.local_only_subs.values()]
        sinks += [q.sink for q in self.s.qabls.values()]
        sinks += [ls.sink for ls in self.s.lsubs.values()]
        for pub in self.s.pubs.values():
            sinks += pub.listeners
        for qr in self.s.queriers.values():
            sinks += qr.listeners
        for sink, make in self.s.info_listeners.values():
            for fid in self.s.faces:
                item = None if make is None else make(t.SampleKind.DELETE, fid)
                if item is not None:
                    self.s.deliveries.append((sink, item))
            sinks.append(sink)
        for sink in sinks:
            self.s.deliveries.append((sink, END))
        self.s.subs.clear()
        self.s.local_only_subs.clear()
        self.s.qabls.clear()
        self.s.lsubs.clear()
        self.s.pubs.clear()
        self.s.queriers.clear()
        self.s.info_listeners.clear()
        self.s.incoming.clear()
        self.s.closed = True
        self.s.outbox.clear()

    # --- session info listeners --------------------------------------------------------------

    def add_info_listener(
        self, sink: Any, make: Callable[[t.SampleKind, int], Any] | None, history: bool = False
    ) -> int:
        """A transport or link events listener: ``make(kind, face id)`` builds the event
        of a face opening (PUT: the faces open now when ``history``, then every face that
        opens, reconnections included) or closing (DELETE); the end when it is removed
        or the session closes."""
        self.s.check_open()
        local = self.s.local_id()
        self.s.info_listeners[local] = (sink, make)
        if history and make is not None:
            for fid in self.s.faces:
                item = make(t.SampleKind.PUT, fid)
                if item is not None:
                    self.s.deliveries.append((sink, item))
        return local

    def remove_info_listener(self, local: int) -> None:
        entry = self.s.info_listeners.pop(local, None)
        if entry is not None:
            self.s.deliveries.append((entry[0], END))
