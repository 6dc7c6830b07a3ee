"""User-facing value types, named as in eclipse-zenoh's Python API (``zenoh.Sample`` ...).

They hold plain data; the only behaviour is on :class:`Query`, whose reply methods go
through the session that delivered it.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from pyzenoh.codec import primitives as _p
from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import UsageError

if TYPE_CHECKING:
    from pyzenoh.session.instrumentation import TimestampStack
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.keyexpr.relations import intersects

__all__ = [
    "NTP64", "CongestionControl", "ConsolidationMode", "Encoding", "EntityGlobalId", "EntityId",
    "KeyExpr", "Locality", "MatchingStatus", "Parameters", "Priority", "Query",
    "QueryConsolidation", "QueryTarget", "Reliability", "Reply", "ReplyError", "ReplyKeyExpr",
    "Sample", "SampleKind", "Selector", "SourceInfo", "SourceSn", "Timestamp", "TimestampId",
    "ZBytes", "ZenohId",
]  # fmt: skip


# --- Enums (member names and values as in zenoh-python) -----------------------------------


class SampleKind(Enum):
    PUT = 1
    DELETE = 2


class Priority(Enum):
    """Message priority; the values are the wire priorities (0 Control is internal)."""

    REAL_TIME = 1
    INTERACTIVE_HIGH = 2
    INTERACTIVE_LOW = 3
    DATA_HIGH = 4
    DATA = 5
    DATA_LOW = 6
    BACKGROUND = 7
    DEFAULT = 5  # noqa: PIE796  (alias, as in zenoh)
    MIN = 7  # noqa: PIE796  (alias, as in zenoh)
    MAX = 1  # noqa: PIE796  (alias, as in zenoh)


class CongestionControl(Enum):
    DROP = 1
    BLOCK = 2
    BLOCK_FIRST = 3
    DEFAULT = 1  # noqa: PIE796  (alias, as in zenoh)


class Reliability(Enum):
    BEST_EFFORT = 1
    RELIABLE = 2


class QueryTarget(Enum):
    BEST_MATCHING = 0
    ALL = 1
    ALL_COMPLETE = 2
    DEFAULT = 0  # noqa: PIE796  (alias, as in zenoh)


class ConsolidationMode(Enum):
    AUTO = 0
    NONE = 1
    MONOTONIC = 2
    LATEST = 3
    DEFAULT = 0  # noqa: PIE796  (alias, as in zenoh)


class ReplyKeyExpr(Enum):
    ANY = 1
    MATCHING_QUERY = 2
    DEFAULT = 2  # noqa: PIE796  (alias, as in zenoh)


class Locality(Enum):
    SESSION_LOCAL = 1
    REMOTE = 2
    ANY = 3
    DEFAULT = 3  # noqa: PIE796  (alias, as in zenoh)


# --- ZBytes ----------------------------------------------------------------------------


class ZBytes:
    """Opaque payload bytes (``to_bytes()``, ``to_string()``)."""

    __slots__ = ("_b",)

    def __init__(self, bytes: builtins.bytes | bytearray | memoryview | str | ZBytes | None = None) -> None:
        data = bytes  # zenoh-python's parameter name
        if data is None:
            self._b = b""
        elif isinstance(data, builtins.bytes):
            self._b = data
        elif isinstance(data, str):
            self._b = data.encode("utf-8")
        elif isinstance(data, ZBytes):
            self._b = data._b
        elif isinstance(data, bytearray | memoryview):
            self._b = builtins.bytes(data)
        else:
            from pyzenoh.shm import ShmNotSupportedError, is_shm_object

            if is_shm_object(data):
                raise ShmNotSupportedError("ZBytes from a shared-memory buffer")
            raise UsageError(f"cannot make ZBytes from {type(data).__name__}")

    def to_bytes(self) -> bytes:
        return self._b

    def to_string(self) -> str:
        return self._b.decode("utf-8")

    def as_shm(self) -> None:
        """Never a shared-memory buffer: pyzenoh does not support shared memory."""
        return

    def __bytes__(self) -> builtins.bytes:
        return self._b

    def __len__(self) -> int:
        return len(self._b)

    def __bool__(self) -> bool:
        return bool(self._b)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ZBytes):
            return self._b == other._b
        if isinstance(other, bytes | bytearray):
            return self._b == other
        if isinstance(other, str):
            return self._b == other.encode("utf-8")
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._b)

    def __str__(self) -> str:
        return self._b.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"ZBytes({self._b!r})"


def to_payload(value: Any) -> bytes:
    """The bytes of anything zenoh accepts as a payload (bytes, str, ZBytes, bytearray)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, ZBytes):
        return value._b
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise UsageError(f"unsupported payload type {type(value).__name__}")


# --- Encoding -----------------------------------------------------------------------------


class Encoding:
    """A MIME-like encoding, ``type/subtype[;schema]``; ids as on the wire (zenoh-wire.md 1.6)."""

    __slots__ = ("_wire",)
    _wire: _p.Encoding

    ZENOH_BYTES: ClassVar[Encoding]
    ZENOH_STRING: ClassVar[Encoding]
    TEXT_PLAIN: ClassVar[Encoding]
    APPLICATION_JSON: ClassVar[Encoding]
    APPLICATION_OCTET_STREAM: ClassVar[Encoding]

    def __init__(self, encoding: str | None = None) -> None:
        self._wire = _p.Encoding.DEFAULT if encoding is None else _p.Encoding.from_str(encoding)

    @classmethod
    def from_wire(cls, wire: _p.Encoding) -> Encoding:
        if wire.is_default():
            return _DEFAULT_ENCODING
        enc = object.__new__(cls)
        enc._wire = wire
        return enc

    @property
    def wire(self) -> _p.Encoding:
        return self._wire

    def with_schema(self, schema: str) -> Encoding:
        return Encoding.from_wire(_p.Encoding(self._wire.id, schema.encode("utf-8")))

    def __str__(self) -> str:
        return str(self._wire)

    def __repr__(self) -> str:
        return f"Encoding({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Encoding):
            return self._wire == other._wire
        if isinstance(other, str):
            return self._wire == _p.Encoding.from_str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._wire)


def to_encoding(value: Encoding | str | None) -> _p.Encoding:
    if value is None:
        return _p.Encoding.DEFAULT
    if isinstance(value, Encoding):
        return value._wire
    if isinstance(value, str):
        return _p.Encoding.from_str(value)
    raise UsageError(f"unsupported encoding {value!r}")


_DEFAULT_ENCODING = object.__new__(Encoding)
_DEFAULT_ENCODING._wire = _p.Encoding.DEFAULT
for _i, _name in enumerate(_p.ENCODING_NAMES):
    _const = _name.upper()
    for _ch in "/-+.":
        _const = _const.replace(_ch, "_")
    setattr(Encoding, _const, _DEFAULT_ENCODING if _i == 0 else Encoding.from_wire(_p.Encoding(_i)))


# --- Timestamp ----------------------------------------------------------------------------

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

    def __str__(self) -> str:
        return str(self._zid)

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TimestampId):
            return self._zid == other._zid
        if isinstance(other, ZenohId):
            return self._zid == other
        return NotImplemented

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

    def __str__(self) -> str:
        return f"{self._ts.time}/{self._ts.id}"

    __repr__ = __str__

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

    def __hash__(self) -> int:
        return hash(self._ts)


# --- Selector and parameters --------------------------------------------------------------


class Parameters:
    """``key=value`` pairs separated by ``;`` (a selector's part after ``?``)."""

    __slots__ = ("_pairs",)

    def __init__(self, parameters: Parameters | dict[str, str] | str | None = None) -> None:
        self._pairs: list[tuple[str, str]] = []
        if parameters is None:
            return
        if isinstance(parameters, Parameters):
            self._pairs = list(parameters._pairs)
        elif isinstance(parameters, dict):
            self._pairs = [(str(k), str(v)) for k, v in parameters.items()]
        else:
            for part in parameters.split(";"):
                if part:
                    k, _, v = part.partition("=")
                    self._pairs.append((k, v))

    def is_empty(self) -> bool:
        return not self._pairs

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self._pairs:
            if k == key:
                return v
        return default

    def values(self, key: str) -> list[str]:
        value = self.get(key)
        return [] if value is None else value.split("|")

    def insert(self, key: str, value: str) -> str | None:
        """Set ``key`` to ``value``; returns the value it replaced (None if new)."""
        old = self.remove(key)
        self._pairs.append((key, value))
        return old

    def remove(self, key: str) -> str | None:
        """Remove ``key``; returns its value (None if it was not there)."""
        old = self.get(key)
        self._pairs = [(k, v) for k, v in self._pairs if k != key]
        return old

    def extend(self, parameters: Parameters | dict[str, str] | str) -> None:
        for k, v in Parameters(parameters)._pairs:
            self.insert(k, v)

    def is_ordered(self) -> bool:
        """True if the keys are in alphabetical order."""
        keys = [k for k, _ in self._pairs]
        return keys == sorted(keys)

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def __contains__(self, item: str) -> bool:
        return any(k == item for k, _ in self._pairs)

    def __getitem__(self, item: str) -> str | None:
        return self.get(item)

    def __iter__(self) -> Any:
        return iter(list(self._pairs))

    def __str__(self) -> str:
        return ";".join(f"{k}={v}" if v else k for k, v in self._pairs)

    def __repr__(self) -> str:
        return f"Parameters({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Parameters):
            return self._pairs == other._pairs
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class Selector:
    """A key expression plus parameters: ``"a/b?x=1;y=2"``."""

    __slots__ = ("_key_expr", "_parameters")

    def __init__(
        self,
        arg: Selector | KeyExpr | str,
        /,
        parameters: Parameters | dict[str, str] | str | None = None,
    ) -> None:
        if isinstance(arg, Selector):
            self._key_expr: KeyExpr = arg.key_expr
            self._parameters: Parameters = Parameters(arg.parameters)
        elif isinstance(arg, KeyExpr):
            self._key_expr = arg
            self._parameters = Parameters()
        elif isinstance(arg, str):
            key, _, params = arg.partition("?")
            self._key_expr = KeyExpr(key)
            self._parameters = Parameters(params)
        else:
            raise UsageError(f"a selector is a str, KeyExpr or Selector, not {type(arg).__name__}")
        if parameters is not None:
            self._parameters = Parameters(parameters)

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @key_expr.setter
    def key_expr(self, key_expr: KeyExpr | str) -> None:
        self._key_expr = to_key_expr(key_expr)

    @property
    def parameters(self) -> Parameters:
        return self._parameters

    @parameters.setter
    def parameters(self, parameters: Parameters | dict[str, str] | str) -> None:
        self._parameters = Parameters(parameters)

    def __str__(self) -> str:
        params = str(self.parameters)
        return f"{self.key_expr}?{params}" if params else str(self.key_expr)

    def __repr__(self) -> str:
        return f"Selector({str(self)!r})"


def to_key_expr(value: KeyExpr | str) -> KeyExpr:
    if isinstance(value, KeyExpr):
        return value
    if isinstance(value, str):
        return KeyExpr(value)
    raise UsageError(f"expected a key expression, got {type(value).__name__}")


# --- Samples and replies ------------------------------------------------------------------


EntityId = int
SourceSn = int


@dataclass(frozen=True, slots=True)
class EntityGlobalId:
    """A zenoh entity (session, publisher, subscriber ...) by session zid and entity id."""

    zid: ZenohId
    eid: EntityId


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Who published a sample (or sent a query): the entity and its sequence number."""

    source_id: EntityGlobalId
    source_sn: SourceSn

    def __post_init__(self) -> None:
        if not isinstance(self.source_id, EntityGlobalId):
            raise UsageError(f"source_id must be an EntityGlobalId, not {self.source_id!r}")
        if not isinstance(self.source_sn, int) or not 0 <= self.source_sn < (1 << 32):
            raise UsageError(f"source_sn must be a 32-bit unsigned integer, not {self.source_sn!r}")

    @property
    def wire(self) -> _p.SourceInfo:
        return _p.SourceInfo(self.source_id.zid, self.source_id.eid, self.source_sn)

    @classmethod
    def from_wire(cls, info: _p.SourceInfo) -> SourceInfo:
        return cls(EntityGlobalId(info.zid, info.eid), info.sn)


class QueryConsolidation:
    """A reply consolidation for gets: ``QueryConsolidation(ConsolidationMode.LATEST)``."""

    __slots__ = ("_mode",)

    AUTO: ClassVar[QueryConsolidation]
    DEFAULT: ClassVar[QueryConsolidation]

    def __init__(self, mode: ConsolidationMode, /) -> None:
        if not isinstance(mode, ConsolidationMode):
            raise UsageError(f"expected a ConsolidationMode, not {mode!r}")
        self._mode = mode

    @property
    def mode(self) -> ConsolidationMode:
        return self._mode

    def __eq__(self, other: object) -> bool:
        if isinstance(other, QueryConsolidation):
            return self._mode is other._mode
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._mode)

    def __repr__(self) -> str:
        return f"QueryConsolidation({self._mode})"


QueryConsolidation.AUTO = QueryConsolidation(ConsolidationMode.AUTO)
QueryConsolidation.DEFAULT = QueryConsolidation.AUTO


@dataclass(frozen=True, slots=True)
class Sample:
    key_expr: KeyExpr
    payload: ZBytes
    kind: SampleKind = SampleKind.PUT
    encoding: Encoding = _DEFAULT_ENCODING
    timestamp: Timestamp | None = None
    congestion_control: CongestionControl = CongestionControl.DROP
    priority: Priority = Priority.DATA
    express: bool = False
    attachment: ZBytes | None = None
    source_info: SourceInfo | None = None
    #: interception records carried by the message (``timestamp_instrumentation``)
    timestamp_stack: TimestampStack | None = None


@dataclass(frozen=True, slots=True)
class ReplyError:
    payload: ZBytes
    encoding: Encoding = _DEFAULT_ENCODING
    timestamp_stack: TimestampStack | None = None


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer to a get: ``ok`` (a Sample) or ``err`` (a ReplyError)."""

    result: Sample | ReplyError
    replier_id: EntityGlobalId | None = None

    @property
    def ok(self) -> Sample | None:
        return self.result if isinstance(self.result, Sample) else None

    @property
    def err(self) -> ReplyError | None:
        return self.result if isinstance(self.result, ReplyError) else None


@dataclass(frozen=True, slots=True)
class MatchingStatus:
    """Whether a publisher or querier has a match (``.matching``, as zenoh-python's); its
    truth value is that too, so ``if pub.matching_status:`` reads as it says."""

    matching: bool

    def __bool__(self) -> bool:
        return self.matching


# --- Query --------------------------------------------------------------------------------


class Responder(Protocol):
    """What a Query needs from its session to answer (thread-safe, non-blocking)."""

    def query_reply(
        self, qref: int, key: str, body: Any, priority: Priority | None, express: bool,
        block: bool,
    ) -> None: ...  # fmt: skip

    def query_finalize(self, qref: int) -> None: ...


class Query:
    """A query received by a queryable. Reply with :meth:`reply`, then :meth:`drop` it
    (or use it as a context manager): the querier's get ends once every queryable that
    received the query has dropped it. A Query that is garbage-collected is dropped.
    """

    __slots__ = (
        "__weakref__",
        "_anyke",
        "_done",
        "_qref",
        "_responder",
        "attachment",
        "encoding",
        "key_expr",
        "parameters",
        "payload",
        "source_info",
        "timestamp_stack",
    )  # fmt: skip

    def __init__(
        self,
        responder: Responder,
        qref: int,
        key_expr: KeyExpr,
        parameters: Parameters,
        payload: ZBytes | None,
        encoding: Encoding | None,
        attachment: ZBytes | None,
    ) -> None:
        self._responder = responder
        self._qref = qref
        self._done = False
        self.key_expr = key_expr
        self.parameters = parameters
        self.payload = payload
        self.encoding = encoding
        self.attachment = attachment
        self.source_info: SourceInfo | None = None
        self.timestamp_stack: TimestampStack | None = None
        self._anyke = "_anyke" in parameters

    @property
    def selector(self) -> Selector:
        return Selector(self.key_expr, self.parameters)

    def accepts_replies(self) -> ReplyKeyExpr:
        return ReplyKeyExpr.ANY if self._anyke else ReplyKeyExpr.MATCHING_QUERY

    def _check(self, key_expr: KeyExpr | str) -> str:
        if self._done:
            raise UsageError("the query was already dropped")
        key = str(to_key_expr(key_expr))
        if not self._anyke and not intersects(str(self.key_expr), key):
            raise UsageError(f"reply key {key!r} does not intersect the query key {self.key_expr}")
        return key

    def reply(
        self,
        key_expr: KeyExpr | str,
        payload: Any,
        *,
        encoding: Encoding | str | None = None,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
    ) -> None:
        from pyzenoh.codec import Put

        key = self._check(key_expr)
        body = Put(
            to_payload(payload), to_encoding(encoding),
            None if timestamp is None else timestamp.wire,
            attachment=None if attachment is None else to_payload(attachment),
        )  # fmt: skip
        self._responder.query_reply(self._qref, key, body, priority, bool(express),
                                    congestion_control is not CongestionControl.DROP)  # fmt: skip

    def reply_del(
        self,
        key_expr: KeyExpr | str,
        *,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
    ) -> None:
        from pyzenoh.codec import Del

        key = self._check(key_expr)
        body = Del(None if timestamp is None else timestamp.wire,
                   attachment=None if attachment is None else to_payload(attachment))  # fmt: skip
        self._responder.query_reply(self._qref, key, body, priority, bool(express),
                                    congestion_control is not CongestionControl.DROP)  # fmt: skip

    def reply_err(self, payload: Any, *, encoding: Encoding | str | None = None) -> None:
        from pyzenoh.codec import Err

        if self._done:
            raise UsageError("the query was already dropped")
        body = Err(to_payload(payload), to_encoding(encoding))
        self._responder.query_reply(self._qref, "", body, None, False, True)

    def drop(self) -> None:
        """Finish answering: once every receiver dropped it, the querier's get ends."""
        if not self._done:
            self._done = True
            self._responder.query_finalize(self._qref)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.drop()

    def __del__(self) -> None:
        try:
            self.drop()
        except Exception:  # noqa: BLE001, S110  (interpreter shutdown / closed session: nobody to tell)
            pass

    def __str__(self) -> str:
        return str(self.selector)

    def __repr__(self) -> str:
        return f"Query({self.selector!s})"
