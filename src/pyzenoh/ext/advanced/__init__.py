"""zenoh-ext's advanced publication and subscription, on pyzenoh's session API.

``declare_advanced_publisher`` and ``declare_advanced_subscriber`` (and their configs) have
zenoh-python 1.10's ``zenoh.ext`` names and keywords and follow eclipse-zenoh 1.10.2's
zenoh-ext protocol, so each side works with the real other side:

* An :class:`AdvancedPublisher` publishes on its key. With ``sample_miss_detection`` each
  sample carries a source info (the publisher's id and a sequence number from 0); with a
  ``cache`` the last ``max_samples`` samples are kept and served by a queryable on
  ``<key>/@adv/pub/<zid>/<eid>/_`` (``<eid>`` is ``uhlc`` without miss detection: samples
  are then ordered by their timestamps). The queryable answers the parameters ``_sn``
  (``a..b``, ``a..``, ``..b`` or ``a``: sequence numbers, wrapping), ``_max`` (the last N)
  and ``_time`` (a time range) with the cached samples themselves (their key, source info,
  timestamp). ``publisher_detection`` declares a liveliness token on the same key; a
  heartbeat (``MissDetectionConfig``) puts the last sequence number (``z_serialize`` of a
  u32) on it periodically.
* An :class:`AdvancedSubscriber` subscribes to the key and orders each source's samples:
  by sequence number (one state per publisher id) or by timestamp (one per timestamp id).
  ``history`` queries ``<key>/@adv/**`` once (``_max``, ``_time=[now(-age s)..]``) and,
  with ``detect_late_publishers``, each publisher token appearing on
  ``<key>/@adv/pub/**``; live samples are held back until those queries end. ``recovery``
  asks a publisher's cache for what is missing (``<key>/@adv/*/<zid>/<eid>/**?_sn=..``):
  when a gap is seen, periodically (``periodic_queries``) or when a heartbeat announces a
  newer sequence number (``heartbeat``). A gap that cannot be filled is reported to the
  :meth:`AdvancedSubscriber.sample_miss_listener` listeners as a :class:`Miss`.
  ``subscriber_detection`` declares a token on ``<key>/@adv/sub/<zid>/<eid>/_``.

All queries use target All, no consolidation, any reply key and a 10 s timeout, as the
real subscriber. Differences: pyzenoh sessions have no HLC (a real client session has
none by default either: the router stamps its samples), so an AdvancedPublisher with a
cache and no miss detection, which orders by timestamps, stamps its samples itself
(strictly increasing, the session's zid as id) where the real one needs
``timestamping/enabled``; with miss detection it leaves them unstamped, as a real client. Subscriber states are never garbage-collected (the Rust
API's ``retention_period`` is not in zenoh-python 1.10).
"""

from __future__ import annotations

import datetime as _dt
import functools
import heapq
import logging
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Self, TypeAlias, TypeVar, overload

from pyzenoh.ext.serialization import UInt32, z_serialize
from pyzenoh.handlers import Callback, DefaultHandler, FifoChannel, Handler, RingChannel
from pyzenoh.keyexpr import KeyExpr, intersects
from pyzenoh.session import (
    CongestionControl,
    ConsolidationMode,
    Encoding,
    EntityGlobalId,
    LivelinessToken,
    Locality,
    Priority,
    Publisher,
    Query,
    Queryable,
    QueryConsolidation,
    QueryTarget,
    Reliability,
    Reply,
    ReplyKeyExpr,
    Sample,
    SampleKind,
    Session,
    SourceInfo,
    Subscriber,
    Timestamp,
    TimestampId,
    TimestampInstrumentation,
    ZBytes,
    ZenohId,
    ZError,
)
from pyzenoh.session.api import del_body, put_body

__all__ = [
    "AdvancedPublisher",
    "AdvancedSubscriber",
    "CacheConfig",
    "HistoryConfig",
    "Miss",
    "MissDetectionConfig",
    "RecoveryConfig",
    "RepliesConfig",
    "SampleMissListener",
    "declare_advanced_publisher",
    "declare_advanced_subscriber",
]

log = logging.getLogger(__name__)

T = TypeVar("T")
H = TypeVar("H")

#: zenoh-python's handler argument kinds (channels, a (callback, object) pair, a callback)
_Channel: TypeAlias = DefaultHandler[T] | FifoChannel[T] | RingChannel[T]
_Pair: TypeAlias = tuple[Callable[[T], Any], H]
_Callable: TypeAlias = Callable[[T], Any] | Callback[T]

#: How long the subscriber's queries wait for replies (zenoh-ext's default query_timeout).
QUERY_TIMEOUT_S = 10.0

_ADV = "@adv"
_UHLC = "uhlc"
_EMPTY = "_"
_SN_MOD = 1 << 32
_SN_HALF = (1 << 31) - 1  # u32::MAX / 2


# --- configurations -----------------------------------------------------------------------


def _seconds(value: float | _dt.timedelta | None, name: str) -> float | None:
    """A period or age in seconds (zenoh-python takes numbers, or a timedelta for
    ``RecoveryConfig.periodic_queries``)."""
    if value is None:
        return None
    if isinstance(value, _dt.timedelta):
        secs = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        secs = float(value)
    else:
        raise ZError(f"{name} must be a number of seconds, not {value!r}")
    if secs < 0:
        raise ZError(f"{name} must not be negative")
    return secs


class RepliesConfig:
    """QoS of the replies an :class:`AdvancedPublisher`'s cache sends (default: Block,
    Data, not express)."""

    __slots__ = ("congestion_control", "express", "priority")

    def __init__(
        self,
        *,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
    ) -> None:
        self.congestion_control = congestion_control if congestion_control is not None else CongestionControl.BLOCK
        self.priority = priority if priority is not None else Priority.DATA
        self.express = bool(express)

    def __repr__(self) -> str:
        return (f"RepliesConfig(congestion_control={self.congestion_control}, priority={self.priority}, "
                f"express={self.express})")  # fmt: skip


class CacheConfig:
    """How many samples an :class:`AdvancedPublisher` keeps (default 1) and the QoS of
    the replies that serve them."""

    __slots__ = ("max_samples", "replies_config")

    def __init__(self, max_samples: int | None = None, *, replies_config: RepliesConfig | None = None) -> None:
        if max_samples is not None and (not isinstance(max_samples, int) or max_samples < 0):
            raise ZError(f"max_samples must be a non-negative integer, not {max_samples!r}")
        self.max_samples = 1 if max_samples is None else max_samples
        self.replies_config = replies_config if replies_config is not None else RepliesConfig()

    def __repr__(self) -> str:
        return f"CacheConfig(max_samples={self.max_samples}, replies_config={self.replies_config!r})"


class HistoryConfig:
    """What an :class:`AdvancedSubscriber` asks for at declaration: ``max_samples`` per
    source, samples no older than ``max_age`` seconds, and whether publishers that appear
    later are asked too (``detect_late_publishers``)."""

    __slots__ = ("detect_late_publishers", "max_age", "max_samples")

    def __init__(
        self,
        *,
        detect_late_publishers: bool | None = None,
        max_samples: int | None = None,
        max_age: float | None = None,
    ) -> None:
        if max_samples is not None and (not isinstance(max_samples, int) or max_samples < 0):
            raise ZError(f"max_samples must be a non-negative integer, not {max_samples!r}")
        self.detect_late_publishers = bool(detect_late_publishers)
        self.max_samples = max_samples
        self.max_age = _seconds(max_age, "max_age")

    def __repr__(self) -> str:
        return (f"HistoryConfig(detect_late_publishers={self.detect_late_publishers}, "
                f"max_samples={self.max_samples}, max_age={self.max_age})")  # fmt: skip


class RecoveryConfig:
    """How an :class:`AdvancedSubscriber` recovers missed samples: ``periodic_queries``
    (a period: ask each publisher's cache for newer samples) or ``heartbeat=True``
    (follow the publishers' heartbeats); exactly one of them."""

    __slots__ = ("heartbeat", "periodic_queries")

    def __init__(
        self,
        *,
        periodic_queries: float | _dt.timedelta | None = None,
        heartbeat: bool | None = None,
    ) -> None:
        period = _seconds(periodic_queries, "periodic_queries")
        if (period is None) == (not heartbeat):
            raise ZError("invalid parameters: RecoveryConfig takes periodic_queries or heartbeat=True")
        if period is not None and period <= 0:
            raise ZError("periodic_queries must be positive")
        self.periodic_queries = period
        self.heartbeat = bool(heartbeat)

    def __repr__(self) -> str:
        return f"RecoveryConfig(periodic_queries={self.periodic_queries}, heartbeat={self.heartbeat})"


class MissDetectionConfig:
    """Sequence numbers on an :class:`AdvancedPublisher`'s samples, with an optional
    heartbeat: every ``heartbeat`` seconds, or every ``sporadic_heartbeat`` seconds when
    something was published since the last one (congestion control Block)."""

    __slots__ = ("period", "sporadic")

    def __init__(
        self, *, heartbeat: float | None = None, sporadic_heartbeat: float | None = None
    ) -> None:
        hb = _seconds(heartbeat, "heartbeat")
        sporadic = _seconds(sporadic_heartbeat, "sporadic_heartbeat")
        for value, name in ((hb, "heartbeat"), (sporadic, "sporadic_heartbeat")):
            if value is not None and value <= 0:
                raise ZError(f"{name} must be positive")
        # as zenoh-python's builder chain: the sporadic heartbeat is set last and wins
        self.period: float | None = sporadic if sporadic is not None else hb
        self.sporadic = sporadic is not None

    def __repr__(self) -> str:
        kind = "sporadic_heartbeat" if self.sporadic else "heartbeat"
        return f"MissDetectionConfig({kind}={self.period})"


@dataclass(frozen=True, slots=True)
class Miss:
    """``nb`` consecutive samples of the publisher ``source`` that were not received."""

    source: EntityGlobalId
    nb: int


# --- handlers -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Delivery(Generic[T]):
    """A user ``handler`` argument made into a push function, a drop and the object the
    declaration returns (a channel, the tuple's object, or None)."""

    push: Callable[[T], None]
    drop: Callable[[], None] | None
    returned: Any


def _delivery(handler: Any) -> _Delivery[Any]:
    if handler is None or isinstance(handler, DefaultHandler):
        handler = FifoChannel()
    if isinstance(handler, FifoChannel | RingChannel):
        ch: Handler[Any] = Handler(handler.capacity, isinstance(handler, RingChannel))
        return _Delivery(ch.push, ch.close, ch)
    returned: Any = None
    if isinstance(handler, tuple):
        if len(handler) != 2 or not callable(handler[0]):
            raise ZError("a handler tuple is (callback, handler_object)")
        handler, returned = handler
    drop: Callable[[], Any] | None = None
    if isinstance(handler, Callback):
        drop = handler.drop
        handler = handler.callback
    if not callable(handler):
        raise ZError(f"unsupported handler {handler!r}")
    return _Delivery(_guarded(handler), None if drop is None else _guarded_drop(drop), returned)


def _guarded(fn: Callable[[Any], Any]) -> Callable[[Any], None]:
    def call(item: Any) -> None:
        try:
            fn(item)
        except Exception:
            log.exception("user callback failed")

    return call


def _guarded_drop(fn: Callable[[], Any]) -> Callable[[], None]:
    def call() -> None:
        try:
            fn()
        except Exception:
            log.exception("user drop callback failed")

    return call


def _channel(returned: Any) -> Handler[Any]:
    if not isinstance(returned, Handler):
        raise ZError("this entity has a callback, not a channel")
    return returned


# --- sequence numbers, parameters -----------------------------------------------------------


def _sn_cmp(a: int, b: int) -> int:
    """zenoh-ext's WrappingSn order: -1, 0 or 1."""
    sub = (a - b) % _SN_MOD
    if sub == 0:
        return 0
    return 1 if sub <= _SN_HALF else -1


def _sn_add(a: int, n: int) -> int:
    return (a + n) % _SN_MOD


def _sn_sorted(sns: Iterator[int] | list[int]) -> list[int]:
    return sorted(sns, key=functools.cmp_to_key(_sn_cmp))


def _parse_sn(text: str) -> int | None:
    try:
        value = int(text, 10)
    except ValueError:
        return None
    if not text.isdigit() or not 0 <= value < _SN_MOD:
        return None
    return value


def _sn_range(text: str) -> tuple[int | None, int | None]:
    """``_sn``'s ``a..b`` / ``a..`` / ``..b`` / ``a`` (bounds included; None: unbounded)."""
    if ".." in text:
        start_text, _, end_text = text.partition("..")
        return _parse_sn(start_text), _parse_sn(end_text.split("..")[0])
    sn = _parse_sn(text)
    return sn, sn


def _in_sn_range(sn: int, rng: tuple[int | None, int | None]) -> bool:
    start, end = rng
    if start is not None and _sn_cmp(sn, start) < 0:
        return False
    return end is None or _sn_cmp(sn, end) <= 0


def _sn_selector(start: int | None, end: int | None) -> str:
    return f"_sn={'' if start is None else start}..{'' if end is None else end}"


_UNITS = {"u": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def _duration(text: str) -> float:
    m = re.fullmatch(r"(.*?)(u|ms|s|m|h|d|w)?", text)
    assert m is not None
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def _time_expr(text: str, now: float) -> float:
    """A time in seconds since the epoch: ``now()``, ``now(-10s)`` or an RFC 3339 time."""
    if text.startswith("now(") and text.endswith(")"):
        inner = text[4:-1]
        if not inner:
            return now
        if inner.startswith("-"):
            return now - _duration(inner[1:])
        return now + _duration(inner)
    value = _dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return value.timestamp()


def _time_filter(text: str) -> Callable[[float], bool] | None:
    """``_time``'s range (``[a..b]``, ``]a..b[``, ``[a;duration]``) as a predicate on
    seconds since the epoch; None if it does not parse (then nothing is filtered)."""
    try:
        if len(text) < 4 or text[0] not in "[]" or text[-1] not in "[]":
            return None
        incl_start, incl_end = text[0] == "[", text[-1] == "]"
        body = text[1:-1]
        now = time.time()
        start: float | None
        end: float | None
        if ".." in body:
            a, _, b = body.partition("..")
            start = _time_expr(a, now) if a else None
            end = _time_expr(b, now) if b else None
        elif ";" in body:
            a, _, d = body.partition(";")
            if not a:
                return None
            start = _time_expr(a, now)
            end = start + _duration(d)
        else:
            return None
    except (ValueError, KeyError):
        return None

    def contains(t: float) -> bool:
        if start is not None and (start > t if incl_start else start >= t):
            return False
        if end is not None:
            return end >= t if incl_end else end > t
        return True

    return contains


def _seconds_text(secs: float) -> str:
    """A duration as Rust's f64 Display writes it (``10``, ``1.5``)."""
    text = repr(float(secs))
    return text.removesuffix(".0")


def _history_params(conf: HistoryConfig) -> str:
    params = []
    if conf.max_samples is not None:
        params.append(f"_max={conf.max_samples}")
    if conf.max_age is not None:
        params.append(f"_time=[now({_seconds_text(-conf.max_age)}s)..]")
    return ";".join(params)


def _join(key: str, *chunks: str) -> str:
    return "/".join((key, *chunks))


@dataclass(frozen=True, slots=True)
class _AdvKey:
    """``<key>/@adv/<entity>/<zid>/<eid>/<meta>`` split up."""

    entity: str
    zid: str
    eid: str


def _parse_adv(key: str) -> _AdvKey | None:
    chunks = key.split("/")
    for i in range(1, len(chunks) - 3):
        if chunks[i] == _ADV:
            return _AdvKey(chunks[i + 1], chunks[i + 2], chunks[i + 3])
    return None


def _zid_of(text: str) -> ZenohId | None:
    try:
        zid = ZenohId.from_str(text)
    except Exception:  # noqa: BLE001  (any malformed id is just not a zid)
        return None
    return zid


def _eid_of(text: str) -> int | None:
    if not text.isdigit():
        return None
    value = int(text)
    return value if value < _SN_MOD else None


def _periodic(stop: threading.Event, period: float, tick: Callable[[], bool], name: str) -> threading.Thread:
    """A daemon thread calling ``tick`` every ``period`` s until ``stop`` or ``tick`` says no."""

    def run() -> None:
        while not stop.wait(period):
            try:
                if not tick():
                    return
            except Exception:
                log.exception("%s failed", name)

    th = threading.Thread(target=run, name=name, daemon=True)
    th.start()
    return th


# --- publisher ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cached:
    kind: SampleKind
    payload: ZBytes
    encoding: Encoding | str | None
    attachment: Any
    timestamp: Timestamp | None
    source_info: SourceInfo | None


class _Cache:
    """The publisher's last samples and the queryable that serves them."""

    def __init__(self, session: Session, key: str, queryable_key: str, config: CacheConfig) -> None:
        if config.max_samples == 0:
            raise ZError("max_samples must not be zero")
        self._key = key
        self._max = config.max_samples
        self._replies = config.replies_config
        self._lock = threading.Lock()
        self._samples: list[_Cached] = []
        self._queryable: Queryable[Any] = session.declare_queryable(queryable_key, self._on_query)

    def add(self, sample: _Cached) -> None:
        with self._lock:
            if len(self._samples) >= self._max:
                del self._samples[0]
            self._samples.append(sample)

    def _on_query(self, query: Query) -> None:
        params = query.parameters
        sn_text = params.get("_sn")
        rng = _sn_range(sn_text) if sn_text is not None else (None, None)
        unbounded = rng == (None, None)
        max_text = params.get("_max")
        limit = int(max_text) if max_text is not None and max_text.isdigit() and int(max_text) < _SN_MOD else None
        time_text = params.get("_time")
        in_time = None if time_text is None else _time_filter(time_text)
        with self._lock:
            chosen = []
            for s in self._samples:
                if not unbounded and (s.source_info is None or not _in_sn_range(s.source_info.source_sn, rng)):
                    continue
                if (in_time is not None and s.timestamp is not None
                        and not in_time(s.timestamp.get_time_as_ntp64().as_nanos() / 1e9)):  # fmt: skip
                    continue
                chosen.append(s)
        if limit is not None:
            chosen = chosen[max(len(chosen) - limit, 0):] if limit else []
        try:
            for s in chosen:
                try:
                    self._reply(query, s)
                except ZError as exc:  # e.g. a query without _anyke on the @adv key: as zenoh-ext, logged
                    log.warning("AdvancedCache: error replying to query %s: %s", query, exc)
        finally:
            query.drop()

    def _reply(self, query: Query, s: _Cached) -> None:
        """Reply with the sample itself: its key, timestamp and source info.

        ``Query.reply`` takes no source info (neither does zenoh-python's), so the reply
        is built here and handed to the query's responder."""
        rc = self._replies
        key = query._check(self._key)
        block = rc.congestion_control is not CongestionControl.DROP
        if s.kind is SampleKind.DELETE:
            body: Any = del_body(s.attachment, s.timestamp, s.source_info)
        else:
            body = put_body(s.payload, s.encoding, s.attachment, s.timestamp, s.source_info)
        query._responder.query_reply(query._qref, key, body, rc.priority, rc.express, block)

    def undeclare(self) -> None:
        self._queryable.undeclare()


class AdvancedPublisher:
    """A publisher with a cache, sequence numbers, heartbeats and a liveliness token
    (see :func:`declare_advanced_publisher`)."""

    def __init__(
        self,
        session: Session,
        key_expr: KeyExpr | str,
        *,
        encoding: Encoding | str | None = None,
        congestion_control: CongestionControl | None = None,
        priority: Priority | None = None,
        express: bool | None = None,
        reliability: Reliability | None = None,
        allowed_destination: Locality | None = None,
        cache: CacheConfig | None = None,
        sample_miss_detection: MissDetectionConfig | None = None,
        publisher_detection: bool | None = None,
    ) -> None:
        if not isinstance(session, Session):
            raise ZError(f"an AdvancedPublisher needs a pyzenoh Session, not {session!r}")
        if cache is not None and cache.max_samples == 0:
            raise ZError("max_samples must not be zero")
        self._session = session
        self._publisher: Publisher = session.declare_publisher(
            key_expr, encoding=encoding, congestion_control=congestion_control, priority=priority,
            express=express, reliability=reliability, allowed_destination=allowed_destination)  # fmt: skip
        self._key = str(self._publisher.key_expr)
        pid = self._publisher.id
        self._sequenced = sample_miss_detection is not None
        suffix = _join(_ADV, "pub", str(pid.zid), str(pid.eid) if self._sequenced else _UHLC, _EMPTY)
        self._adv_key = _join(self._key, suffix)
        self._lock = threading.Lock()
        self._next_sn = 0
        self._last_time = 0
        self._stop = threading.Event()
        self._cache: _Cache | None = None
        self._token: LivelinessToken | None = None
        self._heartbeat: Publisher | None = None
        try:
            if cache is not None:
                self._cache = _Cache(session, self._key, self._adv_key, cache)
            if publisher_detection:
                self._token = session.liveliness().declare_token(self._adv_key)
            if sample_miss_detection is not None and sample_miss_detection.period is not None:
                self._start_heartbeat(sample_miss_detection)
        except BaseException:
            self.undeclare()
            raise

    def _start_heartbeat(self, conf: MissDetectionConfig) -> None:
        assert conf.period is not None
        cc = CongestionControl.BLOCK if conf.sporadic else None
        hb = self._session.declare_publisher(self._adv_key, congestion_control=cc)
        self._heartbeat = hb
        last_sent = [0]
        sporadic = conf.sporadic

        def tick() -> bool:
            if self._session.is_closed():
                return False
            with self._lock:
                seqnum = self._next_sn
            if seqnum > 0 and (not sporadic or seqnum > last_sent[0]):
                hb.put(z_serialize(UInt32(seqnum - 1)))
                last_sent[0] = seqnum
            return True

        _periodic(self._stop, conf.period, tick, "pyzenoh-adv-heartbeat")

    # --- properties ---------------------------------------------------------------------

    @property
    def id(self) -> EntityGlobalId:
        return self._publisher.id

    @property
    def key_expr(self) -> KeyExpr:
        return self._publisher.key_expr

    @property
    def encoding(self) -> Encoding:
        return self._publisher.encoding

    @property
    def congestion_control(self) -> CongestionControl:
        return self._publisher.congestion_control

    @property
    def priority(self) -> Priority:
        return self._publisher.priority

    @property
    def reliability(self) -> Reliability:
        return self._publisher.reliability

    # --- publication ------------------------------------------------------------------------

    def _stamp(self) -> tuple[SourceInfo | None, Timestamp | None]:
        """The next source info (miss detection), or else a fresh, strictly increasing
        timestamp (pyzenoh's stand-in for the HLC the real one needs then)."""
        with self._lock:
            if self._sequenced:
                info = SourceInfo(self._publisher.id, self._next_sn)
                self._next_sn = _sn_add(self._next_sn, 1)
                return info, None
            now = int(self._session.new_timestamp().get_time_as_ntp64())
            self._last_time = now = max(now, self._last_time + 1)
        return None, Timestamp(now, self._session.zid())

    def put(
        self,
        payload: Any,
        *,
        encoding: Encoding | str | None = None,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
        timestamp_instrumentation: TimestampInstrumentation | None = None,
    ) -> None:
        info, stamp = self._stamp()
        ts = timestamp if timestamp is not None else stamp
        data = ZBytes(payload) if not isinstance(payload, ZBytes) else payload
        if self._cache is not None:
            enc = encoding if encoding is not None else self._publisher.encoding
            att = None if attachment is None else ZBytes(attachment)
            self._cache.add(_Cached(SampleKind.PUT, data, enc, att, ts, info))
        self._publisher.put(data, encoding=encoding, attachment=attachment, timestamp=ts,
                            timestamp_instrumentation=timestamp_instrumentation, source_info=info)  # fmt: skip

    def delete(
        self,
        *,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
        timestamp_instrumentation: TimestampInstrumentation | None = None,
    ) -> None:
        info, stamp = self._stamp()
        ts = timestamp if timestamp is not None else stamp
        if self._cache is not None:
            att = None if attachment is None else ZBytes(attachment)
            self._cache.add(_Cached(SampleKind.DELETE, ZBytes(), None, att, ts, info))
        self._publisher.delete(attachment=attachment, timestamp=ts,
                               timestamp_instrumentation=timestamp_instrumentation, source_info=info)  # fmt: skip

    @property
    def matching_status(self) -> Any:
        return self._publisher.matching_status

    def declare_matching_listener(self, handler: Any = None) -> Any:
        return self._publisher.declare_matching_listener(handler)

    def undeclare(self) -> None:
        self._stop.set()
        for entity in (self._heartbeat, self._token, self._cache, self._publisher):
            if entity is not None:
                try:
                    entity.undeclare()
                except Exception as exc:  # noqa: BLE001  (the session may be closed already)
                    log.debug("undeclare: %s", exc)
        self._heartbeat = self._token = self._cache = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()

    def __repr__(self) -> str:
        return f"AdvancedPublisher({self._key!r}, id={self.id})"


def declare_advanced_publisher(
    session: Session,
    key_expr: KeyExpr | str,
    *,
    encoding: Encoding | str | None = None,
    congestion_control: CongestionControl | None = None,
    priority: Priority | None = None,
    express: bool | None = None,
    reliability: Reliability | None = None,
    allowed_destination: Locality | None = None,
    cache: CacheConfig | None = None,
    sample_miss_detection: MissDetectionConfig | None = None,
    publisher_detection: bool | None = None,
) -> AdvancedPublisher:
    """Declare an :class:`AdvancedPublisher` on ``key_expr``."""
    return AdvancedPublisher(session, key_expr, encoding=encoding, congestion_control=congestion_control,
                             priority=priority, express=express, reliability=reliability,
                             allowed_destination=allowed_destination, cache=cache,
                             sample_miss_detection=sample_miss_detection,
                             publisher_detection=publisher_detection)  # fmt: skip


# --- subscriber -------------------------------------------------------------------------------


@dataclass(slots=True)
class _SeqState:
    last: int | None = None
    pending_queries: int = 0
    pending: dict[int, Sample] = field(default_factory=dict)
    alive: bool = False


@dataclass(slots=True)
class _TsState:
    last: Timestamp | None = None
    pending_queries: int = 0
    pending: dict[Timestamp, Sample] = field(default_factory=dict)
    alive: bool = False


class SampleMissListener(Generic[H]):
    """:class:`Miss` notifications of an :class:`AdvancedSubscriber`, to a callback or a channel."""

    def __init__(self, owner: AdvancedSubscriber[Any], lid: int, delivery: _Delivery[Miss]) -> None:
        self._owner = owner
        self._lid = lid
        self._delivery = delivery

    @property
    def handler(self) -> H:
        ret: H = self._delivery.returned
        return ret

    def undeclare(self) -> None:
        self._owner._remove_miss_listener(self._lid)

    def try_recv(self) -> Miss | None:
        item: Miss | None = _channel(self._delivery.returned).try_recv()
        return item

    def recv(self, timeout: float | None = None) -> Miss:
        item: Miss = _channel(self._delivery.returned).recv(timeout)
        return item

    def __iter__(self) -> Iterator[Miss]:
        return iter(_channel(self._delivery.returned))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


class AdvancedSubscriber(Generic[H]):
    """A subscriber that orders each source's samples, asks for history and recovers
    missed samples (see :func:`declare_advanced_subscriber`)."""

    def __init__(
        self,
        session: Session,
        key_expr: KeyExpr | str,
        handler: Any = None,
        *,
        allowed_origin: Locality | None = None,
        history: HistoryConfig | None = None,
        recovery: RecoveryConfig | None = None,
        subscriber_detection: bool | None = None,
    ) -> None:
        if not isinstance(session, Session):
            raise ZError(f"an AdvancedSubscriber needs a pyzenoh Session, not {session!r}")
        if history is not None:
            if history.max_samples == 0:
                raise ZError("max_samples must not be zero")
            if history.max_age == 0:
                raise ZError("max_age must not be zero")
        self._session = session
        self._delivery = _delivery(handler)
        self._lock = threading.RLock()
        self._open = True
        self._history = history
        self._recovery = recovery is not None
        self._period = None if recovery is None else recovery.periodic_queries
        self._max_depth = history.max_samples if history is not None and history.max_samples else None
        self._global_pending = 1 if history is not None else 0
        self._seq: dict[EntityGlobalId, _SeqState] = {}
        self._ts: dict[TimestampId, _TsState] = {}
        self._miss: dict[int, _Delivery[Miss]] = {}
        self._next_lid = 0
        self._stop = threading.Event()
        self._timers: list[tuple[float, int, EntityGlobalId]] = []  # (due, generation, source)
        self._timer_gen: dict[EntityGlobalId, int] = {}
        self._timer_cond = threading.Condition(self._lock)
        self._liveliness_sub: Subscriber[Any] | None = None
        self._heartbeat_sub: Subscriber[Any] | None = None
        self._token: LivelinessToken | None = None
        self._subscriber: Subscriber[Any] = session.declare_subscriber(
            key_expr, Callback(self._on_sample, self._on_subscriber_drop), allowed_origin=allowed_origin)  # fmt: skip
        self._key_expr = self._subscriber.key_expr
        self._key = str(self._key_expr)
        try:
            if self._period is not None:
                threading.Thread(target=self._run_timers, name="pyzenoh-adv-queries", daemon=True).start()
            if history is not None:
                params = _history_params(history)
                self._query(_join(self._key, _ADV, "**"), params, self._on_initial_done)
                if history.detect_late_publishers:
                    self._liveliness_sub = session.liveliness().declare_subscriber(
                        _join(self._key, _ADV, "pub", "**"), self._on_token, history=True)  # fmt: skip
            if recovery is not None and recovery.heartbeat:
                self._heartbeat_sub = session.declare_subscriber(
                    _join(self._key, _ADV, "pub", "**"), self._on_heartbeat, allowed_origin=allowed_origin)  # fmt: skip
            if subscriber_detection:
                sid = self._subscriber.id
                self._token = session.liveliness().declare_token(
                    _join(self._key, _ADV, "sub", str(sid.zid), str(sid.eid), _EMPTY))  # fmt: skip
        except BaseException:
            self.undeclare()
            raise

    # --- public API -------------------------------------------------------------------------

    @property
    def id(self) -> EntityGlobalId:
        return self._subscriber.id

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @property
    def handler(self) -> H:
        ret: H = self._delivery.returned
        return ret

    def try_recv(self) -> Sample | None:
        item: Sample | None = _channel(self._delivery.returned).try_recv()
        return item

    def recv(self, timeout: float | None = None) -> Sample:
        item: Sample = _channel(self._delivery.returned).recv(timeout)
        return item

    def __iter__(self) -> Iterator[Sample]:
        return iter(_channel(self._delivery.returned))

    @overload
    def sample_miss_listener(self, handler: _Channel[Miss] | None = None) -> SampleMissListener[Handler[Miss]]: ...
    @overload
    def sample_miss_listener(self, handler: _Pair[Miss, T]) -> SampleMissListener[T]: ...
    @overload
    def sample_miss_listener(self, handler: _Callable[Miss]) -> SampleMissListener[None]: ...

    def sample_miss_listener(self, handler: Any = None) -> SampleMissListener[Any]:
        """Declare a listener of :class:`Miss` notifications (a channel by default)."""
        delivery: _Delivery[Miss] = _delivery(handler)
        with self._lock:
            lid = self._next_lid
            self._next_lid += 1
            self._miss[lid] = delivery
        return SampleMissListener(self, lid, delivery)

    @overload
    def detect_publishers(self, handler: _Channel[Sample] | None = None, *,
                          history: bool | None = None) -> Subscriber[Handler[Sample]]: ...  # fmt: skip
    @overload
    def detect_publishers(self, handler: _Pair[Sample, T], *, history: bool | None = None) -> Subscriber[T]: ...
    @overload
    def detect_publishers(self, handler: _Callable[Sample], *, history: bool | None = None) -> Subscriber[None]: ...

    def detect_publishers(self, handler: Any = None, *, history: bool | None = None) -> Subscriber[Any]:
        """A liveliness subscriber on the tokens of the matching advanced publishers."""
        return self._session.liveliness().declare_subscriber(_join(self._key, _ADV, "pub", "**"), handler,
                                                             history=history)  # fmt: skip

    def undeclare(self) -> None:
        self._stop.set()
        with self._lock:
            self._timer_cond.notify_all()
        for entity in (self._token, self._heartbeat_sub, self._liveliness_sub, self._subscriber):
            if entity is not None:
                try:
                    entity.undeclare()
                except Exception as exc:  # noqa: BLE001  (the session may be closed already)
                    log.debug("undeclare: %s", exc)
        self._token = self._heartbeat_sub = self._liveliness_sub = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()

    def __repr__(self) -> str:
        return f"AdvancedSubscriber({self._key!r}, id={self.id})"

    # --- delivery (always under self._lock) --------------------------------------------------

    def _deliver(self, sample: Sample) -> None:
        if self._open:
            self._delivery.push(sample)

    def _report_miss(self, source: EntityGlobalId, nb: int) -> None:
        log.debug("sample missed: missed %d samples from %s", nb, source)
        miss = Miss(source, nb)
        for d in list(self._miss.values()):
            d.push(miss)

    def _deliver_and_flush(self, state: _SeqState, sample: Sample, sn: int) -> None:
        self._deliver(sample)
        state.last = sn
        while (nxt := _sn_add(sn, 1)) in state.pending:
            self._deliver(state.pending.pop(nxt))
            sn = state.last = nxt

    def _handle(self, sample: Sample) -> bool:
        """zenoh-ext's handle_sample; True when the sample's source is new."""
        if not self._open:
            return False
        info = sample.source_info
        if info is not None:
            sn = info.source_sn
            new = info.source_id not in self._seq
            state = self._seq.setdefault(info.source_id, _SeqState())
            if state.last is None and self._global_pending != 0:
                if self._max_depth == 1:
                    state.last = sn
                    self._deliver(sample)
                else:
                    state.pending[sn] = sample
                    if self._max_depth is not None and len(state.pending) >= self._max_depth:
                        first = _sn_sorted(list(state.pending))[0]
                        self._deliver_and_flush(state, state.pending.pop(first), first)
            elif state.last is not None and sn != _sn_add(state.last, 1):
                if _sn_cmp(sn, state.last) > 0:
                    if self._recovery:
                        state.pending[sn] = sample
                    else:
                        self._report_miss(info.source_id, (sn - state.last - 1) % _SN_MOD)
                        self._deliver(sample)
                        state.last = sn
            else:
                self._deliver_and_flush(state, sample, sn)
            return new
        ts = sample.timestamp
        if ts is not None:
            tstate = self._ts.setdefault(ts.get_id(), _TsState())
            if tstate.last is None or tstate.last < ts:
                if (self._global_pending == 0 and tstate.pending_queries == 0) or self._max_depth == 1:
                    tstate.last = ts
                    self._deliver(sample)
                else:
                    tstate.pending.setdefault(ts, sample)
                    if self._max_depth is not None and len(tstate.pending) >= self._max_depth:
                        self._flush_ts(tstate)
            return False
        self._deliver(sample)
        return False

    def _flush_seq(self, source: EntityGlobalId, state: _SeqState) -> None:
        if state.pending_queries != 0 or not state.pending or not self._open:
            return
        pending, state.pending = state.pending, {}
        for sn in _sn_sorted(list(pending)):
            sample = pending[sn]
            if state.last is None or sn == _sn_add(state.last, 1):
                state.last = sn
                self._deliver(sample)
            elif _sn_cmp(sn, _sn_add(state.last, 1)) > 0:
                self._report_miss(source, (sn - state.last - 1) % _SN_MOD)
                state.last = sn
                self._deliver(sample)

    def _flush_ts(self, state: _TsState) -> None:
        if state.pending_queries != 0 or not state.pending or not self._open:
            return
        pending, state.pending = state.pending, {}
        for ts in sorted(pending):
            if state.last is None or ts > state.last:
                state.last = ts
                self._deliver(pending[ts])

    # --- callbacks ------------------------------------------------------------------------------

    def _on_sample(self, sample: Sample) -> None:
        with self._lock:
            new = self._handle(sample)
            info = sample.source_info
            if info is None:
                return
            source = info.source_id
            state = self._seq.get(source)
            if state is None:
                return
            if new:
                self._spawn_periodic(source)
            if not (self._recovery and state.pending_queries == 0 and state.pending):
                return
            state.pending_queries += 1
            start = None if state.last is None else _sn_add(state.last, 1)
        self._query(self._source_key(source), _sn_selector(start, None),
                    functools.partial(self._on_seq_done, source))  # fmt: skip

    def _on_subscriber_drop(self) -> None:
        """The subscriber is undeclared (or its session closed): the sample and miss
        handlers end (channels close, ``drop`` callbacks run)."""
        with self._lock:
            self._open = False
            listeners = list(self._miss.values())
            self._miss.clear()
        for d in (self._delivery, *listeners):
            if d.drop is not None:
                d.drop()

    def _on_reply(self, reply: Reply) -> None:
        sample = reply.ok
        if sample is None or not intersects(self._key, str(sample.key_expr)):
            return
        with self._lock:
            self._handle(sample)

    def _on_initial_done(self) -> None:
        with self._lock:
            self._global_pending = max(self._global_pending - 1, 0)
            if self._global_pending == 0:
                for source, state in self._seq.items():
                    self._flush_seq(source, state)
                    self._spawn_periodic(source)
                for tstate in self._ts.values():
                    self._flush_ts(tstate)

    def _on_seq_done(self, source: EntityGlobalId) -> None:
        with self._lock:
            state = self._seq.get(source)
            if state is not None:
                state.pending_queries = max(state.pending_queries - 1, 0)
                if self._global_pending == 0:
                    self._flush_seq(source, state)

    def _on_ts_done(self, tid: TimestampId) -> None:
        with self._lock:
            state = self._ts.get(tid)
            if state is not None:
                state.pending_queries = max(state.pending_queries - 1, 0)
                if self._global_pending == 0:
                    self._flush_ts(state)

    def _on_token(self, sample: Sample) -> None:
        """A publisher token on ``<key>/@adv/pub/**`` (late joiner detection)."""
        key = str(sample.key_expr)
        parsed = _parse_adv(key)
        if parsed is None:
            log.warning("malformed liveliness token key expression: %s", key)
            return
        assert self._history is not None
        params = _history_params(self._history)
        zid = _zid_of(parsed.zid)
        alive = sample.kind is SampleKind.PUT
        done: Callable[[], None]
        with self._lock:
            if zid is not None and parsed.eid == _UHLC:
                tid = TimestampId(zid)
                if not alive:
                    if tid in self._ts:
                        self._ts[tid].alive = False
                    return
                tstate = self._ts.setdefault(tid, _TsState())
                tstate.pending_queries += 1
                tstate.alive = True
                done = functools.partial(self._on_ts_done, tid)
            elif zid is not None:
                eid = _eid_of(parsed.eid)
                if eid is None:
                    return
                source = EntityGlobalId(zid, eid)
                if not alive:
                    if source in self._seq:
                        self._seq[source].alive = False
                    return
                if source not in self._seq:
                    self._seq[source] = _SeqState()
                    self._spawn_periodic(source)
                state = self._seq[source]
                state.pending_queries += 1
                state.alive = True
                done = functools.partial(self._on_seq_done, source)
            else:
                if not alive:
                    return
                self._global_pending += 1
                done = self._on_initial_done
        self._query(key, params, done)

    def _on_heartbeat(self, sample: Sample) -> None:
        if sample.kind is not SampleKind.PUT:
            return
        key = str(sample.key_expr)
        parsed = _parse_adv(key)
        if parsed is None:
            return
        zid = _zid_of(parsed.zid)
        eid = _eid_of(parsed.eid)
        payload = sample.payload.to_bytes()
        if zid is None or eid is None or len(payload) != 4:
            return
        (hb_sn,) = struct.unpack("<I", payload)
        source = EntityGlobalId(zid, eid)
        with self._lock:
            if not self._open:
                return
            if source not in self._seq:
                self._seq[source] = _SeqState()
                self._spawn_periodic(source)
                if self._global_pending > 0:
                    return
            state = self._seq[source]
            if not ((state.last is None or _sn_cmp(hb_sn, state.last) > 0) and state.pending_queries == 0):
                return
            start = None if state.last is None else _sn_add(state.last, 1)
            state.pending_queries += 1
        self._query(key, _sn_selector(start, hb_sn), functools.partial(self._on_seq_done, source))

    # --- queries ---------------------------------------------------------------------------------

    def _source_key(self, source: EntityGlobalId) -> str:
        return _join(self._key, _ADV, "*", str(source.zid), str(source.eid), "**")

    def _query(self, key: str, params: str, done: Callable[[], None]) -> None:
        """A get as zenoh-ext sends them; ``done`` runs once it ends (even if it fails)."""
        selector = f"{key}?{params}" if params else key
        try:
            self._session.get(selector, Callback(self._on_reply, done),
                              consolidation=QueryConsolidation(ConsolidationMode.NONE),
                              accept_replies=ReplyKeyExpr.ANY, target=QueryTarget.ALL,
                              timeout=QUERY_TIMEOUT_S)  # fmt: skip
        except Exception as exc:  # noqa: BLE001  (a closed session: the query is over)
            log.debug("query %s failed: %s", selector, exc)
            done()

    # --- periodic queries ---------------------------------------------------------------------------

    def _spawn_periodic(self, source: EntityGlobalId) -> None:
        """(Re)start ``source``'s periodic queries: the first one a period from now."""
        if self._period is None:
            return
        gen = self._timer_gen.get(source, 0) + 1
        self._timer_gen[source] = gen
        heapq.heappush(self._timers, (time.monotonic() + self._period, gen, source))
        self._timer_cond.notify_all()

    def _run_timers(self) -> None:
        period = self._period
        assert period is not None
        while not self._stop.is_set():
            due_source: EntityGlobalId | None = None
            start: int | None = None
            with self._lock:
                if self._session.is_closed():
                    return
                if not self._timers:
                    self._timer_cond.wait(1.0)
                    continue
                due, gen, source = self._timers[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._timer_cond.wait(min(wait, 1.0))
                    continue
                heapq.heappop(self._timers)
                if self._timer_gen.get(source) != gen:
                    continue  # replaced by a newer task for the source
                heapq.heappush(self._timers, (max(due + period, time.monotonic()), gen, source))
                state = self._seq.get(source)
                if state is not None and self._open:
                    state.pending_queries += 1
                    start = None if state.last is None else _sn_add(state.last, 1)
                    due_source = source
            if due_source is not None:
                self._query(self._source_key(due_source), _sn_selector(start, None),
                            functools.partial(self._on_seq_done, due_source))  # fmt: skip

    # --- miss listeners -------------------------------------------------------------------------------

    def _remove_miss_listener(self, lid: int) -> None:
        with self._lock:
            d = self._miss.pop(lid, None)
        if d is not None and d.drop is not None:
            d.drop()


@overload
def declare_advanced_subscriber(
    session: Session,
    key_expr: KeyExpr | str,
    handler: _Channel[Sample] | None = None,
    *,
    allowed_origin: Locality | None = None,
    history: HistoryConfig | None = None,
    recovery: RecoveryConfig | None = None,
    subscriber_detection: bool | None = None,
) -> AdvancedSubscriber[Handler[Sample]]: ...


@overload
def declare_advanced_subscriber(
    session: Session,
    key_expr: KeyExpr | str,
    handler: _Pair[Sample, H],
    *,
    allowed_origin: Locality | None = None,
    history: HistoryConfig | None = None,
    recovery: RecoveryConfig | None = None,
    subscriber_detection: bool | None = None,
) -> AdvancedSubscriber[H]: ...


@overload
def declare_advanced_subscriber(
    session: Session,
    key_expr: KeyExpr | str,
    handler: _Callable[Sample],
    *,
    allowed_origin: Locality | None = None,
    history: HistoryConfig | None = None,
    recovery: RecoveryConfig | None = None,
    subscriber_detection: bool | None = None,
) -> AdvancedSubscriber[None]: ...


def declare_advanced_subscriber(
    session: Session,
    key_expr: KeyExpr | str,
    handler: Any = None,
    *,
    allowed_origin: Locality | None = None,
    history: HistoryConfig | None = None,
    recovery: RecoveryConfig | None = None,
    subscriber_detection: bool | None = None,
) -> AdvancedSubscriber[Any]:
    """Declare an :class:`AdvancedSubscriber` on ``key_expr``; samples go to ``handler``
    (a channel by default, a callback, or a ``(callback, object)`` tuple)."""
    return AdvancedSubscriber(session, key_expr, handler, allowed_origin=allowed_origin, history=history,
                              recovery=recovery, subscriber_detection=subscriber_detection)  # fmt: skip

