"""A hybrid logical clock producing the router's data timestamps (zenoh-wire.md 1.5).

Time is NTP64: seconds since 1970 in the upper 32 bits, the fraction of a second in the
lower 32. Like uhlc (which real routers use), the lowest :data:`COUNTER_BITS` bits of the
fraction are a logical counter: a new timestamp takes the physical time with those bits
cleared when that is later than the last one issued, and ``last + 1`` otherwise, so the
timestamps one clock issues are strictly increasing whatever the wall clock does.

The clock reads no time itself: every call gets ``now`` (wall-clock seconds, a float).
"""

from __future__ import annotations

from pyzenoh.codec import Timestamp, ZenohId
from pyzenoh.dataplane.splice import encode_time
from pyzenoh.dataplane.splice import id_parts as _id_parts_of

#: Low bits of the NTP64 fraction used as a logical counter (uhlc's CMASK).
COUNTER_BITS = 4
_COUNTER_MASK = (1 << COUNTER_BITS) - 1
#: uhlc's default: a timestamp more than this ahead of our clock is refused.
DEFAULT_MAX_DELTA = 0.5
_U64_MAX = (1 << 64) - 1
#: The physical part of an NTP64 time (without the counter bits).
_TIME_MASK = _U64_MAX & ~_COUNTER_MASK


def ntp64(seconds: float) -> int:
    """NTP64 for ``seconds`` since the UNIX epoch (clamped to the u64 range)."""
    if not seconds > 0.0:  # also catches NaN
        return 0
    return min(int(seconds * (1 << 32)), _U64_MAX)


class Hlc:
    """Issues strictly increasing :class:`Timestamp` values carrying ``hlc_id``."""

    __slots__ = ("_delta", "_id_parts", "_last", "hlc_id")

    def __init__(self, hlc_id: ZenohId, max_delta: float = DEFAULT_MAX_DELTA) -> None:
        self.hlc_id = hlc_id
        self._delta = ntp64(max_delta)
        self._last = 0
        self._id_parts: bytes | None = None  # hlc_id encoded as in a timestamp

    @property
    def last(self) -> int:
        """The latest NTP64 time issued or observed (0 before the first)."""
        return self._last

    def new_timestamp(self, now: float) -> Timestamp:
        return Timestamp(self._tick(now), self.hlc_id)

    def new_encoded(self, now: float) -> bytes:
        """:meth:`new_timestamp`, encoded (as :func:`~pyzenoh.dataplane.splice.encode_timestamp`), without building
        the Timestamp: what a router splices into every message it forwards."""
        # (_tick and ntp64, inlined: this runs for every forwarded message)
        physical = int(now * 4294967296.0) if now > 0.0 else 0
        if physical > _U64_MAX:  # noqa: PLR1730  (no min() call: every forwarded message comes here)
            physical = _U64_MAX
        physical &= _TIME_MASK
        last = self._last
        last = self._last = physical if physical > (last & _TIME_MASK) else min(last + 1, _U64_MAX)
        id_parts = self._id_parts
        if id_parts is None:
            id_parts = self._id_parts = _id_parts_of(self.hlc_id)
        return encode_time(last) + id_parts

    def _tick(self, now: float) -> int:
        """The NTP64 time of a new timestamp, issued."""
        self._last = self.peek(now)
        return self._last

    def peek(self, now: float) -> int:
        """The NTP64 time :meth:`new_timestamp` would issue at ``now``, not issued."""
        physical = ntp64(now) & ~_COUNTER_MASK
        return physical if physical > (self._last & ~_COUNTER_MASK) else min(self._last + 1, _U64_MAX)

    def reserve(self, now: float, n: int) -> int:
        """Issue ``n`` consecutive times at once (a run of messages stamped together) and
        return the first: the same values ``n`` calls of :meth:`new_timestamp` would give
        at ``now``."""
        first = self.new_timestamp(now).time
        self._last = min(first + n - 1, _U64_MAX)
        return first

    def update(self, ts: Timestamp, now: float) -> bool:
        """Take note of a received timestamp; False if it is too far in the future.

        A refused timestamp does not move the clock (the caller then re-stamps or drops).
        """
        if ts.time > ntp64(now) + self._delta:
            return False
        self._last = max(self._last, ts.time)
        return True
