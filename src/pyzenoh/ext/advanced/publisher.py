"""zenoh-ext's AdvancedPublisher on the blocking API: a publisher with a cache, sequence
numbers and heartbeats.

What each sample carries, what the cache keeps and when a heartbeat is due are the rules
of :class:`~.publication.Publication` (shared with the asyncio publisher); this shell
declares the publisher, the cache's queryable and the token, calls the rules under its
lock, and puts the heartbeats from a timer thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Self

from typing_extensions import override

from pyzenoh.ext.advanced.config import CacheConfig, MissDetectionConfig
from pyzenoh.ext.advanced.publication import Publication, check_cache
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import (
    CongestionControl,
    Encoding,
    EntityGlobalId,
    LivelinessToken,
    Locality,
    Priority,
    Publisher,
    Queryable,
    Reliability,
    SampleKind,
    Session,
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
        check_cache(cache)
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
        self._rules = Publication(self._key, self._publisher.id, session.zid(), cache, sample_miss_detection)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._queryable: Queryable[Any] | None = None
        self._token: LivelinessToken | None = None
        self._heartbeat: Publisher | None = None
        rules = self._rules
        try:
            if rules.cache is not None:
                self._queryable = session.declare_queryable(rules.adv_key, rules.cache.on_query)
            if publisher_detection:
                self._token = session.liveliness().declare_token(rules.adv_key)
            if rules.heartbeat_period is not None:
                self._start_heartbeat(rules.heartbeat_period)
        except BaseException:
            self.undeclare()
            raise

    def _start_heartbeat(self, period: float) -> None:
        hb = self._session.declare_publisher(self._rules.adv_key, congestion_control=self._rules.heartbeat_congestion)
        self._heartbeat = hb

        def tick() -> bool:
            if self._session.is_closed():
                return False
            with self._lock:
                beat = self._rules.heartbeat()
            if beat is not None:
                hb.put(beat)
            return True

        _periodic(self._stop, period, tick, "pyzenoh-adv-heartbeat")

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

    def _publish(
        self, kind: SampleKind, payload: Any, encoding: Encoding | str | None, attachment: Any, ts: Timestamp | None
    ) -> tuple[ZBytes, Any, Timestamp | None]:
        now = int(self._session.new_timestamp().get_time_as_ntp64())
        with self._lock:
            return self._rules.publish(kind, payload, encoding, attachment, ts, now)

    def put(
        self,
        payload: Any,
        *,
        encoding: Encoding | str | None = None,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
        timestamp_instrumentation: TimestampInstrumentation | None = None,
    ) -> None:
        enc = encoding if encoding is not None else self._publisher.encoding
        data, info, ts = self._publish(SampleKind.PUT, payload, enc, attachment, timestamp)
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
        _, info, ts = self._publish(SampleKind.DELETE, None, None, attachment, timestamp)
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
        for entity in (self._heartbeat, self._token, self._queryable, self._publisher):
            if entity is not None:
                try:
                    entity.undeclare()
                except Exception as exc:  # noqa: BLE001  (the session may be closed already)
                    log.debug("undeclare: %s", exc)
        self._heartbeat = self._token = self._queryable = None

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
