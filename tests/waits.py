"""Bounded waits on what a real session can observe, instead of fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: The one bound for anything that should happen "soon" (a declaration crossing routers, a
#: mesh converging, a link closing): generous, since CI machines are loaded, and paid only
#: when a test fails.
WAIT = 20.0
ROUTED_WAIT = WAIT
#: How often a condition is checked while waiting.
STEP = 0.02


def until(cond: Callable[[], object], timeout: float = WAIT, step: float = STEP) -> bool:
    """Wait until ``cond()`` is true, at most ``timeout`` seconds; whether it became true
    (checked once more at the deadline). The suite's one bounded wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def expect(cond: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    """:func:`until`, failing the test with ``what`` when the deadline passes."""
    assert until(cond, timeout), f"not within {timeout} s: {what}"


def value_of(get: Callable[[], T | None], what: str = "", timeout: float = WAIT, step: float = STEP) -> T:
    """The first true value ``get()`` returns within ``timeout`` seconds (else the test
    fails, saying ``what`` it waited for)."""
    deadline = time.monotonic() + timeout
    while True:
        value = get()
        if value:
            return value
        assert time.monotonic() < deadline, f"not within {timeout} s: {what or 'no value'}"
        time.sleep(step)


def routed(session: Any, key: str, *, query: bool = False, wait: float = ROUTED_WAIT, **kw: Any) -> None:
    """Wait (bounded) until ``session`` (eclipse-zenoh or pyzenoh) knows a subscriber, or
    with ``query`` a queryable, elsewhere for ``key``: the matching status of a publisher
    (querier, declared with ``kw``) of its own turns true once the routers have passed the
    declaration on. Only where ``session`` holds no matching entity itself."""
    probe = session.declare_querier(key, **kw) if query else session.declare_publisher(key, **kw)
    try:
        assert until(lambda: probe.matching_status.matching, wait, 0.01), f"{key}: no route within {wait} s"
    finally:
        probe.undeclare()
