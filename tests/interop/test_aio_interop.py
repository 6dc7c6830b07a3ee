"""The asyncio API against a real eclipse-zenoh 1.10.2 router and an eclipse-zenoh session."""

from __future__ import annotations

import asyncio
import itertools
import queue
import time
from typing import Any

import pytest
import zenoh

import pyzenoh.session as pz
from pyzenoh import aio
from tests.fixtures.procs import Proc, pyzenoh_config
from tests.waits import routed

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

WAIT = 15.0
_ids = itertools.count()


@pytest.fixture
def prefix() -> str:
    return f"aio{next(_ids)}x{time.monotonic_ns() % 100000}"


async def collect(it: Any, n: int | None = None) -> list[Any]:
    """Items of an async channel (all of them until it ends, or the first n), bounded."""

    async def run() -> list[Any]:
        out = []
        async for item in it:
            out.append(item)
            if n is not None and len(out) >= n:
                break
        return out

    return await asyncio.wait_for(run(), WAIT)


def test_aio_pubsub_get_liveliness(zenohd: Proc, zs: zenoh.Session, prefix: str) -> None:
    zq: queue.Queue[Any] = queue.Queue()
    zsub = zs.declare_subscriber(f"{prefix}/**", zq.put)
    zqabl = zs.declare_queryable(f"{prefix}/zq", lambda q: q.reply(f"{prefix}/zq", "zreply"))

    async def main() -> None:
        async with await aio.open(pyzenoh_config(zenohd.endpoint)) as s:
            sub = await s.declare_subscriber(f"{prefix}/**")
            got: list[Any] = []
            cb_sub = await s.declare_subscriber(f"{prefix}/cb", got.append)
            # a witness declared after the subscribers: once zs sees it, the router and zs have them
            witness = await s.declare_queryable(f"{prefix}w/x")
            await asyncio.to_thread(routed, zs, f"{prefix}w/x", query=True)
            await witness.undeclare()
            await s.put(f"{prefix}/a", "from-aio", encoding="text/plain")
            zs.put(f"{prefix}/b", "from-zenoh")
            zs.put(f"{prefix}/cb", "to-callback")
            samples = await collect(sub, 3)
            assert [x.payload.to_string() for x in samples] == ["from-aio", "from-zenoh", "to-callback"]
            assert [x.payload.to_string() for x in got] == ["to-callback"]
            await cb_sub.undeclare()

            replies = await collect(await s.get(f"{prefix}/zq", timeout=10))
            assert [r.ok.payload.to_string() for r in replies] == ["zreply"]

            async def answer(q: pz.Query) -> None:
                q.reply(f"{prefix}/aq", "areply")
                q.drop()

            qabl = await s.declare_queryable(f"{prefix}/aq")
            await asyncio.to_thread(routed, zs, f"{prefix}/aq", query=True)  # zs knows the queryable
            zres: queue.Queue[Any] = queue.Queue()
            zs.get(f"{prefix}/aq", zres.put, timeout=10)
            query = await asyncio.wait_for(qabl.recv(), WAIT)
            await answer(query)
            r = await asyncio.to_thread(zres.get, True, WAIT)
            assert r.ok.payload.to_string() == "areply"

            pub = await s.declare_publisher(f"{prefix}/pub")
            await pub.put("published")
            await pub.delete()

            tok = await s.liveliness().declare_token(f"{prefix}/tok")
            lsub = await s.liveliness().declare_subscriber(f"{prefix}/**", history=True)
            first = await asyncio.wait_for(lsub.recv(), WAIT)
            assert str(first.key_expr) == f"{prefix}/tok"
            lget = await collect(await s.liveliness().get(f"{prefix}/**", timeout=10))
            assert [str(r.ok.key_expr) for r in lget] == [f"{prefix}/tok"]
            await tok.undeclare()
            gone = await asyncio.wait_for(lsub.recv(), WAIT)
            assert gone.kind is pz.SampleKind.DELETE

    asyncio.run(main())
    expected = {(f"{prefix}/a", "PUT"), (f"{prefix}/pub", "PUT"), (f"{prefix}/pub", "DELETE")}
    seen: set[Any] = set()
    for _ in range(20):  # the zenoh session's own puts arrive here too
        s = zq.get(timeout=WAIT)
        seen.add((str(s.key_expr), "PUT" if s.kind == zenoh.SampleKind.PUT else "DELETE"))
        if expected <= seen:
            break
    assert expected <= seen
    zsub.undeclare()
    zqabl.undeclare()


def test_aio_many_sessions_one_loop(zenohd: Proc, prefix: str) -> None:
    async def main() -> None:
        sessions = [await aio.open(pyzenoh_config(zenohd.endpoint)) for _ in range(5)]
        subs = [await s.declare_subscriber(f"{prefix}/**") for s in sessions]
        for s in sessions:  # a barrier: once its liveliness get ends, the router has s's subscriber
            await collect(await s.liveliness().get(f"{prefix}/barrier", timeout=10))
        for i, s in enumerate(sessions):
            await s.put(f"{prefix}/{i}", str(i))
        for sub in subs:
            got = await collect(sub, 5)
            assert sorted(x.payload.to_string() for x in got) == ["0", "1", "2", "3", "4"]
        for s in sessions:
            await s.close()
        assert all(s.is_closed() for s in sessions)

    asyncio.run(main())


def test_aio_querier_keyexpr_ids_and_cancellation(zenohd: Proc, zs: zenoh.Session, prefix: str) -> None:
    """What the asyncio API gained to say everything the blocking one says: queriers and
    their matching status, declared key expressions, entity ids, cancellation tokens,
    source info, allowed destinations."""
    zq: queue.Queue[Any] = queue.Queue()
    zsub = zs.declare_subscriber(f"{prefix}/data/**", zq.put)
    held: list[Any] = []  # a queryable that never answers (its queries kept alive)
    zslow = zs.declare_queryable(f"{prefix}/slow", held.append)

    async def main() -> None:
        async with await aio.open(pyzenoh_config(zenohd.endpoint)) as s:
            assert s.id.zid == s.zid() and s.id.eid == 0
            assert s.new_timestamp().get_id() == s.zid()
            querier = await s.declare_querier(f"{prefix}/q", timeout=WAIT)
            assert not querier.matching_status.matching
            statuses: asyncio.Queue[bool] = asyncio.Queue()
            await querier.declare_matching_listener(lambda st: statuses.put_nowait(st.matching))
            zqabl = zs.declare_queryable(f"{prefix}/q", lambda q: q.reply(f"{prefix}/q", "zq-answer"))
            assert await asyncio.wait_for(next_status(statuses, True), WAIT)
            [reply] = await collect(await querier.get())
            assert reply.ok.payload.to_string() == "zq-answer"
            assert querier.id.zid == s.zid()
            zqabl.undeclare()
            assert await asyncio.wait_for(next_status(statuses, False), WAIT)
            await querier.undeclare()
            # a declared key expression, used then undeclared through the session
            ke = await s.declare_keyexpr(f"{prefix}/data/k")
            source = pz.SourceInfo(s.id, 7)
            await s.put(ke, "via-id", source_info=source)
            sample = await asyncio.to_thread(zq.get, timeout=WAIT)
            assert (str(sample.key_expr), sample.payload.to_string()) == (f"{prefix}/data/k", "via-id")
            assert sample.source_info.source_sn == 7
            await s.undeclare(ke)
            # a put kept to this session reaches its own subscriber and not the router's
            local = await s.declare_subscriber(f"{prefix}/data/l")
            assert local.id.zid == s.zid()
            await s.put(f"{prefix}/data/l", "local", allowed_destination=pz.Locality.SESSION_LOCAL)
            assert (await asyncio.wait_for(local.recv(), WAIT)).payload.to_string() == "local"
            await s.put(f"{prefix}/data/end", "end")
            last = await asyncio.to_thread(zq.get, timeout=WAIT)
            assert str(last.key_expr) == f"{prefix}/data/end"  # "local" never reached zs
            # a get cancelled while the queryable holds its query ends at once
            token = pz.CancellationToken()
            replies = await s.get(f"{prefix}/slow", cancellation_token=token, timeout=WAIT)
            await asyncio.to_thread(lambda: routed_query_seen(held))
            token.cancel()
            assert await collect(replies) == []

    asyncio.run(main())
    held.clear()
    zslow.undeclare()
    zsub.undeclare()


async def next_status(statuses: asyncio.Queue[bool], wanted: bool) -> bool:
    """Statuses until ``wanted`` (a listener may first be told the status it starts with)."""
    while await statuses.get() is not wanted:
        pass
    return True


def routed_query_seen(held: list[Any]) -> None:
    """The held queryable has the query (so the cancellation is of a get in flight)."""
    from tests.waits import expect

    expect(lambda: held, "the query never reached the queryable")
