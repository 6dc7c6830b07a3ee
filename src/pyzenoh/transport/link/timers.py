"""Time: the handshake timeout, the peer's lease (silence longer than it closes the
link), keepalives when we have sent nothing for a while, and the timeout of an
unfinished fragmented message. The caller passes the time; nothing here reads a clock.
"""

from __future__ import annotations

import logging

from pyzenoh.codec import KeepAlive
from pyzenoh.errors import CloseReason
from pyzenoh.transport.link.events import Event
from pyzenoh.transport.link.state import LinkBase, State

log = logging.getLogger(__name__)


class Timers(LinkBase):
    """What is due at a given time, and when that next is."""

    def handle_timer(self, now: float) -> list[Event]:
        """Run whatever is due at ``now``: handshake timeout, lease expiry, keepalive."""
        if self.state is State.CLOSED:
            return []
        events: list[Event] = []
        if self.state is not State.ESTABLISHED:
            if self._handshake_deadline is not None and now >= self._handshake_deadline:
                self._fail(CloseReason.GENERIC, "handshake timeout", events)
            return events
        if now >= self._last_rx + self._lease_s:
            self._fail(CloseReason.EXPIRED, "peer silent for its lease", events)
            return events
        if self._defrag_bytes:
            for d in self._defrag:
                if d.active and now >= d.since + self.config.reassembly_timeout_s:
                    log.warning(
                        "unfinished fragmented message (%d bytes) dropped: no fragment for %.0f s",
                        len(d.buf),
                        self.config.reassembly_timeout_s,
                    )
                    self._defrag_reset(d)
        if self._keepalive_deadline is not None and now >= self._keepalive_deadline:
            if not self._sent_since_keepalive and not self._pending_bytes:
                self._emit(KeepAlive())
            self._sent_since_keepalive = False
            self._keepalive_deadline = now + self._keepalive_interval
        return events

    def refresh_lease(self, now: float) -> None:
        """Count the peer as alive at ``now`` (used while the caller is not reading)."""
        self._last_rx = max(self._last_rx, now)

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must next be called (None: nothing scheduled)."""
        if self.state is State.CLOSED:
            return None
        if self.state is not State.ESTABLISHED:
            return self._handshake_deadline
        deadline = self._last_rx + self._lease_s
        ka = self._keepalive_deadline
        if ka is not None and ka < deadline:
            deadline = ka
        if self._defrag_bytes:
            oldest = min(d.since for d in self._defrag if d.active)
            deadline = min(deadline, oldest + self.config.reassembly_timeout_s)
        return deadline
