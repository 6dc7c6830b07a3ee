"""Sans-IO helpers for the daemon's limits: the per-client output queue and the limit log.

Nothing here does I/O or reads a clock; times come in as ``now`` (any monotonic clock, in
seconds), as in :mod:`pyzenoh.msgq.core`.

:class:`OutputQueue`
    The frames waiting for one client, bounded in bytes and in messages, plus the bookkeeping
    that tells a client that reads slowly (it keeps taking bytes, it gets everything) from a
    client that has stopped reading (no byte taken for a whole timeout). The I/O layer hands
    frames to its transport while the transport accepts them and keeps the rest here.

:class:`EventLog`
    Logs the first event of each kind (a limit hit, a malformed frame...) at its level, the
    following ones at DEBUG only, and once per :data:`LOG_SUMMARY_INTERVAL` a one-line summary
    of what was not logged. A flood of thousands of bad connections therefore costs a few log
    lines, while the exact numbers are in the daemon's counters (``stats``).
"""

from __future__ import annotations

import logging
from collections import deque

__all__ = [
    "LOG_SUMMARY_INTERVAL",
    "EventLog",
    "OutputQueue",
]

LOG_SUMMARY_INTERVAL = 60.0
"""Seconds between two summaries of the events :class:`EventLog` did not log one by one."""


class OutputQueue:
    """Frames waiting for one client (see the module docstring).

    ``in_transport`` arguments are the bytes the I/O layer's transport still holds (handed
    over with :meth:`pop` or :meth:`handed_over` but not yet accepted by the kernel).
    """

    __slots__ = ("_frames", "_mark", "_since", "handed", "max_bytes", "max_messages", "queued")

    def __init__(self, max_bytes: int, max_messages: int) -> None:
        self.max_bytes = max_bytes
        self.max_messages = max_messages
        self._frames: deque[bytes] = deque()
        self.queued = 0
        """Bytes in the frames held here."""
        self.handed = 0
        """Bytes handed to the transport since the start (progress is measured on this)."""
        self._mark = 0
        self._since: float | None = None

    def __len__(self) -> int:
        return len(self._frames)

    def admits(self, size: int, in_transport: int) -> bool:
        """Whether a frame of ``size`` bytes fits.

        A client with nothing pending always gets the next frame, whatever its size, so any
        legal frame reaches a client that reads. Otherwise the total (held here and in the
        transport) must stay within ``max_bytes`` and the frames held here within
        ``max_messages``.
        """
        if not self._frames and in_transport == 0:
            return True
        return self.queued + in_transport + size <= self.max_bytes and len(self._frames) < self.max_messages

    def push(self, data: bytes) -> None:
        """Hold a frame (the caller checked :meth:`admits`)."""
        self._frames.append(data)
        self.queued += len(data)

    def pop(self) -> bytes:
        """The oldest frame held, now counted as handed to the transport."""
        data = self._frames.popleft()
        self.queued -= len(data)
        self.handed += len(data)
        return data

    def handed_over(self, size: int) -> None:
        """Count a frame written straight to the transport (nothing was held)."""
        self.handed += size

    def pending(self, in_transport: int) -> int:
        """Bytes not yet accepted by the kernel."""
        return self.queued + in_transport

    def stalled(self, now: float, in_transport: int, timeout: float | None) -> bool:
        """Call periodically: True once data has been pending for ``timeout`` seconds without
        the client taking a single byte of it (``None``: never)."""
        taken = self.handed - in_transport
        if (not self._frames and in_transport == 0) or taken != self._mark or self._since is None:
            self._mark = taken
            self._since = now
            return False
        return timeout is not None and now - self._since >= timeout


class EventLog:
    """First event of each kind logged in full, the rest summarised (see the module docstring)."""

    __slots__ = ("_logged", "_logger", "_since", "_suppressed", "interval")

    def __init__(self, logger: logging.Logger, interval: float = LOG_SUMMARY_INTERVAL) -> None:
        self._logger = logger
        self.interval = interval
        self._logged: set[str] = set()
        self._suppressed: dict[str, int] = {}
        self._since: float | None = None

    def event(self, kind: str, level: int, message: str, *args: object) -> None:
        """Log ``message % args`` at ``level`` if it is the first ``kind`` event of this
        summary period, else at DEBUG (and count it for the summary)."""
        if kind not in self._logged:
            self._logged.add(kind)
            self._logger.log(level, message + " [%s: more are summarised every %g s]", *args, kind, self.interval)
            return
        self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
        self._logger.debug(message, *args)

    def flush(self, now: float) -> None:
        """Call periodically: every ``interval`` seconds, log one summary line per kind with
        events that were not logged, and log the next event of every kind in full again."""
        if self._since is None:
            self._since = now
            return
        if now - self._since < self.interval:
            return
        for kind, count in sorted(self._suppressed.items()):
            self._logger.warning("msgq: %d more %s events in the last %.0f s", count, kind, now - self._since)
        self._suppressed.clear()
        self._logged.clear()
        self._since = now
