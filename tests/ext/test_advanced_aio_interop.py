"""pyzenoh.ext.aio's AsyncAdvancedSubscriber and AsyncAdvancedPublisher (on an asyncio
session) against eclipse-zenoh 1.10.2's advanced publishers and subscribers through a
real router on 127.0.0.1, and against each other: history on a late join, live samples
in order without duplicates, recovery of gaps (heartbeat and periodic queries), miss
detection and its listeners, late publisher detection, the tokens. The key scenarios of
tests/ext/test_advanced_*_interop.py, in the event loop. A lost sample is simulated by
not handing it to the subscriber's rules, or by not sending it (it stays in the cache)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import zenoh
import zenoh.ext as zx

import pyzenoh
import pyzenoh.ext.aio as pxa
from pyzenoh.session import aio
from tests.ext.advanced_helpers import WAIT, reachable, sns, texts, tokens
from tests.ext.aio_helpers import aexpect, aexpect_blocking, aflushed, arecv, arouted
from tests.fixtures.procs import Proc, pyzenoh_config
from tests.waits import routed

pytestmark = [pytest.mark.interop, pytest.mark.timeout(60)]


def run(zenohd: Proc, main: Callable[[aio.AsyncSession], Awaitable[None]]) -> None:
    """``main`` with an asyncio client session of ``zenohd``, in a loop of its own."""

    async def go() -> None:
        async with await aio.open(pyzenoh_config(zenohd.endpoint)) as s:
            await main(s)

    asyncio.run(go())


async def absent(what: Callable[[], object], secs: float) -> None:
    """An absence: ``secs`` of the loop running, then ``what()`` must still be falsy."""
    await asyncio.sleep(secs)
    assert not what()


# --- the queries an asyncio subscriber sends ---------------------------------------------------------


def test_aio_subscriber_queries_like_the_real_one(zenohd: Proc, zs: zenoh.Session, key: str) -> None:
    """What an asyncio and a real AdvancedSubscriber ask a publisher's cache, seen by a real
    queryable: the history query, the late publisher's query on its token key and the
    periodic queries; then a heartbeat announcing sequence number 4 from an unknown
    publisher: both ask its cache for ``_sn=..4`` on the heartbeat's key.

    Each round has a key of its own: zenoh-ext 1.10.2's periodic queries outlive the
    subscriber's undeclaration (the timer task holds the state that holds it), so the real
    subscriber of the first round goes on asking on its key for the rest of the test."""
    seen: list[tuple[str, str]] = []
    spy = zs.declare_queryable(f"{key}/*/@adv/**", lambda q: seen.append((str(q.key_expr), str(q.parameters))))
    pub_tokens = [zs.liveliness().declare_token(f"{key}/{r}/@adv/pub/{zs.zid()}/77/_") for r in ("real", "mine")]
    history = {"detect_late_publishers": True, "max_samples": 5, "max_age": 1.5}
    period = datetime.timedelta(seconds=0.2)

    def of_round(base: str) -> set[tuple[str, str]]:
        """The round's queries, their keys relative to the round's key."""
        return {(k.removeprefix(base), p) for k, p in seen if k.startswith(f"{base}/")}

    async def queries_of(
        base: str, declare: Callable[[str], Awaitable[Any]], undeclare: Callable[[Any], Awaitable[None]]
    ) -> set[tuple[str, str]]:
        sub = await declare(base)
        await aexpect(lambda: len(of_round(base)) >= 3, "history, token and periodic queries")
        await undeclare(sub)
        return of_round(base)

    async def beat_queries_of(
        base: str, declare: Callable[[str], Awaitable[Any]], undeclare: Callable[[Any], Awaitable[None]]
    ) -> set[tuple[str, str]]:
        beat = f"{base}/@adv/pub/{zs.zid()}/78/_"
        sub = await declare(base)
        await asyncio.to_thread(routed, zs, beat)  # zs knows the heartbeat subscription (the real one's is local)
        zs.put(beat, zx.z_serialize(zx.UInt32(4)))
        await aexpect(lambda: of_round(base), "the heartbeat's query")
        await undeclare(sub)
        return of_round(base)

    async def real_undeclare(sub: Any) -> None:
        sub.undeclare()

    async def mine_undeclare(sub: Any) -> None:
        await sub.undeclare()

    async def main(s: aio.AsyncSession) -> None:
        await arouted(s, f"{key}/x/@adv/x", query=True)  # s knows the spy
        replies = await s.liveliness().get(f"{key}/mine/@adv/pub/**")
        assert [r async for r in replies if r.ok is not None]  # s's router knows the token

        async def real(base: str) -> Any:
            return zx.declare_advanced_subscriber(
                zs,
                base,
                lambda x: None,
                history=zx.HistoryConfig(**history),
                recovery=zx.RecoveryConfig(periodic_queries=period),
            )

        async def mine(base: str) -> Any:
            return await pxa.declare_advanced_subscriber(
                s,
                base,
                lambda x: None,
                history=pxa.HistoryConfig(**history),
                recovery=pxa.RecoveryConfig(periodic_queries=period),
            )

        real_queries = await queries_of(f"{key}/real", real, real_undeclare)
        my_queries = await queries_of(f"{key}/mine", mine, mine_undeclare)
        assert my_queries == real_queries
        assert ("/@adv/**", "_max=5;_time=[now(-1.5s)..];_anyke") in my_queries
        assert (f"/@adv/*/{zs.zid()}/77/**", "_sn=..;_anyke") in my_queries

        async def real_hb(base: str) -> Any:
            return zx.declare_advanced_subscriber(zs, base, lambda x: None, recovery=zx.RecoveryConfig(heartbeat=True))

        async def mine_hb(base: str) -> Any:
            return await pxa.declare_advanced_subscriber(
                s, base, lambda x: None, recovery=pxa.RecoveryConfig(heartbeat=True)
            )

        real_beat = await beat_queries_of(f"{key}/real_hb", real_hb, real_undeclare)
        my_beat = await beat_queries_of(f"{key}/mine_hb", mine_hb, mine_undeclare)
        assert my_beat == real_beat == {(f"/@adv/pub/{zs.zid()}/78/_", "_sn=..4;_anyke")}

    try:
        run(zenohd, main)
    finally:
        for token in pub_tokens:
            token.undeclare()
        spy.undeclare()


# --- real publisher -> asyncio subscriber ------------------------------------------------------------


def test_zenoh_publisher_history_and_live_to_aio(zenohd: Proc, zs: zenoh.Session, key: str) -> None:
    pub = zx.declare_advanced_publisher(
        zs,
        key,
        cache=zx.CacheConfig(max_samples=5),
        sample_miss_detection=zx.MissDetectionConfig(heartbeat=0.2),
        publisher_detection=True,
    )

    async def main(s: aio.AsyncSession) -> None:
        for i in range(8):
            pub.put(f"h{i}")
        await aflushed(zs, s)  # the live samples are gone before the subscriber comes
        sub = await pxa.declare_advanced_subscriber(
            s,
            key,
            history=pxa.HistoryConfig(detect_late_publishers=True),
            recovery=pxa.RecoveryConfig(heartbeat=True),
            subscriber_detection=True,
        )
        misses = await sub.sample_miss_listener()
        got = [await arecv(sub) for _ in range(5)]
        for i in range(8, 12):
            pub.put(f"l{i}")
        got += [await arecv(sub) for _ in range(4)]
        await absent(lambda: sub.try_recv() or misses.try_recv(), 0.5)  # two heartbeat periods: no duplicate
        assert texts(got) == [f"h{i}" for i in range(3, 8)] + [f"l{i}" for i in range(8, 12)]
        assert sns(got) == list(range(3, 12))
        assert all(x.source_info.source_id.eid == pub.id.eid for x in got)
        want = [f"{key}/@adv/sub/{s.zid()}/{sub.id.eid}/_"]  # the subscriber's token, as the real one names it
        await aexpect_blocking(lambda: tokens(zs, f"{key}/@adv/sub/**") == want, "the subscriber's token")
        await sub.undeclare()
        assert await asyncio.wait_for(_drained(sub), WAIT) == []  # undeclared: its channel ends

    try:
        run(zenohd, main)
    finally:
        pub.undeclare()


async def _drained(entity: Any) -> list[Any]:
    return [x async for x in entity]


class _Deaf:
    """Makes the AsyncAdvancedSubscribers declared while it is installed ignore the live
    samples whose payload is in ``lost`` (as if the network had lost them)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, lost: set[str]) -> None:
        real = pxa.AsyncAdvancedSubscriber._on_sample

        def on_sample(sub: pxa.AsyncAdvancedSubscriber[Any], sample: pyzenoh.Sample) -> None:
            if sample.payload.to_string() in lost:
                lost.discard(sample.payload.to_string())
                return
            real(sub, sample)

        monkeypatch.setattr(pxa.AsyncAdvancedSubscriber, "_on_sample", on_sample)


@pytest.mark.parametrize("mode", ["heartbeat", "periodic"])
def test_aio_subscriber_recovers_from_zenoh_cache(
    zenohd: Proc, zs: zenoh.Session, key: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    recovery = (
        pxa.RecoveryConfig(heartbeat=True)
        if mode == "heartbeat"
        else pxa.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=0.2))
    )
    pub = zx.declare_advanced_publisher(
        zs, key, cache=zx.CacheConfig(max_samples=10), sample_miss_detection=zx.MissDetectionConfig(heartbeat=0.2)
    )
    _Deaf(monkeypatch, {"s1", "s3"})

    async def main(s: aio.AsyncSession) -> None:
        sub = await pxa.declare_advanced_subscriber(s, key, recovery=recovery)
        misses = await sub.sample_miss_listener()
        await asyncio.to_thread(routed, zs, key)
        for i in range(4):
            pub.put(f"s{i}")  # s1 is recovered when s2 comes, s3 by the heartbeat / a periodic query
        got = [await arecv(sub) for _ in range(4)]
        assert texts(got) == ["s0", "s1", "s2", "s3"] and sns(got) == [0, 1, 2, 3]
        await absent(lambda: sub.try_recv() or misses.try_recv(), 0.3)  # a period brings no duplicate
        await sub.undeclare()

    try:
        run(zenohd, main)
    finally:
        pub.undeclare()


def test_aio_subscriber_reports_miss_from_zenoh(
    zenohd: Proc, zs: zenoh.Session, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pub = zx.declare_advanced_publisher(zs, key, sample_miss_detection=zx.MissDetectionConfig())
    _Deaf(monkeypatch, {"m1", "m2"})

    async def main(s: aio.AsyncSession) -> None:
        sub = await pxa.declare_advanced_subscriber(s, key)
        seen: list[pxa.Miss] = []
        by_callback = await sub.sample_miss_listener(seen.append)
        by_channel = await sub.sample_miss_listener()
        await asyncio.to_thread(routed, zs, key)
        for i in range(4):
            pub.put(f"m{i}")
        got = [await arecv(sub), await arecv(sub)]
        miss = await arecv(by_channel)
        assert texts(got) == ["m0", "m3"]
        assert seen == [miss] and miss.nb == 2 and miss.source.eid == pub.id.eid
        assert str(miss.source.zid) == str(zs.zid())
        assert by_callback.handler is None
        await by_callback.undeclare()
        await sub.undeclare()
        assert await asyncio.wait_for(_drained(by_channel), WAIT) == []  # the subscriber's end ends it

    try:
        run(zenohd, main)
    finally:
        pub.undeclare()


def test_late_zenoh_publisher_detected_by_aio(zenohd: Proc, zs: zenoh.Session, key: str) -> None:
    pubs: list[Any] = []

    async def main(s: aio.AsyncSession) -> None:
        sub = await pxa.declare_advanced_subscriber(s, key, history=pxa.HistoryConfig(detect_late_publishers=True))
        detected = await sub.detect_publishers(history=True)
        await asyncio.to_thread(routed, zs, key)  # zs knows the subscriber before its publisher puts
        pub = zx.declare_advanced_publisher(
            zs,
            key,
            cache=zx.CacheConfig(max_samples=3),
            sample_miss_detection=zx.MissDetectionConfig(),
            publisher_detection=True,
        )
        pubs.append(pub)
        token = await arecv(detected)
        assert str(token.key_expr) == f"{key}/@adv/pub/{zs.zid()}/{pub.id.eid}/_"
        pub.put("late0")
        pub.put("late1")
        assert texts([await arecv(sub), await arecv(sub)]) == ["late0", "late1"]
        pubs.remove(pub)
        pub.undeclare()
        gone = await arecv(detected)
        assert gone.kind is pyzenoh.SampleKind.DELETE
        await detected.undeclare()
        await sub.undeclare()

    try:
        run(zenohd, main)
    finally:
        for p in pubs:
            p.undeclare()


# --- asyncio publisher -> real subscriber ------------------------------------------------------------


def test_aio_publisher_history_and_live_to_zenoh(zenohd: Proc, zs: zenoh.Session, key: str) -> None:
    got: list[Any] = []
    misses: list[Any] = []
    subs: list[Any] = []

    async def main(s: aio.AsyncSession) -> None:
        async with await pxa.declare_advanced_publisher(
            s,
            key,
            cache=pxa.CacheConfig(max_samples=5),
            sample_miss_detection=pxa.MissDetectionConfig(heartbeat=0.2),
            publisher_detection=True,
        ) as pub:
            for i in range(8):
                await pub.put(f"h{i}", attachment=b"att")
            await aexpect_blocking(lambda: reachable(zs, f"{key}/@adv/**?_max=1"), "the cache")  # the router knows it
            await aexpect(
                lambda: tokens(zs, f"{key}/@adv/pub/**") == [f"{key}/@adv/pub/{s.zid()}/{pub.id.eid}/_"], "token"
            )
            sub = zx.declare_advanced_subscriber(
                zs,
                key,
                got.append,
                history=zx.HistoryConfig(detect_late_publishers=True),
                recovery=zx.RecoveryConfig(heartbeat=True),
            )
            subs.append(sub)
            sub.sample_miss_listener(misses.append)
            await aexpect(lambda: len(got) >= 5, "the history")
            for i in range(8, 12):
                await pub.put(f"l{i}")
            await aexpect(lambda: len(got) >= 9, "the live samples")
            await absent(lambda: len(got) > 9 or misses, 0.5)  # two heartbeat periods bring nothing more
        assert texts(got) == [f"h{i}" for i in range(3, 8)] + [f"l{i}" for i in range(8, 12)]
        assert sns(got) == list(range(3, 12))
        assert all(str(x.source_info.source_id.zid) == str(s.zid()) for x in got)
        assert got[0].attachment.to_bytes() == b"att"

    try:
        run(zenohd, main)
    finally:
        for sub in subs:
            sub.undeclare()


class _Lossy:
    """Makes an AsyncAdvancedPublisher's next ``n`` puts stay in its cache only."""

    def __init__(self, pub: pxa.AsyncAdvancedPublisher, n: int) -> None:
        self.real = pub._publisher.put
        self.n = n
        pub._publisher.put = self.put  # type: ignore[method-assign]

    async def put(self, *args: Any, **kwargs: Any) -> None:
        if self.n > 0:
            self.n -= 1
            return
        await self.real(*args, **kwargs)


@pytest.mark.parametrize("mode", ["heartbeat", "periodic"])
def test_zenoh_subscriber_recovers_from_aio_cache(zenohd: Proc, zs: zenoh.Session, key: str, mode: str) -> None:
    recovery = (
        zx.RecoveryConfig(heartbeat=True)
        if mode == "heartbeat"
        else zx.RecoveryConfig(periodic_queries=datetime.timedelta(seconds=0.2))
    )
    got: list[Any] = []
    misses: list[Any] = []
    sub = zx.declare_advanced_subscriber(zs, key, got.append, recovery=recovery)
    sub.sample_miss_listener(misses.append)

    async def main(s: aio.AsyncSession) -> None:
        async with await pxa.declare_advanced_publisher(
            s, key, cache=pxa.CacheConfig(max_samples=10), sample_miss_detection=pxa.MissDetectionConfig(heartbeat=0.2)
        ) as pub:
            await arouted(s, key)  # the publisher knows the subscriber
            await pub.put("s0")
            await aexpect(lambda: len(got) == 1, "s0")
            _Lossy(pub, 1)
            await pub.put("s1")  # lost: a gap, recovered from the cache when s2 comes
            await pub.put("s2")
            _Lossy(pub, 1)
            await pub.put("s3")  # lost, and the last one: only the heartbeat / periodic query tells
            await aexpect(lambda: len(got) == 4, "s0..s3")
        assert texts(got) == ["s0", "s1", "s2", "s3"] and sns(got) == [0, 1, 2, 3]
        assert not misses

    try:
        run(zenohd, main)
    finally:
        sub.undeclare()


def test_zenoh_subscriber_reports_miss_from_aio(zenohd: Proc, zs: zenoh.Session, key: str) -> None:
    got: list[Any] = []
    sub = zx.declare_advanced_subscriber(zs, key, got.append)
    misses = sub.sample_miss_listener()

    async def main(s: aio.AsyncSession) -> None:
        async with await pxa.declare_advanced_publisher(s, key, sample_miss_detection=pxa.MissDetectionConfig()) as pub:
            await arouted(s, key)
            await pub.put("m0")
            _Lossy(pub, 2)
            for i in range(1, 4):
                await pub.put(f"m{i}")
            await aexpect(lambda: len(got) == 2, "m0 and m3")
            miss = await asyncio.to_thread(misses.recv)
            assert miss.nb == 2 and str(miss.source.zid) == str(s.zid()) and miss.source.eid == pub.id.eid
            assert texts(got) == ["m0", "m3"]

    try:
        run(zenohd, main)
    finally:
        sub.undeclare()


# --- asyncio to asyncio ------------------------------------------------------------------------------


def test_aio_to_aio(zenohd: Proc, key: str) -> None:
    """History on a late join, live samples and a heartbeat with nothing new: no duplicate;
    then a publisher that comes after the subscriber is detected and heard."""

    async def main(s: aio.AsyncSession) -> None:
        async with await pxa.declare_advanced_publisher(
            s,
            key,
            cache=pxa.CacheConfig(max_samples=3),
            sample_miss_detection=pxa.MissDetectionConfig(sporadic_heartbeat=0.1),
            publisher_detection=True,
        ) as pub:
            for i in range(4):
                await pub.put(f"p{i}")
            async with await pxa.declare_advanced_subscriber(
                s,
                key,
                history=pxa.HistoryConfig(detect_late_publishers=True),
                recovery=pxa.RecoveryConfig(heartbeat=True),
            ) as sub:
                got = [await arecv(sub) for _ in range(3)]
                await pub.put("p4")
                got.append(await arecv(sub))
                await absent(sub.try_recv, 0.3)  # three sporadic heartbeat periods bring no duplicate
                assert texts(got) == ["p1", "p2", "p3", "p4"] and sns(got) == [1, 2, 3, 4]
                async with await pxa.declare_advanced_publisher(
                    s,
                    f"{key}",
                    cache=pxa.CacheConfig(max_samples=2),
                    sample_miss_detection=pxa.MissDetectionConfig(),
                    publisher_detection=True,
                ) as late:
                    await late.put("q0")  # before or after its token's query: once, in order
                    await late.put("q1")
                    more = [await arecv(sub), await arecv(sub)]
                    assert texts(more) == ["q0", "q1"]
                    assert {x.source_info.source_id.eid for x in more} == {late.id.eid}
                    await absent(sub.try_recv, 0.2)

    run(zenohd, main)


def test_closing_the_session_ends_the_channels_timers_and_heartbeats(zenohd: Proc, key: str) -> None:
    """A session closed under a declared asyncio subscriber (periodic queries) and publisher
    (heartbeat): the channels end, and no timer or heartbeat task outlives the loop's use."""

    async def main() -> None:
        s = await aio.open(pyzenoh_config(zenohd.endpoint))
        pub = await pxa.declare_advanced_publisher(
            s, key, cache=pxa.CacheConfig(), sample_miss_detection=pxa.MissDetectionConfig(heartbeat=0.05)
        )
        sub = await pxa.declare_advanced_subscriber(
            s, key, recovery=pxa.RecoveryConfig(periodic_queries=0.05), history=pxa.HistoryConfig()
        )
        misses = await sub.sample_miss_listener()
        await pub.put("x")
        assert texts([await arecv(sub)]) == ["x"]
        await asyncio.sleep(0.15)  # a few periods pass: the timers and the heartbeat task run
        await s.close()
        assert await asyncio.wait_for(_drained(sub), WAIT) == []
        assert await asyncio.wait_for(_drained(misses), WAIT) == []
        beating = pub._beating
        assert beating is not None
        await asyncio.wait_for(asyncio.shield(beating), WAIT)  # the heartbeat task ends by itself
        await pub.undeclare()
        await sub.undeclare()  # after the close: nothing to do, no error
        assert sub._timers == {}

    asyncio.run(main())
