"""Forwarding: what a peer routes between its links, as a 1.10.2 peer does.

One rule (:meth:`Forwarding.passes`): a declaration or a sample that came in on face
``src`` goes out on face ``dst`` when they differ and at least one of them is a client.
A peer thus relays between its clients and everything else, never from one peer (or
router) to another: peers that are linked to each other each send their own clients'
traffic, so nothing arrives twice (measured on 1.10.2: a client of P1 in a triangle of
peers P1, P2, P3 puts 5 samples; P2, P3 and a client of P3 get 5 each).

Pub/sub only: a subscriber a face declared is declared again, under an id of this
session, to the faces the rule allows (at once, to faces that open later, and in the
answers to their interests); it goes when its face undeclares it or is lost. A PUSH is
relayed to the faces the rule allows that declared a matching subscriber, with its key
spelled in full (the sender's expression ids mean nothing elsewhere). Clients are
treated as declared from the start: they send no D_FINAL(0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from pyzenoh.codec import (
    DeclareSubscriber,
    Del,
    Push,
    Put,
    UndeclareSubscriber,
    WhatAmI,
    WireExpr,
)
from pyzenoh.codec import primitives as _p
from pyzenoh.codec.network import QOS_PRIORITY_MASK
from pyzenoh.dataplane import PushRun
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.state import CoreState, Face


@dataclasses.dataclass(slots=True)
class Forwarded:
    """A subscriber of face ``src`` as this session declares it to the others."""

    src: int
    wire_id: int
    key: str
    #: its face is a client's (then it went to every other face, else to clients only)
    from_client: bool


class Forwarding:
    """The peer's relaying of its faces' subscribers and samples (see the module docstring)."""

    def __init__(self, s: CoreState, matching: Matching) -> None:
        self.s = s
        self.matching = matching
        #: (source face, its entity id) -> the subscriber as forwarded
        self.subs: dict[tuple[int, int], Forwarded] = {}

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

    # --- subscribers -------------------------------------------------------------------------

    def sub_declared(self, eid: int, key: str) -> None:
        """The current face declared subscriber ``eid`` on ``key``."""
        if self.s.mode is not WhatAmI.PEER:
            return
        src = self.s.face_id
        f = self.s.faces.get(src)
        if f is None:
            return
        fw = self.subs.get((src, eid))
        if fw is None:
            client = f.peer.whatami is WhatAmI.CLIENT
            fw = self.subs[(src, eid)] = Forwarded(src, self.s.wire_id(), key, client)
        else:
            fw.key = key
        for dst in self._targets(src):
            self.s.declare(DeclareSubscriber(fw.wire_id, WireExpr(0, key, True)), face=dst.fid)

    def sub_undeclared(self, eid: int) -> None:
        fw = self.subs.pop((self.s.face_id, eid), None)
        if fw is not None:
            for dst in self._targets(fw.src):
                self.s.declare(UndeclareSubscriber(fw.wire_id), face=dst.fid)

    def declarations_for(self, dst: Face, key: str | None = None) -> Iterator[tuple[int, str]]:
        """The forwarded subscribers face ``dst`` may know of (``key``: intersecting it)."""
        for fw in self.subs.values():
            src = self.s.faces.get(fw.src)
            if src is not None and self.passes(src, dst) and (key is None or intersects(fw.key, key)):
                yield fw.wire_id, fw.key

    # --- faces -------------------------------------------------------------------------------

    def face_opened(self, f: Face) -> None:
        """A face opened: a client declares as it goes (no D_FINAL(0) to wait for); the
        others' subscribers the rule lets it know of are declared to it (before the
        D_FINAL(0) that ends a peer's initial declarations)."""
        if self.s.mode is not WhatAmI.PEER:
            return
        if f.peer.whatami is WhatAmI.CLIENT:
            f.declared = True
        for wid, key in list(self.declarations_for(f)):
            self.s.declare(DeclareSubscriber(wid, WireExpr(0, key, True)), face=f.fid)

    def face_lost(self, fid: int) -> None:
        """A face is gone (already out of the faces): its subscribers are undeclared on
        the faces they were forwarded to."""
        gone = [k for k in self.subs if k[0] == fid]
        if not gone:
            return
        for k in gone:
            fw = self.subs.pop(k)
            for dst in list(self.s.faces.values()):
                if fw.from_client or dst.peer.whatami is WhatAmI.CLIENT:  # the rule, its source gone
                    self.s.declare(UndeclareSubscriber(fw.wire_id), face=dst.fid)

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
