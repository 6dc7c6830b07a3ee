"""Forwarding: what a peer routes between its links, as a 1.10.2 peer does.

One rule (:meth:`Forwarding.passes`): a declaration or a sample that came in on face
``src`` goes out on face ``dst`` when they differ and at least one of them is a client.
A peer thus relays between its clients and everything else, never from one peer (or
router) to another: peers that are linked to each other each send their own clients'
traffic, so nothing arrives twice (measured on 1.10.2: a client of P1 in a triangle of
peers P1, P2, P3 puts 5 samples; P2, P3 and a client of P3 get 5 each).

A subscriber, queryable or liveliness token a face declared is declared again, under an
id of this session, to the faces the rule allows: to a peer at once (or when it opens),
to a client only as its interests ask (in the answer to an interest, liveliness gets
included, then while a CurrentFuture interest covers it: captured on a 1.10.2 peer,
which tells a client nothing else); it is undeclared where it went when its face
undeclares it or is lost. A PUSH is relayed to the faces the rule allows that declared a
matching subscriber, a REQUEST (under a request id of ours) to those that declared a
matching queryable; their RESPONSEs go back to the asker and one RESPONSE_FINAL once
they and this session's own queryables are done (or the query's timeout passed). Keys
are spelled in full (the sender's expression ids mean nothing elsewhere). Clients count
as declared from the start: they send no D_FINAL(0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from pyzenoh.codec import (
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Del,
    Interest,
    InterestMode,
    InterestOptions,
    Push,
    Put,
    Request,
    Response,
    ResponseFinal,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
)
from pyzenoh.codec import primitives as _p
from pyzenoh.codec.network import QOS_PRIORITY_MASK, QOS_REQUEST
from pyzenoh.dataplane import PushRun
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.state import CoreState, Face

#: Queries relayed and not yet final, at most (settable per session: Forwarding.max_relays).
MAX_RELAYS = 10_000

#: Future interests of one client followed at most (Forwarding.max_interests).
MAX_INTERESTS = 10_000

#: what a face declared, by kind: the declaration and the undeclaration this session sends
SUB, QABL, TOKEN = "sub", "qabl", "token"


@dataclasses.dataclass(slots=True)
class Forwarded:
    """A subscriber, queryable or token of face ``src`` as this session declares it to
    the others."""

    kind: str
    src: int
    wire_id: int
    key: str
    complete: bool = False
    #: the faces it was declared to (its undeclaration goes to them)
    sent: set[int] = dataclasses.field(default_factory=set)

    def declaration(self) -> DeclareSubscriber | DeclareQueryable | DeclareToken:
        we = WireExpr(0, self.key, True)
        if self.kind == SUB:
            return DeclareSubscriber(self.wire_id, we)
        if self.kind == QABL:
            return DeclareQueryable(self.wire_id, we, complete=self.complete)
        return DeclareToken(self.wire_id, we)

    def undeclaration(self) -> UndeclareSubscriber | UndeclareQueryable | UndeclareToken:
        if self.kind == SUB:
            return UndeclareSubscriber(self.wire_id)
        if self.kind == QABL:
            return UndeclareQueryable(self.wire_id)
        # as zenoh's, a token's undeclaration names its key
        return UndeclareToken(self.wire_id, WireExpr(0, self.key, True))


_OPTION = {SUB: InterestOptions.SUBSCRIBERS, QABL: InterestOptions.QUERYABLES, TOKEN: InterestOptions.TOKENS}


class Forwarding:
    """The peer's relaying of its faces' declarations, samples and queries (see the
    module docstring)."""

    def __init__(self, s: CoreState, matching: Matching) -> None:
        self.s = s
        self.matching = matching
        #: (kind, source face, its entity id) -> the entity as forwarded
        self.decls: dict[tuple[str, int, int], Forwarded] = {}
        #: our request id -> the query relayed under it
        self.relayed: dict[int, Relay] = {}
        #: (source face, its request id) -> the query relayed for it
        self.relays: dict[tuple[int, int], Relay] = {}
        #: queries relayed at once at most (one asker flooding us affects only itself);
        #: a query past it is answered by this session's queryables only, and counted
        self.max_relays = MAX_RELAYS
        self.relays_refused = 0
        #: client face -> its CurrentFuture/Future interests: id -> (options, key or None)
        self.interests: dict[int, dict[int, tuple[int, str | None]]] = {}
        #: interests kept per client face at most (past it: answered, not followed; counted)
        self.max_interests = MAX_INTERESTS
        self.interests_refused = 0

    # --- the rule ----------------------------------------------------------------------------

    def passes(self, src: Face, dst: Face) -> bool:
        """Whether what came from ``src`` goes on to ``dst``: a peer relays between its
        clients and its other links, never from one non-client link to another."""
        if self.s.mode is not WhatAmI.PEER or src.fid == dst.fid:
            return False
        return src.peer.whatami is WhatAmI.CLIENT or dst.peer.whatami is WhatAmI.CLIENT

    def _targets(self, src_fid: int) -> Iterator[Face]:
        src = self.s.faces.get(src_fid)
        if src is None:
            return
        for dst in list(self.s.faces.values()):
            if self.passes(src, dst):
                yield dst

    # --- declarations ------------------------------------------------------------------------

    def declared(self, kind: str, eid: int, key: str, complete: bool = False) -> None:
        """The current face declared a subscriber, queryable or token ``eid`` on ``key``."""
        if self.s.mode is not WhatAmI.PEER:
            return
        src = self.s.face_id
        f = self.s.faces.get(src)
        if f is None:
            return
        fw = self.decls.get((kind, src, eid))
        if fw is None:
            fw = self.decls[(kind, src, eid)] = Forwarded(kind, src, self.s.wire_id(), key, complete)
        elif (fw.key, fw.complete) == (key, complete):
            return  # the same again (announced for another interest)
        else:
            fw.key, fw.complete = key, complete
        for dst in self._targets(src):
            if self._follows(dst, fw):
                self._declare_to(dst.fid, fw)

    def undeclared(self, kind: str, eid: int) -> None:
        fw = self.decls.pop((kind, self.s.face_id, eid), None)
        if fw is not None:
            self._undeclare(fw)

    def _declare_to(self, fid: int, fw: Forwarded, interest_id: int | None = None) -> None:
        self.s.declare(fw.declaration(), interest_id, face=fid)
        fw.sent.add(fid)

    def _undeclare(self, fw: Forwarded) -> None:
        for fid in sorted(fw.sent):
            if fid in self.s.faces:
                self.s.declare(fw.undeclaration(), face=fid)

    def _follows(self, dst: Face, fw: Forwarded) -> bool:
        """Whether a new declaration goes to ``dst`` unasked: to a peer always (peers
        announce everything), to a client only under a future interest of its that covers
        it (measured: a 1.10.2 peer declares nothing else to a client)."""
        if dst.peer.whatami is not WhatAmI.CLIENT:
            return True
        option = _OPTION[fw.kind]
        return any(
            opts & option and (k is None or intersects(k, fw.key))
            for opts, k in self.interests.get(dst.fid, {}).values()
        )

    def interest(self, f: Face, msg: Interest, key: str | None) -> None:
        """An interest of face ``f`` (a client's): its current part is answered by the
        caller with :meth:`answer`, its future part followed here until its FINAL."""
        if self.s.mode is not WhatAmI.PEER or f.peer.whatami is not WhatAmI.CLIENT:
            return
        mine = self.interests.setdefault(f.fid, {})
        if msg.mode is InterestMode.FINAL:
            mine.pop(msg.interest_id, None)
        elif msg.mode in (InterestMode.FUTURE, InterestMode.CURRENT_FUTURE):
            if len(mine) >= self.max_interests and msg.interest_id not in mine:
                self.interests_refused += 1
                return
            mine[msg.interest_id] = (int(msg.options), key)

    def answer(self, kind: str, dst: Face, key: str | None, interest_id: int) -> None:
        """The forwarded entities of ``kind`` face ``dst`` may know of that intersect
        ``key``, declared to it in answer to its interest."""
        followed = interest_id in self.interests.get(dst.fid, {})
        for fw in self.declarations_for(kind, dst, key):
            if followed:
                self._declare_to(dst.fid, fw, interest_id)
            else:  # a current-only answer (a liveliness get): no undeclaration will follow
                self.s.declare(fw.declaration(), interest_id, face=dst.fid)

    def declarations_for(self, kind: str, dst: Face, key: str | None = None) -> list[Forwarded]:
        """The forwarded entities of ``kind`` face ``dst`` may know of (``key``: those
        intersecting it)."""
        out = []
        for fw in self.decls.values():
            if fw.kind != kind:
                continue
            src = self.s.faces.get(fw.src)
            if src is not None and self.passes(src, dst) and (key is None or intersects(fw.key, key)):
                out.append(fw)
        return out

    # --- faces -------------------------------------------------------------------------------

    def face_opened(self, f: Face) -> None:
        """A face opened: a client declares as it goes (no D_FINAL(0) to wait for); the
        others' entities the rule lets it know of are declared to it (before the
        D_FINAL(0) that ends a peer's initial declarations)."""
        if self.s.mode is not WhatAmI.PEER:
            return
        if f.peer.whatami is WhatAmI.CLIENT:
            f.declared = True
            return  # a client is told what it asks for (its interests)
        for kind in (SUB, QABL, TOKEN):
            for fw in self.declarations_for(kind, f):
                self._declare_to(f.fid, fw)

    def face_lost(self, fid: int) -> None:
        """A face is gone (already out of the faces): its entities are undeclared where
        they were forwarded; the queries relayed to it end without it, those it asked go."""
        self.interests.pop(fid, None)
        for k in [k for k in self.decls if k[1] == fid]:
            self._undeclare(self.decls.pop(k))
        for fw in self.decls.values():
            fw.sent.discard(fid)
        for rid, r in list(self.relayed.items()):
            if r.src == fid:
                self._drop(r)
            elif fid in r.pending:
                r.pending.discard(fid)
                self._maybe_final(r)

    # --- samples -----------------------------------------------------------------------------

    def push(self, msg: Push, key: str) -> None:
        """A PUSH on ``key`` from the current face, relayed where the rule and the
        declared subscribers want it."""
        if self.s.mode is not WhatAmI.PEER:
            return
        out: Push | None = None
        for dst in self._targets(self.s.face_id):
            if dst.declared and self.matching.face_wants(dst, key):
                if out is None:
                    out = dataclasses.replace(msg, wire_expr=WireExpr(0, key, True), body_offset=-1)
                self.s.send(out, msg.qos & QOS_PRIORITY_MASK, face=dst.fid)

    def push_run(self, run: PushRun, key: str) -> None:
        """A run of PUSHes from the current face, each relayed as :meth:`push` would."""
        if self.s.mode is not WhatAmI.PEER:
            return
        dsts = [d for d in self._targets(self.s.face_id) if d.declared and self.matching.face_wants(d, key)]
        if not dsts:
            return
        for msg in _run_messages(run, key):
            for dst in dsts:
                self.s.send(msg, msg.qos & QOS_PRIORITY_MASK, face=dst.fid)

    # --- queries -----------------------------------------------------------------------------

    def request(self, msg: Request, key: str, now: float) -> None:
        """A query from the current face: relayed, under a request id of ours, to the
        faces the rule allows whose queryables may answer it; their replies go back to
        the asker, and one RESPONSE_FINAL once they and this session's queryables are done."""
        if self.s.mode is not WhatAmI.PEER:
            return
        src = self.s.face_id
        dsts = [d.fid for d in self._targets(src) if d.declared and self.matching.face_answers(d, key, msg.target)]
        if not dsts:
            return
        if len(self.relays) >= self.max_relays:
            self.relays_refused += 1
            return
        rid = self.s.next_rid
        self.s.next_rid += 1
        timeout = self.s.query_timeout_s if msg.timeout_ms is None else msg.timeout_ms / 1000
        r = Relay(rid, src, msg.request_id, msg.qos & QOS_PRIORITY_MASK, set(dsts), now + timeout)
        self.relayed[rid] = r
        self.relays[(src, msg.request_id)] = r
        out = dataclasses.replace(msg, request_id=rid, wire_expr=WireExpr(0, key, True))
        for fid in dsts:
            self.s.send(out, r.priority, face=fid)

    def local_final(self, fid: int, rid: int) -> bool:
        """This session's queryables are done with query ``rid`` of face ``fid``: whether
        its RESPONSE_FINAL is ours to send (a relay still waits on other faces)."""
        r = self.relays.get((fid, rid))
        if r is None:
            return False
        r.local_done = True
        self._maybe_final(r)
        return True

    def response(self, msg: Response) -> bool:
        """A reply from the current face: whether it was to a relayed query (then it goes
        on to the asker, its key in full)."""
        r = self.relayed.get(msg.request_id)
        if r is None:
            return False
        key = self.s.resolve(msg.wire_expr)
        if key is not None and self.s.face_id in r.pending:
            out = dataclasses.replace(msg, request_id=r.src_rid, wire_expr=WireExpr(0, key, True))
            self.s.send(out, r.priority, face=r.src)
        return True

    def response_final(self, msg: ResponseFinal) -> bool:
        r = self.relayed.get(msg.request_id)
        if r is None:
            return False
        r.pending.discard(self.s.face_id)
        self._maybe_final(r)
        return True

    def next_deadline(self) -> float | None:
        return min((r.deadline for r in self.relayed.values()), default=None)

    def handle_timer(self, now: float) -> None:
        """Relayed queries past their timeout end for their asker (their late replies are dropped)."""
        for r in [r for r in self.relayed.values() if r.deadline <= now]:
            r.pending.clear()
            r.local_done = True
            self._maybe_final(r)

    def _maybe_final(self, r: Relay) -> None:
        if r.pending or not r.local_done:
            return
        self._drop(r)
        self.s.send(ResponseFinal(r.src_rid, qos=QOS_REQUEST), r.priority, face=r.src)

    def _drop(self, r: Relay) -> None:
        self.relayed.pop(r.rid, None)
        self.relays.pop((r.src, r.src_rid), None)


@dataclasses.dataclass(slots=True)
class Relay:
    """A query of face ``src`` relayed to other faces as our request ``rid``."""

    rid: int
    src: int
    src_rid: int
    priority: int
    #: the faces whose RESPONSE_FINAL is awaited
    pending: set[int]
    deadline: float
    #: this session's own queryables are done with it (their final is held here)
    local_done: bool = False


def _run_messages(run: PushRun, key: str) -> list[Push]:
    """The PUSHes of a run, rebuilt with ``key`` in full."""
    first = dataclasses.replace(run.first, wire_expr=WireExpr(0, key, True), body_offset=-1)
    body = first.body
    if isinstance(body, Del):
        return [first] * run.count
    times = run.times() if run.stamped else None
    out: list[Push] = []
    for i, payload in enumerate(run.payloads()):
        b: Put = dataclasses.replace(body, payload=payload)
        if times is not None and body.timestamp is not None:
            b = b.with_timestamp(_p.Timestamp(times[i], body.timestamp.id))
        out.append(dataclasses.replace(first, body=b))
    return out
