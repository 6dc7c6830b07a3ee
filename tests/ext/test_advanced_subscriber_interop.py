"""pyzenoh.ext's AdvancedSubscriber against eclipse-zenoh 1.10.2's AdvancedPublisher,
through a real router on 127.0.0.1: the queries it sends (compared with a real
subscriber's), history and live samples in order without duplicates, timestamped
publishers, late publisher detection, recovery (heartbeat and periodic queries) and
miss detection, subscriber detection, pyzenoh to pyzenoh, and a publisher that was out
of reach when the subscriber asked. A lost sample is simulated by not handing it to the
subscriber's state."""

from __future__ import annotations

import datetime
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
    drain_replies,
    reachable,
    sns,
    texts,
    tokens,
)
from tests.fixtures.procs import Proc, zenoh_config
from tests.waits import flushed, routed, until, value_of

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


# --- the queries a subscriber sends ------------------------------------------------------------


def test_subscriber_queries_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """What a pyzenoh and a real AdvancedSubscriber ask a publisher's cache: the history
    query (``_max``, ``_time``), the late publisher's query on its token key and the
    periodic queries for newer sequence numbers, seen by a real queryable. Each has a key
    of its own: zenoh-ext 1.10.2's periodic queries outlive the real subscriber's
    undeclaration (its timer task holds the state that holds it)."""
    seen: list[tuple[str, str]] = []
    spy = zs.declare_queryable(f"{key}/*/@adv/**", lambda q: seen.append((str(q.key_expr), str(q.parameters))))
    pub_tokens = [zs.liveliness().declare_token(f"{key}/{r}/@adv/pub/{zs.zid()}/77/_") for r in ("real", "mine")]
    routed(ps, f"{key}/x/@adv/x", query=True)  # ps knows the spy, and ps's router the token:
    value_of(lambda: drain_replies(ps.liveliness().get(f"{key}/mine/@adv/pub/**")), "the token")
    history = {"detect_late_publishers": True, "max_samples": 5, "max_age": 1.5}
    period = datetime.timedelta(seconds=0.2)

    def queries_of(base: str, declare: Callable[[str], Any]) -> set[tuple[str, str]]:
        """The queries of a subscriber on ``base``, their keys relative to it."""

        def of_round() -> set[tuple[str, str]]:
            return {(k.removeprefix(base), p) for k, p in seen if k.startswith(f"{base}/")}

        sub = declare(base)
        assert until(lambda: len(of_round()) >= 3)  # history, token, and periodic queries
        sub.undeclare()
        return of_round()

    real = queries_of(
        f"{key}/real",
        lambda base: zx.declare_advanced_subscriber(
            zs,
            base,
            lambda s: None,
            history=zx.HistoryConfig(**history),
            recovery=zx.RecoveryConfig(periodic_queries=period),
        ),
    )
    mine = queries_of(
        f"{key}/mine",
        lambda base: px.declare_advanced_subscriber(
            ps,
            base,
            lambda s: None,
            history=px.HistoryConfig(**history),
            recovery=px.RecoveryConfig(periodic_queries=period),
        ),
    )
    assert mine == real
    assert ("/@adv/**", "_max=5;_time=[now(-1.5s)..];_anyke") in mine
    assert (f"/@adv/*/{zs.zid()}/77/**", "_sn=..;_anyke") in mine
    for token in pub_tokens:
        token.undeclare()
    spy.undeclare()


def test_heartbeat_queries_like_the_real_one(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    """A heartbeat announcing sequence number 4 from an unknown publisher: both
    subscribers ask its cache for ``_sn=..4`` on the heartbeat's key."""
    seen: list[tuple[str, str]] = []
    spy = zs.declare_queryable(f"{key}/@adv/**", lambda q: seen.append((str(q.key_expr), str(q.parameters))))
    beat = f"{key}/@adv/pub/{zs.zid()}/78/_"
    routed(ps, f"{key}/@adv/x", query=True)  # ps knows the spy

    def queries_of(declare: Callable[[], Any]) -> set[tuple[str, str]]:
        seen.clear()
        sub = declare()
        routed(zs, beat)  # zs knows the subscriber's heartbeat subscription (the real one's is local)
        zs.put(beat, zx.z_serialize(zx.UInt32(4)))
        assert until(lambda: len(seen) >= 1)
        sub.undeclare()
        return set(seen)

    real = queries_of(
        lambda: zx.declare_advanced_subscriber(zs, key, lambda s: None, recovery=zx.RecoveryConfig(heartbeat=True))
    )
    mine = queries_of(
        lambda: px.declare_advanced_subscriber(ps, key, lambda s: None, recovery=px.RecoveryConfig(heartbeat=True))
    )
    assert mine == real == {(beat, "_sn=..4;_anyke")}
    spy.undeclare()


# --- real publisher -> pyzenoh subscriber ---------------------------------------------------------


def test_zenoh_publisher_history_and_live_to_pyzenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    pub = zx.declare_advanced_publisher(
        zs,
        key,
        cache=zx.CacheConfig(max_samples=5),
        sample_miss_detection=zx.MissDetectionConfig(heartbeat=0.2),
        publisher_detection=True,
    )
    for i in range(8):
        pub.put(f"h{i}")
    flushed(zs, ps)  # the live samples are gone before the subscriber comes
    sub = px.declare_advanced_subscriber(
        ps,
        key,
        history=px.HistoryConfig(detect_late_publishers=True),
        recovery=px.RecoveryConfig(heartbeat=True),
        subscriber_detection=True,
    )
    misses = sub.sample_miss_listener()
    got = [sub.recv(WAIT) for _ in range(5)]
    for i in range(8, 12):
        pub.put(f"l{i}")
    got += [sub.recv(WAIT) for _ in range(4)]
    time.sleep(0.5)  # an absence: two heartbeat periods (0.2 s) bring no duplicate
    assert sub.try_recv() is None  # no duplicate from the heartbeat's queries
    assert misses.try_recv() is None
    assert texts(got) == [f"h{i}" for i in range(3, 8)] + [f"l{i}" for i in range(8, 12)]
    assert sns(got) == list(range(3, 12))
    assert all(s.source_info.source_id.eid == pub.id.eid for s in got)
    # the subscriber's token, as the real one names it
    assert until(lambda: tokens(zs, f"{key}/@adv/sub/**") == [f"{key}/@adv/sub/{ps.zid()}/{sub.id.eid}/_"])
    sub.undeclare()
    pub.undeclare()


def test_zenoh_publisher_max_samples_to_pyzenoh_channel_and_callback(
    ps: pyzenoh.Session, zs: zenoh.Session, key: str
) -> None:
    pub = zx.declare_advanced_publisher(
        zs, key, cache=zx.CacheConfig(max_samples=5), sample_miss_detection=zx.MissDetectionConfig()
    )
    for i in range(5):
        pub.put(f"v{i}")
    flushed(zs, ps)  # the live samples are gone before the subscriber comes
    ring = px.declare_advanced_subscriber(
        ps, key, pyzenoh.handlers.RingChannel(10), history=px.HistoryConfig(max_samples=2)
    )
    seen: list[Any] = []
    ended: list[bool] = []
    cb = px.declare_advanced_subscriber(
        ps,
        key,
        pyzenoh.handlers.Callback(seen.append, lambda: ended.append(True)),
        history=px.HistoryConfig(max_age=60),
    )
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
    flushed(zs_ts, ps)  # the live samples are gone before the subscriber comes
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True))
    got = [sub.recv(WAIT) for _ in range(3)]
    pub.put("t5")
    got.append(sub.recv(WAIT))
    time.sleep(0.2)  # an absence: nothing more comes
    extra = sub.try_recv()
    assert extra is None, (texts(got), [str(s.timestamp) for s in got], repr(extra), str(extra.timestamp))
    assert texts(got) == ["t2", "t3", "t4", "t5"]
    sub.undeclare()
    pub.undeclare()


def test_late_publisher_detected_by_pyzenoh(ps: pyzenoh.Session, zs: zenoh.Session, key: str) -> None:
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True))
    detected = sub.detect_publishers(history=True)  # with history: no wait for the token
    routed(zs, key)  # zs knows sub's subscriber before its publisher puts
    pub = zx.declare_advanced_publisher(
        zs,
        key,
        cache=zx.CacheConfig(max_samples=3),
        sample_miss_detection=zx.MissDetectionConfig(),
        publisher_detection=True,
    )
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
def test_pyzenoh_subscriber_recovers_from_zenoh_cache(
    ps: pyzenoh.Session, zs: zenoh.Session, key: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recovery = (
        px.RecoveryConfig(heartbeat=True)
        if mode == "heartbeat"
        else px.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=0.2))
    )
    pub = zx.declare_advanced_publisher(
        zs, key, cache=zx.CacheConfig(max_samples=10), sample_miss_detection=zx.MissDetectionConfig(heartbeat=0.2)
    )
    _Deaf(monkeypatch, {"s1", "s3"})
    sub = px.declare_advanced_subscriber(ps, key, recovery=recovery)
    misses = sub.sample_miss_listener()
    routed(zs, key)
    for i in range(4):
        pub.put(f"s{i}")
    got = [sub.recv(WAIT) for _ in range(4)]
    assert texts(got) == ["s0", "s1", "s2", "s3"] and sns(got) == [0, 1, 2, 3]
    time.sleep(0.3)  # an absence: a heartbeat / query period (0.2 s) brings no duplicate
    assert sub.try_recv() is None and misses.try_recv() is None
    sub.undeclare()
    pub.undeclare()


def test_pyzenoh_subscriber_reports_miss_from_zenoh(
    ps: pyzenoh.Session, zs: zenoh.Session, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pub = zx.declare_advanced_publisher(zs, key, sample_miss_detection=zx.MissDetectionConfig())
    _Deaf(monkeypatch, {"m1", "m2"})
    sub = px.declare_advanced_subscriber(ps, key)
    misses: list[px.Miss] = []
    listener = sub.sample_miss_listener(misses.append)
    routed(zs, key)
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
    with px.declare_advanced_publisher(
        ps,
        key,
        cache=px.CacheConfig(max_samples=3),
        sample_miss_detection=px.MissDetectionConfig(sporadic_heartbeat=0.1),
        publisher_detection=True,
    ) as pub:
        for i in range(4):
            pub.put(f"p{i}")
        with px.declare_advanced_subscriber(
            ps, key, history=px.HistoryConfig(detect_late_publishers=True), recovery=px.RecoveryConfig(heartbeat=True)
        ) as sub:
            got = [sub.recv(WAIT) for _ in range(3)]
            pub.put("p4")
            got.append(sub.recv(WAIT))
            time.sleep(0.3)  # an absence: three sporadic heartbeat periods bring no duplicate
            assert sub.try_recv() is None
            assert texts(got) == ["p1", "p2", "p3", "p4"] and sns(got) == [1, 2, 3, 4]


# --- late joiner (see the island fixture) ------------------------------------------------------


def test_late_zenoh_publisher_history_to_pyzenoh(
    ps: pyzenoh.Session, key: str, island: tuple[Proc, Callable[[], None]]
) -> None:
    other, link = island
    sub = px.declare_advanced_subscriber(ps, key, history=px.HistoryConfig(detect_late_publishers=True))
    far = zenoh.open(zenoh_config(other.endpoint))
    try:
        pub = zx.declare_advanced_publisher(
            far, key, cache=zx.CacheConfig(max_samples=3), sample_miss_detection=zx.MissDetectionConfig()
        )
        for i in range(4):
            pub.put(f"far{i}")
        assert sub.try_recv() is None  # not linked yet: nothing can come
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
