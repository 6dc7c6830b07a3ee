"""Bookkeeping of what was declared to one face (simple and aggregated entries)."""

from __future__ import annotations

import itertools

from pyzenoh.routing.declared import (
    Change,
    DeclaredResources,
    QueryableInfo,
    aggregate_queryable,
    aggregate_subscriber,
    merge_queryable_infos,
)


def counter() -> itertools.count[int]:
    return itertools.count(1)


def test_simple_entries_are_visible_while_an_interest_refers_to_them() -> None:
    ids = counter()
    res: DeclaredResources[bool] = DeclaredResources(aggregate_subscriber)
    assert res.insert_simple("a/1", True, ids.__next__, {1}) == (1, [Change(1, "a/1", True)])
    assert res.insert_simple("a/2", True, ids.__next__, ()) == (2, [])
    assert res.insert_simple("a/2", True, ids.__next__, {2}) == (2, [])  # same info: no news
    assert res.visible() == {"a/1": 1, "a/2": 2}
    assert res.remove_simple("a/1") == [Change(1, "a/1", None)]
    res.remove_simple_interest(2)
    assert res.visible() == {} and len(res) == 0
    assert res.remove_simple("nope") == []


def test_aggregates_follow_their_members() -> None:
    ids = counter()
    res: DeclaredResources[bool] = DeclaredResources(aggregate_subscriber)
    res.insert_simple("t/a/1", True, ids.__next__, {1})
    res.insert_simple("t/other", True, ids.__next__, {9})
    assert res.insert_aggregated("t/a/*", ids.__next__, {2}) == (3, True)
    assert res.insert_aggregated("t/a/*", ids.__next__, {5}) == (3, True)  # joined
    _, changes = res.insert_simple("t/a/2", True, ids.__next__, ())
    assert changes == []  # the aggregate was already visible
    assert res.remove_simple("t/a/1") == [Change(1, "t/a/1", None)]
    assert res.remove_simple("t/a/2") == [Change(3, "t/a/*", None)]
    assert res.insert_simple("t/a/3", True, ids.__next__, ())[1] == [Change(3, "t/a/*", True)]
    assert not res.remove_aggregated_interest("t/a/*", 7)
    assert res.remove_aggregated_interest("t/a/*", 2)
    assert res.remove_aggregated_interest("t/a/*", 5)
    assert res.visible() == {"t/other": 2}


def test_an_aggregate_and_a_simple_entry_on_one_key_share_the_id() -> None:
    ids = counter()
    res: DeclaredResources[bool] = DeclaredResources(aggregate_subscriber)
    agg_id, info = res.insert_aggregated("k/*", ids.__next__, {1})
    assert info is None
    assert res.insert_simple("k/*", True, ids.__next__, {2})[0] == agg_id


def test_queryable_infos_merge_and_aggregate() -> None:
    a, b = QueryableInfo(False, 3), QueryableInfo(True, 9)
    assert merge_queryable_infos(a, b) == QueryableInfo(True, 9)
    assert merge_queryable_infos(a, QueryableInfo(False, 1)) == QueryableInfo(False, 1)
    # A complete member completes the aggregate only if it includes the aggregate's key.
    assert aggregate_queryable(None, "q/*", b, "q/a") == QueryableInfo(False, 9)
    assert aggregate_queryable(None, "q/*", b, "q/**") == b
    ids = counter()
    res: DeclaredResources[QueryableInfo] = DeclaredResources(aggregate_queryable)
    res.insert_simple("q/x", a, ids.__next__, {1})
    _, changes = res.insert_simple("q/x", b, ids.__next__, ())
    assert changes == [Change(1, "q/x", b)]  # info update of a visible entry
