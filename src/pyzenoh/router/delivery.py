"""Delivery: each :class:`~pyzenoh.routing.Send` the routing core made, to its face.

The one path from the core's output to the faces, whatever lane routed the message
(:mod:`.forwarding`): a link's queue, or a local face's sink. A face whose outgoing queue
passes the hard cap is closed (its peer is too slow); messages whose congestion control
is Drop are dropped before that, once they have waited ``wait_before_drop`` for room (as
zenohd does: the face they came from pauses meanwhile, so a router neighbour or a
subscriber a little slower than its publisher slows the publisher rather than losing most
of its samples; one that stays full is then dropped for at once, so it never slows the
others for long). A Block message that fills its destination's queue pauses reading from
the face it came from (:mod:`.backpressure`). A :class:`DeliveryWatch` sees what happens
to each send: that is how recording (:mod:`.recorded`) wraps this path rather than
copying it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from pyzenoh.codec import NetworkMessage, decode_network_message, encode_network_message
from pyzenoh.dataplane import split_pushes
from pyzenoh.errors import CloseReason, PeerError
from pyzenoh.router.backpressure import BlockBackPressure
from pyzenoh.router.state import DaemonFaces, RouterStats
from pyzenoh.routing import Send
from pyzenoh.transport.tcp import TcpLink

log = logging.getLogger(__name__)

#: A face whose queue holds more than this many times the soft cap is closed.
HARD_CAP_FACTOR = 4
#: Drop messages that wait for room are queued meanwhile, up to this many times the soft
#: cap (then dropped): well below the hard cap, so waiting never closes a face.
DROP_WAIT_QUEUE_FACTOR = 2

CloseFace = Callable[[int, int], None]


class DeliveryWatch(Protocol):
    """What a delivery tells its watcher, send by send (see :meth:`Delivery.deliver`)."""

    def reentering(self) -> None:
        """A local face's sink, or the close of a face, is about to run (and may itself
        cause records): whatever the watcher holds back must be written now."""

    def given(self, send: Send, data: bytes | None) -> None:
        """``send`` was queued to its link or given to its local face (``data``: its
        bytes, None when a local face took it as a message)."""

    def dropped(self, send: Send) -> None:
        """``send`` was dropped: its face's queue was full and its congestion control Drop."""


class Delivery:
    """Routed sends to their faces; counts in ``stats``; ``close_face`` ends a face."""

    def __init__(
        self,
        faces: DaemonFaces,
        stats: RouterStats,
        send_queue_max_bytes: int,
        block_wait_s: float,
        close_face: CloseFace,
        drop_wait_s: float = 0.0,
    ) -> None:
        self._faces = faces.by_id
        self._stats = stats
        self._hard_cap = send_queue_max_bytes * HARD_CAP_FACTOR
        self._close_face = close_face
        self.backpressure = BlockBackPressure(block_wait_s, self._link_of, self._on_stalled)
        #: The face whose message is being routed (-1: none): Block back-pressure pauses it.
        self.ingress = -1
        #: How long a Drop message waits for room (zenohd's wait_before_drop; 0: none).
        self.drop_wait_s = drop_wait_s
        self._drop_waits: dict[int, float] = {}  # full face -> when its Drop messages' wait ends
        #: Full faces whose wait ended without room -> their queued bytes then: their Drop
        #: messages are dropped at once until they have written some of it (zenohd's
        #: congested queue, which waits again once one of its batches is free).
        self._congested: dict[int, int] = {}

    def deliver(self, sends: list[Send], watch: DeliveryWatch | None = None) -> None:
        """Hand ``sends`` to their faces, telling ``watch`` what became of each."""
        faces = self._faces
        encoded: dict[int, bytes] = {}  # one encoding per message object, however many faces
        for send in sends:
            if send.ends is not None:  # several messages (a routed run)
                self.send_run(send)
                continue
            face = faces.get(send.face)
            if face is None:
                continue
            if face.sink is not None:
                if watch is not None:
                    watch.reentering()
                face.sink(send)
                if watch is not None:
                    watch.given(send, send.raw)
                continue
            link = face.link
            assert link is not None
            if watch is not None and self._over_hard_cap(link):
                watch.reentering()  # to_face closes it
            data = send.raw
            if data is None:
                msg_id = id(send.message)
                data = encoded.get(msg_id)
                if data is None:
                    data = encoded[msg_id] = encode_network_message(send.message)
            sent = self.to_face(
                send.face, data, None, send.message, send.priority, send.reliable, send.express, send.block
            )
            if sent is None or watch is None:
                continue
            if sent:
                watch.given(send, data)
            else:
                watch.dropped(send)

    def send_run(self, send: Send) -> bool | None:
        """Queue a Send holding several messages (a routed run) to its face (see to_face)."""
        assert send.raw is not None and send.ends is not None
        return self.to_face(
            send.face, send.raw, send.ends, send.message, send.priority, send.reliable, send.express, send.block
        )

    def to_face(
        self,
        fid: int,
        data: bytes,
        ends: Sequence[int] | None,
        message: NetworkMessage | None,
        priority: int,
        reliable: bool,
        express: bool,
        block: bool,
    ) -> bool | None:
        """The one way routed bytes reach a face, whatever lane made them: ``data`` is one
        message (``ends`` None; ``message`` is it decoded, when at hand) or several back to
        back (``ends``: where each ends). True when queued; False when dropped (a full
        queue and congestion control Drop); None when the face is gone or was just closed
        for not reading (its queue past the hard cap). A local face takes messages."""
        face = self._faces.get(fid)
        if face is None:
            return None
        if face.sink is not None:
            if ends is None:
                msg = message if message is not None else decode_network_message(data)
                face.sink(Send(fid, msg, data, priority, reliable, express, block))
            else:
                for msg, raw in split_pushes(data, ends):
                    face.sink(Send(fid, msg, raw, priority, reliable, express, block))
            return True
        link = face.link if not face.extra_links else face.link_for(reliable, priority)
        assert link is not None
        if self._over_hard_cap(link):
            self._close_slow(fid, link)
            return None
        n = 1 if ends is None else len(ends)
        if not block and link.is_full and not self._waits_for_room(fid, link, n):
            link.dropped += n
            self._stats.dropped += n
            return False
        if self._congested:
            self._congested.pop(fid, None)  # (it has room, or this message waits for it)
        if ends is None:
            sent = link.send(data, reliable=reliable, priority=priority, express=express)
        else:
            sent = link.send_run(data, ends, reliable=reliable, priority=priority)
        if sent:
            self._stats.messages_out += n
            if block and link.is_full:
                self._block(fid, link)
            return True
        self._stats.dropped += n
        return False

    def bad_input(self, face_id: int, exc: PeerError) -> None:
        """``face_id`` sent what the core refused: close it (nothing else is touched)."""
        self._stats.faces_closed_bad_input += 1
        log.warning("face %d sent bad input (%s); closing it", face_id, exc)
        self._close_face(face_id, exc.close_reason)

    def _over_hard_cap(self, link: TcpLink) -> bool:
        """A face whose queue is past the hard cap is not reading (see _close_slow)."""
        return link.queued_bytes > self._hard_cap

    def _close_slow(self, face_id: int, link: TcpLink) -> None:
        self._stats.faces_closed_slow += 1
        log.warning("face %d is not reading (%d bytes queued); closing it", face_id, link.queued_bytes)
        self._close_face(face_id, CloseReason.UNRESPONSIVE)

    def _block(self, dest: int, dest_link: TcpLink) -> None:
        """Pause the face being routed from until ``dest`` has room again."""
        src = self._faces.get(self.ingress)
        if src is None or src.link is None:
            return  # a local face or the timer: nothing to pause (the hard cap still holds)
        self.backpressure.block(src.face_id, src.link, dest, dest_link)

    def _waits_for_room(self, dest: int, link: TcpLink, n: int) -> bool:
        """``n`` Drop messages for the full face ``dest``: True when they wait for room (queued,
        and the face they came from pauses until ``dest`` has room or the wait ends),
        False when they are dropped (no wait, or ``dest`` stayed full through one)."""
        if self.drop_wait_s <= 0.0:
            return False
        queued = link.queued_bytes
        if queued >= DROP_WAIT_QUEUE_FACTOR * link.max_queue_bytes:
            return False  # what waits is queued: never past this
        congested_at = self._congested.get(dest)
        if congested_at is not None:
            if queued >= congested_at:
                return False  # nothing written since its wait ended
            del self._congested[dest]
        src = self._faces.get(self.ingress)
        if src is None or src.link is None or src.face_id == dest:
            return False  # a local face or the timer: nothing to pause
        now = time.monotonic()
        until = self._drop_waits.get(dest)
        if until is None:
            if self.backpressure.is_waiting_for(dest):
                return False  # a Block message's wait holds it: Drop messages are not added to it
            self._drop_waits[dest] = now + self.drop_wait_s
        elif now >= until:
            return False
        self._stats.drop_waits += n
        self.backpressure.block(src.face_id, src.link, dest, link, self.drop_wait_s, self._drop_wait_over)
        return True

    def _drop_wait_over(self, dest: int, had_room: bool) -> None:
        self._drop_waits.pop(dest, None)
        link = self._link_of(dest)
        if not had_room and link is not None:
            self._congested[dest] = link.queued_bytes  # until it has written some

    def face_closed(self, face_id: int) -> None:
        """``face_id`` went: forget what waited for it or for what it waited."""
        self.backpressure.face_closed(face_id)
        self._drop_waits.pop(face_id, None)
        self._congested.pop(face_id, None)

    def _link_of(self, face_id: int) -> TcpLink | None:
        face = self._faces.get(face_id)
        return None if face is None else face.link

    def _on_stalled(self, face_id: int, waited: float) -> None:
        self._stats.faces_closed_slow += 1
        log.warning("face %d stayed full for %.1f s with Block messages queued; closing it", face_id, waited)
        self._close_face(face_id, CloseReason.UNRESPONSIVE)
