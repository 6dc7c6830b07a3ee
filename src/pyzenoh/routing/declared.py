"""What the router has declared to one face, for one kind (subscribers or queryables).

Real routers keep, per face and per kind, two families of entries (zenoh
``dispatcher/local_resources.rs``; the behaviour is reproduced here, not the code):

* **simple** entries, one per key expression of a remote entity. An entry is visible on
  the wire (a D_SUBSCRIBER / D_QUERYABLE was sent for it) while at least one
  non-aggregated interest id refers to it. Entries with no interest id are kept only to
  feed aggregates.
* **aggregated** entries, one per key expression of an *aggregate* interest (option A):
  a single declaration on the interest's key that stands for every simple entry it
  intersects. It is visible while its aggregated info is not ``None``, i.e. while at
  least one simple entry intersects it.

Each mutation returns the changes that must go on the wire: ``(id, key, info)`` for a
(re)declaration, ``(id, key, None)`` for an undeclaration. Ids come from the caller (the
face's shared counter), so simple and aggregated entries on the same key share their id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pyzenoh.keyexpr.relations import includes, intersects

I = TypeVar("I")


@dataclass(frozen=True, slots=True)
class QueryableInfo:
    """A queryable's declared info (the QueryableInfo extension)."""

    complete: bool = False
    distance: int = 0


def merge_queryable_infos(a: QueryableInfo, b: QueryableInfo) -> QueryableInfo:
    """Two queryables on one key seen as one: complete if either is, the nearest distance."""
    if a.complete == b.complete:
        distance = min(a.distance, b.distance)
    else:
        distance = a.distance if a.complete else b.distance
    return QueryableInfo(a.complete or b.complete, distance)


def aggregate_queryable(
    current: QueryableInfo | None, agg_key: str, other: QueryableInfo, other_key: str
) -> QueryableInfo:
    """Fold one queryable into an aggregate on ``agg_key``.

    Only completeness matters for an aggregate: a member makes it complete only if the
    member's key includes the aggregate's key.
    """
    if current is not None and current.complete == other.complete:
        return current
    member = QueryableInfo(other.complete and includes(other_key, agg_key), other.distance)
    return member if current is None else merge_queryable_infos(current, member)


def aggregate_subscriber(current: bool | None, agg_key: str, other: bool, other_key: str) -> bool:
    return other


@dataclass(slots=True)
class _Simple(Generic[I]):
    id: int
    info: I
    interest_ids: set[int] = field(default_factory=set)
    aggregated_to: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _Aggregated(Generic[I]):
    id: int
    info: I | None = None
    interest_ids: set[int] = field(default_factory=set)
    members: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Change(Generic[I]):
    """One wire change: declare ``key`` under ``id`` with ``info``, or undeclare (None)."""

    id: int
    key: str
    info: I | None


class DeclaredResources(Generic[I]):
    """The simple and aggregated declarations made to one face for one kind."""

    __slots__ = ("_aggregate", "aggregated", "simple")

    def __init__(self, aggregate: Callable[[I | None, str, I, str], I]) -> None:
        self._aggregate = aggregate
        self.simple: dict[str, _Simple[I]] = {}
        self.aggregated: dict[str, _Aggregated[I]] = {}

    def contains_simple(self, key: str) -> bool:
        return key in self.simple

    def visible(self) -> dict[str, int]:
        """Key -> id of every declaration currently standing on the wire."""
        out = {k: s.id for k, s in self.simple.items() if s.interest_ids}
        out.update((k, a.id) for k, a in self.aggregated.items() if a.info is not None)
        return out

    def aggregate_many(self, agg_key: str, members: Iterable[tuple[str, I]]) -> I | None:
        out: I | None = None
        for key, info in members:
            out = self._aggregate(out, agg_key, info, key)
        return out

    def _recompute(self, agg_key: str, agg: _Aggregated[I]) -> I | None:
        # Sorted so that the fold (order-sensitive for queryables) is deterministic.
        return self.aggregate_many(agg_key, ((m, self.simple[m].info) for m in sorted(agg.members)))

    def insert_simple(
        self, key: str, info: I, new_id: Callable[[], int], interest_ids: Iterable[int]
    ) -> tuple[int, list[Change[I]]]:
        """Add (or refresh) the simple entry for ``key``; return its id and wire changes."""
        changes: list[Change[I]] = []
        entry = self.simple.get(key)
        if entry is not None:
            entry.interest_ids.update(interest_ids)
            if entry.interest_ids and entry.info != info:
                changes.append(Change(entry.id, key, info))
            entry.info = info
            for agg_key in sorted(entry.aggregated_to):
                agg = self.aggregated[agg_key]
                new_info = self._recompute(agg_key, agg)
                if new_info != agg.info:
                    agg.info = new_info
                    changes.append(Change(agg.id, agg_key, new_info))
            return entry.id, changes
        same_key_agg = self.aggregated.get(key)
        ident = same_key_agg.id if same_key_agg is not None else new_id()
        aggregated_to: set[str] = set()
        for agg_key, agg in self.aggregated.items():
            if intersects(key, agg_key):
                new_info = self._aggregate(agg.info, agg_key, info, key)
                if new_info != agg.info:
                    agg.info = new_info
                    changes.append(Change(agg.id, agg_key, new_info))
                agg.members.add(key)
                aggregated_to.add(agg_key)
        entry = _Simple(ident, info, set(interest_ids), aggregated_to)
        self.simple[key] = entry
        if entry.interest_ids:
            changes.append(Change(ident, key, info))
        return ident, changes

    def insert_aggregated(
        self, key: str, new_id: Callable[[], int], interest_ids: Iterable[int]
    ) -> tuple[int, I | None]:
        """Add (or join) the aggregate on ``key``; return its id and current info."""
        agg = self.aggregated.get(key)
        if agg is not None:
            agg.interest_ids.update(interest_ids)
            return agg.id, agg.info
        members = set()
        for simple_key, entry in self.simple.items():
            if intersects(simple_key, key):
                entry.aggregated_to.add(key)
                members.add(simple_key)
        same_key = self.simple.get(key)
        agg = _Aggregated(same_key.id if same_key is not None else new_id(), None, set(interest_ids), members)
        agg.info = self._recompute(key, agg)
        self.aggregated[key] = agg
        return agg.id, agg.info

    def remove_simple(self, key: str) -> list[Change[I]]:
        """Forget the simple entry for ``key`` (its entity is gone); return wire changes."""
        entry = self.simple.pop(key, None)
        if entry is None:
            return []
        changes: list[Change[I]] = []
        if entry.interest_ids:
            changes.append(Change(entry.id, key, None))
        for agg_key in sorted(entry.aggregated_to):
            agg = self.aggregated[agg_key]
            agg.members.discard(key)
            new_info = self._recompute(agg_key, agg)
            if new_info != agg.info:
                agg.info = new_info
                changes.append(Change(agg.id, agg_key, new_info))
        return changes

    def remove_simple_interest(self, interest_id: int) -> None:
        """An interest ended: entries it alone kept are forgotten, silently."""
        for key in list(self.simple):
            entry = self.simple[key]
            if interest_id in entry.interest_ids:
                entry.interest_ids.discard(interest_id)
                if not entry.interest_ids and not entry.aggregated_to:
                    del self.simple[key]

    def remove_aggregated_interest(self, key: str, interest_id: int) -> bool:
        agg = self.aggregated.get(key)
        if agg is None or interest_id not in agg.interest_ids:
            return False
        agg.interest_ids.discard(interest_id)
        if not agg.interest_ids:
            del self.aggregated[key]
            for member in agg.members:
                entry = self.simple.get(member)
                if entry is None:
                    continue
                entry.aggregated_to.discard(key)
                if not entry.interest_ids and not entry.aggregated_to:
                    del self.simple[member]
        return True

    def __len__(self) -> int:
        return len(self.simple) + len(self.aggregated)
