"""pyzenoh.ext's AdvancedPublisher against eclipse-zenoh 1.10.2's AdvancedSubscriber,
through a real router on 127.0.0.1: history (sequenced and timestamped publishers), live
samples, heartbeats and the publisher's token, recovery from its cache and miss
detection, the cache's query parameters (compared with a real cache answering the same
queries), and a publisher that was out of reach when the subscriber asked. A lost sample
is simulated by not sending it (it stays in the publisher's cache)."""

from __future__ import annotations

import datetime
import struct
import time
from collections.abc import Callable
from typing import Any

import pytest
import zenoh
import zenoh.ext as zx

import pyzenoh
import pyzenoh.ext as px
from tests.ext.advanced_helpers import (
    WAIT,
    reachable,
    sns,
    texts,
    tokens,
)
from tests.fixtures.procs import Proc, pyzenoh_config
from tests.waits import flushed, puts_routed, routed, until

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


# --- pyzenoh publisher -> real subscriber ---------------------------------------------------------


def test_pyzenoh_publisher_history_and_live_to_zenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    pub = px.declare_advanced_publisher(
        ps,
        key,
        cache=px.CacheConfig(max_samples=5),
        sample_miss_detection=px.MissDetectionConfig(heartbeat=0.2),
        publisher_detection=True,
    )
    with pub:
        for i in range(8):
            pub.put(f"h{i}", attachment=b"att")
        flushed(ps, zs)  # the live samples are gone before the subscriber comes
        assert until(lambda: reachable(zs, f"{key}/@adv/**?_max=1"))  # the router knows the cache
        got: list[Any] = []
        misses: list[Any] = []
        sub = zx.declare_advanced_subscriber(
            zs,
            key,
            got.append,
            history=zx.HistoryConfig(detect_late_publishers=True),
            recovery=zx.RecoveryConfig(heartbeat=True),
        )
        sub.sample_miss_listener(misses.append)
        assert until(lambda: len(got) >= 5)
        for i in range(8, 12):
            pub.put(f"l{i}")
        assert until(lambda: len(got) >= 9)
        time.sleep(0.5)  # an absence: two heartbeat periods (0.2 s) bring nothing more
        assert texts(got) == [f"h{i}" for i in range(3, 8)] + [f"l{i}" for i in range(8, 12)]
        assert sns(got) == list(range(3, 12))
        assert all(str(s.source_info.source_id.zid) == str(ps.zid()) for s in got)
        assert got[0].attachment.to_bytes() == b"att"
        assert not misses
        sub.undeclare()


def test_pyzenoh_timestamped_cache_to_zenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """A cache without miss detection: the @adv key says ``uhlc`` and the samples are
    ordered by their timestamps."""
    with px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(max_samples=3), publisher_detection=True) as pub:
        for i in range(5):
            pub.put(f"t{i}")
        flushed(ps, zs)  # the live samples are gone before the subscriber comes
        assert until(lambda: tokens(zs, f"{key}/@adv/**") == [f"{key}/@adv/pub/{ps.zid()}/uhlc/_"])
        got: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append, history=zx.HistoryConfig(detect_late_publishers=True))
        assert until(lambda: len(got) >= 3)
        pub.put("t5")
        assert until(lambda: len(got) >= 4)
        time.sleep(0.2)  # an absence: nothing more comes
        assert texts(got) == ["t2", "t3", "t4", "t5"]
        assert all(s.source_info is None and s.timestamp is not None for s in got)
        sub.undeclare()


def test_pyzenoh_heartbeat_and_token_wire(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    beats: list[Any] = []
    spy = zs.declare_subscriber(f"{key}/@adv/**", beats.append)
    routed(ps, f"{key}/@adv/pub/x")
    with px.declare_advanced_publisher(
        ps, key, sample_miss_detection=px.MissDetectionConfig(heartbeat=0.1), publisher_detection=True
    ) as pub:
        adv = f"{key}/@adv/pub/{ps.zid()}/{pub.id.eid}/_"
        assert until(lambda: tokens(zs, f"{key}/@adv/**") == [adv])
        time.sleep(0.3)  # an absence over three heartbeat periods
        assert not beats  # nothing published yet: no heartbeat
        pub.put("a")
        pub.put("b")
        # A period may end between the two puts, and its beat then carries 0: every
        # beat carries the last sequence number sent, so the values only grow, up to 1.
        assert until(lambda: [s.payload.to_bytes() for s in beats][-2:] == [struct.pack("<I", 1)] * 2)
        assert {str(s.key_expr) for s in beats} == {adv}
        values = [zx.z_deserialize(int, s.payload) for s in beats]
        assert values == sorted(values) and set(values) <= {0, 1}
    spy.undeclare()


def test_pyzenoh_sporadic_heartbeat_only_after_news(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    beats: list[Any] = []
    spy = zs.declare_subscriber(f"{key}/@adv/**", beats.append)
    routed(ps, f"{key}/@adv/pub/x")
    with px.declare_advanced_publisher(
        ps, key, sample_miss_detection=px.MissDetectionConfig(sporadic_heartbeat=0.05)
    ) as pub:
        pub.put("a")
        assert until(lambda: len(beats) >= 1)
        time.sleep(0.3)  # an absence: six periods without news bring no heartbeat
        assert len(beats) == 1 and beats[0].congestion_control == zenoh.CongestionControl.BLOCK
        pub.put("b")
        pub.put("c")
        assert until(lambda: zx.z_deserialize(int, beats[-1].payload) == 2)
        values = [zx.z_deserialize(int, b.payload) for b in beats]
        assert values[0] == 0 and values == sorted(set(values))
    spy.undeclare()


def test_undeclare_ends_the_channels(ps: pyzenoh.Session, key: str) -> None:
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig())
    misses = sub.sample_miss_listener()
    sub.undeclare()
    with pytest.raises(pyzenoh.ZError):
        misses.recv(WAIT)
    with pytest.raises(pyzenoh.ZError):
        sub.recv(WAIT)


class _Lossy:
    """Makes an AdvancedPublisher's next ``n`` puts stay in its cache only."""

    def __init__(self, pub: px.AdvancedPublisher, n: int) -> None:
        self.real = pub._publisher.put
        self.n = n
        pub._publisher.put = self.put  # type: ignore[method-assign]

    def put(self, *args: Any, **kwargs: Any) -> None:
        if self.n > 0:
            self.n -= 1
            return
        self.real(*args, **kwargs)


@pytest.mark.parametrize("mode", ["heartbeat", "periodic"])
def test_zenoh_subscriber_recovers_from_pyzenoh_cache(
    ps: pyzenoh.Session, zs: zenoh.Session, key: str, mode: str
) -> None:
    recovery = (
        zx.RecoveryConfig(heartbeat=True)
        if mode == "heartbeat"
        else zx.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=0.2))
    )
    with px.declare_advanced_publisher(
        ps, key, cache=px.CacheConfig(max_samples=10), sample_miss_detection=px.MissDetectionConfig(heartbeat=0.2)
    ) as pub:
        got: list[Any] = []
        misses: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append, recovery=recovery)
        sub.sample_miss_listener(misses.append)
        routed(ps, key)  # the publisher knows the subscriber (puts before that are not sent)
        pub.put("s0")
        assert until(lambda: len(got) == 1)
        _Lossy(pub, 1)
        pub.put("s1")  # lost: a gap, recovered from the cache when s2 comes
        pub.put("s2")
        _Lossy(pub, 1)
        pub.put("s3")  # lost, and the last one: only the heartbeat / periodic query tells
        assert until(lambda: len(got) == 4)
        assert texts(got) == ["s0", "s1", "s2", "s3"] and sns(got) == [0, 1, 2, 3]
        assert not misses
        sub.undeclare()


def test_zenoh_subscriber_reports_miss_from_pyzenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    with px.declare_advanced_publisher(ps, key, sample_miss_detection=px.MissDetectionConfig()) as pub:
        got: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append)
        misses = sub.sample_miss_listener()
        routed(ps, key)
        pub.put("m0")
        _Lossy(pub, 2)
        pub.put("m1")
        pub.put("m2")
        pub.put("m3")
        assert until(lambda: len(got) == 2)
        miss = misses.recv()
        assert miss.nb == 2 and str(miss.source.zid) == str(ps.zid()) and miss.source.eid == pub.id.eid
        assert texts(got) == ["m0", "m3"]
        sub.undeclare()


SELECTORS = [
    "",
    "_sn=1..3",
    "_sn=2..",
    "_sn=..1",
    "_sn=4",
    "_max=2",
    "_sn=1..4;_max=2",
    "_sn=9..",
    "_max=9",
    "_max=0",
    "_time=[now(-60s)..]",
    "_time=[..now(-60s)]",
]


def test_cache_answers_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """The same puts on a real and a pyzenoh AdvancedPublisher; the same queries on both
    caches get the same samples (payloads and sequence numbers, in order)."""
    kz, kp = f"{key}/real", f"{key}/py"
    zpub = zx.declare_advanced_publisher(
        zs, kz, cache=zx.CacheConfig(max_samples=4), sample_miss_detection=zx.MissDetectionConfig()
    )
    ppub = px.declare_advanced_publisher(
        ps, kp, cache=px.CacheConfig(max_samples=4), sample_miss_detection=px.MissDetectionConfig()
    )
    for i in range(6):
        zpub.put(f"c{i}")
        ppub.put(f"c{i}")  # into the caches at once (they are the sessions' own)
    assert until(lambda: reachable(zs, f"{kp}/@adv/**?_max=1"))  # the router knows ppub's cache

    def ask(k: str, params: str) -> list[tuple[str, int | None]]:
        sel = f"{k}/@adv/**" + (f"?{params}" if params else "")
        replies = zs.get(
            sel,
            consolidation=zenoh.ConsolidationMode.NONE,
            accept_replies=zenoh.ReplyKeyExpr.ANY,
            target=zenoh.QueryTarget.ALL,
        )
        out = []
        for r in replies:
            assert r.ok is not None
            out.append((r.ok.payload.to_string(), r.ok.source_info.source_sn if r.ok.source_info else None))
        return out

    for params in SELECTORS:
        assert ask(kp, params) == ask(kz, params), params
    assert ask(kp, "_sn=1..3") == [("c2", 2), ("c3", 3)]
    # without _anyke the samples' key does not match the query: neither cache replies
    for k in (kp, kz):
        assert not [r for r in zs.get(f"{k}/@adv/**") if r.ok is not None]
    zpub.undeclare()
    ppub.undeclare()


def test_timestamped_cache_answers_like_the_real_one(
    ps: pyzenoh.Session, zs: zenoh.Session, zs_ts: zenoh.Session, key: str
) -> None:
    """Caches without miss detection (samples ordered and filtered by timestamp): the
    same ``_time``/``_max``/``_sn`` queries on a real and a pyzenoh cache."""
    kz, kp = f"{key}/real", f"{key}/py"
    zpub = zx.declare_advanced_publisher(zs_ts, kz, cache=zx.CacheConfig(max_samples=5))
    ppub = px.declare_advanced_publisher(ps, kp, cache=px.CacheConfig(max_samples=5))
    for i in range(3):
        zpub.put(f"c{i}")
        ppub.put(f"c{i}")
    time.sleep(0.2)  # the point: a gap in time either side of ``mid``
    mid = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    time.sleep(0.2)
    for i in range(3, 6):
        zpub.put(f"c{i}")
        ppub.put(f"c{i}")
    assert until(lambda: reachable(zs, f"{kp}/@adv/**?_max=1"))  # the router knows ppub's cache

    def ask(k: str, params: str) -> list[str]:
        replies = zs.get(
            f"{k}/@adv/**?{params}",
            consolidation=zenoh.ConsolidationMode.NONE,
            accept_replies=zenoh.ReplyKeyExpr.ANY,
            target=zenoh.QueryTarget.ALL,
        )
        return [r.ok.payload.to_string() for r in replies if r.ok is not None]

    for params in (
        "_time=[now(-60s)..]",
        "_time=[..now(-60s)]",
        f"_time=[{mid}..]",
        f"_time=[..{mid}]",
        f"_time=]{mid};1h[",
        f"_time=[{mid}..];_max=2",
        "_max=3",
        "_sn=0..9",
        "_time=bad",
    ):
        assert ask(kp, params) == ask(kz, params), params
    assert ask(kp, f"_time=[{mid}..]") == ["c3", "c4", "c5"]
    zpub.undeclare()
    ppub.undeclare()


def test_pyzenoh_delete_in_cache(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    with px.declare_advanced_publisher(
        ps, key, cache=px.CacheConfig(max_samples=2), sample_miss_detection=px.MissDetectionConfig()
    ) as pub:
        pub.put("x")
        pub.delete()
        assert until(lambda: reachable(zs, f"{key}/@adv/**?_max=1"))  # the router knows the cache
        got: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append, history=zx.HistoryConfig())
        assert until(lambda: len(got) == 2)
        assert [s.kind for s in got] == [zenoh.SampleKind.PUT, zenoh.SampleKind.DELETE]
        sub.undeclare()


# --- late joiner (see the island fixture) ------------------------------------------------------


def test_late_pyzenoh_publisher_history_to_zenoh(
    zs: zenoh.Session, key: str, island: tuple[Proc, Callable[[], None]]
) -> None:
    other, link = island
    got: list[Any] = []
    sub = zx.declare_advanced_subscriber(zs, key, got.append, history=zx.HistoryConfig(detect_late_publishers=True))
    with pyzenoh.open(pyzenoh_config(other.endpoint)) as far:
        pub = px.declare_advanced_publisher(
            far, key, cache=px.CacheConfig(max_samples=3), sample_miss_detection=px.MissDetectionConfig()
        )
        for i in range(4):
            pub.put(f"far{i}")
        puts_routed(far)  # the island's router has routed them (to nobody: not linked yet)
        assert not got
        link()
        assert until(lambda: reachable(zs, f"{key}/@adv/**?_max=1"))  # the routes to the cache are in
        assert not got
        token = far.liveliness().declare_token(f"{key}/@adv/pub/{far.zid()}/{pub.id.eid}/_")
        assert until(lambda: len(got) == 3)  # the token made the subscriber ask the cache
        pub.put("far4")
        assert until(lambda: len(got) == 4)
        assert texts(got) == ["far1", "far2", "far3", "far4"] and sns(got) == [1, 2, 3, 4]
        token.undeclare()
        pub.undeclare()
    sub.undeclare()
