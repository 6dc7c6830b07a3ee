"""Liveliness: tokens, liveliness subscribers and liveliness gets.

A token is declared once per distinct key (D_TOKEN). Liveliness subscribers and gets are
interests on tokens (K|T; CurrentFuture with history, Future without, Current for a
get), sent to the faces that answer interests; a get ends at that interest's D_FINAL.
Tokens declared by faces (or announced for an interest) become PUT samples, their
undeclarations (or the loss of their face) DELETE samples. A peer also knows its own
tokens and its peer faces' without asking: a router echoes a client's tokens, not a
peer's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyzenoh.codec import (
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    UndeclareToken,
    WhatAmI,
    WireExpr,
)
from pyzenoh.codec.network import QOS_DECLARE
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.session import types as t
from pyzenoh.session.core.state import (
    END,
    CoreState,
    LivelinessSub,
    PendingLivelinessGet,
)


class Liveliness:
    """Tokens, liveliness subscribers and liveliness gets."""

    def __init__(self, s: CoreState) -> None:
        self.s = s

    # --- tokens ------------------------------------------------------------------------------

    def declare_token(self, key: str) -> int:
        self.s.check_open()
        local = self.s.local_id()
        self.s.tokens[local] = key
        new = self.s.declare_entity(self.s.token_decls, key)
        if new is not None:
            self.s.declare(DeclareToken(new.wire_id, WireExpr(0, key, True)))
            if self.s.mode is WhatAmI.PEER:
                # a router echoes a client's own tokens, not a peer's: peers deliver locally
                self.token_event(key, t.SampleKind.PUT)
        return local

    def undeclare_token(self, local: int) -> None:
        key = self.s.tokens.pop(local, None)
        if key is None:
            return
        last = self.s.release_entity(self.s.token_decls, key)
        if last is not None and not self.s.closed:
            self.s.declare(UndeclareToken(last.wire_id))
            if self.s.mode is WhatAmI.PEER:
                self.token_event(key, t.SampleKind.DELETE)

    def _local_tokens(self, key: str) -> Iterable[str]:
        """Tokens a liveliness get or history gets without asking a router: a peer's
        own and those its peer faces declared."""
        if self.s.mode is not WhatAmI.PEER:
            return ()
        out = [k for k in self.s.token_decls if intersects(key, k)]
        if self.s.peer_faces:
            peers = {f.fid for f in self.s.faces.values() if not f.routerish}
            out += [k for tid, k in self.s.remote_tokens.items() if tid[0] in peers and intersects(key, k)]
        return out

    # --- liveliness subscribers and gets -----------------------------------------------------

    def declare_liveliness_subscriber(self, key: str, history: bool, sink: Any) -> int:
        self.s.check_open()
        iid = self.s.wire_id()
        self.s.lsubs[iid] = LivelinessSub(key, sink)
        mode = InterestMode.CURRENT_FUTURE if history else InterestMode.FUTURE
        self.s.to_routers(
            Interest(
                iid, mode, InterestOptions.KEYEXPRS | InterestOptions.TOKENS, WireExpr(0, key, True), qos=QOS_DECLARE
            )
        )
        if history:
            for k in self._local_tokens(key):
                ke = self.s.ke(k)
                if ke is not None:
                    self.s.deliveries.append((sink, t.Sample(ke, t.ZBytes(b""))))
        return iid

    def undeclare_liveliness_subscriber(self, iid: int) -> None:
        ls = self.s.lsubs.pop(iid, None)
        if ls is None:
            return
        self.s.deliveries.append((ls.sink, END))
        if not self.s.closed:
            self.s.to_routers(Interest(iid, InterestMode.FINAL, qos=QOS_DECLARE))

    def liveliness_get(self, key: str, sink: Any, now: float, timeout_s: float | None = None) -> int:
        self.s.check_open()
        iid = self.s.wire_id()
        timeout = self.s.query_timeout_s if timeout_s is None else timeout_s
        for k in self._local_tokens(key):
            ke = self.s.ke(k)
            if ke is not None:
                self.s.deliveries.append((sink, t.Reply(t.Sample(ke, t.ZBytes(b"")))))
        if not any(f.routerish for f in self.s.faces.values()):
            # no router to ask (link lost, or only peers: their tokens are known here)
            self.s.deliveries.append((sink, END))
            return iid
        self.s.lgets[iid] = PendingLivelinessGet(key, sink, now + timeout)
        self.s.to_routers(
            Interest(
                iid,
                InterestMode.CURRENT,
                InterestOptions.KEYEXPRS | InterestOptions.TOKENS,
                WireExpr(0, key, True),
                qos=QOS_DECLARE,
            )
        )
        return iid

    def cancel_liveliness_get(self, iid: int) -> None:
        lg = self.s.lgets.pop(iid, None)
        if lg is not None:
            self.s.deliveries.append((lg.sink, END))

    # --- received tokens ---------------------------------------------------------------------

    def on_token(self, interest_id: int | None, body: DeclareToken) -> None:
        key = self.s.resolve(body.wire_expr)
        if key is None:
            return
        ke = self.s.ke(key)
        if ke is None:
            return
        if interest_id is not None:
            lg = self.s.lgets.get(interest_id)
            if lg is not None:
                self.s.deliveries.append((lg.sink, t.Reply(t.Sample(ke, t.ZBytes(b"")))))
                return
            ls = self.s.lsubs.get(interest_id)
            if ls is not None:
                if body.entity_id:
                    tid = (self.s.face_id, body.entity_id)
                    self.s.remote_tokens[tid] = key
                    if tid in ls.given:
                        return  # it came as a future declaration first
                    ls.given.add(tid)
                if intersects(ls.key, key):
                    self.s.deliveries.append((ls.sink, t.Sample(ke, t.ZBytes(b""))))
                return
        tid = (self.s.face_id, body.entity_id)
        if body.entity_id and self.s.remote_tokens.get(tid) == key:
            return  # already known (announced for another interest)
        if body.entity_id:
            self.s.remote_tokens[tid] = key
        self.token_event(key, t.SampleKind.PUT, tid if body.entity_id else None)

    def on_untoken(self, body: UndeclareToken) -> None:
        tid = (self.s.face_id, body.entity_id)
        key = self.s.remote_tokens.pop(tid, None)
        if key is None and body.ext_wire_expr is not None and body.ext_wire_expr.suffix:
            key = self.s.resolve(body.ext_wire_expr)
        if key is not None:
            self.token_event(key, t.SampleKind.DELETE, tid)

    def token_event(self, key: str, kind: t.SampleKind, tid: tuple[int, int] | None = None) -> None:
        """A token appeared or went: every liveliness subscriber on ``key`` is told
        (``tid``: a remote token's (face, id), recorded as given to each of them)."""
        ke = self.s.ke(key)
        if ke is None:
            return
        sample = t.Sample(ke, t.ZBytes(b""), kind)
        for ls in self.s.lsubs.values():
            if intersects(ls.key, key):
                if tid is not None:
                    if kind is t.SampleKind.PUT:
                        ls.given.add(tid)
                    else:
                        ls.given.discard(tid)
                self.s.deliveries.append((ls.sink, sample))
