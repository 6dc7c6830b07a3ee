"""The daemon's way in: what a received message, run or lone PUSH goes through.

:class:`Ingress` is what the daemon calls; :class:`Forwarding` is it without recording:
the routing core decides (one plan per route, :mod:`pyzenoh.routing.lanes`), and
:class:`~pyzenoh.router.delivery.Delivery` hands what it decided to the faces. A router
that records uses :class:`~pyzenoh.router.recorded.RecordedForwarding`, which wraps this
one: the daemon has no recording branch of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from typing_extensions import override

from pyzenoh.codec import NetworkMessage
from pyzenoh.codec.network import QOS_BLOCK, QOS_EXPRESS
from pyzenoh.dataplane import PushRun
from pyzenoh.errors import PeerError
from pyzenoh.router.delivery import Delivery
from pyzenoh.router.state import RouterStats
from pyzenoh.routing import RoutingCore, Send
from pyzenoh.routing.access_control import FaceSubject
from pyzenoh.transport.link import ReceivedPush

_time = time.time
_monotonic = time.monotonic


class Ingress(Protocol):
    """What the daemon hands on: received input, and the faces' comings and goings."""

    def message(self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool = True) -> None:
        """Route one message received on ``face_id`` (``raw``: its bytes, when at hand)."""

    def run(self, face_id: int, run: PushRun, reliable: bool) -> None:
        """Route a run of same-shape PUSHes as one unit."""

    def lone(self, face_id: int, ev: ReceivedPush) -> None:
        """Route a lone PUSH, from its bytes when the core's lane covers it."""

    def sends(self, sends: list[Send]) -> None:
        """Deliver what the core made outside routing a received message (a timer, a face
        added or removed); the key tables may have changed."""

    def opened(self, face_id: int, zid: str, whatami: str, remote: str, subject: FaceSubject | None) -> None:
        """A face is about to be added to the core."""

    def closed(self, face_id: int, reason: str, subject: FaceSubject | None) -> None:
        """A face was closed (before the core removes it)."""

    def close(self) -> None:
        """The daemon stops."""


class Forwarding(Ingress):
    """Routing and delivery, nothing recorded. ``rearm`` re-arms the core's timer."""

    def __init__(self, core: RoutingCore, delivery: Delivery, stats: RouterStats, rearm: Callable[[], None]) -> None:
        self.core = core
        self.delivery = delivery
        self.stats = stats
        self.rearm = rearm

    @override
    def message(self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool = True) -> None:
        self.stats.messages_in += 1
        delivery = self.delivery
        delivery.ingress = face_id  # Block back-pressure pauses this face
        try:
            try:
                # (time.monotonic() is the daemon's now(), called directly on this path)
                sends = self.core.handle(face_id, message, _monotonic(), raw=raw, reliable=reliable, wall=_time())
            except PeerError as exc:
                delivery.bad_input(face_id, exc)
                sends = []
            delivery.deliver(sends)
        finally:
            delivery.ingress = -1
        self.rearm()

    @override
    def run(self, face_id: int, run: PushRun, reliable: bool) -> None:
        self.stats.messages_in += run.count
        delivery = self.delivery
        delivery.ingress = face_id
        try:
            try:
                sends = self.core.handle_push_run(face_id, run, _monotonic(), reliable, wall=_time())
            except PeerError as exc:
                delivery.bad_input(face_id, exc)
                sends = []
            delivery.deliver(sends)
        finally:
            delivery.ingress = -1
        self.rearm()

    @override
    def lone(self, face_id: int, ev: ReceivedPush) -> None:
        try:
            out = self.core.forward_lone(face_id, ev.batch, ev.at, ev.fields, _time())
        except PeerError as exc:  # as for a message: the face that sent it is closed
            self.delivery.bad_input(face_id, exc)
            return
        if out is None:  # not the lane's: decoded and routed as any message
            rx = ev.received()
            self.message(face_id, rx.message, rx.raw, ev.reliable)
            return
        self.stats.messages_in += 1
        if not out:
            return
        qos = ev.fields.qos
        priority, express, block = qos & 0x07, bool(qos & QOS_EXPRESS), bool(qos & QOS_BLOCK)  # as make_send
        reliable = ev.reliable
        delivery = self.delivery
        to_face = delivery.to_face
        delivery.ingress = face_id
        try:
            for fid, data in out:
                to_face(fid, data, None, None, priority, reliable, express, block)
        finally:
            delivery.ingress = -1

    @override
    def sends(self, sends: list[Send]) -> None:
        self.delivery.deliver(sends)
        self.rearm()

    @override
    def opened(self, face_id: int, zid: str, whatami: str, remote: str, subject: FaceSubject | None) -> None:
        pass

    @override
    def closed(self, face_id: int, reason: str, subject: FaceSubject | None) -> None:
        pass

    @override
    def close(self) -> None:
        pass
