"""zenoh-ext's AdvancedSubscriber on the blocking API: its declaration, its public API,
and the I/O of its rules.

An :class:`AdvancedSubscriber` subscribes to its key and hands each sample to its
per-source ordering and recovery rules (:class:`~.recovery.Recovery`, sans-IO, shared with
the asyncio subscriber), under its lock; it sends the queries those rules ask for and runs
their periodic queries on a timer thread. At declaration it sends the history query,
subscribes to the publishers' tokens (``detect_late_publishers``) and heartbeats
(``recovery`` with ``heartbeat``), and with ``subscriber_detection`` declares a token on
``<key>/@adv/sub/<zid>/<eid>/_``.
"""

from __future__ import annotations

import functools
import heapq
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any, Generic, Self, overload

from typing_extensions import override

from pyzenoh.ext.advanced.config import HistoryConfig, RecoveryConfig
from pyzenoh.ext.advanced.delivery import (
    CallableArg,
    ChannelArg,
    Delivery,
    H,
    PairArg,
    T,
    channel_of,
    make_delivery,
)
from pyzenoh.ext.advanced.listeners import SampleMissListener
from pyzenoh.ext.advanced.miss_detection import Miss
from pyzenoh.ext.advanced.protocol import ADV, EMPTY, QUERY_TIMEOUT_S, join_key
from pyzenoh.ext.advanced.recovery import Actions, QueryOrder, Recovery
from pyzenoh.handlers import Callback, Handler
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import (
    ConsolidationMode,
    EntityGlobalId,
    LivelinessToken,
    Locality,
    QueryConsolidation,
    QueryTarget,
    Reply,
    ReplyKeyExpr,
    Sample,
    Session,
    Subscriber,
    ZError,
)
from pyzenoh.session.types import to_key_expr

log = logging.getLogger(__name__)


def check_history(history: HistoryConfig | None) -> None:
    if history is not None:
        if history.max_samples == 0:
            raise ZError("max_samples must not be zero")
        if history.max_age == 0:
            raise ZError("max_age must not be zero")


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
        check_history(history)
        self._session = session
        self._delivery = make_delivery(handler)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        #: periodic query tasks: a heap of (due, generation, source); a source's newest
        #: generation is in _timer_gen (older entries are skipped)
        self._timers: list[tuple[float, int, EntityGlobalId]] = []
        self._timer_gen: dict[EntityGlobalId, int] = {}
        self._timer_cond = threading.Condition(self._lock)
        self._liveliness_sub: Subscriber[Any] | None = None
        self._heartbeat_sub: Subscriber[Any] | None = None
        self._token: LivelinessToken | None = None
        self._key_expr = to_key_expr(key_expr)
        self._key = str(self._key_expr)
        self._rules = Recovery(self._key, self._delivery.push, history, recovery)
        self._subscriber: Subscriber[Any] = session.declare_subscriber(
            self._key_expr, Callback(self._on_sample, self._on_subscriber_drop), allowed_origin=allowed_origin
        )
        try:
            if self._rules.period is not None:
                threading.Thread(target=self._run_timers, name="pyzenoh-adv-queries", daemon=True).start()
            with self._lock:
                acts = self._rules.start()
            self._act(acts)
            if history is not None and history.detect_late_publishers:
                self._liveliness_sub = session.liveliness().declare_subscriber(
                    join_key(self._key, ADV, "pub", "**"), self._on_token, history=True
                )
            if recovery is not None and recovery.heartbeat:
                self._heartbeat_sub = session.declare_subscriber(
                    join_key(self._key, ADV, "pub", "**"), self._on_heartbeat, allowed_origin=allowed_origin
                )
            if subscriber_detection:
                sid = self._subscriber.id
                self._token = session.liveliness().declare_token(
                    join_key(self._key, ADV, "sub", str(sid.zid), str(sid.eid), EMPTY)
                )
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
        item: Sample | None = channel_of(self._delivery.returned).try_recv()
        return item

    def recv(self, timeout: float | None = None) -> Sample:
        item: Sample = channel_of(self._delivery.returned).recv(timeout)
        return item

    def __iter__(self) -> Iterator[Sample]:
        return iter(channel_of(self._delivery.returned))

    @overload
    def sample_miss_listener(self, handler: ChannelArg[Miss] | None = None) -> SampleMissListener[Handler[Miss]]: ...
    @overload
    def sample_miss_listener(self, handler: PairArg[Miss, T]) -> SampleMissListener[T]: ...
    @overload
    def sample_miss_listener(self, handler: CallableArg[Miss]) -> SampleMissListener[None]: ...

    def sample_miss_listener(self, handler: Any = None) -> SampleMissListener[Any]:
        """Declare a listener of :class:`Miss` notifications (a channel by default)."""
        delivery: Delivery[Miss] = make_delivery(handler)
        with self._lock:
            lid = self._rules.add_miss_listener(delivery)
        return SampleMissListener(self, lid, delivery)

    def _remove_miss_listener(self, lid: int) -> None:
        with self._lock:
            d = self._rules.remove_miss_listener(lid)
        if d is not None and d.drop is not None:
            d.drop()

    @overload
    def detect_publishers(
        self, handler: ChannelArg[Sample] | None = None, *, history: bool | None = None
    ) -> Subscriber[Handler[Sample]]: ...
    @overload
    def detect_publishers(self, handler: PairArg[Sample, T], *, history: bool | None = None) -> Subscriber[T]: ...
    @overload
    def detect_publishers(self, handler: CallableArg[Sample], *, history: bool | None = None) -> Subscriber[None]: ...

    def detect_publishers(self, handler: Any = None, *, history: bool | None = None) -> Subscriber[Any]:
        """A liveliness subscriber on the tokens of the matching advanced publishers."""
        return self._session.liveliness().declare_subscriber(
            join_key(self._key, ADV, "pub", "**"), handler, history=history
        )

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

    @override
    def __repr__(self) -> str:
        return f"AdvancedSubscriber({self._key!r}, id={self.id})"

    # --- the rules' I/O -------------------------------------------------------------------------

    def _act(self, acts: Actions) -> None:
        """Arm the timers and send the queries ``acts`` asks for (queries outside the lock)."""
        if acts.arm:
            with self._lock:
                for source in acts.arm:
                    self._spawn_periodic(source)
        for order in acts.queries:
            self._query(order)

    def _query(self, order: QueryOrder) -> None:
        """A get as zenoh-ext sends them; the rules hear when it ends (even if it fails)."""
        selector = f"{order.key}?{order.params}" if order.params else order.key
        done = functools.partial(self._on_query_done, order)
        try:
            self._session.get(
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
        with self._lock:
            self._rules.on_reply(reply.ok)

    def _on_query_done(self, order: QueryOrder) -> None:
        with self._lock:
            acts = self._rules.query_done(order)
        self._act(acts)

    def _on_sample(self, sample: Sample) -> None:
        with self._lock:
            acts = self._rules.on_sample(sample)
        self._act(acts)

    def _on_token(self, sample: Sample) -> None:
        with self._lock:
            acts = self._rules.on_token(sample)
        self._act(acts)

    def _on_heartbeat(self, sample: Sample) -> None:
        with self._lock:
            acts = self._rules.on_heartbeat(sample)
        self._act(acts)

    def _on_subscriber_drop(self) -> None:
        """The subscriber is undeclared (or its session closed): the sample and miss
        handlers end (channels close, ``drop`` callbacks run)."""
        with self._lock:
            listeners = self._rules.close()
        for d in (self._delivery, *listeners):
            if d.drop is not None:
                d.drop()

    # --- periodic queries --------------------------------------------------------------------

    def _spawn_periodic(self, source: EntityGlobalId) -> None:
        """(Re)start ``source``'s periodic queries: the first one a period from now (under the lock)."""
        period = self._rules.period
        if period is None:
            return
        gen = self._timer_gen.get(source, 0) + 1
        self._timer_gen[source] = gen
        heapq.heappush(self._timers, (time.monotonic() + period, gen, source))
        self._timer_cond.notify_all()

    def _run_timers(self) -> None:
        rules = self._rules
        period = rules.period
        assert period is not None
        while not self._stop.is_set():
            acts = None
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
                acts = rules.periodic_due(source)
            self._act(acts)


@overload
def declare_advanced_subscriber(
    session: Session,
    key_expr: KeyExpr | str,
    handler: ChannelArg[Sample] | None = None,
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
    handler: PairArg[Sample, H],
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
    handler: CallableArg[Sample],
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
    return AdvancedSubscriber(
        session,
        key_expr,
        handler,
        allowed_origin=allowed_origin,
        history=history,
        recovery=recovery,
        subscriber_detection=subscriber_detection,
    )
