"""Recording what the router routes: each received message's rx record, the tx records
of the copies it caused, and access control's denials, in the order they happened.

Routing while recording differs from :mod:`.delivery` only in what it hands the recorder:
one wall-clock read gives the rx record's time and the HLC's, the received keys are
memoised, and denials met while a message is routed are written right after its rx record.

A mixin of :class:`~pyzenoh.router.daemon.RouterDaemon` (which holds the state).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyzenoh.codec import NetworkMessage, Push, Request, encode_network_message
from pyzenoh.dataplane import PushRun
from pyzenoh.errors import PeerError, UsageError
from pyzenoh.routing import Send
from pyzenoh.routing.access_control import (
    DEFAULT_RULE,
    FLOWS,
    MESSAGES,
    NO_KEY_RULE,
    Denial,
    FaceSubject,
)

if TYPE_CHECKING:
    from pyzenoh.router.state import Daemon

log = logging.getLogger(__name__)

#: The memo of received keys is cleared when it holds this many.
RX_KEY_MEMO_SIZE = 4096
#: Denials held while one message is routed (more are not recorded).
MAX_PENDING_DENIALS = 65_536
_time_ns = time.time_ns


class RecordedRouting:
    """Routing with a recorder: what :class:`~pyzenoh.router.delivery.Delivery` does, recorded."""

    def _route_recorded(self: Daemon, face_id: int, message: NetworkMessage, raw: bytes | None, reliable: bool) -> None:
        """Route one message and record it (rx), what it caused (tx) and any denial."""
        rec = self.recorder
        assert rec is not None
        # Recording: one wall-clock read gives the rx record's time and the HLC's time.
        # The rx record is written by _deliver, with the copies of a routed PUSH/REQUEST
        # (one recorder call).
        rx_ns = _time_ns()
        if raw is None:
            raw = encode_network_message(message)
        core = self.core
        try:
            sends = core.handle(face_id, message, self.now(), raw=raw, reliable=reliable, wall=rx_ns / 1e9)
        except PeerError as exc:
            # The bad input is recorded before the close it causes.
            key = core.key_of(face_id, message, incoming=True)
            cause = rec.message(rx_ns, face_id, "rx", key, raw)
            if self._denials:
                self._record_denials(rx_ns, cause)
            self._bad_input(face_id, exc)
            self._deliver([])
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
            self._deliver(sends, rx_ns, face_id, key, None, copy_kind, cause)
        else:
            self._deliver(sends, rx_ns, face_id, key, raw, copy_kind)

    def _route_run_recorded(self: Daemon, face_id: int, run: PushRun, reliable: bool) -> None:
        """Route a run and hand the recorder the run and its copies in one call (it
        writes each message's records, as for messages routed one by one)."""
        rec = self.recorder
        assert rec is not None
        rx_ns = _time_ns()
        key = self._rx_key(face_id, run.first)
        try:
            sends = self.core.handle_push_run(face_id, run, self.now(), reliable, wall=rx_ns / 1e9)
        except PeerError as exc:
            rec.routed_run(rx_ns, face_id, key, run.data, run.ends, [])
            self._bad_input(face_id, exc)
            self._deliver([])
            return
        if any(send.ends is None for send in sends):
            # The core routed the run message by message (routing/lanes.py says when):
            # its copies are recorded without their cause.
            rec.routed_run(rx_ns, face_id, key, run.data, run.ends, [])
            self._deliver(sends)
            return
        copies: list[tuple[int, bytes, Sequence[int]]] = []
        expected: list[int] | None = None
        for send in sends:
            sent = self._send_run(send)
            if sent:
                assert send.raw is not None and send.ends is not None
                copies.append((send.face, send.raw, send.ends))
            elif sent is not None and expected is None:
                # A copy was dropped: the recording says where the run should have gone.
                expected = sorted({s.face for s in sends})
        rec.routed_run(rx_ns, face_id, key, run.data, run.ends, copies, expected)
        self._rearm()

    def _rx_key(self: Daemon, face_id: int, message: Push | Request) -> str | None:
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

    def _on_denied(
        self: Daemon, subject: FaceSubject, flow: int, message: int, key: str | None, denial: Denial
    ) -> None:
        """AccessControl's listener (set only when recording): held until the daemon
        knows which rx record the denial belongs to (see _record_denials)."""
        face_id = self._subject_faces.get(id(subject))
        if face_id is not None and len(self._denials) < MAX_PENDING_DENIALS:
            self._denials.append((face_id, flow, message, key, denial))

    def _record_denials(self: Daemon, now_ns: int, cause: int) -> None:
        """Write the denials held: right after the rx record being routed (``cause``), or
        with cause -1 for those met outside routing a received message (a face added or
        removed, a timer)."""
        denials = self._denials[:]
        self._denials.clear()
        rec = self.recorder
        assert rec is not None
        for face_id, flow, message, key, denial in denials:
            try:
                rec.access_denied(
                    now_ns, cause, face_id, FLOWS[flow], MESSAGES[message], key, _denial_reason(flow, message, denial)
                )
            except UsageError as exc:
                log.warning("recording an access control denial failed: %s", exc)

    def _record_tx(self: Daemon, send: Send, data: bytes, cause: int) -> None:
        key = self.core.key_of(send.face, send.message, incoming=False)
        assert self.recorder is not None
        self.recorder.message(time.time_ns(), send.face, "tx", key, data, cause)


def _denial_reason(flow: int, message: int, denial: Denial) -> str:
    """A recorded denial's reason, e.g. ``ingress put denied by rule 'no-vault'``."""
    what = f"{FLOWS[flow]} {MESSAGES[message]} denied"
    if denial.rule == DEFAULT_RULE:
        return f"{what} by default_permission deny"
    if denial.rule == NO_KEY_RULE:
        return f"{what}: the message names no key expression"
    return f"{what} by rule '{denial.rule}'"
