"""Bounded waits on what a real session can observe, instead of fixed sleeps."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pyzenoh.session import ChannelClosedError

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


async def aexpect(cond: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    """:func:`expect` in a coroutine: the event loop runs meanwhile."""
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(STEP)


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


_barriers = itertools.count()


def barrier(session: Any, timeout: float = WAIT) -> None:
    """Wait (bounded) until the router of ``session`` (a pyzenoh client or peer) has
    handled everything ``session`` sent it before, and ``session`` has received
    everything the router sent it before answering: a liveliness get, which a pyzenoh
    client always asks its router (an INTEREST on the declarations' priority), ends
    with the router's DECLARE_FINAL on the same link. For what no matching status can
    tell: a declaration whose key the waiting session also matches itself, an absence."""
    replies = session.liveliness().get(f"barrier/{os.getpid()}/{next(_barriers)}", timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"not within {timeout} s: the router's answer to a barrier"
        try:
            replies.recv(timeout=left)
        except TimeoutError:
            continue
        except ChannelClosedError:  # the get's end
            return


def passed_on(declarer: Any, observer: Any, timeout: float = WAIT) -> None:
    """Wait (bounded) until every declaration ``declarer`` (eclipse-zenoh or pyzenoh) made
    so far has reached ``observer`` through the routers: a witness queryable declared
    now, on a key nothing else uses, is matched by a querier of ``observer`` (a router
    passes one link's declarations on in order). For when the observer matches the key
    itself, so that :func:`routed` cannot tell."""
    key = f"witness/{os.getpid()}/{next(_barriers)}"
    witness = declarer.declare_queryable(key, lambda _query: None)
    try:
        routed(observer, key, query=True, wait=timeout)
    finally:
        witness.undeclare()


def puts_routed(session: Any, timeout: float = WAIT) -> None:
    """Wait (bounded) until the router of ``session`` (a pyzenoh client) has routed every
    sample ``session`` put before at the default priority: a get on a key no queryable
    serves travels the same data lane behind them, and its end comes back once the router
    has handled it. (A :func:`barrier` rides the control lane and may overtake them.)"""
    replies = session.get(f"puts-routed/{os.getpid()}/{next(_barriers)}", timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"not within {timeout} s: the router's answer to a get"
        try:
            replies.recv(timeout=left)
        except TimeoutError:
            continue
        except ChannelClosedError:
            return


def flushed(sender: Any, receiver: Any, timeout: float = WAIT) -> None:
    """Wait (bounded) until the routers have routed every sample ``sender`` (eclipse-zenoh
    or pyzenoh) put before at the default priority: a probe it puts now, on a key only
    ``receiver`` subscribes, travels the same data lane behind them and arrives."""
    key = f"flushed/{os.getpid()}/{next(_barriers)}"
    got: list[Any] = []
    probe = receiver.declare_subscriber(key, got.append)
    try:
        routed(sender, key, wait=timeout)
        sender.put(key, b"")
        assert until(lambda: got, timeout), f"not within {timeout} s: a probe sample"
    finally:
        probe.undeclare()
