"""Interests: what a face asked to be told (Current, Future, CurrentFuture, Final), and
the current declarations a Current interest is answered with.

A router has nobody north to wait for in the face's region, so every accepted interest is
answered with D_FINAL at once; future changes are then sent without an interest id until
the face sends INTEREST Final.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pyzenoh.codec import (
    DeclareFinal,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    Interest,
    InterestMode,
    InterestOptions,
)
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.routing.access_control import (
    DECLARE_LIVELINESS_SUBSCRIBER,
    INGRESS,
    LIVELINESS_QUERY,
)
from pyzenoh.routing.declared import QueryableInfo, merge_queryable_infos
from pyzenoh.routing.faces import Face, InterestState
from pyzenoh.routing.tables import Tables

_K = InterestOptions.KEYEXPRS
_S = InterestOptions.SUBSCRIBERS
_Q = InterestOptions.QUERYABLES
_T = InterestOptions.TOKENS


class Interests:
    """Interest tables and the answers to Current interests."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def on_interest(self, f: Face, msg: Interest) -> None:
        iid = msg.interest_id
        mode = msg.mode
        if mode == InterestMode.FINAL:
            self._on_interest_final(f, msg)
            return
        options = msg.options
        if f.acl is not None and options & _T and self._liveliness_denied(f, msg):
            # As zenohd: not registered, and answered with D_FINAL so nothing waits.
            self.tables.declare(f, DeclareFinal(), iid)
            return
        aggregate = msg.aggregate and f.region.aggregates_interests() and not options & _T
        current = mode in (InterestMode.CURRENT, InterestMode.CURRENT_FUTURE)
        future = mode in (InterestMode.FUTURE, InterestMode.CURRENT_FUTURE)
        if mode == InterestMode.CURRENT and (options & (_S | _Q) or not options & _T):
            self.tables.drop(f.fid, "current interest not for tokens only", msg)
            return
        if future and iid in f.interests:
            self.tables.drop(f.fid, "interest id in use", msg)
            return
        key: str | None = None
        if msg.wire_expr is not None:
            key = self.tables.resolve_key(f, msg.wire_expr, msg)
            if key is None:
                return
        if future and not self.tables.declaration_allowed(f, msg):
            return
        if future and options & _K:
            f.key_interests[iid] = key
        if future:
            f.interests[iid] = InterestState(key, options, mode, aggregate)
            if key is not None:
                self.tables.ref(key)
        if current:
            if options & _S:
                self._current_subscribers(f, iid, key, aggregate, future)
            if options & _Q:
                self._current_queryables(f, iid, key, aggregate, future)
            if options & _T:
                self._current_tokens(f, iid, key, future)
        # A router has nobody north to wait for: every accepted interest, Future ones
        # included, is final at once (checked on the wire against a 1.10.2 router).
        self.tables.declare(f, DeclareFinal(), iid)

    def _liveliness_denied(self, f: Face, msg: Interest) -> bool:
        """Access control of a liveliness interest, as zenohd classifies it: a Current one
        is a liveliness query, a Future one a liveliness subscriber. One with no key (or
        an unknown key id) is denied on a filtered flow."""
        assert f.acl is not None
        key = None if msg.wire_expr is None else self.tables.resolve(f, msg.wire_expr)
        message = LIVELINESS_QUERY if msg.mode == InterestMode.CURRENT else DECLARE_LIVELINESS_SUBSCRIBER
        return f.acl.denies(INGRESS, message, key)

    def _on_interest_final(self, f: Face, msg: Interest) -> None:
        iid = msg.interest_id
        f.key_interests.pop(iid, None)
        it = f.interests.pop(iid, None)
        if it is None:
            self.tables.drop(f.fid, "unknown interest id", msg)
            return
        if it.key is not None:
            self.tables.unref(it.key)
        if not f.region.keeps_interest_declarations():
            # Real routers forget what the interest alone had declared to a peer.
            for declared, option in ((f.local_subs, _S), (f.local_qabls, _Q)):
                if it.options & option:
                    if it.aggregate and it.key is not None:
                        declared.remove_aggregated_interest(it.key, iid)
                    else:
                        declared.remove_simple_interest(iid)

    def _other_entities(self, f: Face, table: Literal["subs", "qabls", "tokens"]) -> Iterable[tuple[Face, str]]:
        """(holder, key) of every entity of another face visible to ``f``, face by face."""
        for fid in sorted(self.tables.faces):
            h = self.tables.faces[fid]
            if self.tables.sees(f, h):
                entities: Iterable[str]
                if table == "subs":
                    entities = h.subs.values()
                elif table == "qabls":
                    entities = (k for k, _ in h.qabls.values())
                else:
                    entities = h.tokens.values()
                for key in entities:
                    yield h, key

    def _current_subscribers(self, f: Face, iid: int, key: str | None, aggregate: bool, future: bool) -> None:
        matches = list(
            dict.fromkeys(k for _, k in self._other_entities(f, "subs") if key is None or intersects(key, k))
        )
        if aggregate:
            if key is None:
                return  # real routers declare nothing for an unrestricted aggregate
            if future:
                for k in matches:
                    f.local_subs.insert_simple(k, True, lambda: self.tables.new_id(f), ())
                ident, info = f.local_subs.insert_aggregated(key, lambda: self.tables.new_id(f), (iid,))
            else:
                ident, info = 0, (True if matches else None)
            if info is not None:
                self.tables.declare(f, DeclareSubscriber(ident, self.tables.decl_key(f, key)), iid, key)
            return
        for k in matches:
            ident = 0
            if future:
                ident, _ = f.local_subs.insert_simple(k, True, lambda: self.tables.new_id(f), (iid,))
            self.tables.declare(f, DeclareSubscriber(ident, self.tables.decl_key(f, k)), iid, k)

    def _current_queryables(self, f: Face, iid: int, key: str | None, aggregate: bool, future: bool) -> None:
        matches: dict[str, QueryableInfo] = {}
        for h, k in self._other_entities(f, "qabls"):
            if key is None or intersects(key, k):
                info = self.tables.qabl_holders[k][h.fid]
                old = matches.get(k)
                matches[k] = info if old is None else merge_queryable_infos(old, info)
        if aggregate:
            if key is None:
                return
            if future:
                for k, info in matches.items():
                    f.local_qabls.insert_simple(k, info, lambda: self.tables.new_id(f), ())
                ident, agg = f.local_qabls.insert_aggregated(key, lambda: self.tables.new_id(f), (iid,))
            else:
                ident, agg = 0, f.local_qabls.aggregate_many(key, sorted(matches.items()))
            if agg is not None:
                self.tables.declare(
                    f, DeclareQueryable(ident, self.tables.decl_key(f, key), agg.complete, agg.distance), iid, key
                )
            return
        for k, info in matches.items():
            ident = 0
            if future:
                ident, _ = f.local_qabls.insert_simple(k, info, lambda: self.tables.new_id(f), (iid,))
            self.tables.declare(
                f, DeclareQueryable(ident, self.tables.decl_key(f, k), info.complete, info.distance), iid, k
            )

    def _current_tokens(self, f: Face, iid: int, key: str | None, future: bool) -> None:
        seen: dict[str, None] = {}
        for fid in sorted(self.tables.faces):
            h = self.tables.faces[fid]
            if h is f and not f.region.echoes_own_tokens():
                continue
            if h is not f and not self.tables.sees(f, h):
                continue
            for k in h.tokens.values():
                if k not in seen and (key is None or intersects(key, k)):
                    seen[k] = None
        for k in seen:
            ident = 0
            if future:
                ident = f.local_tokens.get(k, 0) or self.tables.new_id(f)
                f.local_tokens[k] = ident
            self.tables.declare(f, DeclareToken(ident, self.tables.decl_key(f, k)), iid, k)
