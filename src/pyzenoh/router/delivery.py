"""Routing and delivery: a received message through the routing core, and each
:class:`~pyzenoh.routing.Send` it causes to its face.

A face whose outgoing queue passes the hard cap is closed (its peer is too slow); messages
whose congestion control is Drop are dropped before that, so a slow subscriber never slows
the others. A Block message that fills its destination's queue pauses reading from the
face it came from (:mod:`.backpressure`). When recording, :mod:`.recorded` routes instead
and :meth:`Delivery._deliver` records what it hands over.

A mixin of :class:`~pyzenoh.router.daemon.RouterDaemon` (which holds the state).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from pyzenoh.codec import (
    NetworkMessage,
    Push,
    decode_network_message,
    encode_network_message,
)
from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.dataplane import PushRun, split_pushes
from pyzenoh.errors import CloseReason, PeerError
from pyzenoh.routing import Send
from pyzenoh.transport.link import ReceivedPush
from pyzenoh.transport.tcp import TcpLink

if TYPE_CHECKING:
    from pyzenoh.recording.protocol import RouterRecorder
    from pyzenoh.router.state import Daemon

log = logging.getLogger(__name__)

#: A face whose queue holds more than this many times the soft cap is closed.
HARD_CAP_FACTOR = 4
_time_ns = time.time_ns
_time = time.time
_monotonic = time.monotonic


class Delivery:
    """Received messages routed, and the core's sends delivered (and recorded)."""

    def _on_message(
        self: Daemon, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool = True
    ) -> None:
        self.stats.messages_in += 1
        self._ingress = face_id  # Block back-pressure pauses this face
        try:
            if self.recorder is not None:
                self._route_recorded(face_id, message, raw, reliable)
                return
            try:
                # (time.monotonic() is self.now(), called directly on this path)
                sends = self.core.handle(face_id, message, _monotonic(), raw=raw, reliable=reliable, wall=_time())
            except PeerError as exc:
                self._bad_input(face_id, exc)
                sends = []
            self._deliver(sends)
        finally:
            self._ingress = -1

    def _on_push_run(self: Daemon, face_id: int, run: PushRun, reliable: bool) -> None:
        """A run of same-shape PUSHes, routed as one unit (routing/lanes.py)."""
        if self.recorder is not None and self.access_control is not None:
            # Access control's denials are recorded with the message they stopped.
            for message, raw in run.messages():
                self._on_message(face_id, message, raw, reliable)
            return
        self.stats.messages_in += run.count
        self._ingress = face_id  # Block back-pressure pauses this face
        try:
            if self.recorder is not None:
                self._route_run_recorded(face_id, run, reliable)
                return
            try:
                sends = self.core.handle_push_run(face_id, run, self.now(), reliable, wall=time.time())
            except PeerError as exc:
                self._bad_input(face_id, exc)
                sends = []
            self._deliver(sends)
        finally:
            self._ingress = -1

    def _on_lone_push(self: Daemon, face_id: int, ev: ReceivedPush) -> None:
        """A lone PUSH, forwarded from its bytes when the core's lane covers it
        (routing/lanes.py: not when recording), else decoded and routed as any message."""
        out = None
        if self.recorder is None:
            try:
                out = self.core.forward_lone(face_id, ev.batch, ev.at, ev.fields, _time())
            except PeerError as exc:  # as in _on_message: the face that sent it is closed
                self._bad_input(face_id, exc)
                return
        if out is None:
            rx = ev.received()
            self._on_message(face_id, rx.message, rx.raw, ev.reliable)
            return
        self.stats.messages_in += 1
        if not out:
            return
        qos = ev.fields.qos
        priority, express, block = qos & 0x07, bool(qos & QOS_EXPRESS), bool(qos & QOS_BLOCK)  # as make_send
        reliable = ev.reliable
        self._ingress = face_id  # Block back-pressure pauses this face
        try:
            for fid, data in out:
                self._to_face(fid, data, None, None, priority, reliable, express, block)
        finally:
            self._ingress = -1

    def _send_run(self: Daemon, send: Send) -> bool | None:
        """Queue a Send holding several messages (a routed run) to its face (see _to_face)."""
        assert send.raw is not None and send.ends is not None
        return self._to_face(
            send.face, send.raw, send.ends, send.message, send.priority, send.reliable, send.express, send.block
        )

    def _to_face(
        self: Daemon,
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
        link = face.link
        assert link is not None
        if self._over_hard_cap(link):
            self._close_slow(fid, link)
            return None
        if ends is None:
            n = 1
            sent = link.send(data, reliable=reliable, priority=priority, drop_if_full=not block, express=express)
        else:
            n = len(ends)
            sent = link.send_run(data, ends, reliable=reliable, priority=priority, drop_if_full=not block)
        if sent:
            self.stats.messages_out += n
            if block and link.is_full:
                self._block(fid, link)
            return True
        self.stats.dropped += n
        return False

    def _over_hard_cap(self: Daemon, link: TcpLink) -> bool:
        """A face whose queue is past the hard cap is not reading (see _close_slow)."""
        return link.queued_bytes > self.config.send_queue_max_bytes * HARD_CAP_FACTOR

    def _close_slow(self: Daemon, face_id: int, link: TcpLink) -> None:
        self.stats.faces_closed_slow += 1
        log.warning("face %d is not reading (%d bytes queued); closing it", face_id, link.queued_bytes)
        self._close_face(face_id, CloseReason.UNRESPONSIVE)

    def _bad_input(self: Daemon, face_id: int, exc: PeerError) -> None:
        self.stats.faces_closed_bad_input += 1
        log.warning("face %d sent bad input (%s); closing it", face_id, exc)
        self._close_face(face_id, exc.close_reason)

    def _deliver(
        self: Daemon,
        sends: list[Send],
        rx_ns: int = 0,
        rx_face: int = -1,
        rx_key: str | None = None,
        rx_raw: bytes | None = None,
        copy_kind: type | None = None,
        rx_cause: int = -1,
    ) -> None:
        """Hand ``sends`` to their faces (and to the recorder).

        When recording a received message (``rx_raw`` is not None), ``sends`` are what
        routing it produced: its rx record (time ``rx_ns``, face ``rx_face``, key
        ``rx_key``) comes first and is every tx record's ``cause``; one already written
        (access control's denials follow it) is passed as ``rx_cause``, its seq or
        reference, with ``rx_raw`` None. Sends of ``copy_kind`` (the routed copies of a
        PUSH or REQUEST, which keep its key) are recorded after the loop, by the same
        call as the rx record when nothing had to be recorded in between. Before a call that can re-enter the daemon (a local
        face's sink, closing a face) the rx record is written at once, so it keeps its
        place ahead of whatever that call records.
        """
        faces = self._faces
        rec = self.recorder
        # Used only where rec is not None (mypy cannot follow `pending`): no check per send.
        r = cast("RouterRecorder", rec)
        rx_bytes = rx_raw or b""
        encoded: dict[int, bytes] = {}  # one encoding per message object, however many faces
        copies: list[tuple[int, bytes]] = []
        # The rx record is not written yet:
        pending = rec is not None and rx_raw is not None
        cause = rx_cause
        if rec is not None and rx_raw is None and self._denials:
            self._record_denials(_time_ns(), -1)  # not while routing a received message
        route_recorded = False
        for send in sends:
            if send.ends is not None:  # several messages (a routed run)
                self._send_run(send)
                continue
            face = faces.get(send.face)
            if face is None:
                continue
            if face.sink is not None:
                if pending:
                    cause = r.message(rx_ns, rx_face, "rx", rx_key, rx_bytes)
                    pending = False
                face.sink(send)
                if rec is not None:
                    given = send.raw or encode_network_message(send.message)
                    if send.message.__class__ is copy_kind:
                        copies.append((send.face, given))
                    else:
                        self._record_tx(send, given, cause)
                continue
            link = face.link
            assert link is not None
            if pending and self._over_hard_cap(link):  # _to_face closes it:
                cause = r.message(rx_ns, rx_face, "rx", rx_key, rx_bytes)  # the rx record first
                pending = False
            data = send.raw
            if data is None:
                msg_id = id(send.message)
                data = encoded.get(msg_id)
                if data is None:
                    data = encoded[msg_id] = encode_network_message(send.message)
            sent = self._to_face(
                send.face, data, None, send.message, send.priority, send.reliable, send.express, send.block
            )
            if sent is None:
                continue
            if sent:
                if rec is not None:
                    if send.message.__class__ is copy_kind:
                        # A forwarded PUSH/REQUEST keeps its key.
                        copies.append((send.face, data))
                    else:
                        if pending:
                            cause = r.message(rx_ns, rx_face, "rx", rx_key, rx_bytes)
                            pending = False
                        self._record_tx(send, data, cause)
            else:  # dropped (counted by _to_face)
                if rec is not None and copy_kind is Push and rx_key is not None and not route_recorded:
                    # The tx records say where a PUSH went; its route (every face with a
                    # subscriber, i.e. every send) is only worth a record when a send is
                    # dropped. One route record per routed message.
                    if pending:
                        cause = r.message(rx_ns, rx_face, "rx", rx_key, rx_bytes)
                        pending = False
                    r.route(rx_ns, cause, rx_key, sorted({s.face for s in sends}))
                    route_recorded = True
        if pending:
            if copy_kind is None:
                r.message(rx_ns, rx_face, "rx", rx_key, rx_bytes)
            else:
                r.routed(rx_ns, rx_face, rx_key, rx_bytes, copies)
        elif copies:
            r.messages(rx_ns, "tx", rx_key, copies, cause)
        self._rearm()

    def _block(self: Daemon, dest: int, dest_link: TcpLink) -> None:
        """Pause the face being routed from until ``dest`` has room again."""
        src = self._faces.get(self._ingress)
        if src is None or src.link is None:
            return  # a local face or the timer: nothing to pause (the hard cap still holds)
        self.backpressure.block(src.face_id, src.link, dest, dest_link)

    def _link_of(self: Daemon, face_id: int) -> TcpLink | None:
        face = self._faces.get(face_id)
        return None if face is None else face.link

    def _on_stalled(self: Daemon, face_id: int, waited: float) -> None:
        self.stats.faces_closed_slow += 1
        log.warning("face %d stayed full for %.1f s with Block messages queued; closing it", face_id, waited)
        self._close_face(face_id, CloseReason.UNRESPONSIVE)
