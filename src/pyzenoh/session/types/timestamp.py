"""Time: :class:`NTP64` times, :class:`TimestampId` and HLC :class:`Timestamp` values.

An NTP64 is seconds since 1970 in its high 32 bits and a fraction of a second in its low
32; a Timestamp pairs one with the id of the clock that made it, and timestamps order by
time, then id. Both read and write RFC 3339 text.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import re
from typing import Self

from typing_extensions import override

from pyzenoh.codec import primitives as _p
from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import UsageError

_NANOS = 1_000_000_000
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$")


class NTP64(int):
    """An NTP64 time: seconds since 1970 in the high 32 bits, the fraction of a second
    in the low 32 (zenoh's ``NTP64``). It is also the plain ``int`` of those 64 bits."""

    __slots__ = ()

    def __new__(cls, seconds: int, nanos: int) -> Self:
        if not 0 <= seconds < (1 << 32) or not 0 <= nanos < _NANOS:
            raise UsageError(f"NTP64 out of range: {seconds} s, {nanos} ns")
        return int.__new__(cls, (seconds << 32) | ((nanos << 32) // _NANOS))

    @classmethod
    def _from_raw(cls, value: int) -> NTP64:
        return int.__new__(cls, value)

    @classmethod
    def _from_ns(cls, unix_ns: int) -> NTP64:
        secs, ns = divmod(unix_ns, _NANOS)
        return cls._from_raw((secs << 32) | ((ns << 32) // _NANOS))

    def as_secs(self) -> int:
        return int(self) >> 32

    def subsec_nanos(self) -> int:
        return ((int(self) & 0xFFFF_FFFF) * _NANOS + (1 << 31)) >> 32

    def as_nanos(self) -> int:
        return self.as_secs() * _NANOS + self.subsec_nanos()

    def as_secs_f64(self) -> float:
        return self.as_secs() + (int(self) & 0xFFFF_FFFF) / (1 << 32)

    def to_datetime(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self.as_secs(), _dt.UTC) + _dt.timedelta(
            microseconds=self.subsec_nanos() // 1000
        )

    def to_string_rfc3339_lossy(self) -> str:
        base = _dt.datetime.fromtimestamp(self.as_secs(), _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{base}.{self.subsec_nanos():09d}Z"

    @classmethod
    def parse_rfc3339(cls, s: str) -> NTP64:
        """``2024-07-01T13:51:12.129693000Z`` (any offset) to an NTP64; UsageError (a
        ZError) if it is not RFC 3339."""
        m = _RFC3339.match(s.strip()) if isinstance(s, str) else None
        if m is None:
            raise UsageError(f"not an RFC 3339 time: {s!r}")
        year, month, day, hour, minute, sec = (int(g) for g in m.groups()[:6])
        frac, tz = m.group(7) or "", m.group(8)
        offset = _dt.timedelta(0)
        if tz not in ("Z", "z"):
            sign = 1 if tz[0] == "+" else -1
            offset = sign * _dt.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6]))
        try:
            when = _dt.datetime(year, month, day, hour, minute, sec, tzinfo=_dt.UTC) - offset
        except ValueError as exc:
            raise UsageError(f"not an RFC 3339 time: {s!r} ({exc})") from None
        secs = int((when - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)).total_seconds())
        if secs < 0:
            raise UsageError(f"time before 1970: {s!r}")
        return cls(secs, int(frac.ljust(9, "0")) if frac else 0)

    @override
    def __repr__(self) -> str:
        return str(int(self))

    __str__ = __repr__


class TimestampId:
    """The unique id of a :class:`Timestamp` (1 to 16 bytes; a session's zid)."""

    __slots__ = ("_zid",)

    def __init__(self, bytes: builtins.bytes | bytearray | ZenohId | TimestampId) -> None:
        if isinstance(bytes, TimestampId):
            self._zid: ZenohId = bytes._zid
        elif isinstance(bytes, ZenohId):
            self._zid = bytes
        elif isinstance(bytes, builtins.bytes | bytearray):
            if not 1 <= len(bytes) <= 16 or not any(bytes):
                raise UsageError(f"a timestamp id is 1 to 16 bytes, not all zero: {builtins.bytes(bytes)!r}")
            self._zid = ZenohId.from_wire(builtins.bytes(bytes))
        else:
            raise UsageError(f"cannot make a TimestampId from {type(bytes).__name__}")

    @property
    def zid(self) -> ZenohId:
        return self._zid

    def __bytes__(self) -> builtins.bytes:
        return self._zid.to_wire()

    @override
    def __str__(self) -> str:
        return str(self._zid)

    __repr__ = __str__

    @override
    def __eq__(self, other: object) -> bool:
        if isinstance(other, TimestampId):
            return self._zid == other._zid
        if isinstance(other, ZenohId):
            return self._zid == other
        return NotImplemented

    @override
    def __hash__(self) -> int:
        return hash(self._zid)

    def __lt__(self, other: TimestampId) -> bool:
        return self._zid.value < other._zid.value

    def __le__(self, other: TimestampId) -> bool:
        return self._zid.value <= other._zid.value

    def __gt__(self, other: TimestampId) -> bool:
        return self._zid.value > other._zid.value

    def __ge__(self, other: TimestampId) -> bool:
        return self._zid.value >= other._zid.value


class Timestamp:
    """An HLC timestamp: an :class:`NTP64` time and a :class:`TimestampId`."""

    __slots__ = ("_ts",)

    def __init__(
        self,
        time: _dt.datetime | NTP64 | int,
        id: builtins.bytes | bytearray | TimestampId | ZenohId,
    ) -> None:
        if isinstance(time, _dt.datetime):
            if time.tzinfo is None:
                time = time.astimezone()
            delta = time - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            ns = (delta.days * 86_400 + delta.seconds) * _NANOS + delta.microseconds * 1000
            ntp = int(NTP64._from_ns(ns))
        elif isinstance(time, int) and not isinstance(time, bool):
            ntp = int(time)
        else:
            raise UsageError(f"a timestamp's time is a datetime or an NTP64, not {type(time).__name__}")
        self._ts = _p.Timestamp(ntp, TimestampId(id).zid)

    @classmethod
    def from_wire(cls, ts: _p.Timestamp) -> Timestamp:
        obj = object.__new__(cls)
        obj._ts = ts
        return obj

    @property
    def wire(self) -> _p.Timestamp:
        return self._ts

    def get_time(self) -> _dt.datetime:
        return NTP64._from_raw(self._ts.time).to_datetime()

    def get_time_as_ntp64(self) -> NTP64:
        return NTP64._from_raw(self._ts.time)

    def get_id(self) -> TimestampId:
        return TimestampId(self._ts.id)

    def get_diff_duration(self, other: Timestamp) -> _dt.timedelta:
        diff_ns = self.get_time_as_ntp64().as_nanos() - other.get_time_as_ntp64().as_nanos()
        return _dt.timedelta(microseconds=diff_ns / 1000)

    def to_string_rfc3339_lossy(self) -> str:
        return f"{self.get_time_as_ntp64().to_string_rfc3339_lossy()}/{self._ts.id}"

    @classmethod
    def parse_rfc3339(cls, s: str) -> Timestamp:
        """``<rfc3339 time>/<id hex>`` (as :meth:`to_string_rfc3339_lossy` writes it)."""
        if not isinstance(s, str) or "/" not in s:
            raise UsageError(f"no '/' in timestamp {s!r}")
        time_text, _, id_text = s.rpartition("/")
        try:
            zid = ZenohId.from_str(id_text)
        except Exception as exc:  # noqa: BLE001  (any bad id text: one error kind)
            raise UsageError(f"bad timestamp id {id_text!r}: {exc}") from None
        return cls(NTP64.parse_rfc3339(time_text), zid)

    @override
    def __str__(self) -> str:
        return f"{self._ts.time}/{self._ts.id}"

    __repr__ = __str__

    @override
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timestamp) and self._ts == other._ts

    def _key(self) -> tuple[int, int]:
        return (self._ts.time, self._ts.id.value)

    def __lt__(self, other: Timestamp) -> bool:
        return self._key() < other._key()

    def __le__(self, other: Timestamp) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: Timestamp) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: Timestamp) -> bool:
        return self._key() >= other._key()

    @override
    def __hash__(self) -> int:
        return hash(self._ts)
