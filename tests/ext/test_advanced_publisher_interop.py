"""pyzenoh.ext's AdvancedPublisher / AdvancedSubscriber against eclipse-zenoh 1.10.2's
zenoh.ext ones, both ways, through a real router on 127.0.0.1: history (sequenced and
timestamped publishers), live samples in order without duplicates, the cache's query
parameters (compared with a real cache answering the same queries), heartbeats, sample
miss detection and recovery (heartbeat and periodic queries), publisher and subscriber
detection. A lost sample is simulated by not sending it (it stays in the publisher's
cache) or by not handing it to the subscriber's state."""

from __future__ import annotations

import datetime
import itertools
import json
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zenoh
import zenoh.ext as zx

import pyzenoh
import pyzenoh.ext as px
from tests.interop.zenoh_procs import Proc, pyzenoh_config, start_router, zenoh_config

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]

WAIT = 5.0
_ids = itertools.count()


@pytest.fixture(scope="module")
def router() -> Iterator[Proc]:
    proc = start_router()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def zs(router: Proc) -> Iterator[zenoh.Session]:
    s = zenoh.open(zenoh_config(router.endpoint))
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def zs_ts(router: Proc) -> Iterator[zenoh.Session]:
    """A real session that timestamps (a real cache without miss detection needs it)."""
    c = zenoh_config(router.endpoint)
    c.insert_json5("timestamping/enabled", json.dumps(True))
    s = zenoh.open(c)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture(scope="module")
def ps(router: Proc) -> Iterator[pyzenoh.Session]:
    s = pyzenoh.open(pyzenoh_config(router.endpoint))
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def key() -> str:
    return f"adv/{next(_ids)}/k"


def until(cond: Callable[[], bool], timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def settle(seconds: float = 0.3) -> None:
    """Let declarations propagate through the router (never asserted on)."""
    time.sleep(seconds)


def tokens(zs: zenoh.Session, key_expr: str) -> list[str]:
    return sorted(str(r.ok.key_expr) for r in zs.liveliness().get(key_expr) if r.ok is not None)


def texts(samples: list[Any]) -> list[str]:
    return [s.payload.to_string() for s in samples]


def sns(samples: list[Any]) -> list[int | None]:
    return [None if s.source_info is None else s.source_info.source_sn for s in samples]


# --- names ------------------------------------------------------------------------------------

NAMES = ["AdvancedPublisher", "AdvancedSubscriber", "CacheConfig", "HistoryConfig", "Miss",
         "MissDetectionConfig", "RecoveryConfig", "RepliesConfig", "SampleMissListener",
         "declare_advanced_publisher", "declare_advanced_subscriber"]  # fmt: skip


def test_names_and_configs() -> None:
    for name in NAMES:
        assert hasattr(zx, name), name
        assert name in px.__all__ and hasattr(px, name), name
    assert pyzenoh.ext.CacheConfig is px.CacheConfig
    cc = px.CacheConfig(3, replies_config=px.RepliesConfig(congestion_control=pyzenoh.CongestionControl.DROP,
                                                          priority=pyzenoh.Priority.DATA_HIGH, express=True))  # fmt: skip
    assert cc.max_samples == 3 and cc.replies_config.express
    assert px.CacheConfig().max_samples == 1
    h = px.HistoryConfig(detect_late_publishers=True, max_samples=4, max_age=1.5)
    assert (h.detect_late_publishers, h.max_samples, h.max_age) == (True, 4, 1.5)
    assert px.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=2)).periodic_queries == 2.0
    assert px.RecoveryConfig(heartbeat=True).heartbeat
    # as the real ones: RecoveryConfig takes exactly one of its two
    for bad in ({}, {"periodic_queries": datetime.timedelta(seconds=1), "heartbeat": True}):
        with pytest.raises(ValueError):
            zx.RecoveryConfig(**bad)
        with pytest.raises(pyzenoh.ZError):
            px.RecoveryConfig(**bad)
    assert px.MissDetectionConfig(heartbeat=0.5).period == 0.5
    assert px.MissDetectionConfig(sporadic_heartbeat=1).sporadic
    assert px.MissDetectionConfig().period is None
    m = px.Miss(pyzenoh.EntityGlobalId(pyzenoh.ZenohId.from_str("a1"), 3), 2)
    assert (m.nb, m.source.eid) == (2, 3)


def test_zero_max_samples_refused(ps: pyzenoh.Session, key: str) -> None:
    with pytest.raises(pyzenoh.ZError):
        px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(0))
    with pytest.raises(pyzenoh.ZError):
        px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(max_samples=0))


# --- pyzenoh publisher -> real subscriber ---------------------------------------------------------


def test_pyzenoh_publisher_history_and_live_to_zenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    pub = px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(max_samples=5),
                                        sample_miss_detection=px.MissDetectionConfig(heartbeat=0.2),
                                        publisher_detection=True)  # fmt: skip
    with pub:
        for i in range(8):
            pub.put(f"h{i}", attachment=b"att")
        settle()  # the live samples are gone before the subscriber comes
        got: list[Any] = []
        misses: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append,
                                             history=zx.HistoryConfig(detect_late_publishers=True),
                                             recovery=zx.RecoveryConfig(heartbeat=True))  # fmt: skip
        sub.sample_miss_listener(misses.append)
        assert until(lambda: len(got) >= 5)
        for i in range(8, 12):
            pub.put(f"l{i}")
        assert until(lambda: len(got) >= 9)
        settle(0.5)  # a heartbeat or two: nothing more may come
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
        settle()  # the live samples are gone before the subscriber comes
        assert until(lambda: tokens(zs, f"{key}/@adv/**") == [f"{key}/@adv/pub/{ps.zid()}/uhlc/_"])
        got: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append, history=zx.HistoryConfig(detect_late_publishers=True))
        assert until(lambda: len(got) >= 3)
        pub.put("t5")
        assert until(lambda: len(got) >= 4)
        settle(0.2)
        assert texts(got) == ["t2", "t3", "t4", "t5"]
        assert all(s.source_info is None and s.timestamp is not None for s in got)
        sub.undeclare()


def test_pyzenoh_heartbeat_and_token_wire(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    beats: list[Any] = []
    spy = zs.declare_subscriber(f"{key}/@adv/**", beats.append)
    settle()
    with px.declare_advanced_publisher(ps, key, sample_miss_detection=px.MissDetectionConfig(heartbeat=0.1),
                                       publisher_detection=True) as pub:  # fmt: skip
        adv = f"{key}/@adv/pub/{ps.zid()}/{pub.id.eid}/_"
        assert until(lambda: tokens(zs, f"{key}/@adv/**") == [adv])
        settle(0.3)
        assert not beats  # nothing published yet: no heartbeat
        pub.put("a")
        pub.put("b")
        assert until(lambda: len(beats) >= 2)
        assert {str(s.key_expr) for s in beats} == {adv}
        assert {s.payload.to_bytes() for s in beats} == {struct.pack("<I", 1)}
        assert zx.z_deserialize(int, beats[0].payload) == 1
    spy.undeclare()


def test_pyzenoh_sporadic_heartbeat_only_after_news(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    beats: list[Any] = []
    spy = zs.declare_subscriber(f"{key}/@adv/**", beats.append)
    settle()
    with px.declare_advanced_publisher(ps, key,
                                       sample_miss_detection=px.MissDetectionConfig(sporadic_heartbeat=0.05)) as pub:  # fmt: skip
        pub.put("a")
        assert until(lambda: len(beats) >= 1)
        settle(0.3)  # six periods without news: no heartbeat
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
def test_zenoh_subscriber_recovers_from_pyzenoh_cache(ps: pyzenoh.Session, zs: zenoh.Session, key: str,
                                                     mode: str) -> None:  # fmt: skip
    recovery = (zx.RecoveryConfig(heartbeat=True) if mode == "heartbeat"
                else zx.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=0.2)))  # fmt: skip
    with px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(max_samples=10),
                                       sample_miss_detection=px.MissDetectionConfig(heartbeat=0.2)) as pub:  # fmt: skip
        got: list[Any] = []
        misses: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append, recovery=recovery)
        sub.sample_miss_listener(misses.append)
        settle()
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
        settle()
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


SELECTORS = ["", "_sn=1..3", "_sn=2..", "_sn=..1", "_sn=4", "_max=2", "_sn=1..4;_max=2", "_sn=9..", "_max=9", "_max=0",
             "_time=[now(-60s)..]", "_time=[..now(-60s)]"]  # fmt: skip


def test_cache_answers_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """The same puts on a real and a pyzenoh AdvancedPublisher; the same queries on both
    caches get the same samples (payloads and sequence numbers, in order)."""
    kz, kp = f"{key}/real", f"{key}/py"
    zpub = zx.declare_advanced_publisher(zs, kz, cache=zx.CacheConfig(max_samples=4),
                                         sample_miss_detection=zx.MissDetectionConfig())  # fmt: skip
    ppub = px.declare_advanced_publisher(ps, kp, cache=px.CacheConfig(max_samples=4),
                                         sample_miss_detection=px.MissDetectionConfig())  # fmt: skip
    for i in range(6):
        zpub.put(f"c{i}")
        ppub.put(f"c{i}")
    settle()

    def ask(k: str, params: str) -> list[tuple[str, int | None]]:
        sel = f"{k}/@adv/**" + (f"?{params}" if params else "")
        replies = zs.get(sel, consolidation=zenoh.ConsolidationMode.NONE, accept_replies=zenoh.ReplyKeyExpr.ANY,
                         target=zenoh.QueryTarget.ALL)  # fmt: skip
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


def test_timestamped_cache_answers_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, zs_ts: zenoh.Session,
                                                     key: str) -> None:  # fmt: skip
    """Caches without miss detection (samples ordered and filtered by timestamp): the
    same ``_time``/``_max``/``_sn`` queries on a real and a pyzenoh cache."""
    kz, kp = f"{key}/real", f"{key}/py"
    zpub = zx.declare_advanced_publisher(zs_ts, kz, cache=zx.CacheConfig(max_samples=5))
    ppub = px.declare_advanced_publisher(ps, kp, cache=px.CacheConfig(max_samples=5))
    for i in range(3):
        zpub.put(f"c{i}")
        ppub.put(f"c{i}")
    settle(0.2)
    mid = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    settle(0.2)
    for i in range(3, 6):
        zpub.put(f"c{i}")
        ppub.put(f"c{i}")
    settle()

    def ask(k: str, params: str) -> list[str]:
        replies = zs.get(f"{k}/@adv/**?{params}", consolidation=zenoh.ConsolidationMode.NONE,
                         accept_replies=zenoh.ReplyKeyExpr.ANY, target=zenoh.QueryTarget.ALL)  # fmt: skip
        return [r.ok.payload.to_string() for r in replies if r.ok is not None]

    for params in ("_time=[now(-60s)..]", "_time=[..now(-60s)]", f"_time=[{mid}..]", f"_time=[..{mid}]",
                   f"_time=]{mid};1h[", f"_time=[{mid}..];_max=2", "_max=3", "_sn=0..9", "_time=bad"):  # fmt: skip
        assert ask(kp, params) == ask(kz, params), params
    assert ask(kp, f"_time=[{mid}..]") == ["c3", "c4", "c5"]
    zpub.undeclare()
    ppub.undeclare()


def test_pyzenoh_delete_in_cache(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    with px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(max_samples=2),
                                       sample_miss_detection=px.MissDetectionConfig()) as pub:  # fmt: skip
        pub.put("x")
        pub.delete()
        got: list[Any] = []
        sub = zx.declare_advanced_subscriber(zs, key, got.append, history=zx.HistoryConfig())
        assert until(lambda: len(got) == 2)
        assert [s.kind for s in got] == [zenoh.SampleKind.PUT, zenoh.SampleKind.DELETE]
        sub.undeclare()


def test_subscriber_queries_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """What a pyzenoh and a real AdvancedSubscriber ask a publisher's cache: the history
    query (``_max``, ``_time``), the late publisher's query on its token key and the
    periodic queries for newer sequence numbers, seen by a real queryable."""
    seen: list[tuple[str, str]] = []
    spy = zs.declare_queryable(f"{key}/@adv/**", lambda q: seen.append((str(q.key_expr), str(q.parameters))))
    token = zs.liveliness().declare_token(f"{key}/@adv/pub/{zs.zid()}/77/_")
    settle()
    history = {"detect_late_publishers": True, "max_samples": 5, "max_age": 1.5}
    period = datetime.timedelta(seconds=0.2)

    def queries_of(declare: Callable[[], Any]) -> set[tuple[str, str]]:
        seen.clear()
        sub = declare()
        assert until(lambda: len(seen) >= 3)  # history, token, and periodic queries
        sub.undeclare()
        settle(0.1)
        return set(seen)

    real = queries_of(lambda: zx.declare_advanced_subscriber(zs, key, lambda s: None, history=zx.HistoryConfig(**history),
                                                             recovery=zx.RecoveryConfig(periodic_queries=period)))
    mine = queries_of(lambda: px.declare_advanced_subscriber(ps, key, lambda s: None, history=px.HistoryConfig(**history),
                                                             recovery=px.RecoveryConfig(periodic_queries=period)))
    assert mine == real
    assert (f"{key}/@adv/**", "_max=5;_time=[now(-1.5s)..];_anyke") in mine
    assert (f"{key}/@adv/*/{zs.zid()}/77/**", "_sn=..;_anyke") in mine
    token.undeclare()
    spy.undeclare()


def test_heartbeat_queries_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """A heartbeat announcing sequence number 4 from an unknown publisher: both
    subscribers ask its cache for ``_sn=..4`` on the heartbeat's key."""
    seen: list[tuple[str, str]] = []
    spy = zs.declare_queryable(f"{key}/@adv/**", lambda q: seen.append((str(q.key_expr), str(q.parameters))))
    beat = f"{key}/@adv/pub/{zs.zid()}/78/_"
    settle()

    def queries_of(declare: Callable[[], Any]) -> set[tuple[str, str]]:
        seen.clear()
        sub = declare()
        settle()
        zs.put(beat, zx.z_serialize(zx.UInt32(4)))
        assert until(lambda: len(seen) >= 1)
        sub.undeclare()
        return set(seen)

    real = queries_of(lambda: zx.declare_advanced_subscriber(zs, key, lambda s: None,
                                                             recovery=zx.RecoveryConfig(heartbeat=True)))  # fmt: skip
    mine = queries_of(lambda: px.declare_advanced_subscriber(ps, key, lambda s: None,
                                                             recovery=px.RecoveryConfig(heartbeat=True)))  # fmt: skip
    assert mine == real == {(beat, "_sn=..4;_anyke")}
    spy.undeclare()


# --- real publisher -> pyzenoh subscriber ---------------------------------------------------------


def test_zenoh_publisher_history_and_live_to_pyzenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    pub = zx.declare_advanced_publisher(zs, key, cache=zx.CacheConfig(max_samples=5),
                                        sample_miss_detection=zx.MissDetectionConfig(heartbeat=0.2),
                                        publisher_detection=True)  # fmt: skip
    for i in range(8):
        pub.put(f"h{i}")
    settle()  # the live samples are gone before the subscriber comes
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True),
                                         recovery=px.RecoveryConfig(heartbeat=True), subscriber_detection=True)  # fmt: skip
    misses = sub.sample_miss_listener()
    got = [sub.recv(WAIT) for _ in range(5)]
    for i in range(8, 12):
        pub.put(f"l{i}")
    got += [sub.recv(WAIT) for _ in range(4)]
    settle(0.5)
    assert sub.try_recv() is None  # no duplicate from the heartbeat's queries
    assert misses.try_recv() is None
    assert texts(got) == [f"h{i}" for i in range(3, 8)] + [f"l{i}" for i in range(8, 12)]
    assert sns(got) == list(range(3, 12))
    assert all(s.source_info.source_id.eid == pub.id.eid for s in got)
    # the subscriber's token, as the real one names it
    assert until(lambda: tokens(zs, f"{key}/@adv/sub/**") == [f"{key}/@adv/sub/{ps.zid()}/{sub.id.eid}/_"])
    sub.undeclare()
    pub.undeclare()


def test_zenoh_publisher_max_samples_to_pyzenoh_channel_and_callback(ps: pyzenoh.Session, zs: zenoh.Session,
                                                                    key: str) -> None:  # fmt: skip
    pub = zx.declare_advanced_publisher(zs, key, cache=zx.CacheConfig(max_samples=5),
                                        sample_miss_detection=zx.MissDetectionConfig())  # fmt: skip
    for i in range(5):
        pub.put(f"v{i}")
    settle()  # the live samples are gone before the subscriber comes
    ring = px.declare_advanced_subscriber(ps, key, pyzenoh.handlers.RingChannel(10),
                                          history=px.HistoryConfig(max_samples=2))  # fmt: skip
    seen: list[Any] = []
    ended: list[bool] = []
    cb = px.declare_advanced_subscriber(ps, key, pyzenoh.handlers.Callback(seen.append, lambda: ended.append(True)),
                                        history=px.HistoryConfig(max_age=60))  # fmt: skip
    assert until(lambda: len(seen) == 5)
    assert texts([ring.recv(WAIT), ring.recv(WAIT)]) == ["v3", "v4"]
    assert texts(seen) == [f"v{i}" for i in range(5)]
    assert cb.handler is None
    cb.undeclare()
    assert until(lambda: ended == [True])
    ring.undeclare()
    pub.undeclare()


def test_zenoh_timestamped_cache_to_pyzenoh(ps: pyzenoh.Session, zs_ts: zenoh.Session, key: str) -> None:
    pub = zx.declare_advanced_publisher(zs_ts, key, cache=zx.CacheConfig(max_samples=3), publisher_detection=True)
    for i in range(5):
        pub.put(f"t{i}")
    settle()  # the live samples are gone before the subscriber comes
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True))
    got = [sub.recv(WAIT) for _ in range(3)]
    pub.put("t5")
    got.append(sub.recv(WAIT))
    settle(0.2)
    extra = sub.try_recv()
    assert extra is None, (texts(got), [str(s.timestamp) for s in got], repr(extra), str(extra.timestamp))
    assert texts(got) == ["t2", "t3", "t4", "t5"]
    sub.undeclare()
    pub.undeclare()


def test_late_publisher_detected_by_pyzenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True))
    detected = sub.detect_publishers(history=True)
    settle()
    pub = zx.declare_advanced_publisher(zs, key, cache=zx.CacheConfig(max_samples=3),
                                        sample_miss_detection=zx.MissDetectionConfig(), publisher_detection=True)  # fmt: skip
    token = detected.recv(WAIT)
    assert str(token.key_expr) == f"{key}/@adv/pub/{zs.zid()}/{pub.id.eid}/_"
    pub.put("late0")
    pub.put("late1")
    assert texts([sub.recv(WAIT), sub.recv(WAIT)]) == ["late0", "late1"]
    pub.undeclare()
    gone = detected.recv(WAIT)
    assert gone.kind is pyzenoh.SampleKind.DELETE
    detected.undeclare()
    sub.undeclare()


class _Deaf:
    """Makes pyzenoh AdvancedSubscribers declared while it is installed ignore the live
    samples whose payload is in ``lost`` (as if the network had lost them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lost: set[str]) -> None:
        real = px.AdvancedSubscriber._on_sample

        def on_sample(sub: px.AdvancedSubscriber[Any], sample: pyzenoh.Sample) -> None:
            if sample.payload.to_string() in lost:
                lost.discard(sample.payload.to_string())
                return
            real(sub, sample)

        monkeypatch.setattr(px.AdvancedSubscriber, "_on_sample", on_sample)


@pytest.mark.parametrize("mode", ["heartbeat", "periodic"])
def test_pyzenoh_subscriber_recovers_from_zenoh_cache(ps: pyzenoh.Session, zs: zenoh.Session, key: str, mode: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    recovery = (px.RecoveryConfig(heartbeat=True) if mode == "heartbeat"
                else px.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=0.2)))  # fmt: skip
    pub = zx.declare_advanced_publisher(zs, key, cache=zx.CacheConfig(max_samples=10),
                                        sample_miss_detection=zx.MissDetectionConfig(heartbeat=0.2))  # fmt: skip
    _Deaf(monkeypatch, {"s1", "s3"})
    sub = px.declare_advanced_subscriber(ps, key, recovery=recovery)
    misses = sub.sample_miss_listener()
    settle()
    for i in range(4):
        pub.put(f"s{i}")
    got = [sub.recv(WAIT) for _ in range(4)]
    assert texts(got) == ["s0", "s1", "s2", "s3"] and sns(got) == [0, 1, 2, 3]
    settle(0.3)
    assert sub.try_recv() is None and misses.try_recv() is None
    sub.undeclare()
    pub.undeclare()


def test_pyzenoh_subscriber_reports_miss_from_zenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    pub = zx.declare_advanced_publisher(zs, key, sample_miss_detection=zx.MissDetectionConfig())
    _Deaf(monkeypatch, {"m1", "m2"})
    sub = px.declare_advanced_subscriber(ps, key)
    misses: list[px.Miss] = []
    listener = sub.sample_miss_listener(misses.append)
    settle()
    for i in range(4):
        pub.put(f"m{i}")
    got = [sub.recv(WAIT), sub.recv(WAIT)]
    assert until(lambda: len(misses) == 1)
    assert texts(got) == ["m0", "m3"]
    assert misses[0].nb == 2 and misses[0].source.eid == pub.id.eid
    assert str(misses[0].source.zid) == str(zs.zid())
    listener.undeclare()
    sub.undeclare()
    pub.undeclare()


def test_pyzenoh_to_pyzenoh(ps: pyzenoh.Session, key: str) -> None:
    with px.declare_advanced_publisher(ps, key, cache=px.CacheConfig(max_samples=3),
                                       sample_miss_detection=px.MissDetectionConfig(sporadic_heartbeat=0.1),
                                       publisher_detection=True) as pub:  # fmt: skip
        for i in range(4):
            pub.put(f"p{i}")
        with px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True),
                                            recovery=px.RecoveryConfig(heartbeat=True)) as sub:  # fmt: skip
            got = [sub.recv(WAIT) for _ in range(3)]
            pub.put("p4")
            got.append(sub.recv(WAIT))
            settle(0.3)
            assert sub.try_recv() is None
            assert texts(got) == ["p1", "p2", "p3", "p4"] and sns(got) == [1, 2, 3, 4]


# --- late joiners: a publisher that was out of reach when the subscriber asked --------------------
#
# The publisher sits behind another router, linked to the subscriber's router only after it
# published. Its token is declared by hand once its cache is reachable: a token crossing a
# new router link can arrive before the routes to the queryable behind it (real publishers
# and subscribers race the same way), and the test is about what the token triggers.


@pytest.fixture
def island(router: Proc) -> Iterator[tuple[Proc, Callable[[], None]]]:
    """A router not linked to ``router`` yet, and a function that links the two (through
    a third router connecting to both)."""
    other = start_router()
    bridges: list[Proc] = []

    def link() -> None:
        bridges.append(start_router(extra={"connect/endpoints": [router.endpoint, other.endpoint]}))

    try:
        yield other, link
    finally:
        for p in (*bridges, other):
            p.stop()


def reachable(session: Any, selector: str) -> bool:
    """Whether a get on ``selector`` (an @adv key) gets a reply."""
    if isinstance(session, pyzenoh.Session):
        replies = session.get(selector, accept_replies=pyzenoh.ReplyKeyExpr.ANY, timeout=1.0)
    else:
        replies = session.get(selector, accept_replies=zenoh.ReplyKeyExpr.ANY, timeout=1.0)
    return any(r.ok is not None for r in replies)


def test_late_pyzenoh_publisher_history_to_zenoh(zs: zenoh.Session, key: str,
                                                 island: tuple[Proc, Callable[[], None]]) -> None:  # fmt: skip
    other, link = island
    got: list[Any] = []
    sub = zx.declare_advanced_subscriber(zs, key, got.append, history=zx.HistoryConfig(detect_late_publishers=True))
    with pyzenoh.open(pyzenoh_config(other.endpoint)) as far:
        pub = px.declare_advanced_publisher(far, key, cache=px.CacheConfig(max_samples=3),
                                            sample_miss_detection=px.MissDetectionConfig())  # fmt: skip
        for i in range(4):
            pub.put(f"far{i}")
        settle()
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


def test_late_zenoh_publisher_history_to_pyzenoh(ps: pyzenoh.Session, key: str,
                                                 island: tuple[Proc, Callable[[], None]]) -> None:  # fmt: skip
    other, link = island
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True))
    far = zenoh.open(zenoh_config(other.endpoint))
    try:
        pub = zx.declare_advanced_publisher(far, key, cache=zx.CacheConfig(max_samples=3),
                                            sample_miss_detection=zx.MissDetectionConfig())  # fmt: skip
        for i in range(4):
            pub.put(f"far{i}")
        settle()
        assert sub.try_recv() is None
        link()
        assert until(lambda: reachable(ps, f"{key}/@adv/**?_max=1"))
        assert sub.try_recv() is None
        token = far.liveliness().declare_token(f"{key}/@adv/pub/{far.zid()}/{pub.id.eid}/_")
        got = [sub.recv(WAIT) for _ in range(3)]
        pub.put("far4")
        got.append(sub.recv(WAIT))
        assert texts(got) == ["far1", "far2", "far3", "far4"] and sns(got) == [1, 2, 3, 4]
        token.undeclare()
        pub.undeclare()
    finally:
        far.close()
    sub.undeclare()
