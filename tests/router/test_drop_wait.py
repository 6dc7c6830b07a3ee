"""A Drop message for a full face waits ``wait_before_drop`` for room (router/delivery.py),
as zenohd's transmission pipeline does: queued meanwhile with the face it came from paused;
a face still full after the wait is congested, and its Drop messages are dropped at once
until it has written some of its queue; then they wait again.

The links are stand-ins with a settable queue (their room is what the test says), on a
real event loop; the interop side is tests/router/test_protection.py.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.router.delivery import DROP_WAIT_QUEUE_FACTOR, Delivery
from pyzenoh.router.state import DaemonFace, DaemonFaces, RouterStats
from tests.waits import aexpect

QUEUE = 1000
WAIT_S = 0.05
DROP, BLOCK = False, True


@dataclass(eq=False)
class QueueLink:
    """A link whose queued bytes the test sets; sends add to them."""

    queued_bytes: int = 0
    max_queue_bytes: int = QUEUE
    dropped: int = 0
    sent: list[bytes] = field(default_factory=list)
    paused: bool = False
    room: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def is_full(self) -> bool:
        return self.queued_bytes >= self.max_queue_bytes

    def send(self, data: bytes, **_: object) -> bool:
        self.sent.append(data)
        self.queued_bytes += len(data)
        return True

    def drain(self, to: int) -> None:
        self.queued_bytes = to
        if not self.is_full:
            self.room.set()

    async def wait_writable(self) -> None:
        while self.is_full:
            self.room.clear()
            await self.room.wait()

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


class Setup:
    def __init__(self, wait_s: float = WAIT_S) -> None:
        self.faces = DaemonFaces()
        self.stats = RouterStats()
        self.pub = QueueLink()
        self.sub = QueueLink()
        for fid, link in ((1, self.pub), (2, self.sub)):
            self.faces.add(DaemonFace(fid, link, ZenohId(fid), WhatAmI.CLIENT))  # type: ignore[arg-type]
        self.closed: list[int] = []
        self.delivery = Delivery(self.faces, self.stats, QUEUE, 5.0, lambda f, _r: self.closed.append(f), wait_s)

    def publish(self, data: bytes = b"x" * 100, block: bool = DROP) -> bool | None:
        """A message from face 1 to face 2, as forwarding hands it on."""
        self.delivery.ingress = 1
        try:
            return self.delivery.to_face(2, data, None, None, 5, True, False, block)
        finally:
            self.delivery.ingress = -1


def test_a_drop_message_waits_and_its_publisher_pauses_until_there_is_room() -> None:
    async def run() -> None:
        s = Setup(wait_s=30.0)  # (room comes when the test says: the wait never ends first)
        s.sub.queued_bytes = QUEUE  # full
        assert s.publish() is True  # queued: it waits
        assert s.pub.paused and s.stats.drop_waits == 1 and s.stats.dropped == 0
        assert s.publish() is True  # what was read with it waits too
        s.sub.drain(0)  # room: the publisher reads again, nothing was dropped
        await aexpect(lambda: not s.pub.paused, "the publisher reads again")
        assert s.stats.dropped == 0 and len(s.sub.sent) == 2
        assert s.publish() is True and not s.pub.paused  # not full: no wait

    asyncio.run(run())


def test_a_face_full_through_its_wait_is_congested_until_it_has_written_some() -> None:
    async def run() -> None:
        s = Setup()
        s.sub.queued_bytes = QUEUE
        assert s.publish() is True
        await aexpect(lambda: not s.pub.paused, "the publisher reads again")  # the wait ended without room
        assert s.publish() is False and s.publish() is False  # congested: dropped at once
        assert s.stats.dropped == 2 and s.sub.dropped == 2 and not s.pub.paused
        s.sub.queued_bytes -= 10  # it wrote something, still full: the next one waits again
        assert s.publish() is True and s.pub.paused
        s.sub.drain(0)
        await aexpect(lambda: not s.pub.paused, "the publisher reads again")
        assert s.closed == []  # a Drop wait never closes a face

    asyncio.run(run())


def test_what_waits_never_takes_a_queue_past_its_bound() -> None:
    async def run() -> None:
        s = Setup()
        s.sub.queued_bytes = DROP_WAIT_QUEUE_FACTOR * QUEUE
        assert s.publish() is False and not s.pub.paused

    asyncio.run(run())


def test_no_wait_when_turned_off_or_nothing_can_pause() -> None:
    async def run() -> None:
        s = Setup()
        s.delivery.drop_wait_s = 0.0
        s.sub.queued_bytes = QUEUE
        assert s.publish() is False and not s.pub.paused  # wait_before_drop 0: dropped at once
        s.delivery.drop_wait_s = WAIT_S
        assert s.delivery.to_face(2, b"x", None, None, 5, True, False, DROP) is False  # no ingress face

    asyncio.run(run())


def test_a_block_message_keeps_its_own_wait() -> None:
    async def run() -> None:
        s = Setup(wait_s=30.0)
        s.sub.queued_bytes = QUEUE - 1
        assert s.publish(block=BLOCK) is True  # fills it: the publisher pauses (Block's wait)
        assert s.pub.paused and s.delivery.backpressure.is_waiting_for(2)
        assert s.publish() is False  # a Drop message is not added to a Block message's wait
        s.sub.drain(0)
        await aexpect(lambda: not s.pub.paused, "the publisher reads again")

    asyncio.run(run())
