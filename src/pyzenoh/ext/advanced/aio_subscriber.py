"""zenoh-ext's AdvancedSubscriber on the asyncio API (:class:`~pyzenoh.session.aio.AsyncSession`).

The same rules as the blocking subscriber (:class:`~.recovery.Recovery`: ordering, miss
detection, history and recovery queries), driven from the session's event loop: samples,
replies and tokens come to loop callbacks, queries are tasks, periodic queries are
``loop.call_later`` timers. No thread and no lock: everything runs in the loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any, Generic, Self

from typing_extensions import override

from pyzenoh.ext.advanced.config import HistoryConfig, RecoveryConfig
from pyzenoh.ext.advanced.delivery import Delivery, H, async_channel_of, make_delivery
from pyzenoh.ext.advanced.listeners import AsyncSampleMissListener
from pyzenoh.ext.advanced.miss_detection import Miss
from pyzenoh.ext.advanced.protocol import ADV, EMPTY, QUERY_TIMEOUT_S, join_key
from pyzenoh.ext.advanced.recovery import Actions, QueryOrder, Recovery
from pyzenoh.ext.advanced.subscriber import check_history
from pyzenoh.handlers import Callback
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import (
    ConsolidationMode,
    EntityGlobalId,
    Locality,
    QueryConsolidation,
    QueryTarget,
    Reply,
    ReplyKeyExpr,
    Sample,
    ZError,
)
from pyzenoh.session.aio import AsyncLivelinessToken, AsyncSession, AsyncSubscriber
from pyzenoh.session.handlers import AsyncHandler
from pyzenoh.session.types import to_key_expr

log = logging.getLogger(__name__)


class AsyncAdvancedSubscriber(Generic[H]):
    """An :class:`~.subscriber.AdvancedSubscriber` in the event loop (see
    :func:`declare_advanced_subscriber`): its channel is an async one (``async for``), its
    callbacks are called in the loop and must not block."""

    def __init__(
        self,
        session: AsyncSession,
        key_expr: KeyExpr,
        handler: Any,
        history: HistoryConfig | None,
        recovery: RecoveryConfig | None,
    ) -> None:
        """Use :func:`declare_advanced_subscriber` (it declares the entities)."""
        self._session = session
        self._loop = session._rt.loop  # the session's loop: its callbacks run there
        self._delivery = make_delivery(handler, asynchronous=True)
        self._key_expr = key_expr
        self._key = str(key_expr)
        self._rules = Recovery(self._key, self._delivery.push, history, recovery)
        self._timers: dict[EntityGlobalId, asyncio.TimerHandle] = {}
        #: queries being sent (a task is only weakly held by the loop)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False
        self._subscriber: AsyncSubscriber[Any] | None = None
        self._liveliness_sub: AsyncSubscriber[Any] | None = None
        self._heartbeat_sub: AsyncSubscriber[Any] | None = None
        self._token: AsyncLivelinessToken | None = None

    async def _declare(
        self,
        allowed_origin: Locality | None,
        history: HistoryConfig | None,
        recovery: RecoveryConfig | None,
        subscriber_detection: bool | None,
    ) -> None:
        s = self._session
        self._subscriber = await s.declare_subscriber(
            self._key_expr, Callback(self._on_sample, self._on_subscriber_drop), allowed_origin=allowed_origin
        )
        try:
            self._act(self._rules.start())
            pubs = join_key(self._key, ADV, "pub", "**")
            if history is not None and history.detect_late_publishers:
                self._liveliness_sub = await s.liveliness().declare_subscriber(pubs, self._on_token, history=True)
            if recovery is not None and recovery.heartbeat:
                self._heartbeat_sub = await s.declare_subscriber(
                    pubs, self._on_heartbeat, allowed_origin=allowed_origin
                )
            if subscriber_detection:
                sid = self._subscriber.id
                self._token = await s.liveliness().declare_token(
                    join_key(self._key, ADV, "sub", str(sid.zid), str(sid.eid), EMPTY)
                )
        except BaseException:
            await self.undeclare()
            raise

    # --- public API -------------------------------------------------------------------------

    @property
    def id(self) -> EntityGlobalId:
        assert self._subscriber is not None
        return self._subscriber.id

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @property
    def handler(self) -> H:
        ret: H = self._delivery.returned
        return ret

    def try_recv(self) -> Sample | None:
        item: Sample | None = async_channel_of(self._delivery.returned).try_recv()
        return item

    async def recv(self) -> Sample:
        item: Sample = await async_channel_of(self._delivery.returned).recv()
        return item

    def __aiter__(self) -> AsyncHandler[Any]:
        return async_channel_of(self._delivery.returned)

    async def sample_miss_listener(self, handler: Any = None) -> AsyncSampleMissListener[Any]:
        """Declare a listener of :class:`Miss` notifications (an async channel by default)."""
        delivery: Delivery[Miss] = make_delivery(handler, asynchronous=True)
        return AsyncSampleMissListener(self, self._rules.add_miss_listener(delivery), delivery)

    def _remove_miss_listener(self, lid: int) -> None:
        d = self._rules.remove_miss_listener(lid)
        if d is not None and d.drop is not None:
            d.drop()

    async def detect_publishers(self, handler: Any = None, *, history: bool | None = None) -> AsyncSubscriber[Any]:
        """A liveliness subscriber on the tokens of the matching advanced publishers."""
        return await self._session.liveliness().declare_subscriber(
            join_key(self._key, ADV, "pub", "**"), handler, history=history
        )

    async def undeclare(self) -> None:
        self._stopped = True
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for entity in (self._token, self._heartbeat_sub, self._liveliness_sub, self._subscriber):
            if entity is not None:
                try:
                    await entity.undeclare()
                except Exception as exc:  # noqa: BLE001  (the session may be closed already)
                    log.debug("undeclare: %s", exc)
        self._token = self._heartbeat_sub = self._liveliness_sub = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()

    @override
    def __repr__(self) -> str:
        return f"AsyncAdvancedSubscriber({self._key!r})"

    # --- the rules' I/O -------------------------------------------------------------------------

    def _act(self, acts: Actions) -> None:
        for source in acts.arm:
            self._spawn_periodic(source)
        for order in acts.queries:
            task = self._loop.create_task(self._query(order))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _query(self, order: QueryOrder) -> None:
        """A get as zenoh-ext sends them; the rules hear when it ends (even if it fails)."""
        selector = f"{order.key}?{order.params}" if order.params else order.key
        done = functools.partial(self._on_query_done, order)
        try:
            await self._session.get(
                selector,
                Callback(self._on_reply, done),
                consolidation=QueryConsolidation(ConsolidationMode.NONE),
                accept_replies=ReplyKeyExpr.ANY,
                target=QueryTarget.ALL,
                timeout=QUERY_TIMEOUT_S,
            )
        except Exception as exc:  # noqa: BLE001  (a closed session: the query is over)
            log.debug("query %s failed: %s", selector, exc)
            done()

    def _on_reply(self, reply: Reply) -> None:
        self._rules.on_reply(reply.ok)

    def _on_query_done(self, order: QueryOrder) -> None:
        self._act(self._rules.query_done(order))

    def _on_sample(self, sample: Sample) -> None:
        self._act(self._rules.on_sample(sample))

    def _on_token(self, sample: Sample) -> None:
        self._act(self._rules.on_token(sample))

    def _on_heartbeat(self, sample: Sample) -> None:
        self._act(self._rules.on_heartbeat(sample))

    def _on_subscriber_drop(self) -> None:
        """The subscriber is undeclared (or its session closed): the sample and miss
        handlers end (channels close, ``drop`` callbacks run)."""
        self._stopped = True
        for d in (self._delivery, *self._rules.close()):
            if d.drop is not None:
                d.drop()

    # --- periodic queries --------------------------------------------------------------------

    def _spawn_periodic(self, source: EntityGlobalId) -> None:
        """(Re)start ``source``'s periodic queries: the first one a period from now."""
        period = self._rules.period
        if period is None or self._stopped:
            return
        old = self._timers.get(source)
        if old is not None:
            old.cancel()
        self._timers[source] = self._loop.call_later(period, self._periodic, source)

    def _periodic(self, source: EntityGlobalId) -> None:
        period = self._rules.period
        if period is None or self._stopped or self._session.is_closed():
            self._timers.pop(source, None)
            return
        self._timers[source] = self._loop.call_later(period, self._periodic, source)
        self._act(self._rules.periodic_due(source))


async def declare_advanced_subscriber(
    session: AsyncSession,
    key_expr: KeyExpr | str,
    handler: Any = None,
    *,
    allowed_origin: Locality | None = None,
    history: HistoryConfig | None = None,
    recovery: RecoveryConfig | None = None,
    subscriber_detection: bool | None = None,
) -> AsyncAdvancedSubscriber[Any]:
    """Declare an :class:`AsyncAdvancedSubscriber` on ``key_expr``; samples go to
    ``handler`` (an async channel by default, a callback called in the loop, or a
    ``(callback, object)`` tuple)."""
    if not isinstance(session, AsyncSession):
        raise ZError(f"an AsyncAdvancedSubscriber needs a pyzenoh AsyncSession, not {session!r}")
    check_history(history)
    sub: AsyncAdvancedSubscriber[Any] = AsyncAdvancedSubscriber(
        session, to_key_expr(key_expr), handler, history, recovery
    )
    await sub._declare(allowed_origin, history, recovery, subscriber_detection)
    return sub
