"""router/memory.py: long-lived objects frozen out of the collector's scans on a timer,
reference cycles among frozen objects collected at the next release, a release after a
burst of departures, and the setting that turns freezing off."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.router import memory
from pyzenoh.router.config import config_from_dict
from pyzenoh.router.memory import MemoryKeeper

pytestmark = pytest.mark.timeout(30)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> weakref.ref[Node]:
    """A two-object reference cycle nothing else holds; the weak reference tells when it is
    collected."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


async def frozen(timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while gc.get_freeze_count() == 0:
        assert asyncio.get_running_loop().time() < deadline, "nothing was frozen"
        await asyncio.sleep(0.01)


def test_freezes_on_a_timer_and_a_release_collects_frozen_cycles() -> None:
    compacted: list[int] = []

    async def run() -> None:
        keeper = MemoryKeeper(lambda: compacted.append(1), freeze_interval_ms=10)
        keeper.start(asyncio.get_running_loop())
        try:
            gc.unfreeze()
            ref = cycle()
            await frozen()
            gc.collect()
            assert ref() is not None  # frozen: a collection does not walk it
            keeper.release()
            assert ref() is None and compacted == [1] and keeper.releases == 1
            assert gc.get_freeze_count() > 0  # frozen again after the release
        finally:
            keeper.stop()
        assert gc.get_freeze_count() == 0  # stopped: everything is collectable again

    asyncio.run(run())


def test_a_burst_of_closed_sessions_releases_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "RELEASE_DELAY_S", 0.01)

    async def run() -> None:
        keeper = MemoryKeeper(lambda: None, freeze_interval_ms=0)
        keeper.start(asyncio.get_running_loop())
        try:
            for _ in range(memory.RELEASE_AFTER_FACES - 1):
                keeper.face_closed(0)
            await asyncio.sleep(0.05)  # an absence: 999 sessions gone release nothing
            assert keeper.releases == 0
            keeper.face_closed(0)
            keeper.face_closed(3)  # the same burst: the release waits for its end
            while keeper.releases == 0:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)  # an absence: the burst released once
            assert keeper.releases == 1
            keeper.face_closed(memory.RELEASE_AFTER_ENTITIES)  # a flood of entities alone
            while keeper.releases == 1:
                await asyncio.sleep(0.01)
        finally:
            keeper.stop()

    asyncio.run(run())


def test_freezing_can_be_turned_off() -> None:
    assert config_from_dict({}).gc_freeze_interval_ms == 1000
    off = config_from_dict({"pyzenoh": {"memory": {"gc_freeze_interval_ms": 0}}})
    assert off.gc_freeze_interval_ms == 0

    async def run() -> None:
        gc.unfreeze()
        keeper = MemoryKeeper(lambda: None, off.gc_freeze_interval_ms)
        keeper.start(asyncio.get_running_loop())
        await asyncio.sleep(0.05)  # an absence: freezing off, nothing frozen
        assert gc.get_freeze_count() == 0
        keeper.stop()

    asyncio.run(run())
    with pytest.raises(UsageError):
        config_from_dict({"pyzenoh": {"memory": {"gc_freeze_interval_ms": -1}}})
