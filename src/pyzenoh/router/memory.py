"""Giving memory back to the system once a flood is over.

Python keeps the memory of freed objects for reuse, and glibc's allocator keeps freed
heap pages: after 100 clients with 1,000 declarations each have gone, the router would
stay at its peak size. After many entities went away, the daemon shrinks the routing
tables, empties the key-expression memo caches, collects garbage and asks the C allocator to return its free pages (``malloc_trim``, where the C library has
it: glibc; elsewhere only the collection runs).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable

from pyzenoh.keyexpr import canon, relations

#: Entities (declarations, pending queries) that must have gone before memory is released.
RELEASE_AFTER_ENTITIES = 10_000
#: Seconds after the last large departure before the release runs (departures come in
#: bursts: one release for the burst).
RELEASE_DELAY_S = 1.0


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


def release_memory() -> None:
    """Empty the key-expression memo caches, collect garbage, then hand free heap pages
    back to the system. (The caller compacts its own tables first.)"""
    relations.clear_caches()
    canon.clear_caches()
    gc.collect()
    if _TRIM is not None:
        _TRIM(0)
