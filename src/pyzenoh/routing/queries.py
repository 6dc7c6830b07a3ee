"""Queries: queryable declarations, REQUEST routing by target, replies mapped back, and
exactly one RESPONSE_FINAL per request once every destination finished or timed out.

Each destination gets a fresh request id of its own (per face); the pending table maps it
back to the querier's id. Deadlines come from ``now`` (see :meth:`handle_timer` in
:mod:`.core`); a destination that does not finish in time gets the querier an ERR
"Timeout" naming it, like real routers.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Literal

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
from pyzenoh.keyexpr.relations import includes
from pyzenoh.routing.access_control import EGRESS, INGRESS, QUERY, REPLY
from pyzenoh.routing.declared import QueryableInfo, merge_queryable_infos
from pyzenoh.routing.faces import (
    MAX_ROUTE_CACHE,
    NORTH,
    Face,
    PendingQuery,
    RoutingTables,
)
from pyzenoh.routing.regions import REGION_CLIENTS, REGION_PEERS, REGION_ROUTERS
from pyzenoh.routing.types import QueryRouted

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


class Queries(RoutingTables):
    """Queryable tables, query routing and the pending-query table."""

    _query_routes: dict[tuple[int, int, str, bool, int | None], QueryRoute]
    _timers: list[TimerEntry]
    _timers_compact_at: int
    _seq: Iterator[int]
    _qids: Iterator[int]

    def _query_route(self, f: Face, msg: Request) -> QueryRoute:
        we = msg.wire_expr
        cache_key = (f.fid, we.scope, we.suffix, we.mapping_sender, msg.node_id)
        route = self._query_routes.get(cache_key)
        if route is not None:
            return route
        checked = self._routable(f, we, msg.node_id)
        if isinstance(checked, str):
            route = QueryRoute(None, reason=checked)
        else:
            key, source = checked
            self.stats.qabl_index_lookups += 1
            south: list[tuple[int, str, bool]] = []
            north: list[tuple[float, str, int, bool]] = []  # distance, owner, hop, complete
            for qkey, fid in self._qabl_tree.intersecting(key):
                if fid == NORTH:
                    owners = self._north_qabl_owners(qkey)
                    for hop, owner in self._north_hops(source, sorted(owners, key=str), f).items():
                        complete = owners[owner].complete and includes(qkey, key)
                        north.append((self._router_distance(owner), str(owner), hop, complete))
                    continue
                d = self._faces[fid]
                if self._sees(d, f):
                    info = self._qabl_holders[qkey][fid]
                    south.append((fid, qkey, info.complete and includes(qkey, key)))
            south.sort()
            north.sort()
            faces = self._faces
            cands = [(fid, complete, faces[fid].region.group) for fid, _, complete in south]
            cands += [(hop, complete, REGION_ROUTERS) for _, _, hop, complete in north]
            route = QueryRoute(key, tuple(cands), node=source or None)
        if len(self._query_routes) >= MAX_ROUTE_CACHE:
            self._query_routes.clear()
        self._query_routes[cache_key] = route
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
        self._emit(face, ResponseFinal(rid, qos), qos)

    def _on_request(self, f: Face, msg: Request) -> None:
        route = self._query_route(f, msg)
        if route.key is None:
            # Real routers answer a query they cannot route with its final at once.
            self._drop(f.fid, route.reason, msg)
            self._final(f.fid, msg.request_id, msg.qos)
            return
        if f.acl is not None and f.acl.denies(INGRESS, QUERY, route.key):
            # As zenohd: a denied query ends at once, no reply and no error.
            self._final(f.fid, msg.request_id, msg.qos)
            return
        limit = None
        if len(f.outgoing) >= self.config.max_pending_queries_per_face:
            limit = "max_pending_queries_per_face"
        elif self._queries_in_flight >= self.config.max_pending_queries_total:
            limit = "max_pending_queries_total"
        if limit is not None:
            # Refused with an error naming the limit (not a silent "no queryable").
            self._limit_hit(f, limit, msg)
            text = f"{limit} ({getattr(self.config, limit)}) reached".encode()
            err = Response(
                msg.request_id, EMPTY_WIRE_EXPR, Err(text), qos=msg.qos, responder=EntityGlobalId(self.zid, 0)
            )
            self._emit_reply(f, err, None)
            self._final(f.fid, msg.request_id, msg.qos)
            return
        dests = self._select(route.candidates, msg.target)
        if self._acl is not None:
            # As zenohd, egress control comes after the choice of destinations: a query a
            # destination may not receive is finished there at once.
            dests = [fid for fid in dests if not self._egress_denied(self._faces[fid], QUERY, route.key)]
        self.stats.requests_routed += 1
        if self.observer is not None:
            self.observer(QueryRouted(f.fid, route.key, frozenset(dests), msg))
        if not dests:
            self._final(f.fid, msg.request_id, msg.qos)
            return
        q = PendingQuery(next(self._qids), f.fid, msg.request_id, msg.qos, msg.budget)
        f.outgoing[q.qid] = q
        self._queries_in_flight += 1
        if msg.timeout_ms is None:
            timeout = self.config.query_timeout
        else:
            # The querier runs its own timer of the same length, started a little earlier:
            # the grace lets it end its query first, so it never sees two "Timeout"s.
            timeout = msg.timeout_ms / 1000.0 + REQUEST_TIMEOUT_GRACE
        deadline = self._now + timeout
        for fid in dests:
            d = self._faces[fid]
            rid = (d.next_rid + 1) & RID_MASK
            while rid in d.pending:  # only after a wrap with very old queries pending
                rid = (rid + 1) & RID_MASK
            d.next_rid = rid
            d.pending[rid] = q
            q.remaining[fid] = rid
            heapq.heappush(self._timers, (deadline, next(self._seq), fid, rid, q.qid))
            if len(self._timers) > self._timers_compact_at:
                self._compact_timers()
            node = d.region.request_node(route.node)
            out = replace(msg, request_id=rid, wire_expr=self._best_key(d, route.key), node_id=node)
            self._emit(fid, out, msg.qos)

    def _on_response(self, d: Face, msg: Response, raw: bytes | None) -> None:
        q = d.pending.get(msg.request_id)
        if q is None:
            self._drop(d.fid, "unknown request id", msg)
            return
        we = msg.wire_expr
        key: str | None = None
        if we.scope != 0 or we.suffix:
            key = self._resolve_key(d, we, msg)
            if key is None:
                return
            we = WireExpr(0, key, True)
        if d.acl is not None and d.acl.denies(INGRESS, REPLY, key):
            return
        if self.config.enforce_budget and q.budget is not None and q.replies >= q.budget:
            self._drop(d.fid, "over query budget", msg)
            return
        src = self._faces.get(q.src)
        if src is not None and src.acl is not None and src.acl.denies(EGRESS, REPLY, key):
            return
        q.replies += 1
        if we == msg.wire_expr and q.qos == msg.qos:
            if q.src_rid == msg.request_id:
                self._emit(q.src, msg, q.qos, raw)
            else:  # only the request id changes: rewritten in the received bytes
                out = replace(msg, request_id=q.src_rid)
                self._emit(q.src, out, q.qos, None if raw is None else with_request_id(raw, q.src_rid))
        else:
            self._emit(q.src, replace(msg, request_id=q.src_rid, wire_expr=we, qos=q.qos), q.qos)

    def _emit_reply(self, src: Face, msg: Response, key: str | None) -> None:
        """Send a reply of the router's own (an ERR) to the querier ``src``, unless egress
        access control denies it: as zenohd, an ERR with no key is denied on a filtered
        flow (the querier then gets the final alone)."""
        if src.acl is not None and src.acl.denies(EGRESS, REPLY, key):
            return
        self._emit(src.fid, msg, msg.qos)

    def _on_response_final(self, d: Face, msg: ResponseFinal) -> None:
        q = d.pending.pop(msg.request_id, None)
        if q is None:
            self._drop(d.fid, "unknown request id", msg)
            return
        self._finish_destination(q, d.fid)

    def _finish_destination(self, q: PendingQuery, dest: int) -> None:
        """``dest`` is done with ``q``; the querier gets its one final after the last."""
        if q.remaining.pop(dest, None) is None or q.remaining:
            return
        src = self._faces.get(q.src)
        if src is not None and src.outgoing.pop(q.qid, None) is not None:
            self._queries_in_flight -= 1
            self._final(q.src, q.src_rid, q.qos)

    def _compact_timers(self) -> None:
        """Drop the entries of queries already finished (answered queries leave theirs)."""
        self._timers = [e for e in self._timers if self._timer_live(e)]
        heapq.heapify(self._timers)
        self._timers_compact_at = max(MIN_TIMER_COMPACTION, 2 * len(self._timers))

    def _timer_live(self, entry: tuple[float, int, int, int, int]) -> bool:
        _, _, dest, rid, qid = entry
        d = self._faces.get(dest)
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

    def _on_declare_queryable(self, f: Face, body: DeclareQueryable, msg: Declare) -> None:
        key = self._resolve_key(f, body.wire_expr, msg)
        if key is None:
            return
        if f.acl is not None and self._declaration_denied(f, INGRESS, body, key):
            return  # not registered, as zenohd: silently
        info = QueryableInfo(body.complete, body.distance)
        old = f.qabls.get(body.entity_id)
        if old is not None:
            if old[0] != key:
                self._drop(f.fid, "duplicate queryable id", msg)
                return
            if old[1] == info:
                return
        elif not self._declaration_allowed(f, msg):
            return
        f.qabls[body.entity_id] = (key, info)
        # Like zenoh, the face's info on a key is that of its latest declaration there.
        self._set_qabl_holder(f, key, info, "declare")

    def _on_undeclare_queryable(self, f: Face, key: str, info: QueryableInfo) -> None:
        if any(k == key and i == info for k, i in f.qabls.values()):
            return  # another queryable of the face with the same key and info remains
        self._set_qabl_holder(f, key, self._face_qabl_info(f, key), "undeclare")

    def _qabl_info_for(self, d: Face, holders: dict[int, QueryableInfo]) -> QueryableInfo | None:
        """The info ``d`` should know for a key: its holders other than ``d``, merged."""
        info: QueryableInfo | None = None
        for h, i in holders.items():
            if h in self._faces and self._sees(d, self._faces[h]):
                info = i if info is None else merge_queryable_infos(info, i)
        return info

    def _set_qabl_holder(
        self, f: Face, key: str, info: QueryableInfo | None, cause: Literal["declare", "undeclare", "close"]
    ) -> None:
        """Face ``f``'s info on ``key`` becomes ``info`` (None: it holds none there).

        What other faces are told follows real routers, including what they leave out: a
        face that alone still holds the key keeps the declaration it got from the others
        (no U_QUERYABLE, checked on the wire), unless the last other holder was in the
        other region (clients / peers).
        """
        holders = self._qabl_holders.setdefault(key, {})
        old = holders.get(f.fid)
        if old == info:
            if not holders:
                del self._qabl_holders[key]
            return
        if info is None:
            del holders[f.fid]
            self._qabl_tree.remove(key, f.fid)
        else:
            if old is None:
                self._qabl_tree.insert(key, f.fid)
            holders[f.fid] = info
        if not holders:
            del self._qabl_holders[key]
        self._query_routes.clear()
        if f.fid != NORTH:
            self._south_qabls_changed(key)
        if cause == "declare":
            self._propagate_qabl_everywhere(key, holders)
            return
        if not holders:
            for d in self._live_faces():
                if d is not f:
                    self._unpropagate_qabl(d, key)
            return
        regions = {self._faces[h].region.group for h in holders}
        if cause == "undeclare":
            same_region = [
                i for h, i in holders.items() if h != f.fid and self._faces[h].region.group == f.region.group
            ]
            others = merge_all(same_region)
            new_total = merge_all([i for i in (others, info) if i is not None])
            if new_total is None:  # no holder left in f's region: the others' region decides
                if len(holders) == 1:
                    self._unpropagate_qabl(self._faces[next(iter(holders))], key)
            elif new_total != merge_all([i for i in (others, old) if i is not None]):
                self._propagate_qabl_everywhere(key, holders)
            return
        # cause == "close"
        if regions != {f.region.group}:
            if len(holders) == 1:
                (last,) = holders
                self._unpropagate_qabl(self._faces[last], key)
            return
        self._propagate_qabl_everywhere(key, holders)

    def _propagate_qabl_everywhere(self, key: str, holders: dict[int, QueryableInfo]) -> None:
        for d in self._live_faces():
            info = self._qabl_info_for(d, holders)
            if info is not None:
                self._propagate_qabl(d, key, info)

    def _unpropagate_qabl(self, d: Face, key: str) -> None:
        if d is self._closing:
            return
        for change in d.local_qabls.remove_simple(key):
            self._declare_qabl_change(d, change.id, change.key, change.info)

    def _propagate_qabl(self, d: Face, key: str, info: QueryableInfo) -> None:
        matching = self._matching_interests(d, _Q, key)
        if not matching:
            return
        simple = [iid for iid, it in matching if not it.aggregate]
        _, changes = d.local_qabls.insert_simple(key, info, lambda: self._new_id(d), simple)
        for change in changes:
            self._declare_qabl_change(d, change.id, change.key, change.info)

    def _declare_qabl_change(self, d: Face, ident: int, key: str, info: QueryableInfo | None) -> None:
        if info is None:
            self._declare(d, UndeclareQueryable(ident), key=key)
        else:
            self._declare(d, DeclareQueryable(ident, self._decl_key(d, key), info.complete, info.distance), key=key)
