"""Queries: queryable declarations, REQUEST routing by target, replies mapped back, and
exactly one RESPONSE_FINAL per request once every destination finished or timed out.

Each destination gets a fresh request id of its own (per face); the pending table maps it
back to the querier's id. Deadlines come from ``now`` (see :meth:`handle_timer` in
:mod:`.core`); a destination that does not finish in time gets the querier an ERR
"Timeout" naming it, like real routers.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from pyzenoh.codec import (
    Declare,
    DeclareQueryable,
    EntityGlobalId,
    Err,
    InterestOptions,
    QueryTarget,
    Request,
    Response,
    ResponseFinal,
    UndeclareQueryable,
    WireExpr,
)
from pyzenoh.codec.network import with_request_id
from pyzenoh.interceptors import Drop, FacePolicy, Rewrite
from pyzenoh.keyexpr.relations import includes
from pyzenoh.routing.access_control import EGRESS, INGRESS, QUERY, REPLY
from pyzenoh.routing.declared import QueryableInfo, merge_queryable_infos
from pyzenoh.routing.faces import NORTH, Face, PendingQuery
from pyzenoh.routing.intercepted import decide, query_seen, reply_seen, rewritten_qos
from pyzenoh.routing.regions import REGION_CLIENTS, REGION_PEERS, REGION_ROUTERS
from pyzenoh.routing.tables import Tables
from pyzenoh.routing.types import QueryRouted

if TYPE_CHECKING:
    from pyzenoh.routing.routers import RouterMesh

#: Seconds added to a REQUEST's own Timeout before the router gives up on a destination.
REQUEST_TIMEOUT_GRACE = 0.05
#: Request ids are z32 on the wire; the per-face counter wraps like real routers'.
RID_MASK = 0xFFFF_FFFF
#: Size of the timer heap above which entries of finished queries are purged (doubles).
MIN_TIMER_COMPACTION = 1_024
#: Payload of the error reply a router sends when a queryable does not finish in time.
TIMEOUT_PAYLOAD = b"Timeout"
#: The "no key" of an ERR reply (real routers send scope 0, empty suffix, M = 1).
EMPTY_WIRE_EXPR = WireExpr(0, "", True)

_Q = InterestOptions.QUERYABLES


TimerEntry = tuple[float, int, int, int, int]  # deadline, seq, face, rid, qid


@dataclass(frozen=True, slots=True)
class QueryRoute:
    key: str | None
    # (face, complete, region) in selection order; region: REGION_CLIENTS/PEERS/ROUTERS
    candidates: tuple[tuple[int, bool, int], ...] = ()
    reason: str = ""
    node: int | None = None  # the NodeId written towards router neighbours


def merge_all(infos: Iterable[QueryableInfo]) -> QueryableInfo | None:
    out: QueryableInfo | None = None
    for info in infos:
        out = info if out is None else merge_queryable_infos(out, info)
    return out


class Queries:
    """Queryable tables, query routing and the pending-query table."""

    def __init__(self, tables: Tables, mesh: RouterMesh, *, intercepting: bool = False) -> None:
        """``mesh``: where routers' queryables are, and what is told when the south's
        queryables on a key change. ``intercepting``: some face may have interceptors
        (otherwise queries pay nothing for them)."""
        self.tables = tables
        self.mesh = mesh
        self.intercepting = intercepting
        self.timers: list[TimerEntry] = []
        self._timers_compact_at = MIN_TIMER_COMPACTION
        self._seq = itertools.count()
        self._qids = itertools.count(1)

    def next_deadline(self) -> float | None:
        """When :meth:`expire` next has something to do (None: nothing pending)."""
        timers = self.timers
        while timers and not self._timer_live(timers[0]):
            heapq.heappop(timers)
        return timers[0][0] if timers else None

    def expire(self, now: float) -> None:
        """Expire the queries whose deadline is <= ``now``."""
        t = self.tables
        timers = self.timers
        while timers and timers[0][0] <= now:
            entry = heapq.heappop(timers)
            if not self._timer_live(entry):
                continue
            _, _, dest, rid, _ = entry
            d = t.faces[dest]
            q = d.pending.pop(rid)
            t.stats.query_timeouts += 1
            # Like real routers: an ERR "Timeout" naming the silent face, then the final.
            src = t.faces.get(q.src)
            if src is not None:
                err = Response(
                    q.src_rid, EMPTY_WIRE_EXPR, Err(TIMEOUT_PAYLOAD), qos=q.qos, responder=EntityGlobalId(d.zid, 0)
                )
                self._emit_reply(src, err, None)
            self._finish_destination(q, dest)

    def face_closing(self, f: Face) -> None:
        """``f`` is being removed: the queries waiting on it end for it (without an error
        reply), and those it asked are forgotten at their destinations."""
        for q in list(f.pending.values()):
            self._finish_destination(q, f.fid)
        f.pending.clear()
        for q in f.outgoing.values():
            for dest, rid in q.remaining.items():
                d = self.tables.faces.get(dest)
                if d is not None and d.pending.get(rid) is q:
                    del d.pending[rid]
        self.tables.queries_in_flight -= len(f.outgoing)
        f.outgoing.clear()

    def _query_route(self, f: Face, msg: Request) -> QueryRoute:
        we = msg.wire_expr
        cache_key = (f.fid, we.scope, we.suffix, we.mapping_sender, msg.node_id)
        route = self.tables.query_routes.get(cache_key)
        if route is not None:
            return route
        checked = self.tables.routable(f, we, msg.node_id)
        if isinstance(checked, str):
            route = QueryRoute(None, reason=checked)
        else:
            key, source = checked
            self.tables.stats.qabl_index_lookups += 1
            south: list[tuple[int, str, bool]] = []
            north: list[tuple[float, str, int, bool]] = []  # distance, owner, hop, complete
            for qkey, fid in self.tables.qabl_tree.intersecting(key):
                if fid == NORTH:
                    owners = self.mesh.north_qabl_owners(qkey)
                    for hop, owner in self.mesh.north_hops(source, sorted(owners, key=str), f).items():
                        complete = owners[owner].complete and includes(qkey, key)
                        north.append((self.mesh.router_distance(owner), str(owner), hop, complete))
                    continue
                d = self.tables.faces[fid]
                if self.tables.sees(d, f):
                    info = self.tables.qabl_holders[qkey][fid]
                    south.append((fid, qkey, info.complete and includes(qkey, key)))
            south.sort()
            north.sort()
            faces = self.tables.faces
            cands = [(fid, complete, faces[fid].region.group) for fid, _, complete in south]
            cands += [(hop, complete, REGION_ROUTERS) for _, _, hop, complete in north]
            route = QueryRoute(key, tuple(cands), node=source or None)
        self.tables.remember(self.tables.query_routes, cache_key, route)
        return route

    @staticmethod
    def _select(candidates: Iterable[tuple[int, bool, int]], target: int) -> list[int]:
        cands = list(candidates)
        if target == QueryTarget.BEST_MATCHING:
            # Real routers choose per region (clients, peers, routers): each gets its first
            # complete queryable (routers: the nearest), or all of its queryables when none is.
            chosen: list[tuple[int, bool, int]] = []
            for region in (REGION_CLIENTS, REGION_PEERS, REGION_ROUTERS):
                group = [c for c in cands if c[2] == region]
                best = next((c for c in group if c[1]), None)
                chosen += group if best is None else [best]
            cands = chosen
        elif target == QueryTarget.ALL_COMPLETE:
            cands = [c for c in cands if c[1]]
        return list(dict.fromkeys(fid for fid, _, _ in cands))

    def _final(self, face: int, rid: int, qos: int) -> None:
        self.tables.emit(face, ResponseFinal(rid, qos), qos)

    def on_request(self, f: Face, msg: Request) -> None:
        route = self._query_route(f, msg)
        if route.key is None:
            # Real routers answer a query they cannot route with its final at once.
            self.tables.drop(f.fid, route.reason, msg)
            self._final(f.fid, msg.request_id, msg.qos)
            return
        if f.acl is not None and f.acl.denies(INGRESS, QUERY, route.key):
            # As zenohd: a denied query ends at once, no reply and no error.
            self._final(f.fid, msg.request_id, msg.qos)
            return
        qos = msg.qos  # what the query is forwarded with (an interceptor may rewrite it)
        if f.intercept_in is not None:
            decision = decide(f.intercept_in, query_seen(route.key, msg), self.tables.now)
            if isinstance(decision, Drop):
                # Measured on zenohd: an intercepted query ends at once, as a denied one.
                self.tables.intercepted(f.fid, f.fid, "ingress", route.key, decision, msg)
                self._final(f.fid, msg.request_id, msg.qos)
                return
            if isinstance(decision, Rewrite):
                qos = rewritten_qos(qos, decision)
        limit = None
        if len(f.outgoing) >= self.tables.config.max_pending_queries_per_face:
            limit = "max_pending_queries_per_face"
        elif self.tables.queries_in_flight >= self.tables.config.max_pending_queries_total:
            limit = "max_pending_queries_total"
        if limit is not None:
            # Refused with an error naming the limit (not a silent "no queryable").
            self.tables.limit_hit(f, limit, msg)
            text = f"{limit} ({getattr(self.tables.config, limit)}) reached".encode()
            err = Response(
                msg.request_id, EMPTY_WIRE_EXPR, Err(text), qos=msg.qos, responder=EntityGlobalId(self.tables.zid, 0)
            )
            self._emit_reply(f, err, None)
            self._final(f.fid, msg.request_id, msg.qos)
            return
        dests = self._select(route.candidates, msg.target)
        if self.tables.acl is not None:
            # As zenohd, egress control comes after the choice of destinations: a query a
            # destination may not receive is finished there at once.
            dests = [fid for fid in dests if not self.tables.egress_denied(self.tables.faces[fid], QUERY, route.key)]
        qos_of: dict[int, int] = {}
        if self.intercepting:
            dests = self._intercept_egress(f, route.key, msg, dests, qos, qos_of)
        self.tables.stats.requests_routed += 1
        if self.tables.observer is not None:
            self.tables.observer(QueryRouted(f.fid, route.key, frozenset(dests), msg))
        if not dests:
            self._final(f.fid, msg.request_id, msg.qos)
            return
        q = PendingQuery(next(self._qids), f.fid, msg.request_id, msg.qos, msg.budget)
        f.outgoing[q.qid] = q
        self.tables.queries_in_flight += 1
        if msg.timeout_ms is None:
            timeout = self.tables.config.query_timeout
        else:
            # The querier runs its own timer of the same length, started a little earlier:
            # the grace lets it end its query first, so it never sees two "Timeout"s.
            timeout = msg.timeout_ms / 1000.0 + REQUEST_TIMEOUT_GRACE
        deadline = self.tables.now + timeout
        for fid in dests:
            d = self.tables.faces[fid]
            rid = (d.next_rid + 1) & RID_MASK
            while rid in d.pending:  # only after a wrap with very old queries pending
                rid = (rid + 1) & RID_MASK
            d.next_rid = rid
            d.pending[rid] = q
            q.remaining[fid] = rid
            heapq.heappush(self.timers, (deadline, next(self._seq), fid, rid, q.qid))
            if len(self.timers) > self._timers_compact_at:
                self._compact_timers()
            node = d.region.request_node(route.node)
            dq = qos_of.get(fid, qos)
            out = replace(msg, request_id=rid, wire_expr=self.tables.best_key(d, route.key), node_id=node, qos=dq)
            self.tables.emit(fid, out, dq)

    def _intercept_egress(
        self, f: Face, key: str, msg: Request, dests: list[int], qos: int, qos_of: dict[int, int]
    ) -> list[int]:
        """The destinations the egress interceptors leave a query; the QoS they rewrite
        goes to ``qos_of``. Every drop is reported to the tables."""
        seen = query_seen(key, msg)
        kept = []
        for fid in dests:
            decision = decide(self.tables.faces[fid].intercept_out, seen, self.tables.now)
            if isinstance(decision, Drop):
                self.tables.intercepted(f.fid, fid, "egress", key, decision, msg)
                continue
            if isinstance(decision, Rewrite):
                qos_of[fid] = rewritten_qos(qos, decision)
            kept.append(fid)
        return kept

    def on_response(self, d: Face, msg: Response, raw: bytes | None) -> None:
        q = d.pending.get(msg.request_id)
        if q is None:
            self.tables.drop(d.fid, "unknown request id", msg)
            return
        we = msg.wire_expr
        key: str | None = None
        if we.scope != 0 or we.suffix:
            key = self.tables.resolve_key(d, we, msg)
            if key is None:
                return
            we = WireExpr(0, key, True)
        if d.acl is not None and d.acl.denies(INGRESS, REPLY, key):
            return
        if d.intercept_in is not None and key is not None and self._intercepted(d, d.intercept_in, key, msg, "ingress"):
            return
        if self.tables.config.enforce_budget and q.budget is not None and q.replies >= q.budget:
            self.tables.drop(d.fid, "over query budget", msg)
            return
        src = self.tables.faces.get(q.src)
        if src is not None and src.acl is not None and src.acl.denies(EGRESS, REPLY, key):
            return
        if (
            src is not None
            and src.intercept_out is not None
            and key is not None
            and self._intercepted(d, src.intercept_out, key, msg, "egress")
        ):
            return
        q.replies += 1
        if we == msg.wire_expr and q.qos == msg.qos:
            if q.src_rid == msg.request_id:
                self.tables.emit(q.src, msg, q.qos, raw)
            else:  # only the request id changes: rewritten in the received bytes
                out = replace(msg, request_id=q.src_rid)
                self.tables.emit(q.src, out, q.qos, None if raw is None else with_request_id(raw, q.src_rid))
        else:
            self.tables.emit(q.src, replace(msg, request_id=q.src_rid, wire_expr=we, qos=q.qos), q.qos)

    def _intercepted(self, d: Face, policy: FacePolicy, key: str, msg: Response, flow: str) -> bool:
        """Whether an interceptor drops a reply (silently, as zenohd: the final still
        comes); the drop is reported to the tables as ``d``'s."""
        decision = decide(policy, reply_seen(key, msg), self.tables.now)
        if isinstance(decision, Drop):
            self.tables.intercepted(d.fid, d.fid, flow, key, decision, msg)
            return True
        return False

    def _emit_reply(self, src: Face, msg: Response, key: str | None) -> None:
        """Send a reply of the router's own (an ERR) to the querier ``src``, unless egress
        access control denies it: as zenohd, an ERR with no key is denied on a filtered
        flow (the querier then gets the final alone)."""
        if src.acl is not None and src.acl.denies(EGRESS, REPLY, key):
            return
        self.tables.emit(src.fid, msg, msg.qos)

    def on_response_final(self, d: Face, msg: ResponseFinal) -> None:
        q = d.pending.pop(msg.request_id, None)
        if q is None:
            self.tables.drop(d.fid, "unknown request id", msg)
            return
        self._finish_destination(q, d.fid)

    def _finish_destination(self, q: PendingQuery, dest: int) -> None:
        """``dest`` is done with ``q``; the querier gets its one final after the last."""
        if q.remaining.pop(dest, None) is None or q.remaining:
            return
        src = self.tables.faces.get(q.src)
        if src is not None and src.outgoing.pop(q.qid, None) is not None:
            self.tables.queries_in_flight -= 1
            self._final(q.src, q.src_rid, q.qos)

    def _compact_timers(self) -> None:
        """Drop the entries of queries already finished (answered queries leave theirs)."""
        self.timers = [e for e in self.timers if self._timer_live(e)]
        heapq.heapify(self.timers)
        self._timers_compact_at = max(MIN_TIMER_COMPACTION, 2 * len(self.timers))

    def _timer_live(self, entry: tuple[float, int, int, int, int]) -> bool:
        _, _, dest, rid, qid = entry
        d = self.tables.faces.get(dest)
        if d is None:
            return False
        q = d.pending.get(rid)
        return q is not None and q.qid == qid

    @staticmethod
    def _face_qabl_info(f: Face, key: str) -> QueryableInfo | None:
        info: QueryableInfo | None = None
        for k, i in f.qabls.values():
            if k == key:
                info = i if info is None else merge_queryable_infos(info, i)
        return info

    def on_declare_queryable(self, f: Face, body: DeclareQueryable, msg: Declare) -> None:
        key = self.tables.resolve_key(f, body.wire_expr, msg)
        if key is None:
            return
        if f.acl is not None and self.tables.declaration_denied(f, INGRESS, body, key):
            return  # not registered, as zenohd: silently
        info = QueryableInfo(body.complete, body.distance)
        old = f.qabls.get(body.entity_id)
        if old is not None:
            if old[0] != key:
                self.tables.drop(f.fid, "duplicate queryable id", msg)
                return
            if old[1] == info:
                return
        elif not self.tables.declaration_allowed(f, msg):
            return
        f.qabls[body.entity_id] = (key, info)
        # Like zenoh, the face's info on a key is that of its latest declaration there.
        self.set_qabl_holder(f, key, info, "declare")

    def on_undeclare_queryable(self, f: Face, key: str, info: QueryableInfo) -> None:
        if any(k == key and i == info for k, i in f.qabls.values()):
            return  # another queryable of the face with the same key and info remains
        self.set_qabl_holder(f, key, self._face_qabl_info(f, key), "undeclare")

    def _qabl_info_for(self, d: Face, holders: dict[int, QueryableInfo]) -> QueryableInfo | None:
        """The info ``d`` should know for a key: its holders other than ``d``, merged."""
        info: QueryableInfo | None = None
        for h, i in holders.items():
            if h in self.tables.faces and self.tables.sees(d, self.tables.faces[h]):
                info = i if info is None else merge_queryable_infos(info, i)
        return info

    def set_qabl_holder(
        self, f: Face, key: str, info: QueryableInfo | None, cause: Literal["declare", "undeclare", "close"]
    ) -> None:
        """Face ``f``'s info on ``key`` becomes ``info`` (None: it holds none there).

        What other faces are told follows real routers, including what they leave out: a
        face that alone still holds the key keeps the declaration it got from the others
        (no U_QUERYABLE, checked on the wire), unless the last other holder was in the
        other region (clients / peers).
        """
        holders = self.tables.qabl_holders.setdefault(key, {})
        old = holders.get(f.fid)
        if old == info:
            if not holders:
                del self.tables.qabl_holders[key]
            return
        if info is None:
            del holders[f.fid]
            self.tables.qabl_tree.remove(key, f.fid)
        else:
            if old is None:
                self.tables.qabl_tree.insert(key, f.fid)
            holders[f.fid] = info
        if not holders:
            del self.tables.qabl_holders[key]
        self.tables.query_routes.clear()
        if f.fid != NORTH:
            self.mesh.south_qabls_changed(key)
        if cause == "declare":
            self._propagate_qabl_everywhere(key, holders)
            return
        if not holders:
            for d in self.tables.live_faces():
                if d is not f:
                    self._unpropagate_qabl(d, key)
            return
        regions = {self.tables.faces[h].region.group for h in holders}
        if cause == "undeclare":
            same_region = [
                i for h, i in holders.items() if h != f.fid and self.tables.faces[h].region.group == f.region.group
            ]
            others = merge_all(same_region)
            new_total = merge_all([i for i in (others, info) if i is not None])
            if new_total is None:  # no holder left in f's region: the others' region decides
                if len(holders) == 1:
                    self._unpropagate_qabl(self.tables.faces[next(iter(holders))], key)
            elif new_total != merge_all([i for i in (others, old) if i is not None]):
                self._propagate_qabl_everywhere(key, holders)
            return
        # cause == "close"
        if regions != {f.region.group}:
            if len(holders) == 1:
                (last,) = holders
                self._unpropagate_qabl(self.tables.faces[last], key)
            return
        self._propagate_qabl_everywhere(key, holders)

    def _propagate_qabl_everywhere(self, key: str, holders: dict[int, QueryableInfo]) -> None:
        for d in self.tables.live_faces():
            info = self._qabl_info_for(d, holders)
            if info is not None:
                self._propagate_qabl(d, key, info)

    def _unpropagate_qabl(self, d: Face, key: str) -> None:
        if d is self.tables.closing:
            return
        for change in d.local_qabls.remove_simple(key):
            self._declare_qabl_change(d, change.id, change.key, change.info)

    def _propagate_qabl(self, d: Face, key: str, info: QueryableInfo) -> None:
        matching = self.tables.matching_interests(d, _Q, key)
        if not matching:
            return
        simple = [iid for iid, it in matching if not it.aggregate]
        _, changes = d.local_qabls.insert_simple(key, info, lambda: self.tables.new_id(d), simple)
        for change in changes:
            self._declare_qabl_change(d, change.id, change.key, change.info)

    def _declare_qabl_change(self, d: Face, ident: int, key: str, info: QueryableInfo | None) -> None:
        if info is None:
            self.tables.declare(d, UndeclareQueryable(ident), key=key)
        else:
            self.tables.declare(
                d, DeclareQueryable(ident, self.tables.decl_key(d, key), info.complete, info.distance), key=key
            )
