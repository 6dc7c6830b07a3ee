"""Bounded waits on what a real session can observe, instead of fixed sleeps."""

from __future__ import annotations

import time
from typing import Any

ROUTED_WAIT = 15.0  # generous bound: a declaration crosses one or two routers well within it


def routed(session: Any, key: str, *, query: bool = False, wait: float = ROUTED_WAIT, **kw: Any) -> None:
    """Wait (bounded) until ``session`` (eclipse-zenoh or pyzenoh) knows a subscriber, or
    with ``query`` a queryable, elsewhere for ``key``: the matching status of a publisher
    (querier, declared with ``kw``) of its own turns true once the routers have passed the
    declaration on. Only where ``session`` holds no matching entity itself."""
    probe = session.declare_querier(key, **kw) if query else session.declare_publisher(key, **kw)
    try:
        deadline = time.monotonic() + wait
        while not probe.matching_status.matching:
            assert time.monotonic() < deadline, f"{key}: no route within {wait} s"
            time.sleep(0.01)
    finally:
        probe.undeclare()
