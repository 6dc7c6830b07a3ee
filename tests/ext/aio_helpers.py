"""Helpers of the asyncio advanced publisher / subscriber tests: bounded waits that keep
the event loop (and so the asyncio session) running."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Callable
from typing import Any

import zenoh

from pyzenoh.session.aio import AsyncSession
from tests.waits import WAIT, aexpect, routed

_probes = itertools.count()


async def arouted(s: AsyncSession, key: str, *, query: bool = False) -> None:
    """Wait (bounded) until the asyncio session ``s`` knows a subscriber (with ``query``, a
    queryable) elsewhere for ``key``."""
    probe: Any = await s.declare_querier(key) if query else await s.declare_publisher(key)
    try:
        await aexpect(lambda: probe.matching_status.matching, f"{key}: a route")
    finally:
        await probe.undeclare()


async def aflushed(zs: zenoh.Session, s: AsyncSession) -> None:
    """Wait (bounded) until every sample ``zs`` put before has been routed to ``s``: a
    probe it puts now, on a key only ``s`` subscribes, travels behind them."""
    key = f"aflushed/{os.getpid()}/{next(_probes)}"
    got: list[Any] = []
    probe = await s.declare_subscriber(key, got.append)
    try:
        await asyncio.to_thread(routed, zs, key)
        zs.put(key, b"")
        await aexpect(lambda: got, "a probe sample")
    finally:
        await probe.undeclare()


async def arecv(entity: Any, timeout: float = WAIT) -> Any:
    """The next item of an asyncio entity's channel, bounded."""
    return await asyncio.wait_for(entity.recv(), timeout)


async def aexpect_blocking(cond: Callable[[], object], what: str, timeout: float = WAIT) -> None:
    """:func:`aexpect` for a ``cond`` that blocks (a real session's get, which the asyncio
    session may have to answer): each check runs in a thread, the loop running meanwhile."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(cond):
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        await asyncio.sleep(0.02)
