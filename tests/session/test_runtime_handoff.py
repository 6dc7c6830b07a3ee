"""Handing operations to the session's loop: the loop runs them in order, a bounded
number per turn, so what they send is written between turns however fast another thread
keeps handing more over."""

from __future__ import annotations

import asyncio
import collections
import itertools
import threading
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from pyzenoh.session.config import Config
from pyzenoh.session.runtime.handoff import DRAIN_BATCH, Handoff, Joinable
from pyzenoh.session.runtime.state import RuntimeState
from tests.hyp import examples


class FlushPump:
    """Each pump schedules a link's flush, as TcpLink.send does."""

    def __init__(self, loop: asyncio.AbstractEventLoop, trace: list[str]) -> None:
        self.loop = loop
        self.trace = trace

    def pump(self) -> None:
        self.loop.call_soon(self.trace.append, "flush")


def handoff_on(loop: asyncio.AbstractEventLoop, trace: list[str]) -> Any:
    """The hand-off alone, with a pump that only schedules a flush."""
    s = RuntimeState(Config(), loop, threaded=True)
    s.loop_thread = -1  # submit() from the test thread: never "on the loop"
    return Handoff(s, FlushPump(loop, trace))


def test_the_loop_writes_between_turns_of_a_long_backlog() -> None:
    loop = asyncio.new_event_loop()
    trace: list[str] = []
    h = handoff_on(loop, trace)
    total = 2 * DRAIN_BATCH + 10
    for i in range(total):
        h.submit(lambda i=i: trace.append(f"op{i}"))
    done = threading.Event()

    def finish() -> None:
        if h.ops or h._wakeup:
            loop.call_soon(finish)
        else:
            done.set()

    try:
        loop.call_soon(finish)
        loop.run_until_complete(asyncio.wait_for(loop.run_in_executor(None, done.wait, 5), 6))
    finally:
        loop.close()
    ops = [t for t in trace if t != "flush"]
    assert ops == [f"op{i}" for i in range(total)]  # in order, every one
    flushes = [i for i, t in enumerate(trace) if t == "flush"]
    # a flush after each turn of at most DRAIN_BATCH operations
    assert flushes[0] == DRAIN_BATCH and len(flushes) >= 3
    assert all(b - a - 1 <= DRAIN_BATCH for a, b in itertools.pairwise(flushes))


def _drain_all(h: Any, loop: asyncio.AbstractEventLoop) -> None:
    """Run the loop until every handed-over operation ran."""
    while h.ops or h._wakeup:
        loop.run_until_complete(asyncio.sleep(0))


@examples(200, 50)
@example(["a"] * (DRAIN_BATCH + 5) + ["b", "a"])
@given(st.lists(st.sampled_from(["a", "b", "plain"]), max_size=3 * DRAIN_BATCH // 2))
def test_joinable_operations_run_as_runs_of_their_group(kinds: list[str]) -> None:
    """Consecutive operations of one group run as one call with all their items, in
    order; another group or any other operation between them ends the run, and a turn
    of the loop runs at most DRAIN_BATCH operations, joined ones counted one by one."""
    loop = asyncio.new_event_loop()
    trace: list[str] = []
    h = handoff_on(loop, trace)
    calls: list[tuple[str, list[int]]] = []
    groups = {g: object() for g in ("a", "b")}

    def record(kind: str, items: list[int]) -> None:
        trace.append(f"call{len(calls)}")
        calls.append((kind, items))

    try:
        for i, kind in enumerate(kinds):
            if kind == "plain":
                h.submit(lambda i=i: record("plain", [i]))
            else:
                h.submit(Joinable(groups[kind], i, lambda items, kind=kind: record(kind, items)))
        _drain_all(h, loop)
    finally:
        loop.close()
    assert [i for _, items in calls for i in items] == list(range(len(kinds)))
    assert all(kinds[i] == kind for kind, items in calls for i in items)
    # a turn ends after DRAIN_BATCH operations (the flush between turns): no run crosses
    # a turn, and a run ends only where the group changes or the turn does
    turn_of = {}  # call number -> the number of flushes before it
    turn = 0
    for t in trace:
        if t == "flush":
            turn += 1
        elif t.startswith("call"):
            turn_of[int(t[4:])] = turn
    per_turn = collections.Counter(turn_of[c] for c, (_, items) in enumerate(calls) for _ in items)
    assert max(per_turn.values(), default=0) <= DRAIN_BATCH
    for c, ((k1, _), (k2, _)) in enumerate(itertools.pairwise(calls)):
        assert k1 == "plain" or k1 != k2 or turn_of[c] != turn_of[c + 1]


def test_what_other_threads_handed_over_runs_before_the_loops_own() -> None:
    """A callback thread's reply is queued; the query's end, submitted in the loop (its
    Query dropped there), must run after it: once the end overtook the reply and a local
    get ended empty."""
    import threading as th

    loop = asyncio.new_event_loop()
    trace: list[str] = []
    h = handoff_on(loop, trace)
    handed = th.Event()

    def from_the_loop() -> None:
        assert handed.wait(5)  # the other thread's op is queued, its drain not yet run
        h.s.loop_thread = th.get_ident()  # this is the loop's thread now
        h.submit(lambda: trace.append("end"))

    try:
        worker = th.Thread(target=lambda: (h.submit(lambda: trace.append("reply")), handed.set()))
        loop.call_soon(from_the_loop)
        worker.start()
        loop.run_until_complete(asyncio.sleep(0))  # runs from_the_loop, then the drain
        worker.join(5)
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    assert [t for t in trace if t != "flush"] == ["reply", "end"]
