"""The router's memory over its life: long-lived objects kept out of the collector's
scans while sessions arrive, and memory given back to the system once a flood is over.

**Freezing.** Python's full collection walks every tracked object, and it runs each time
the heap has grown by a quarter: while 10,000 sessions opened, one full collection walked
764,000 objects and held the event loop for 279 ms, and the samples queued behind it made
a probe's p99 latency 563 ms (``bench/bench_scale.py``, 2026-11-29). Every
``gc_freeze_interval_ms`` (1 s) the keeper moves the objects that exist into the
permanent generation (``gc.freeze()``, constant time), so collections walk only what
arrived since: the same run's p99 became 4.8 ms. Objects freed by reference count are
freed as before; only reference cycles among frozen objects wait for the next release.

**Releasing.** Python keeps the memory of freed objects for reuse, and glibc's allocator
keeps freed heap pages: after 100 clients with 1,000 declarations each have gone, the
router would stay at its peak size. Once many entities (``RELEASE_AFTER_ENTITIES``) or
sessions (``RELEASE_AFTER_FACES``) have gone, after the burst, the keeper has the routing
tables compacted, empties the key-expression memo caches, unfreezes and collects
everything (the cycles of closed sessions among them), freezes again, and asks the C
allocator to return its free pages (``malloc_trim``, where the C library has it).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from collections.abc import Callable

from pyzenoh.keyexpr import canon, relations

#: Entities (declarations, pending queries) that must have gone before memory is released.
RELEASE_AFTER_ENTITIES = 10_000
#: Sessions that must have closed before memory is released (their reference cycles,
#: frozen with them, are collected then).
RELEASE_AFTER_FACES = 1_000
#: Seconds after the last large departure before the release runs (departures come in
#: bursts: one release for the burst).
RELEASE_DELAY_S = 1.0
#: Default of ``pyzenoh/memory/gc_freeze_interval_ms`` (0: never freeze).
GC_FREEZE_INTERVAL_MS = 1_000
#: With freezing on, a release also runs this long after the last one if any session or
#: entity went since (a few sessions leaving now and then never reach the counts above).
RELEASE_AT_LEAST_EVERY_S = 600.0


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _malloc_trim()


def release_memory(refreeze: bool = False) -> None:
    """Empty the key-expression memo caches, collect every generation (the frozen one
    too), freeze again if asked, then hand free heap pages back to the system. (The
    caller compacts its own tables first.)"""
    relations.clear_caches()
    canon.clear_caches()
    gc.unfreeze()
    gc.collect()
    if refreeze:
        gc.freeze()
    if _TRIM is not None:
        _TRIM(0)


class MemoryKeeper:
    """Freezes long-lived objects on a timer and releases memory after departures.

    ``compact`` shrinks the owner's tables before a release; ``releases`` counts them."""

    def __init__(self, compact: Callable[[], None], freeze_interval_ms: int = GC_FREEZE_INTERVAL_MS) -> None:
        self.compact = compact
        self.freeze_interval_s = freeze_interval_ms / 1000.0
        self.releases = 0
        self._entities_freed = 0
        self._faces_closed = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Handle | None = None
        self._freeze: asyncio.TimerHandle | None = None
        self._last_release = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._last_release = loop.time()
        if self.freeze_interval_s > 0:
            self._freeze = loop.call_later(self.freeze_interval_s, self._freeze_now)

    def stop(self) -> None:
        for handle in (self._release, self._freeze):
            if handle is not None:
                handle.cancel()
        self._release = self._freeze = None
        if self.freeze_interval_s > 0:
            gc.unfreeze()  # what was frozen is collectable again (an embedding process goes on)

    def _freeze_now(self) -> None:
        gc.freeze()
        loop = self._loop
        assert loop is not None
        self._freeze = loop.call_later(self.freeze_interval_s, self._freeze_now)
        departed = self._entities_freed or self._faces_closed
        if departed and self._release is None and loop.time() - self._last_release >= RELEASE_AT_LEAST_EVERY_S:
            self._release = loop.call_soon(self.release)

    def face_closed(self, entities: int) -> None:
        """A session went, with ``entities`` declarations and pending queries: release
        memory once enough have gone (after the burst)."""
        self._entities_freed += entities
        self._faces_closed += 1
        if self._loop is None or (
            self._entities_freed < RELEASE_AFTER_ENTITIES and self._faces_closed < RELEASE_AFTER_FACES
        ):
            return
        if self._release is not None:
            self._release.cancel()
        self._release = self._loop.call_later(RELEASE_DELAY_S, self.release)

    def release(self) -> None:
        self._release = None
        if self._loop is not None:
            self._last_release = self._loop.time()
        self._entities_freed = self._faces_closed = 0
        self.releases += 1
        self.compact()
        release_memory(refreeze=self._freeze is not None)
