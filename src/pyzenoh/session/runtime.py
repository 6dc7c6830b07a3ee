"""Runs a :class:`~pyzenoh.session.core.SessionCore` over a TCP link in an asyncio loop.

Both user APIs sit on this: the asyncio API calls it from its own loop, the sync API runs
the loop in a background thread and hands work over with :meth:`Runtime.submit` (ordered,
non-blocking) or :meth:`Runtime.call` (waits for the result). All protocol state is only
ever touched from the loop thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from pyzenoh.codec import Del, Err, Put, WhatAmI, ZenohId
from pyzenoh.errors import CloseReason, SessionOpenError, UsageError
from pyzenoh.session import types as t
from pyzenoh.session.config import Config
from pyzenoh.session.core import END, SampleBatch, SessionCore
from pyzenoh.session.handlers import Dispatcher, Sink
from pyzenoh.session.scouting import connect_scouted
from pyzenoh.transport.link import (
    Established,
    Event,
    LinkClosed,
    LinkConfig,
    Received,
    ReceivedRun,
)
from pyzenoh.transport.tcp import TcpLink, connect

log = logging.getLogger(__name__)

R = TypeVar("R")

#: Operations handed over by other threads and not yet run; a sync publisher blocks
#: (or drops, with congestion control Drop) past this many.
MAX_PENDING_OPS = 10_000
DEFAULT_ENDPOINT = "tcp/127.0.0.1:7447"


class Runtime:
    """One session's event-loop side: core, link, timer, delivery and flow control."""

    def __init__(self, config: Config, loop: asyncio.AbstractEventLoop, *, threaded: bool) -> None:
        self.config = config
        self.loop = loop
        self.threaded = threaded
        zid_text = config.zid
        self.zid = ZenohId.from_str(zid_text) if zid_text else ZenohId.random(os.urandom(16))
        self.whatami = WhatAmI.CLIENT if config.mode == "client" else WhatAmI.PEER
        self.core = SessionCore(self.zid, self.whatami, self,
                                query_timeout_s=config.queries_default_timeout_s)  # fmt: skip
        self.link: TcpLink | None = None
        self.peer: Established | None = None
        self.closed = False
        self.close_event: LinkClosed | None = None
        self.loop_thread: int | None = None if threaded else threading.get_ident()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._pumping = False
        self._pump_scheduled = False
        self._blocked: set[int] = set()
        self._ops: deque[Callable[[], None]] = deque()
        self._wakeup = False
        self._ops_room = threading.Event()
        self._dispatcher: Dispatcher | None = None

    # --- connecting / closing (in the loop) --------------------------------------------------

    async def connect(self) -> None:
        if self.loop_thread is None:
            self.loop_thread = threading.get_ident()
        cfg = self.config
        link_cfg = LinkConfig(
            self.zid, self.whatami, lease_ms=cfg.lease_ms, keepalives_per_lease=cfg.keep_alive,
            batch_size=cfg.batch_size, resolution=cfg.resolution, qos=cfg.qos,
            handshake_timeout_s=cfg.open_timeout_s,
            usrpwd=cfg.usrpwd,  # a bad usrpwd section (or dictionary) fails open() here
            push_runs=True, stamped_runs=True,  # a FRAME's samples on one key: one batch
        )  # fmt: skip
        errors: list[str] = []
        if not cfg.connect:  # no endpoint: scout for a node first, as zenoh does (scouting.py)
            scouted = await connect_scouted(cfg, lambda ep: connect(
                ep, link_cfg, self._on_link_event, max_queue_bytes=cfg.max_queue_bytes, keep_raw=False,
                tls=cfg.tls), errors)
            if scouted is not None:
                self.link = scouted
                self.pump()
                return
        for ep in cfg.connect or [DEFAULT_ENDPOINT]:
            try:
                self.link = await connect(ep, link_cfg, self._on_link_event,
                                          max_queue_bytes=cfg.max_queue_bytes, keep_raw=False,
                                          tls=cfg.tls)  # fmt: skip
                break
            except (OSError, ConnectionError, TimeoutError) as exc:
                errors.append(f"{ep}: {exc or type(exc).__name__}")
        else:
            raise SessionOpenError("could not open a session: " + "; ".join(errors))
        self.pump()

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.core.close()
        self.pump()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.link is not None:
            await self.link.aclose(CloseReason.GENERIC)
        if self._dispatcher is not None:
            # never wait here: a callback may be the one closing the session
            self._dispatcher.stop(0)
        self._ops_room.set()

    def abort(self) -> None:
        """Drop the connection without CLOSE (tests: a crashed process)."""
        if self.link is not None:
            self.link.abort()

    # --- link events -------------------------------------------------------------------------

    def _on_link_event(self, link: TcpLink, ev: Event) -> None:
        if isinstance(ev, Received | ReceivedRun):
            if isinstance(ev, Received):
                self.core.on_message(ev.message, self.loop.time())
            else:
                self.core.on_push_run(ev.run)
            if not self._pump_scheduled:
                self._pump_scheduled = True
                self.loop.call_soon(self.pump)
        elif isinstance(ev, Established):
            self.link = link
            self.peer = ev
            self.core.on_established(ev)
            self.pump()
        elif isinstance(ev, LinkClosed):
            self.close_event = ev
            if not self.closed:
                log.warning("session link closed: %s", ev.detail)
            self.closed = True
            self.core.close()
            self.pump()
            if self._dispatcher is not None:
                self._dispatcher.stop(0)
            self._ops_room.set()

    # --- moving core output to the link and to user sinks --------------------------------------

    def pump(self) -> None:
        self._pump_scheduled = False
        if self._pumping:
            return  # the outer pump picks up whatever this call would have moved
        self._pumping = True
        core = self.core
        try:
            while core.outbox or core.deliveries:
                link = self.link
                for msg, reliable, prio, droppable, express in core.take_outbox():
                    if link is not None:
                        link.send(msg, reliable=reliable, priority=prio, drop_if_full=droppable,
                                  express=express)  # fmt: skip
                for sink, item in core.take_deliveries():
                    if item is END:
                        sink.close()
                        if sink.flow is sink:
                            self._unblock(sink)
                        continue
                    if item.__class__ is SampleBatch:
                        sink.push_many(item.samples)
                    else:
                        sink.push(item)
                    if sink.full:
                        self._block(sink)
        finally:
            self._pumping = False
        self._rearm()

    def _block(self, sink: Sink) -> None:
        flow = sink.flow
        key = id(flow)
        if key in self._blocked:
            return
        self._blocked.add(key)
        flow.on_space = lambda: self.in_loop(lambda: self._unblock(flow))
        if self.link is not None:
            self.link.pause_reading()

    def _unblock(self, flow: Any) -> None:
        self._blocked.discard(id(flow))
        if not self._blocked and self.link is not None:
            self.link.resume_reading()

    def dispatcher(self) -> Dispatcher:
        """The thread that runs this session's sync callbacks (started on first use)."""
        if self._dispatcher is None:
            d = Dispatcher(f"pyzenoh-callbacks-{self.zid}")
            self._dispatcher = d
        return self._dispatcher

    # --- timers ------------------------------------------------------------------------------

    def _rearm(self) -> None:
        deadline = self.core.next_deadline()
        if deadline is None or self.closed:
            return
        if self._timer is not None:
            if deadline >= self._timer_when:
                return
            self._timer.cancel()
        self._timer_when = deadline
        self._timer = self.loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.core.handle_timer(max(self.loop.time(), self._timer_when))
        self.pump()

    # --- handing work to the loop -------------------------------------------------------------

    def on_loop(self) -> bool:
        return threading.get_ident() == self.loop_thread

    def in_loop(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the loop: now if already there, else soon (thread-safe)."""
        if self.on_loop():
            fn()
        else:
            try:
                self.loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop is closed: the session is over
                pass

    def submit(self, fn: Callable[[], None]) -> None:
        """Run a core operation in the loop, in submission order, without waiting."""
        if self.on_loop():
            try:
                fn()
            finally:
                self.pump()
            return
        self._ops.append(fn)
        if not self._wakeup:
            self._wakeup = True
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:
                self._ops.clear()

    def _drain(self) -> None:
        self._wakeup = False  # before draining: a submit racing with us schedules again
        ops = self._ops
        try:
            while ops:
                fn = ops.popleft()
                try:
                    fn()
                except Exception:
                    log.exception("session operation failed")
        finally:
            self._ops_room.set()
            self.pump()

    def call(self, fn: Callable[[], R], timeout: float | None = 30.0) -> R:
        """Run ``fn`` in the loop and return its result (raising its exception)."""
        if self.on_loop():
            try:
                return fn()
            finally:
                self.pump()
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
        if self.on_loop():
            return True
        link = self.link
        if len(self._ops) >= MAX_PENDING_OPS:
            if not block:
                return False
            while len(self._ops) >= MAX_PENDING_OPS and not self.closed:
                self._ops_room.clear()
                if len(self._ops) >= MAX_PENDING_OPS:
                    self._ops_room.wait(0.1)
        if link is not None and link.is_full and not self.closed:
            if not block:
                link.dropped += 1
                return False
            fut = asyncio.run_coroutine_threadsafe(link.wait_writable(), self.loop)
            fut.result(timeout)
        return True

    async def await_room(self, block: bool) -> bool:
        """In the loop (asyncio API): wait for room (Block) or report a drop (Drop)."""
        link = self.link
        if link is None or not link.is_full:
            return True
        if not block:
            link.dropped += 1
            return False
        await link.wait_writable()
        return True

    # --- Responder (Query objects call these from any thread) ---------------------------------

    def query_reply(
        self, qref: int, key: str, body: Any, priority: t.Priority | None, express: bool,
        block: bool,
    ) -> None:  # fmt: skip
        if not isinstance(body, Put | Del | Err):
            raise UsageError("bad reply body")
        prio = None if priority is None else priority.value
        self.submit(lambda: self.core.query_reply(qref, key, body, prio, express, block))

    def query_finalize(self, qref: int) -> None:
        if self.closed:
            return
        self.submit(lambda: self.core.query_finalize(qref))
