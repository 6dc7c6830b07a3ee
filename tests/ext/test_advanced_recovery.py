"""The advanced subscriber's rules (ext/advanced/recovery.py and miss_detection.py) without
any session: samples, replies, heartbeats and query ends in; delivered samples, misses,
queries to send and timers to arm out. The rules both the blocking and the asyncio
subscribers drive (the interop tests check them against eclipse-zenoh 1.10.2)."""

from __future__ import annotations

from pyzenoh.ext.advanced.config import HistoryConfig, RecoveryConfig
from pyzenoh.ext.advanced.delivery import make_delivery
from pyzenoh.ext.advanced.miss_detection import Miss
from pyzenoh.ext.advanced.recovery import QueryOrder, Recovery
from pyzenoh.ext.serialization import UInt32, z_serialize
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import EntityGlobalId, Sample, SourceInfo, ZBytes, ZenohId

KEY = "demo/k"
ZID = ZenohId.from_str("1f")
PUB = EntityGlobalId(ZID, 7)


def sample(sn: int, key: str = KEY) -> Sample:
    return Sample(KeyExpr(key), ZBytes(f"v{sn}".encode()), source_info=SourceInfo(PUB, sn))


def sns(got: list[Sample]) -> list[int]:
    return [s.source_info.source_sn for s in got if s.source_info is not None]


def rules(
    history: HistoryConfig | None = None, recovery: RecoveryConfig | None = None
) -> tuple[Recovery, list[Sample]]:
    got: list[Sample] = []
    return Recovery(KEY, got.append, history, recovery), got


def test_without_recovery_a_gap_is_a_miss_and_delivery_goes_on() -> None:
    r, got = rules()
    misses: list[Miss] = []
    r.add_miss_listener(make_delivery(misses.append))
    for sn in (0, 1, 4, 3, 5):
        assert r.on_sample(sample(sn)).queries == []
    assert sns(got) == [0, 1, 4, 5]  # 3 came after 4: too late, dropped
    assert misses == [Miss(PUB, 2)]


def test_with_recovery_a_gap_asks_the_cache_and_its_end_flushes() -> None:
    r, got = rules(recovery=RecoveryConfig(periodic_queries=0.5))
    misses: list[Miss] = []
    r.add_miss_listener(make_delivery(misses.append))
    first = r.on_sample(sample(0))
    assert first.arm == [PUB] and first.queries == []  # a new source: its periodic queries start
    acts = r.on_sample(sample(3))
    assert acts.queries == [QueryOrder(f"{KEY}/@adv/*/{ZID}/7/**", "_sn=1..", PUB)]
    assert r.on_sample(sample(4)).queries == []  # one query at a time per source
    r.on_reply(sample(1))
    assert sns(got) == [0, 1]
    r.on_reply(sample(1, "other/key"))  # a reply off the subscriber's key: ignored
    r.query_done(acts.queries[0])  # 2 never came: a miss, then 3 and 4
    assert sns(got) == [0, 1, 3, 4] and misses == [Miss(PUB, 1)]
    assert r.periodic_due(PUB).queries == [QueryOrder(f"{KEY}/@adv/*/{ZID}/7/**", "_sn=5..", PUB)]


def test_history_holds_live_samples_until_its_query_ends() -> None:
    r, got = rules(history=HistoryConfig(max_samples=5))
    (history_query,) = r.start().queries
    assert history_query == QueryOrder(f"{KEY}/@adv/**", "_max=5", None)
    r.on_sample(sample(5))
    r.on_reply(sample(3))
    r.on_reply(sample(4))
    assert got == []
    r.query_done(history_query)
    assert sns(got) == [3, 4, 5]


def test_history_holds_at_most_max_samples_per_source() -> None:
    """zenoh-ext's rule: with max_samples held, the oldest goes out (and what follows it)."""
    r, got = rules(history=HistoryConfig(max_samples=2))
    r.start()
    r.on_sample(sample(5))
    r.on_sample(sample(7))
    assert sns(got) == [5]


def test_a_heartbeat_asks_for_what_is_newer() -> None:
    r, got = rules(recovery=RecoveryConfig(heartbeat=True))
    r.on_sample(sample(0))
    beat = Sample(KeyExpr(f"{KEY}/@adv/pub/{ZID}/7/_"), z_serialize(UInt32(2)))
    (q,) = r.on_heartbeat(beat).queries
    assert q == QueryOrder(f"{KEY}/@adv/pub/{ZID}/7/_", "_sn=1..2", PUB)
    assert r.on_heartbeat(beat).queries == []  # one query at a time
    r.on_reply(sample(1))
    r.on_reply(sample(2))
    r.query_done(q)
    assert sns(got) == [0, 1, 2]
    assert r.on_heartbeat(beat).queries == []  # nothing newer


def test_closed_rules_deliver_nothing() -> None:
    r, got = rules()
    listener = make_delivery(None)
    r.add_miss_listener(listener)
    assert r.close() == [listener]
    r.on_sample(sample(0))
    assert got == []
