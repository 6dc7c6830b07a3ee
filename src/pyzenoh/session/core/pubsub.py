"""Publication and subscription: subscribers, publishers, puts, and received PUSHes.

A subscriber is declared once per distinct key (D_SUBSCRIBER); ``allowed_origin``
SESSION_LOCAL keeps it off the wire. A publisher binds its key to an expression id and
sends a CurrentFuture K|S interest, whose answers (and D_FINAL) drive write-side
filtering (:mod:`.matching`). A put reaches this session's matching subscribers at once
and goes to the faces that want it; a received PUSH (or a run of them) goes to the
subscribers whose key intersects it.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from pyzenoh.codec import (
    DeclareSubscriber,
    Del,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    Push,
    Put,
    UndeclareSubscriber,
    WireExpr,
)
from pyzenoh.codec import primitives as _p
from pyzenoh.codec.network import QOS_DECLARE, qos_value
from pyzenoh.codec.transport import PRIORITY_DATA
from pyzenoh.dataplane import PushRun
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session.core.forwarding import Forwarding
from pyzenoh.session.core.matching import Matching
from pyzenoh.session.core.state import (
    END,
    LOCAL_AND_REMOTE,
    REMOTE_ONLY,
    SESSION_LOCAL,
    CoreState,
    EncodedRun,
    LocalPublisher,
    LocalSubscriber,
    SampleBatch,
)
from pyzenoh.session.samples import PRIORITIES, local_sample, run_samples, wire_sample


class PubSub:
    """Subscribers, publishers and publications."""

    def __init__(self, s: CoreState, matching: Matching, forwarding: Forwarding) -> None:
        self.s = s
        self.matching = matching
        self.forwarding = forwarding

    # --- subscribers -------------------------------------------------------------------------

    def declare_subscriber(self, key: str, sink: Any, origin: int = LOCAL_AND_REMOTE) -> int:
        """A subscriber; ``origin`` (a Locality value) SESSION_LOCAL takes only this
        session's publications (nothing is declared to the router), REMOTE only others'."""
        self.s.check_open()
        local = self.s.local_id()
        if origin == SESSION_LOCAL:
            self.s.local_only_subs[local] = LocalSubscriber(key, sink)
            self.matching.update_matching()
            return local
        if origin == REMOTE_ONLY:
            self.s.remote_only_sinks.add(id(sink))
        self.s.subs[local] = LocalSubscriber(key, sink)
        new = self.s.declare_entity(self.s.sub_decls, key)
        if new is not None:
            self.s.declare(DeclareSubscriber(new.wire_id, WireExpr(0, key, True)))
        self.matching.invalidate()
        self.matching.update_matching()
        return local

    def subscriber_wire_id(self, local: int) -> int:
        """The id a subscriber is known by (its declaration's id; its own if local-only)."""
        sub = self.s.subs.get(local)
        d = None if sub is None else self.s.sub_decls.get(sub.key)
        return local if d is None else d.wire_id

    def undeclare_subscriber(self, local: int) -> None:
        lsub = self.s.local_only_subs.pop(local, None)
        if lsub is not None:
            self.s.deliveries.append((lsub.sink, END))
            self.matching.update_matching()
            return
        sub = self.s.subs.pop(local, None)
        if sub is None:
            return
        self.s.remote_only_sinks.discard(id(sub.sink))
        self.s.deliveries.append((sub.sink, END))
        last = self.s.release_entity(self.s.sub_decls, sub.key)
        if last is not None and not self.s.closed:
            self.s.declare(UndeclareSubscriber(last.wire_id))
        self.matching.invalidate()
        self.matching.update_matching()

    # --- publishers and publications ---------------------------------------------------------

    def declare_publisher(self, key: str) -> int:
        """A publisher: D_KEYEXPR for its key and a CurrentFuture K|S interest."""
        self.s.check_open()
        expr_id = self.s.declare_keyexpr(key)
        iid = self.s.wire_id()
        pub = LocalPublisher(key, iid, expr_id)
        local = self.s.local_id()
        self.s.pubs[local] = pub
        self.s.pub_interests[iid] = pub
        self.s.to_routers(
            Interest(
                iid,
                InterestMode.CURRENT_FUTURE,
                InterestOptions.KEYEXPRS | InterestOptions.SUBSCRIBERS,
                WireExpr(expr_id, "", True),
                qos=QOS_DECLARE,
            ),
        )
        pub.matching = self.matching.pub_matching(pub)
        return local

    def undeclare_publisher(self, local: int) -> None:
        pub = self.s.pubs.pop(local, None)
        if pub is None:
            return
        self.s.pub_interests.pop(pub.interest_id, None)
        self.s.finalized.discard(pub.interest_id)
        self.matching.allow_changed()
        for sink in pub.listeners:
            self.s.deliveries.append((sink, END))
        if not self.s.closed:
            self.s.to_routers(Interest(pub.interest_id, InterestMode.FINAL, qos=QOS_DECLARE))

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
        self.s.check_open()
        if destination != REMOTE_ONLY:
            sinks = self.matching.local_sinks(key)
            if sinks:
                sample = local_sample(KeyExpr._trusted(key), body, priority, block, express)
                if ts_stack is not None:
                    sample = dataclasses.replace(sample, timestamp_stack=ins.to_stack(self.s.received_stack(ts_stack)))
                for sink in sinks:
                    self.s.deliveries.append((sink, sample))
        if destination != SESSION_LOCAL and self.s.faces:
            if not self.s.peer_faces:
                if self.matching.send_allowed(key):
                    push = Push(self.s.key_wire(key), body, qos=qos_value(priority, block, express), ts_stack=ts_stack)
                    self.s.outbox.append((push, reliable, priority, not block, express, None))
                return
            push = Push(self.s.key_wire(key), body, qos=qos_value(priority, block, express), ts_stack=ts_stack)
            self._send_data(push, key, priority, reliable, not block, express)

    def put_encoded_run(
        self,
        key: str,
        raws: list[bytes],
        payloads: list[bytes],
        encoding: _p.Encoding,
        *,
        priority: int = PRIORITY_DATA,
        block: bool = False,
        express: bool = False,
        reliable: bool = True,
        destination: int = LOCAL_AND_REMOTE,
    ) -> None:
        """Publish already-encoded PUSHes of PUTs on one key (a publisher's puts drained
        together), in order: what :meth:`put` does for each, with one decision for all of
        them (local subscribers get one batch, the router one run of messages).

        ``payloads`` and ``encoding`` build the PUTs only if a local subscriber matches.
        """
        self.s.check_open()
        if destination != REMOTE_ONLY:
            sinks = self.matching.local_sinks(key)
            if sinks:
                ke = KeyExpr._trusted(key)
                batch = SampleBatch([local_sample(ke, Put(p, encoding), priority, block, express) for p in payloads])
                for sink in sinks:
                    self.s.deliveries.append((sink, batch))
        if destination != SESSION_LOCAL and self.s.faces:
            if not self.s.peer_faces:
                if self.matching.send_allowed(key):
                    ends = list(itertools.accumulate(map(len, raws)))
                    run = EncodedRun(b"".join(raws), ends)
                    self.s.outbox.append((run, reliable, priority, not block, express, None))
                return
            for raw in raws:  # per face, as each put would go
                self._send_data(raw, key, priority, reliable, not block, express)

    def _send_data(
        self, msg: NetworkMessage | bytes, key: str, priority: int, reliable: bool, droppable: bool, express: bool
    ) -> None:
        if not self.s.peer_faces:
            if self.matching.send_allowed(key):
                self.s.send(msg, priority, reliable=reliable, droppable=droppable, express=express)
            return
        for f in self.s.faces.values():
            if self.matching.face_wants(f, key):
                self.s.send(msg, priority, reliable=reliable, droppable=droppable, express=express, face=f.fid)

    # --- received publications ---------------------------------------------------------------

    def on_push_run(self, run: PushRun) -> None:
        """A run of PUSHes on one key (see :mod:`pyzenoh.session.samples`): each subscriber gets its
        samples as one batch."""
        if self.s.closed:
            return
        key = self.s.resolve(run.first.wire_expr)
        if key is None:
            return
        self.forwarding.push_run(run, key)
        sinks = self.matching.matching_subs(key)
        if not sinks:
            return
        ke = self.s.ke(key)
        if ke is None:
            return
        batch = SampleBatch(run_samples(ke, run, PRIORITIES))
        for sink in sinks:
            self.s.deliveries.append((sink, batch))

    def on_push(self, msg: Push) -> None:
        key = self.s.resolve(msg.wire_expr)
        if key is None:
            return
        self.forwarding.push(msg, key)
        sinks = self.matching.matching_subs(key)
        if not sinks:
            return
        ke = self.s.ke(key)
        if ke is None:
            return
        sample = wire_sample(ke, msg.body, msg.qos)
        if msg.ts_stack is not None:  # timestamp instrumentation: the stack, with our Receive record
            stack = self.s.received_stack(msg.ts_stack)
            sample = dataclasses.replace(sample, timestamp_stack=ins.to_stack(stack))
        for sink in sinks:
            self.s.deliveries.append((sink, sample))
