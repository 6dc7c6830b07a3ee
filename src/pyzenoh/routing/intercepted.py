"""Interceptors (zenohd's ``downsampling``, ``low_pass_filter``, ``qos/network``) in routing:
on a data route, which of the route's faces have a policy that can touch its key, and
what the policies decide for one message; for queries and replies, one face's decision
(:func:`decide`), as the query rule asks it per message.

The policy itself lives in :mod:`pyzenoh.interceptors`; routing only asks it. A route
whose key no policy restricts carries no :class:`InterceptedRoute` and costs nothing
(the fast lanes take it); a restricted one is executed by the message lane only, as a
route access control restricts. Ingress policies are the source face's; egress ones the
destination faces'. Every drop is counted by the policy and reported to the tables
(:meth:`~pyzenoh.routing.tables.Tables.drop`), which the recorder sees.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyzenoh.codec import Err, Put, Query, Reply, Request, Response
from pyzenoh.codec.network import QOS_BLOCK, QOS_BLOCK_FIRST, QOS_EXPRESS, QOS_PRIORITY_MASK
from pyzenoh.interceptors import KEEP, Decision, Drop, FacePolicy, KeyPolicy, Kind, Message, Rewrite

#: The interceptors' congestion control values (zenohd's names: drop, block, block_first)
#: as the QoS byte's bits.
_CONGESTION_BITS = (0, QOS_BLOCK, QOS_BLOCK_FIRST)


def rewritten_qos(qos: int, rewrite: Rewrite) -> int:
    """The QoS byte with a ``qos/network`` overwrite's fields written over it."""
    if rewrite.priority is not None:
        qos = (qos & ~QOS_PRIORITY_MASK) | rewrite.priority
    if rewrite.congestion_control is not None:
        qos = (qos & ~(QOS_BLOCK | QOS_BLOCK_FIRST)) | _CONGESTION_BITS[rewrite.congestion_control]
    if rewrite.express is not None:
        qos = (qos | QOS_EXPRESS) if rewrite.express else (qos & ~QOS_EXPRESS)
    return qos


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the interceptors let through of one message: the destination faces kept, per
    face the QoS to write (absent: unchanged), and the egress drops (face, why)."""

    faces: frozenset[int]
    qos: dict[int, int]
    dropped: tuple[tuple[int, Drop], ...] = ()


@dataclass(frozen=True, slots=True)
class InterceptedRoute:
    """The policies that can touch one route's key: the source's ingress one, and the
    egress ones of the destinations (face id, policy). Made once with the route."""

    ingress: KeyPolicy | None
    egress: tuple[tuple[int, KeyPolicy], ...]

    @staticmethod
    def of(
        key: str, ingress: FacePolicy | None, egress: Iterable[tuple[int, FacePolicy | None]]
    ) -> InterceptedRoute | None:
        """None when no policy on the route restricts ``key`` (the route pays nothing).
        What each policy does with the key is decided here, once per route."""
        inp = None if ingress is None else ingress.for_key(key)
        out = []
        for fid, p in egress:
            kp = None if p is None else p.for_key(key)
            if kp is not None:
                out.append((fid, kp))
        return None if inp is None and not out else InterceptedRoute(inp, tuple(out))

    def apply(self, msg: Message, qos: int, faces: Iterable[int], now: float) -> Verdict | Drop:
        """The decisions for one message on ``faces`` (the route's destinations after
        access control): a :class:`Drop` when the ingress policy drops it, else what goes
        where. ``now`` is monotonic seconds (downsampling's clock)."""
        first: Rewrite | None = None
        if self.ingress is not None:
            decision = self.ingress.apply(msg, now)
            if isinstance(decision, Drop):
                return decision
            if isinstance(decision, Rewrite):
                first = decision
        kept = set(faces)
        rewrites: dict[int, Rewrite | None] = dict.fromkeys(kept, first)
        dropped: list[tuple[int, Drop]] = []
        for fid, policy in self.egress:
            if fid not in kept:
                continue
            decision = policy.apply(msg, now)
            if isinstance(decision, Drop):
                kept.discard(fid)
                del rewrites[fid]
                dropped.append((fid, decision))
            elif isinstance(decision, Rewrite):
                rewrites[fid] = decision if first is None else first.then(decision)
        # only a QoS that changes: an unchanged message keeps the received bytes
        qos_of = {fid: q for fid, r in rewrites.items() if r is not None and (q := rewritten_qos(qos, r)) != qos}
        return Verdict(frozenset(kept), qos_of, tuple(dropped))


def decide(policy: FacePolicy | None, msg: Message, now: float) -> Decision:
    """One face's policy on one message (KEEP when it has none or none touches the key)."""
    return KEEP if policy is None else policy.apply(msg, now)


def query_seen(key: str, msg: Request) -> Message:
    """A query as the interceptors see it: its payload and attachment sizes."""
    q: Query = msg.body
    return Message(Kind.QUERY, key, 0 if q.body is None else len(q.body.payload), len(q.attachment or b""))


def reply_seen(key: str, msg: Response) -> Message:
    """A reply (or an error reply) as the interceptors see it."""
    body = msg.body
    if isinstance(body, Err):
        return Message(Kind.REPLY, key, len(body.payload))
    assert isinstance(body, Reply)
    data = body.body
    payload = len(data.payload) if isinstance(data, Put) else 0
    return Message(Kind.REPLY, key, payload, len(data.attachment or b""))
