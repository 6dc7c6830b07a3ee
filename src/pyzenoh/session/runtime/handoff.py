"""Handing work to the loop: the sync API runs the loop in a background thread and hands
operations over in order without waiting (:meth:`Handoff.submit`) or for a result
(:meth:`Handoff.call`); a publisher first waits for room (or drops, with congestion
control Drop) while too many operations or the link's queue are pending.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar, final

from pyzenoh.session.runtime.pump import CorePump
from pyzenoh.session.runtime.state import MAX_PENDING_OPS, RuntimeState

log = logging.getLogger(__name__)


R = TypeVar("R")

#: Operations one turn of the loop runs before it lets the links write what they queued.
#: Without a bound, a thread putting as fast as the loop drains kept it draining: the
#: messages piled up unsent (over a megabyte, seconds at a time) and then went in bursts.
DRAIN_BATCH = 1024


@final
class Joinable:
    """An operation that the loop runs together with the operations of the same ``group``
    queued right after it: ``run`` gets all their items at once, in order (a publisher's
    puts drained in one turn become one run of messages)."""

    __slots__ = ("group", "item", "run")

    def __init__(self, group: object, item: Any, run: Callable[[list[Any]], None]) -> None:
        self.group = group
        self.item = item
        self.run = run

    def __call__(self) -> None:
        self.run([self.item])


class Handoff:
    """Work from any thread run in the loop, and waiting for room to send: owns the
    queue of operations handed over; ``pump`` runs after them; reads the state's loop,
    first link and whether it is closed."""

    def __init__(self, s: RuntimeState, pump: CorePump) -> None:
        self.s = s
        self.loop = s.loop
        self.pump = pump
        #: operations handed over and not yet run, in order
        self.ops: deque[Callable[[], None]] = deque()
        self._wakeup = False  # a drain is scheduled
        self._ops_room = threading.Event()

    def submit(self, fn: Callable[[], None]) -> None:
        """Run a core operation in the loop, in submission order, without waiting."""
        if self.s.on_loop():
            self._run_handed_over()
            try:
                fn()
            finally:
                self.pump.pump()
            return
        self.ops.append(fn)
        if not self._wakeup:
            self._wakeup = True
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                self.ops.clear()

    def _run_handed_over(self) -> None:
        """In the loop, before an operation of its own: run what other threads handed
        over first. Order is the contract: a callback thread's reply to a query is queued
        here, and the query's end (its Query dropped in the loop) must not overtake it, or
        the get ends without the reply (seen once in the suite: a local get got nothing)."""
        if self.ops:
            self._drain(len(self.ops))

    def _drain(self, budget: int = DRAIN_BATCH) -> None:
        """Run up to ``budget`` handed-over operations (joined ones counted one by one)."""
        self._wakeup = False  # before draining: a submit racing with us schedules again
        ops = self.ops
        try:
            while budget > 0 and ops:
                fn = ops.popleft()
                budget -= 1
                try:
                    if isinstance(fn, Joinable):
                        budget -= self._run_joined(fn, ops, budget)
                    else:
                        fn()
                except Exception:
                    log.exception("session operation failed")
        finally:
            self._ops_room.set()
            self.pump.pump()  # queues what the operations sent; the link's flush comes next
            if ops and not self._wakeup:
                self._wakeup = True
                self.loop.call_soon(self._drain)

    @staticmethod
    def _run_joined(first: Joinable, ops: deque[Callable[[], None]], room: int) -> int:
        """``first`` and up to ``room`` operations of its group right after it, as one
        call; returns how many it joined. Only the loop pops, so looking at ``ops[0]``
        first is safe."""
        group = first.group
        items = [first.item]
        while ops and len(items) <= room:
            nxt = ops[0]
            if not isinstance(nxt, Joinable) or nxt.group is not group:
                break
            items.append(nxt.item)
            ops.popleft()
        first.run(items)
        return len(items) - 1

    def call(self, fn: Callable[[], R], timeout: float | None = 30.0) -> R:
        """Run ``fn`` in the loop and return its result (raising its exception)."""
        if self.s.on_loop():
            self._run_handed_over()
            try:
                return fn()
            finally:
                self.pump.pump()
        fut: concurrent.futures.Future[R] = concurrent.futures.Future()

        def run() -> None:
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001  (handed to the caller)
                    fut.set_exception(exc)

        self.submit(run)
        return fut.result(timeout)

    def wait_room(self, block: bool, timeout: float = 60.0) -> bool:
        """From another thread, before queueing a message: False means drop it.

        Blocks (Block congestion control) while too many operations wait for the loop or
        the link's outgoing queue is full.
        """
        s = self.s
        if s.on_loop():
            return True
        link = s.link
        ops = self.ops
        if len(ops) >= MAX_PENDING_OPS:
            if not block:
                return False
            while len(ops) >= MAX_PENDING_OPS and not s.closed:
                self._ops_room.clear()
                if len(ops) >= MAX_PENDING_OPS:
                    self._ops_room.wait(0.1)
        if link is not None and link.is_full and not s.closed:
            if not block:
                link.dropped += 1
                return False
            fut = asyncio.run_coroutine_threadsafe(link.wait_writable(), self.loop)
            fut.result(timeout)
        return True

    async def await_room(self, block: bool) -> bool:
        """In the loop (asyncio API): wait for room (Block) or report a drop (Drop)."""
        link = self.s.link
        if link is None or not link.is_full:
            return True
        if not block:
            link.dropped += 1
            return False
        await link.wait_writable()
        return True

    def release_waiters(self) -> None:
        """The session closed: threads waiting for room stop waiting."""
        self._ops_room.set()
