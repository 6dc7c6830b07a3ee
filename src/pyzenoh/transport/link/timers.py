"""Time: the handshake timeout, the peer's lease (silence longer than it closes the
link), keepalives when we have sent nothing for a while, and the timeout of an
unfinished fragmented message. The caller passes the time; nothing here reads a clock.
"""

from __future__ import annotations

import logging

from pyzenoh.codec import KeepAlive
from pyzenoh.errors import CloseReason
from pyzenoh.transport.link.events import Event
from pyzenoh.transport.link.state import LinkState, State

log = logging.getLogger(__name__)


class Timers:
    """What is due at a given time, and when that next is."""

    __slots__ = ("s",)

    def __init__(self, s: LinkState) -> None:
        self.s = s

    def handle_timer(self, now: float) -> list[Event]:
        """Run whatever is due at ``now``: handshake timeout, lease expiry, keepalive."""
        s = self.s
        if s.state is State.CLOSED:
            return []
        events: list[Event] = []
        if s.state is not State.ESTABLISHED:
            if s.handshake_deadline is not None and now >= s.handshake_deadline:
                s.fail(CloseReason.GENERIC, "handshake timeout", events)
            return events
        if now >= s.last_rx + s.lease_s:
            s.fail(CloseReason.EXPIRED, "peer silent for its lease", events)
            return events
        if s.defrag_bytes:
            for d in s.defrag:
                if d.active and now >= d.since + s.config.reassembly_timeout_s:
                    log.warning(
                        "unfinished fragmented message (%d bytes) dropped: no fragment for %.0f s",
                        len(d.buf),
                        s.config.reassembly_timeout_s,
                    )
                    s.defrag_reset(d)
        if s.keepalive_deadline is not None and now >= s.keepalive_deadline:
            if not s.sent_since_keepalive and not s.pending_bytes:
                s.emit(KeepAlive())
            s.sent_since_keepalive = False
            s.keepalive_deadline = now + s.keepalive_interval
        return events

    def refresh_lease(self, now: float) -> None:
        """Count the peer as alive at ``now`` (used while the caller is not reading)."""
        s = self.s
        s.last_rx = max(s.last_rx, now)

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must next be called (None: nothing scheduled)."""
        s = self.s
        if s.state is State.CLOSED:
            return None
        if s.state is not State.ESTABLISHED:
            return s.handshake_deadline
        deadline = s.last_rx + s.lease_s
        ka = s.keepalive_deadline
        if ka is not None and ka < deadline:
            deadline = ka
        if s.defrag_bytes:
            oldest = min(d.since for d in s.defrag if d.active)
            deadline = min(deadline, oldest + s.config.reassembly_timeout_s)
        return deadline
