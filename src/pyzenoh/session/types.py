"""User-facing value types, named as in eclipse-zenoh's Python API (``zenoh.Sample`` ...).

They hold plain data; the only behaviour is on :class:`Query`, whose reply methods go
through the session that delivered it.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar, Protocol, Self

from pyzenoh.codec import primitives as _p
from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr, intersects

__all__ = [
    "CongestionControl", "ConsolidationMode", "Encoding", "EntityGlobalId", "KeyExpr",
    "Locality", "MatchingStatus", "Parameters", "Priority", "Query", "QueryTarget",
    "Reliability", "Reply", "ReplyError", "ReplyKeyExpr", "Sample", "SampleKind",
    "Selector", "Timestamp", "ZBytes", "ZenohId",
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

    def __init__(self, data: bytes | bytearray | memoryview | str | ZBytes | None = None) -> None:
        if data is None:
            self._b = b""
        elif isinstance(data, bytes):
            self._b = data
        elif isinstance(data, str):
            self._b = data.encode("utf-8")
        elif isinstance(data, ZBytes):
            self._b = data._b
        elif isinstance(data, bytearray | memoryview):
            self._b = bytes(data)
        else:
            raise UsageError(f"cannot make ZBytes from {type(data).__name__}")

    def to_bytes(self) -> bytes:
        return self._b

    def to_string(self) -> str:
        return self._b.decode("utf-8")

    def __bytes__(self) -> bytes:
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


class Timestamp:
    """An HLC timestamp: NTP64 time (seconds since 1970 << 32 | fraction) and an id."""

    __slots__ = ("_ts",)

    def __init__(self, time: _dt.datetime | int, id: bytes | ZenohId) -> None:
        if isinstance(time, _dt.datetime):
            ns = int(time.timestamp() * 1e9)
            ntp = ((ns // 1_000_000_000) << 32) | (((ns % 1_000_000_000) << 32) // 1_000_000_000)
        else:
            ntp = time
        zid = id if isinstance(id, ZenohId) else ZenohId.from_wire(id)
        self._ts = _p.Timestamp(ntp, zid)

    @classmethod
    def from_wire(cls, ts: _p.Timestamp) -> Timestamp:
        obj = object.__new__(cls)
        obj._ts = ts
        return obj

    @property
    def wire(self) -> _p.Timestamp:
        return self._ts

    def get_time(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self._ts.to_seconds(), _dt.UTC)

    def get_time_as_ntp64(self) -> int:
        return self._ts.time

    def get_id(self) -> ZenohId:
        return self._ts.id

    def get_diff_duration(self, other: Timestamp) -> _dt.timedelta:
        return _dt.timedelta(seconds=self._ts.to_seconds() - other._ts.to_seconds())

    def to_string_rfc3339_lossy(self) -> str:
        return self.get_time().strftime("%Y-%m-%dT%H:%M:%S.%f") + f"Z/{self._ts.id}"

    def __str__(self) -> str:
        return f"{self._ts.time}/{self._ts.id}"

    def __repr__(self) -> str:
        return f"Timestamp({self})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timestamp) and self._ts == other._ts

    def __lt__(self, other: Timestamp) -> bool:
        return (self._ts.time, self._ts.id.value) < (other._ts.time, other._ts.id.value)

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

    def insert(self, key: str, value: str) -> None:
        self.remove(key)
        self._pairs.append((key, value))

    def remove(self, key: str) -> None:
        self._pairs = [(k, v) for k, v in self._pairs if k != key]

    def extend(self, parameters: Parameters | dict[str, str] | str) -> None:
        for k, v in Parameters(parameters)._pairs:
            self.insert(k, v)

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

    __slots__ = ("key_expr", "parameters")

    def __init__(
        self,
        arg: Selector | KeyExpr | str,
        parameters: Parameters | dict[str, str] | str | None = None,
    ) -> None:
        if isinstance(arg, Selector):
            self.key_expr: KeyExpr = arg.key_expr
            self.parameters: Parameters = Parameters(arg.parameters)
        elif isinstance(arg, KeyExpr):
            self.key_expr = arg
            self.parameters = Parameters()
        else:
            key, _, params = str(arg).partition("?")
            self.key_expr = KeyExpr(key)
            self.parameters = Parameters(params)
        if parameters is not None:
            self.parameters = Parameters(parameters)

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


@dataclass(frozen=True, slots=True)
class EntityGlobalId:
    zid: ZenohId
    eid: int


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
    source_info: object | None = None


@dataclass(frozen=True, slots=True)
class ReplyError:
    payload: ZBytes
    encoding: Encoding = _DEFAULT_ENCODING


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
    matching: bool


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
