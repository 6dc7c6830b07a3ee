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
from pyzenoh.session.core.liveliness import Liveliness
from pyzenoh.session.core.queries import Queries
from pyzenoh.session.core.state import END, PRIORITY_CONTROL, Face
from pyzenoh.transport.link import Established


class Faces(Queries, Liveliness):
    """Faces opening and closing, the session closing, info listeners."""

    # --- a face opens ------------------------------------------------------------------------

    def on_established(self, peer: Established, fid: int = 0, locators: Iterable[str] = ()) -> None:
        """A face opened (``fid``: the runtime's id for the link): it gets the session's
        state, as a 1.10.2 client re-declares everything to a router it reconnected to.
        ``locators``: where a peer listens, announced in its link state (a router gossips
        them to other peers, which then connect to it)."""
        if self.closed:
            return
        self.peer = peer
        routerish = self.mode is WhatAmI.CLIENT or peer.whatami is WhatAmI.ROUTER
        face = Face(fid, peer, routerish)
        self._faces[fid] = face
        self._peer_faces = any(not f.routerish for f in self._faces.values())
        self.select_face(fid)
        if self.mode is WhatAmI.PEER:
            # peers announce their link state right after open (zenoh-wire.md 6.7)
            self._send(
                NetworkOam(OAM_LINKSTATE, self._linkstate(peer, locators), qos=QOS_DECLARE), PRIORITY_CONTROL, face=fid
            )
        self._replay(face)
        self._allow_changed()
        for sink, make in list(self._info_listeners.values()):
            item = None if make is None else make(t.SampleKind.PUT, fid)
            if item is not None:
                self.deliveries.append((sink, item))

    def _replay(self, f: Face) -> None:
        """Everything this session declared, to a face that just opened."""
        fid = f.fid
        for key, expr_id in self._local_exprs.items():
            self._declare(DeclareKeyExpr(expr_id, WireExpr(0, key, True)), face=fid)
        if f.routerish:
            ks = InterestOptions.KEYEXPRS
            for pub in self._pubs.values():
                self._send(
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
            for qr in self._queriers.values():
                self._send(
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
            for iid, ls in self._lsubs.items():
                # as zenoh: every interest goes again as CurrentFuture (tokens come again)
                self._send(
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
        for key, d in self._sub_decls.items():
            self._declare(DeclareSubscriber(d.wire_id, WireExpr(0, key, True)), face=fid)
        for key, d in self._qabl_decls.items():
            self._declare(DeclareQueryable(d.wire_id, WireExpr(0, key, True), complete=d.complete), face=fid)
        for key, d in self._token_decls.items():
            self._declare(DeclareToken(d.wire_id, WireExpr(0, key, True)), face=fid)
        if not f.routerish:
            # a 1.10.2 peer ends its initial declarations to a peer with D_FINAL(0)
            self._declare(DeclareFinal(), 0, face=fid)

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

    # --- the face being handled --------------------------------------------------------------

    def select_face(self, fid: int) -> None:
        """The face whose messages are handled next (its expression ids resolve keys)."""
        self._face_id = fid
        f = self._faces.get(fid)
        self._remote_exprs = {} if f is None else f.remote_exprs

    def has_face(self) -> bool:
        return bool(self._faces)

    # --- a face is lost, the session closes --------------------------------------------------

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

    # --- session info listeners --------------------------------------------------------------

    def add_info_listener(
        self, sink: Any, make: Callable[[t.SampleKind, int], Any] | None, history: bool = False
    ) -> int:
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
