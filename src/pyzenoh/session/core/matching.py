"""Matching: which entities a key expression reaches, here and behind the faces.

This session's subscribers and queryables that a publication or query on a key is
delivered to (with their ``allowed_origin``), the faces it is sent to (write-side
filtering after a router's D_FINAL, a peer face's declared subscribers and queryables),
and the matching status of publishers and queriers with their listeners (a
:class:`~pyzenoh.session.types.MatchingStatus` to each listener when it changes).
"""

from __future__ import annotations

from typing import Any

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr.relations import includes, intersects
from pyzenoh.session import types as t
from pyzenoh.session.core.state import (
    END,
    MAX_CACHE_KEYS,
    REMOTE_ONLY,
    SESSION_LOCAL,
    CoreState,
    Face,
    LocalPublisher,
    LocalQuerier,
    LocalQueryable,
)


class Matching:
    """Who a key reaches, and the matching status of publishers and queriers."""

    def __init__(self, s: CoreState) -> None:
        self.s = s

    # --- caches of what matches a key --------------------------------------------------------

    def invalidate(self) -> None:
        self.s.sub_cache.clear()
        self.allow_changed()

    def allow_changed(self) -> None:
        self.s.allow_cache.clear()
        for f in self.s.faces.values():
            f.allow_cache.clear()

    # --- this session's entities a key reaches -----------------------------------------------

    def matching_subs(self, key: str) -> list[Any]:
        cache = self.s.sub_cache
        sinks = cache.get(key)
        if sinks is None:
            sinks = [s.sink for s in self.s.subs.values() if intersects(s.key, key)]
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = sinks
        return sinks

    def local_sinks(self, key: str) -> list[Any]:
        """The sinks of this session's subscribers that take its own publications on ``key``."""
        sinks = self.matching_subs(key)
        if self.s.remote_only_sinks:
            sinks = [s for s in sinks if id(s) not in self.s.remote_only_sinks]
        if self.s.local_only_subs:
            sinks = sinks + [s.sink for s in self.s.local_only_subs.values() if intersects(s.key, key)]
        return sinks

    def has_local_subscriber(self, key: str) -> bool:
        return bool(self.local_sinks(key))

    def local_queryables(self, key: str, target: int, remote: bool = True) -> list[LocalQueryable]:
        """This session's queryables a query on ``key`` reaches (``remote``: the query
        came from the router; else from our own get)."""
        unwanted = SESSION_LOCAL if remote else REMOTE_ONLY
        return [
            q
            for q in self.s.qabls.values()
            if q.origin != unwanted
            and intersects(q.key, key)
            and (target != t.QueryTarget.ALL_COMPLETE.value or q.complete)
        ]

    # --- the faces a publication or a query goes to ------------------------------------------

    def send_allowed(self, key: str) -> bool:
        """Write-side filtering after D_FINAL (zenoh-wire.md 6.3 item 7)."""
        if not self.s.finalized:
            return True
        cache = self.s.allow_cache
        allowed = cache.get(key)
        if allowed is None:
            covered = any(
                includes(self.s.pub_interests[iid].key, key) for iid in self.s.finalized if iid in self.s.pub_interests
            )
            allowed = not covered or any(intersects(rk, key) for rk in self.s.remote_subs.values())
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = allowed
        return allowed

    def face_wants(self, f: Face, key: str) -> bool:
        """Whether data on ``key`` goes to face ``f`` (with peer faces): a router face by
        write-side filtering, a peer face where it declared a matching subscriber (all
        data until its D_FINAL(0))."""
        if f.routerish:
            return self.send_allowed(key)
        if not f.declared or f.group:
            return True
        cache = f.allow_cache
        wanted = cache.get(key)
        if wanted is None:
            fid = f.fid
            wanted = any(k[0] == fid and intersects(rk, key) for k, rk in self.s.remote_subs.items())
            if len(cache) >= MAX_CACHE_KEYS:
                cache.clear()
            cache[key] = wanted
        return wanted

    def face_answers(self, f: Face, key: str, target: int) -> bool:
        if not f.declared:
            return True
        complete_only = target == t.QueryTarget.ALL_COMPLETE.value
        return any(
            k[0] == f.fid and intersects(rk, key) and (not complete_only or k in self.s.remote_qabl_complete)
            for k, rk in self.s.remote_qabls.items()
        )

    # --- matching status of publishers and queriers ------------------------------------------

    def publisher_matching(self, local: int) -> bool:
        pub = self.s.pubs.get(local)
        return False if pub is None else pub.matching

    def add_matching_listener(self, local: int, sink: Any) -> None:
        self._add_listener(self.s.pubs.get(local), sink, "publisher")

    def remove_matching_listener(self, local: int, sink: Any) -> None:
        self._remove_listener(self.s.pubs.get(local), sink)

    def querier_matching(self, local: int) -> bool:
        qr = self.s.queriers.get(local)
        return False if qr is None else qr.matching

    def add_querier_matching_listener(self, local: int, sink: Any) -> None:
        self._add_listener(self.s.queriers.get(local), sink, "querier")

    def remove_querier_matching_listener(self, local: int, sink: Any) -> None:
        self._remove_listener(self.s.queriers.get(local), sink)

    def _add_listener(self, entity: LocalPublisher | LocalQuerier | None, sink: Any, what: str) -> None:
        if entity is None:
            raise UsageError(f"the {what} was undeclared")
        entity.listeners.append(sink)
        # like zenoh: a new listener first learns the current status
        self.s.deliveries.append((sink, t.MatchingStatus(entity.matching)))

    def _remove_listener(self, entity: LocalPublisher | LocalQuerier | None, sink: Any) -> None:
        if entity is not None and sink in entity.listeners:
            entity.listeners.remove(sink)
            self.s.deliveries.append((sink, END))

    def pub_matching(self, pub: LocalPublisher) -> bool:
        key = pub.key
        return (
            any(intersects(k, key) for k in self.s.remote_subs.values())
            or any(intersects(s.key, key) for s in self.s.subs.values())
            or any(intersects(s.key, key) for s in self.s.local_only_subs.values())
        )

    def update_matching(self) -> None:
        for pub in self.s.pubs.values():
            now = self.pub_matching(pub)
            if now != pub.matching:
                pub.matching = now
                status = t.MatchingStatus(now)
                for sink in pub.listeners:
                    self.s.deliveries.append((sink, status))

    def querier_matches(self, qr: LocalQuerier) -> bool:
        key = qr.key
        complete_only = qr.target == t.QueryTarget.ALL_COMPLETE.value
        if qr.destination != SESSION_LOCAL and any(
            intersects(k, key) and (not complete_only or eid in self.s.remote_qabl_complete)
            for eid, k in self.s.remote_qabls.items()
        ):
            return True
        return qr.destination != REMOTE_ONLY and bool(self.local_queryables(key, qr.target, remote=False))

    def update_querier_matching(self) -> None:
        for qr in self.s.queriers.values():
            now = self.querier_matches(qr)
            if now != qr.matching:
                qr.matching = now
                status = t.MatchingStatus(now)
                for sink in qr.listeners:
                    self.s.deliveries.append((sink, status))
