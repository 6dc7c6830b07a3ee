"""Flow control between a session's loop and its callback thread: a sink that fills up
pauses reading, and reading always resumes once it drained, however the two threads
interleave."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

from pyzenoh.session.handlers import DISPATCH_BACKLOG, Dispatcher, ThreadCallbackSink
from pyzenoh.session.runtime.pump import CorePump


class Link:
    def __init__(self) -> None:
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


def pump_with(link: Link) -> Any:
    """The pump's flow control alone: one link, the loop being the calling thread."""
    s: Any = SimpleNamespace(links={1: link}, all_links=lambda: [link], in_loop=lambda fn: fn())
    return CorePump(s, None)


def test_a_flow_drained_before_blocking_finished_resumes_reading() -> None:
    """The callback thread drains the whole backlog between the loop's ``full`` and its
    setting ``on_space``: the space event finds no callback. Reading must resume anyway
    (it used to stay paused for good: a subscriber stalled after its first batches)."""
    dispatcher = Dispatcher("test-pump")
    gate = threading.Event()
    ran = threading.Event()
    done: list[int] = []
    try:
        dispatcher.submit(lambda _: gate.wait(5), None)  # holds the thread
        sink = ThreadCallbackSink(dispatcher, done.append)
        sink.push_many(list(range(DISPATCH_BACKLOG)))
        dispatcher.submit(lambda _: ran.set(), None)
        assert sink.full  # what the pump asks after handing the batch over
        gate.set()
        assert ran.wait(5)  # drained, and its space event went to no one
        link = Link()
        pump = pump_with(link)
        pump._block(sink)
        assert link.reading and not pump.blocked
    finally:
        gate.set()
        dispatcher.stop()


def test_a_full_flow_pauses_until_half_drained() -> None:
    dispatcher = Dispatcher("test-pump-2")
    gate = threading.Event()
    try:
        dispatcher.submit(lambda _: gate.wait(5), None)
        sink = ThreadCallbackSink(dispatcher, lambda _: None)
        sink.push_many(list(range(DISPATCH_BACKLOG)))
        link = Link()
        pump = pump_with(link)
        assert sink.full
        pump._block(sink)
        assert not link.reading and pump.blocked
        gate.set()
        deadline = time.monotonic() + 5
        while not link.reading and time.monotonic() < deadline:
            time.sleep(0.01)
        assert link.reading and not pump.blocked
    finally:
        gate.set()
        dispatcher.stop()
