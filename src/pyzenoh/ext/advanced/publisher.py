"""zenoh-ext's AdvancedPublisher: a publisher with a cache, sequence numbers and heartbeats.

With ``sample_miss_detection`` each sample carries a source info (the publisher's id and
a sequence number from 0) and, with a heartbeat period, the last sequence number is put
on the publisher's ``@adv`` key periodically (``z_serialize`` of a u32; sporadic: only
after a publication). Without it, the publisher stamps its samples itself (strictly
increasing timestamps, the session's zid as id): subscribers order them by timestamp. ``cache`` keeps the last samples for queries (:mod:`.cache`);
``publisher_detection`` declares a liveliness token on the ``@adv`` key.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Self

from typing_extensions import override

from pyzenoh.ext.advanced.cache import Cache, CachedSample
from pyzenoh.ext.advanced.config import CacheConfig, MissDetectionConfig
from pyzenoh.ext.advanced.protocol import ADV, EMPTY, UHLC, join_key, sn_add
from pyzenoh.ext.serialization import UInt32, z_serialize
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import (
    CongestionControl,
    Encoding,
    EntityGlobalId,
    LivelinessToken,
    Locality,
    Priority,
    Publisher,
    Reliability,
    SampleKind,
    Session,
    SourceInfo,
    Timestamp,
    TimestampInstrumentation,
    ZBytes,
    ZError,
)

log = logging.getLogger(__name__)


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
            key_expr,
            encoding=encoding,
            congestion_control=congestion_control,
            priority=priority,
            express=express,
            reliability=reliability,
            allowed_destination=allowed_destination,
        )
        self._key = str(self._publisher.key_expr)
        pid = self._publisher.id
        self._sequenced = sample_miss_detection is not None
        suffix = join_key(ADV, "pub", str(pid.zid), str(pid.eid) if self._sequenced else UHLC, EMPTY)
        self._adv_key = join_key(self._key, suffix)
        self._lock = threading.Lock()
        self._next_sn = 0
        self._last_time = 0
        self._stop = threading.Event()
        self._cache: Cache | None = None
        self._token: LivelinessToken | None = None
        self._heartbeat: Publisher | None = None
        try:
            if cache is not None:
                self._cache = Cache(session, self._key, self._adv_key, cache)
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
                self._next_sn = sn_add(self._next_sn, 1)
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
            self._cache.add(CachedSample(SampleKind.PUT, data, enc, att, ts, info))
        self._publisher.put(
            data,
            encoding=encoding,
            attachment=attachment,
            timestamp=ts,
            timestamp_instrumentation=timestamp_instrumentation,
            source_info=info,
        )

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
            self._cache.add(CachedSample(SampleKind.DELETE, ZBytes(), None, att, ts, info))
        self._publisher.delete(
            attachment=attachment, timestamp=ts, timestamp_instrumentation=timestamp_instrumentation, source_info=info
        )

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

    @override
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
    return AdvancedPublisher(
        session,
        key_expr,
        encoding=encoding,
        congestion_control=congestion_control,
        priority=priority,
        express=express,
        reliability=reliability,
        allowed_destination=allowed_destination,
        cache=cache,
        sample_miss_detection=sample_miss_detection,
        publisher_detection=publisher_detection,
    )


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
