"""Recording what the router routes, wrapped around :class:`~.forwarding.Forwarding`: each
received message's rx record, the tx records of the copies it caused, and the policies'
stops (access control's denials, interceptors' drops), in the order they happened.

Routing while recording goes through the same core calls and the same
:class:`~.delivery.Delivery` as without; what differs is what the recorder is handed:
one wall-clock read gives the rx record's time and the HLC's, the received keys are
memoised, stops met while a message is routed are written right after its rx record,
and an :class:`_RxWatch` writes what delivery did with each copy.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import NamedTuple

from typing_extensions import override

from pyzenoh.codec import NetworkMessage, Push, Put, Request, encode_network_message
from pyzenoh.dataplane import PushRun
from pyzenoh.errors import PeerError, UsageError
from pyzenoh.recording.format import DENIED, INTERCEPTED
from pyzenoh.recording.protocol import RouterRecorder
from pyzenoh.router.delivery import DeliveryWatch
from pyzenoh.router.forwarding import Forwarding, Ingress
from pyzenoh.routing import Intercepted, RoutingCore, Send
from pyzenoh.routing.access_control import (
    DEFAULT_RULE,
    FLOWS,
    MESSAGES,
    NO_KEY_RULE,
    AccessControl,
    Denial,
    FaceSubject,
)
from pyzenoh.transport.link import ReceivedPush

log = logging.getLogger(__name__)

#: The memo of received keys is cleared when it holds this many.
RX_KEY_MEMO_SIZE = 4096
#: Denials held while one message is routed (more are not recorded).
MAX_PENDING_DENIALS = 65_536
_time_ns = time.time_ns


class RecordedForwarding(Ingress):
    """:class:`Forwarding` (``plain``) with everything it routes written to ``recorder``."""

    def __init__(
        self,
        plain: Forwarding,
        recorder: RouterRecorder,
        access_control: AccessControl | None,
        intercepting: bool = False,
    ) -> None:
        self.plain = plain
        self.core: RoutingCore = plain.core
        self.delivery = plain.delivery
        self.recorder = recorder
        self.access_control = access_control
        #: a policy may stop messages (access control, interceptors): runs are routed and
        #: recorded message by message, so that each stop is recorded with its message
        self._stopping = access_control is not None or intercepting
        # Access control's decisions: the face of each subject given to the core (by the
        # id of the FaceSubject object). The stops (denials, interceptors' drops) not
        # recorded yet; the listeners only run on stops; see _record_denials.
        self._subject_faces: dict[int, int] = {}
        self._denials: list[_Stop] = []
        if access_control is not None:
            access_control.listener = self._on_denied
        self.core.intercept_listener = self._on_intercepted
        # The full key of the (face, scope, suffix, M) wire expressions of the PUSH/REQUEST
        # received, so that it is not resolved through the core for every message. Key
        # ids change only when the core handles something else (a D_KEYEXPR or U_KEYEXPR,
        # a face coming or going): the memo is cleared then.
        self._rx_keys: dict[tuple[int, int, str, bool], str | None] = {}

    # --- received input ------------------------------------------------------------------

    @override
    def message(self, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool = True) -> None:
        """Route one message and record it (rx), what it caused (tx) and any denial."""
        self.plain.stats.messages_in += 1
        rec = self.recorder
        core = self.core
        delivery = self.delivery
        # One wall-clock read gives the rx record's time and the HLC's time.
        rx_ns = _time_ns()
        if raw is None:
            raw = encode_network_message(message)
        delivery.ingress = face_id  # Block back-pressure pauses this face
        try:
            try:
                sends = core.handle(face_id, message, time.monotonic(), raw=raw, reliable=reliable, wall=rx_ns / 1e9)
            except PeerError as exc:
                # The bad input is recorded before the close it causes.
                key = core.key_of(face_id, message, incoming=True)
                cause = rec.message(rx_ns, face_id, "rx", key, raw)
                if self._denials:
                    self._record_denials(rx_ns, cause)
                delivery.bad_input(face_id, exc)
                return
            copy_kind: type | None = None
            if isinstance(message, (Push, Request)):
                key = self._rx_key(face_id, message)
                copy_kind = type(message)
            else:
                self._rx_keys.clear()  # key tables may have changed
                key = core.key_of(face_id, message, incoming=True)
            if self._denials:
                # Access control denied something while this was routed: the rx record, the
                # denials naming it, then its sends.
                cause = rec.message(rx_ns, face_id, "rx", key, raw)
                self._record_denials(rx_ns, cause)
                watch = _RxWatch(self, sends, rx_ns, face_id, key, None, copy_kind, cause)
            else:
                watch = _RxWatch(self, sends, rx_ns, face_id, key, raw, copy_kind)
            delivery.deliver(sends, watch)
            watch.finish()
        finally:
            delivery.ingress = -1
            self.plain.rearm()

    @override
    def run(self, face_id: int, run: PushRun, reliable: bool) -> None:
        """Route a run and hand the recorder the run and its copies in one call (it writes
        each message's records, as for messages routed one by one)."""
        if self._stopping:
            # A policy's stops are recorded with the message they stopped.
            for message, raw in run.messages():
                self.message(face_id, message, raw, reliable)
            return
        self.plain.stats.messages_in += run.count
        rec = self.recorder
        delivery = self.delivery
        rx_ns = _time_ns()
        key = self._rx_key(face_id, run.first)
        delivery.ingress = face_id
        try:
            try:
                sends = self.core.handle_push_run(face_id, run, time.monotonic(), reliable, wall=rx_ns / 1e9)
            except PeerError as exc:
                rec.routed_run(rx_ns, face_id, key, run.data, run.ends, [])
                delivery.bad_input(face_id, exc)
                return
            if any(send.ends is None for send in sends):
                # The core routed the run message by message (routing/lanes.py says when):
                # its copies are recorded without their cause.
                rec.routed_run(rx_ns, face_id, key, run.data, run.ends, [])
                self._deliver_unprompted(sends)
                return
            copies: list[tuple[int, bytes, Sequence[int]]] = []
            expected: list[int] | None = None
            for send in sends:
                sent = delivery.send_run(send)
                if sent:
                    assert send.raw is not None and send.ends is not None
                    copies.append((send.face, send.raw, send.ends))
                elif sent is not None and expected is None:
                    # A copy was dropped: the recording says where the run should have gone.
                    expected = sorted({s.face for s in sends})
            rec.routed_run(rx_ns, face_id, key, run.data, run.ends, copies, expected)
        finally:
            delivery.ingress = -1
            self.plain.rearm()

    @override
    def lone(self, face_id: int, ev: ReceivedPush) -> None:
        """Recorded messages go one by one (the lone lane writes no record)."""
        rx = ev.received()
        self.message(face_id, rx.message, rx.raw, ev.reliable)

    @override
    def sends(self, sends: list[Send]) -> None:
        self._rx_keys.clear()
        self._deliver_unprompted(sends)
        self.plain.rearm()

    def _deliver_unprompted(self, sends: list[Send]) -> None:
        """Deliver and record sends that no received message caused (their cause is -1)."""
        if self._denials:
            self._record_denials(_time_ns(), -1)
        watch = _RxWatch(self, sends, 0, -1, None, None, None)
        self.delivery.deliver(sends, watch)
        watch.finish()

    # --- faces -------------------------------------------------------------------------

    @override
    def opened(self, face_id: int, zid: str, whatami: str, remote: str, subject: FaceSubject | None) -> None:
        self.recorder.link_opened(time.time_ns(), face_id, zid, whatami, remote)
        self._rx_keys.clear()
        if subject is not None:
            self._subject_faces[id(subject)] = face_id

    @override
    def closed(self, face_id: int, reason: str, subject: FaceSubject | None) -> None:
        self.recorder.link_closed(time.time_ns(), face_id, reason)
        self._rx_keys.clear()
        if subject is not None:
            self._subject_faces.pop(id(subject), None)

    @override
    def close(self) -> None:
        self.recorder.close()

    # --- keys and denials ----------------------------------------------------------------

    def _rx_key(self, face_id: int, message: Push | Request) -> str | None:
        """The key of a received PUSH or REQUEST, before routing it (routing these changes
        no key table); memoised per wire expression while key tables stay as they are."""
        we = message.wire_expr
        if we.scope == 0:
            return we.suffix or None
        memo = self._rx_keys
        wk = (face_id, we.scope, we.suffix, we.mapping_sender)
        try:
            return memo[wk]
        except KeyError:
            key = self.core.key_of(face_id, message, incoming=True)
            if len(memo) >= RX_KEY_MEMO_SIZE:
                memo.clear()
            memo[wk] = key
            return key

    def _on_denied(self, subject: FaceSubject, flow: int, message: int, key: str | None, denial: Denial) -> None:
        """AccessControl's listener: held until we know which rx record the denial
        belongs to (see _record_denials)."""
        face_id = self._subject_faces.get(id(subject))
        if face_id is not None and len(self._denials) < MAX_PENDING_DENIALS:
            reason = _denial_reason(flow, message, denial)
            self._denials.append(_Stop(DENIED, face_id, FLOWS[flow], MESSAGES[message], key, reason))

    def _on_intercepted(self, ev: Intercepted) -> None:
        """The routing core's intercept listener: held as access control's denials are."""
        if len(self._denials) < MAX_PENDING_DENIALS:
            kind = _message_kind(ev.message)
            reason = f"{ev.flow} {kind} dropped by {ev.interceptor} '{ev.item}'"
            self._denials.append(_Stop(INTERCEPTED, ev.link, ev.flow, kind, ev.key, reason))

    def _record_denials(self, now_ns: int, cause: int) -> None:
        """Write the denials held: right after the rx record being routed (``cause``), or
        with cause -1 for those met outside routing a received message (a face added or
        removed, a timer)."""
        denials = self._denials[:]
        self._denials.clear()
        rec = self.recorder
        for stop in denials:
            record = rec.intercepted if stop.event == INTERCEPTED else rec.access_denied
            try:
                record(now_ns, cause, stop.face, stop.flow, stop.message, stop.key, stop.reason)
            except UsageError as exc:
                log.warning("recording a policy's stop failed: %s", exc)

    def record_tx(self, send: Send, data: bytes, cause: int) -> None:
        key = self.core.key_of(send.face, send.message, incoming=False)
        self.recorder.message(time.time_ns(), send.face, "tx", key, data, cause)


class _RxWatch(DeliveryWatch):
    """What delivering the sends of one received message becomes in the recording.

    The rx record (time ``rx_ns``, face ``rx_face``, key ``rx_key``, bytes ``rx_raw``) is
    every tx record's cause; one already written (access control's denials follow it) is
    passed as ``cause`` with ``rx_raw`` None. Sends of ``copy_kind`` (the routed copies of
    a PUSH or REQUEST, which keep its key) are recorded by :meth:`finish`, in the same call
    as the rx record when nothing had to be recorded in between. The rx record is written
    at once before anything that can re-enter the daemon (a local face's sink, closing a
    face), so it keeps its place ahead of whatever that records.
    """

    __slots__ = (
        "_cause",
        "_copies",
        "_copy_kind",
        "_owner",
        "_route_recorded",
        "_rx_face",
        "_rx_key",
        "_rx_ns",
        "_rx_raw",
        "_sends",
    )

    def __init__(
        self,
        owner: RecordedForwarding,
        sends: list[Send],
        rx_ns: int,
        rx_face: int,
        rx_key: str | None,
        rx_raw: bytes | None,
        copy_kind: type | None,
        cause: int = -1,
    ) -> None:
        self._owner = owner
        self._sends = sends
        self._rx_ns = rx_ns
        self._rx_face = rx_face
        self._rx_key = rx_key
        self._rx_raw = rx_raw  # not None: the rx record is still to write
        self._copy_kind = copy_kind
        self._cause = cause
        self._copies: list[tuple[int, bytes]] = []
        self._route_recorded = False

    def _write_rx(self) -> None:
        if self._rx_raw is not None:
            self._cause = self._owner.recorder.message(self._rx_ns, self._rx_face, "rx", self._rx_key, self._rx_raw)
            self._rx_raw = None

    @override
    def reentering(self) -> None:
        self._write_rx()

    @override
    def given(self, send: Send, data: bytes | None) -> None:
        if data is None:
            data = encode_network_message(send.message)
        if send.message.__class__ is self._copy_kind:
            self._copies.append((send.face, data))  # a forwarded PUSH/REQUEST keeps its key
        else:
            self._write_rx()
            self._owner.record_tx(send, data, self._cause)

    @override
    def dropped(self, send: Send) -> None:
        # The tx records say where a PUSH went; its route (every face with a subscriber,
        # i.e. every send) is only worth a record when a send is dropped: one per message.
        if self._copy_kind is Push and self._rx_key is not None and not self._route_recorded:
            self._write_rx()
            self._owner.recorder.route(self._rx_ns, self._cause, self._rx_key, sorted({s.face for s in self._sends}))
            self._route_recorded = True

    def finish(self) -> None:
        rec = self._owner.recorder
        if self._rx_raw is not None:
            if self._copy_kind is None:
                rec.message(self._rx_ns, self._rx_face, "rx", self._rx_key, self._rx_raw)
            else:
                rec.routed(self._rx_ns, self._rx_face, self._rx_key, self._rx_raw, self._copies)
        elif self._copies:
            rec.messages(self._rx_ns, "tx", self._rx_key, self._copies, self._cause)


class _Stop(NamedTuple):
    """A message a policy stopped, to record: a ``"denied"`` or ``"intercepted"`` event
    on ``face`` (the face whose ``flow`` it was)."""

    event: str
    face: int
    flow: str
    message: str
    key: str | None
    reason: str


def _message_kind(msg: NetworkMessage) -> str:
    """The kind of message an interceptor dropped, as recorded: put, delete, query, reply."""
    if isinstance(msg, Push):
        return "put" if isinstance(msg.body, Put) else "delete"
    return "query" if isinstance(msg, Request) else "reply"


def _denial_reason(flow: int, message: int, denial: Denial) -> str:
    """A recorded denial's reason, e.g. ``ingress put denied by rule 'no-vault'``."""
    what = f"{FLOWS[flow]} {MESSAGES[message]} denied"
    if denial.rule == DEFAULT_RULE:
        return f"{what} by default_permission deny"
    if denial.rule == NO_KEY_RULE:
        return f"{what}: the message names no key expression"
    return f"{what} by rule '{denial.rule}'"
