"""Synthetic recordings: a scripted router that records what a real one would.

:class:`SimRouter` keeps its own subscriber/queryable tables and, like a router, forwards
PUSHes to faces with an intersecting subscriber, forwards queries to matching queryables
with per-face request ids, relays replies and sends one RESPONSE_FINAL per query. Every
message goes through :class:`~pyzenoh.recording.Recorder` exactly as the router will call
it, encoded with pyzenoh's codec. Faults can be injected (a dropped or an extra delivery)
so the pipeline's audit has something to find. Access control's denials can be scripted
too (a PUT denied on the way in or toward some faces, a subscriber declaration refused):
recorded as the router records them, or, with ``record_denials=False``, not at all (as a
recorder that does not know access control).

:func:`generate` writes a random recording of about N messages, for benchmarks and demos.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field

from pyzenoh.codec.data import Consolidation, Err, Put, Query, Reply
from pyzenoh.codec.network import (
    QOS_DECLARE,
    QOS_REQUEST,
    Declare,
    DeclareFinal,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
    NetworkMessage,
    Push,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    UndeclareQueryable,
    UndeclareSubscriber,
    UndeclareToken,
    encode_network_message,
)
from pyzenoh.codec.primitives import (
    Encoding,
    EntityGlobalId,
    Timestamp,
    WireExpr,
    ZenohId,
)
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.recording import Recorder

MS = 1_000_000
ROUTER_ZID = ZenohId(0xA1A2A3A4A5A6A7A8)
DEFAULT_START_NS = 1_767_225_600 * 1_000_000_000  # 2026-01-01T00:00:00Z


@dataclass
class _Query:
    querier: int
    rid: int
    seq: int
    key: str
    pending: set[int] = field(default_factory=set)  # faces that still owe a RESPONSE_FINAL


class SimRouter:
    """Drives a :class:`Recorder` the way the router does (single run, no real sockets)."""

    def __init__(
        self,
        recorder: Recorder,
        start_ns: int = DEFAULT_START_NS,
        *,
        record_denials: bool = True,
    ) -> None:
        self.rec = recorder
        self.now = start_ns
        self.record_denials = record_denials
        self.links: dict[int, str] = {}
        self.subs: dict[tuple[int, int], str] = {}
        self.queryables: dict[tuple[int, int], str] = {}
        self.tokens: dict[tuple[int, int], str] = {}
        self._rids: dict[int, int] = {}
        self._queries: dict[tuple[int, int], _Query] = {}  # (face, router rid) -> query
        self._intersects = intersects
        self._raw_cache: dict[tuple[str, bytes, str | None], bytes] = {}

    # -- time and links ---------------------------------------------------------------------

    def advance(self, ns: int) -> None:
        self.now += ns

    def open(self, link: int, zid: str, whatami: str = "client") -> None:
        self.links[link] = zid
        self.rec.link_opened(self.now, link, zid, whatami, f"tcp/127.0.0.1:{40000 + link}")

    def close(self, link: int, reason: str = "closed by peer") -> None:
        self.links.pop(link, None)
        for table in (self.subs, self.queryables, self.tokens):
            for k in [k for k in table if k[0] == link]:
                del table[k]
        self.rec.link_closed(self.now, link, reason)

    def _rx(self, link: int, key: str | None, msg: NetworkMessage) -> int:
        return self.rec.message(self.now, link, "rx", key, encode_network_message(msg))

    def _tx(self, link: int, key: str | None, msg: NetworkMessage, cause: int) -> int:
        return self.rec.message(self.now, link, "tx", key, encode_network_message(msg), cause)

    def _denied(self, cause: int, link: int, flow: str, message: str, key: str, rule: str) -> None:
        if self.record_denials:
            self.rec.access_denied(
                self.now,
                cause,
                link,
                flow,
                message,
                key,
                f"{flow} {message} denied by rule '{rule}'",
            )

    # -- declarations --------------------------------------------------------------------------

    def declare_subscriber(self, link: int, eid: int, key: str, *, denied_by: str | None = None) -> int:
        """A subscriber declaration; ``denied_by``: access control refuses it (that rule)."""
        seq = self._rx(
            link,
            key,
            Declare(DeclareSubscriber(eid, WireExpr(0, key)), qos=QOS_DECLARE),
        )
        if denied_by is None:
            self.subs[(link, eid)] = key
        else:
            self._denied(seq, link, "ingress", "declare_subscriber", key, denied_by)
        return seq

    def undeclare_subscriber(self, link: int, eid: int) -> int:
        self.subs.pop((link, eid), None)
        return self._rx(link, None, Declare(UndeclareSubscriber(eid), qos=QOS_DECLARE))

    def declare_queryable(self, link: int, eid: int, key: str, complete: bool = True) -> int:
        self.queryables[(link, eid)] = key
        body = DeclareQueryable(eid, WireExpr(0, key), complete=complete, distance=0)
        return self._rx(link, key, Declare(body, qos=QOS_DECLARE))

    def undeclare_queryable(self, link: int, eid: int) -> int:
        self.queryables.pop((link, eid), None)
        return self._rx(link, None, Declare(UndeclareQueryable(eid), qos=QOS_DECLARE))

    def declare_token(self, link: int, eid: int, key: str) -> int:
        self.tokens[(link, eid)] = key
        seq = self._rx(link, key, Declare(DeclareToken(eid, WireExpr(0, key)), qos=QOS_DECLARE))
        # The router tells the other clients about the token (its own entity ids).
        for other in sorted(self.links):
            if other != link:
                self._tx(
                    other,
                    key,
                    Declare(DeclareToken(eid, WireExpr(0, key)), qos=QOS_DECLARE),
                    seq,
                )
        return seq

    def undeclare_token(self, link: int, eid: int) -> int:
        self.tokens.pop((link, eid), None)
        seq = self._rx(link, None, Declare(UndeclareToken(eid), qos=QOS_DECLARE))
        for other in sorted(self.links):
            if other != link:
                self._tx(other, None, Declare(UndeclareToken(eid), qos=QOS_DECLARE), seq)
        return seq

    def interest(self, link: int, iid: int, key: str) -> int:
        """A CurrentFuture interest for subscribers: answered with the current ones + D_FINAL."""
        msg = Interest(
            iid,
            InterestMode.CURRENT_FUTURE,
            InterestOptions.KEYEXPRS | InterestOptions.SUBSCRIBERS,
            WireExpr(0, key),
            qos=QOS_DECLARE,
        )
        seq = self._rx(link, key, msg)
        for (sub_link, eid), sub_key in sorted(self.subs.items()):
            if sub_link != link and self._intersects(sub_key, key):
                body = DeclareSubscriber(eid, WireExpr(0, sub_key))
                self._tx(link, sub_key, Declare(body, interest_id=iid, qos=QOS_DECLARE), seq)
        self._tx(link, None, Declare(DeclareFinal(), interest_id=iid, qos=QOS_DECLARE), seq)
        return seq

    # -- data --------------------------------------------------------------------------------

    def subscribers_for(self, link: int, key: str) -> list[int]:
        return sorted({s for (s, _), k in self.subs.items() if s != link and self._intersects(k, key)})

    def put(
        self,
        link: int,
        key: str,
        payload: bytes,
        encoding: str | None = None,
        *,
        drop: tuple[int, ...] = (),
        extra: tuple[int, ...] = (),
        route: list[int] | None = None,
        denied_in: str | None = None,
        denied_out: tuple[int, ...] = (),
        rule: str = "deny-put",
    ) -> int:
        """A client's PUT, routed.

        Faults for the audit to find: ``drop`` faces are not sent the message, ``extra``
        faces are sent it anyway, and ``route`` replaces the routing decision recorded.
        Access control: ``denied_in`` (a rule) denies it on the way in (it goes nowhere),
        ``rule`` denies it toward the subscribed faces of ``denied_out``.
        """
        cache_key = (key, payload, encoding)
        raw = self._raw_cache.get(cache_key)
        enc = Encoding.from_str(encoding) if encoding else Encoding.DEFAULT
        if raw is None:
            raw = encode_network_message(Push(WireExpr(0, key), Put(payload, enc)))
            if len(self._raw_cache) < 4096:
                self._raw_cache[cache_key] = raw
        seq = self.rec.message(self.now, link, "rx", key, raw)
        if denied_in is not None:
            self._denied(seq, link, "ingress", "put", key, denied_in)
            for face in extra:
                self.rec.message(self.now, face, "tx", key, raw, seq)
            return seq
        expected = self.subscribers_for(link, key)
        for face in expected:
            if face in denied_out:
                self._denied(seq, face, "egress", "put", key, rule)
        expected = [f for f in expected if f not in denied_out]
        self.rec.route(self.now, seq, key, expected if route is None else route)
        stamped = Push(WireExpr(0, key), Put(payload, enc, Timestamp.from_ns(self.now, ROUTER_ZID)))
        out = encode_network_message(stamped)
        for face in sorted((set(expected) - set(drop)) | set(extra)):
            self.rec.message(self.now, face, "tx", key, out, seq)
        return seq

    def get(
        self,
        link: int,
        rid: int,
        key: str,
        parameters: str = "",
        timeout_ms: int = 10_000,
        target: int = QueryTarget.BEST_MATCHING,
    ) -> tuple[int, dict[int, int]]:
        """A client's query; returns its seq and {queryable face: router rid on that face}."""
        req = Request(
            rid,
            WireExpr(0, key),
            Query(Consolidation.LATEST, parameters),
            qos=QOS_REQUEST,
            target=target,
            timeout_ms=timeout_ms,
        )
        seq = self._rx(link, key, req)
        faces = sorted({q for (q, _), k in self.queryables.items() if q != link and self._intersects(k, key)})
        q = _Query(link, rid, seq, key, set(faces))
        forwarded: dict[int, int] = {}
        for face in faces:
            r = self._rids.get(face, 0) + 1
            self._rids[face] = r
            forwarded[face] = r
            self._queries[(face, r)] = q
            fwd = Request(
                r,
                WireExpr(0, key),
                Query(Consolidation.LATEST, parameters),
                qos=QOS_REQUEST,
                target=target,
                timeout_ms=timeout_ms,
            )
            self._tx(face, key, fwd, seq)
        if not faces:
            self._tx(link, None, ResponseFinal(rid, qos=QOS_REQUEST), seq)
        return seq, forwarded

    def reply(self, face: int, router_rid: int, key: str, payload: bytes) -> int:
        q = self._queries[(face, router_rid)]
        responder = EntityGlobalId(ZenohId.from_str(self.links.get(face, "1")), 0)
        body = Reply(Put(payload, Encoding.from_str("text/plain")))
        seq = self._rx(
            face,
            key,
            Response(router_rid, WireExpr(0, key), body, QOS_REQUEST, responder=responder),
        )
        self._tx(
            q.querier,
            key,
            Response(q.rid, WireExpr(0, key), body, QOS_REQUEST, responder=responder),
            seq,
        )
        return seq

    def reply_err(self, face: int, router_rid: int, payload: bytes) -> int:
        q = self._queries[(face, router_rid)]
        body = Err(payload, Encoding.from_str("text/plain"))
        seq = self._rx(face, q.key, Response(router_rid, WireExpr(0, q.key), body, QOS_REQUEST))
        self._tx(
            q.querier,
            q.key,
            Response(q.rid, WireExpr(0, q.key), body, QOS_REQUEST),
            seq,
        )
        return seq

    def final(self, face: int, router_rid: int) -> int:
        q = self._queries.pop((face, router_rid))
        seq = self._rx(face, None, ResponseFinal(router_rid, qos=QOS_REQUEST))
        q.pending.discard(face)
        if not q.pending:
            self._tx(q.querier, None, ResponseFinal(q.rid, qos=QOS_REQUEST), seq)
        return seq

    def expire(self, face: int, router_rid: int) -> None:
        """The per-destination timeout: ERR "Timeout" to the querier, then maybe the final."""
        q = self._queries.pop((face, router_rid))
        responder = EntityGlobalId(ZenohId.from_str(self.links.get(face, "1")), 0)
        err = Response(q.rid, WireExpr(0, q.key), Err(b"Timeout"), QOS_REQUEST, responder=responder)
        self._tx(q.querier, q.key, err, q.seq)
        q.pending.discard(face)
        if not q.pending:
            self._tx(q.querier, None, ResponseFinal(q.rid, qos=QOS_REQUEST), q.seq)


def generate(
    directory: str | os.PathLike[str],
    n_messages: int,
    *,
    seed: int = 7,
    clients: int = 8,
    payload_size: int = 64,
    max_segment_bytes: int = 64 << 20,
    step_ns: int = MS,
) -> int:
    """Write a random but router-consistent recording of about ``n_messages`` messages.

    Returns the number of records written (every record takes one seq).
    """
    rnd = random.Random(seed)
    keys = [f"demo/{room}/{dev}" for room in ("kitchen", "hall", "lab", "roof") for dev in ("temp", "hum", "co2")]
    sub_keys = [
        "demo/**",
        "demo/kitchen/*",
        "demo/*/temp",
        "demo/lab/**",
        "demo/roof/co2",
    ]
    with Recorder(directory, max_segment_bytes=max_segment_bytes) as rec:
        sim = SimRouter(rec)
        for link in range(1, clients + 1):
            sim.open(link, format(0x1000 + link, "x"))
        for link in range(1, clients + 1):
            sim.declare_subscriber(link, 1, sub_keys[link % len(sub_keys)])
        sim.declare_queryable(clients, 1, "demo/q/**")
        payloads = [bytes(rnd.randrange(256) for _ in range(payload_size)) for _ in range(16)]
        rid = 0
        token = 0
        limit = n_messages * 4 + 1000  # bounded even when routing fans out little
        for _ in range(limit):
            if rec.next_seq >= n_messages:
                break
            sim.advance(step_ns)
            r = rnd.random()
            link = rnd.randrange(1, clients)
            if r < 0.90:
                sim.put(
                    link,
                    rnd.choice(keys),
                    rnd.choice(payloads),
                    "application/octet-stream",
                )
            elif r < 0.96:
                rid += 1
                _, fwd = sim.get(link, rid, f"demo/q/{rid % 5}", "n=1", timeout_ms=1000)
                for face, frid in fwd.items():
                    outcome = rnd.random()
                    sim.advance(rnd.randrange(1, 40) * step_ns)
                    if outcome < 0.05:
                        sim.advance(1000 * MS)
                        sim.expire(face, frid)
                        continue
                    if outcome < 0.10:
                        sim.reply_err(face, frid, b"no such sensor")
                    else:
                        sim.reply(face, frid, f"demo/q/{rid % 5}", b"answer")
                    sim.advance(rnd.randrange(0, 5) * step_ns)
                    sim.final(face, frid)
            elif r < 0.98:
                token += 1
                sim.declare_token(link, token, f"demo/alive/{token}")
            elif token and r < 0.99:
                sim.undeclare_token(link, rnd.randrange(1, token + 1))
            else:
                eid = rnd.randrange(2, 6)
                if (link, eid) in sim.subs:
                    sim.undeclare_subscriber(link, eid)
                else:
                    sim.declare_subscriber(link, eid, rnd.choice(sub_keys))
        return rec.next_seq
