"""zenoh-ext's AdvancedPublisher on the asyncio API (:class:`~pyzenoh.session.aio.AsyncSession`).

The same rules as the blocking publisher (:class:`~.publication.Publication`: sequence
numbers or timestamps, the cache and its answers, heartbeats), driven from the session's
event loop: the cache answers from a loop callback, the heartbeat is a task. No thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Self

from typing_extensions import override

from pyzenoh.ext.advanced.config import CacheConfig, MissDetectionConfig
from pyzenoh.ext.advanced.publication import Publication, check_cache
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import (
    CongestionControl,
    Encoding,
    EntityGlobalId,
    Locality,
    MatchingStatus,
    Priority,
    Reliability,
    SampleKind,
    Timestamp,
    TimestampInstrumentation,
    ZBytes,
    ZError,
)
from pyzenoh.session.aio import (
    AsyncLivelinessToken,
    AsyncMatchingListener,
    AsyncPublisher,
    AsyncQueryable,
    AsyncSession,
)

log = logging.getLogger(__name__)


class AsyncAdvancedPublisher:
    """An :class:`~.publisher.AdvancedPublisher` in the event loop (see
    :func:`declare_advanced_publisher`)."""

    def __init__(self, session: AsyncSession, publisher: AsyncPublisher, rules: Publication) -> None:
        """Use :func:`declare_advanced_publisher` (it declares the entities)."""
        self._session = session
        self._publisher = publisher
        self._rules = rules
        self._key = str(publisher.key_expr)
        self._queryable: AsyncQueryable[Any] | None = None
        self._token: AsyncLivelinessToken | None = None
        self._heartbeat: AsyncPublisher | None = None
        self._beating: asyncio.Task[None] | None = None

    async def _declare(self, publisher_detection: bool | None) -> None:
        s = self._session
        rules = self._rules
        try:
            if rules.cache is not None:
                self._queryable = await s.declare_queryable(rules.adv_key, rules.cache.on_query)
            if publisher_detection:
                self._token = await s.liveliness().declare_token(rules.adv_key)
            if rules.heartbeat_period is not None:
                self._heartbeat = await s.declare_publisher(
                    rules.adv_key, congestion_control=rules.heartbeat_congestion
                )
                self._beating = s._rt.loop.create_task(self._beat(self._heartbeat, rules.heartbeat_period))
        except BaseException:
            await self.undeclare()
            raise

    async def _beat(self, hb: AsyncPublisher, period: float) -> None:
        """Every ``period`` s, the heartbeat the rules ask for."""
        while not self._session.is_closed():
            await asyncio.sleep(period)
            beat = self._rules.heartbeat()
            if beat is not None:
                try:
                    await hb.put(beat)
                except Exception as exc:  # noqa: BLE001  (undeclared or closed meanwhile: the beat ends)
                    log.debug("heartbeat: %s", exc)
                    return

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
        return self._rules.publish(kind, payload, encoding, attachment, ts, now)

    async def put(
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
        await self._publisher.put(
            data,
            encoding=encoding,
            attachment=attachment,
            timestamp=ts,
            timestamp_instrumentation=timestamp_instrumentation,
            source_info=info,
        )

    async def delete(
        self,
        *,
        attachment: Any = None,
        timestamp: Timestamp | None = None,
        timestamp_instrumentation: TimestampInstrumentation | None = None,
    ) -> None:
        _, info, ts = self._publish(SampleKind.DELETE, None, None, attachment, timestamp)
        await self._publisher.delete(
            attachment=attachment, timestamp=ts, timestamp_instrumentation=timestamp_instrumentation, source_info=info
        )

    @property
    def matching_status(self) -> MatchingStatus:
        return self._publisher.matching_status

    async def declare_matching_listener(self, handler: Any = None) -> AsyncMatchingListener[Any]:
        return await self._publisher.declare_matching_listener(handler)

    async def undeclare(self) -> None:
        if self._beating is not None:
            self._beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beating
            self._beating = None
        for entity in (self._heartbeat, self._token, self._queryable, self._publisher):
            if entity is not None:
                try:
                    await entity.undeclare()
                except Exception as exc:  # noqa: BLE001  (the session may be closed already)
                    log.debug("undeclare: %s", exc)
        self._heartbeat = self._token = self._queryable = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()

    @override
    def __repr__(self) -> str:
        return f"AsyncAdvancedPublisher({self._key!r}, id={self.id})"


async def declare_advanced_publisher(
    session: AsyncSession,
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
) -> AsyncAdvancedPublisher:
    """Declare an :class:`AsyncAdvancedPublisher` on ``key_expr``."""
    if not isinstance(session, AsyncSession):
        raise ZError(f"an AsyncAdvancedPublisher needs a pyzenoh AsyncSession, not {session!r}")
    check_cache(cache)
    publisher = await session.declare_publisher(
        key_expr,
        encoding=encoding,
        congestion_control=congestion_control,
        priority=priority,
        express=express,
        reliability=reliability,
        allowed_destination=allowed_destination,
    )
    rules = Publication(str(publisher.key_expr), publisher.id, session.zid(), cache, sample_miss_detection)
    pub = AsyncAdvancedPublisher(session, publisher, rules)
    await pub._declare(publisher_detection)
    return pub
