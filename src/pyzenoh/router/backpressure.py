"""Back-pressure, as zenohd applies it to the links of a router.

A Block message that fills its destination's queue pauses reading from the face it came
from (its publisher, or the router neighbour that forwarded it) until the destination has
room again. A destination still full after its wait is closed, and the faces it held
back resume. A Drop message that finds its destination full waits too, but only
``wait_before_drop`` (1 ms by default), and a destination still full then is not closed:
its Drop messages are dropped at once until it has room (delivery.py keeps that state).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pyzenoh.transport.tcp import TcpLink

#: The share of ``block/wait_before_close`` a router gives a full destination before
#: closing it. The publisher behind the router runs the same timer (zenohd's default is
#: 5 s on both sides) from a few milliseconds later, when its own queue fills: waiting the
#: whole time would let the publisher give up on the router at about the same moment
#: (measured: it did).
BLOCK_WAIT_SHARE = 0.5


class BlockBackPressure:
    """Which faces are paused for which full destinations."""

    def __init__(
        self,
        wait_s: float,
        link_of: Callable[[int], TcpLink | None],
        on_stalled: Callable[[int, float], None],
    ) -> None:
        #: Seconds a full destination gets to make room.
        self.wait_s = wait_s
        self._link_of = link_of  # a face id -> its link (None: gone or local)
        self._on_stalled = on_stalled  # (face id, seconds waited): close it
        self._blocking: dict[int, set[int]] = {}  # full destination -> faces paused for it
        self._waiting_for: dict[int, set[int]] = {}  # paused face -> destinations it waits for

    def block(
        self,
        src: int,
        src_link: TcpLink,
        dest: int,
        dest_link: TcpLink,
        wait_s: float | None = None,
        done: Callable[[int, bool], None] | None = None,
    ) -> None:
        """``dest`` is full after a Block message from ``src``: pause ``src``. A wait of
        its own (``wait_s``, a Drop message's) ends with ``done(dest, had_room)`` instead
        of closing a destination still full. A destination already waited for keeps the
        wait it has."""
        if src == dest:
            return
        waiting = self._waiting_for.setdefault(src, set())
        if not waiting:
            src_link.pause_reading()
        waiting.add(dest)
        blocked = self._blocking.get(dest)
        if blocked is None:
            blocked = self._blocking[dest] = set()
            asyncio.create_task(self._await_room(dest, dest_link, self.wait_s if wait_s is None else wait_s, done))
        blocked.add(src)

    def is_waiting_for(self, dest: int) -> bool:
        """Whether faces are paused until ``dest`` has room."""
        return dest in self._blocking

    def face_closed(self, face: int) -> None:
        """``face`` went: it no longer waits for anything."""
        for dest in self._waiting_for.pop(face, ()):
            self._blocking.get(dest, set()).discard(face)

    async def _await_room(
        self, dest: int, link: TcpLink, wait_s: float, done: Callable[[int, bool], None] | None
    ) -> None:
        room = True
        try:
            await asyncio.wait_for(link.wait_writable(), wait_s)
        except TimeoutError:
            room = False
            if done is None:
                self._on_stalled(dest, wait_s)
        if done is not None:
            done(dest, room)
        for src in self._blocking.pop(dest, ()):
            waiting = self._waiting_for.get(src)
            if waiting is None:
                continue
            waiting.discard(dest)
            if not waiting:
                del self._waiting_for[src]
                src_link = self._link_of(src)
                if src_link is not None:
                    src_link.resume_reading()
