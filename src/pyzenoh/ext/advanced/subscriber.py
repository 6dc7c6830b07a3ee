"""zenoh-ext's AdvancedSubscriber: its declaration, its public API and its live samples.

An :class:`AdvancedSubscriber` subscribes to its key and hands each sample to its
per-source ordering (:mod:`.miss_detection`), starting recovery queries when a gap is
seen (:mod:`.recovery`). At declaration it sends the history query, subscribes to the
publishers' tokens (``detect_late_publishers``) and heartbeats (``recovery`` with
``heartbeat``), and with ``subscriber_detection`` declares a token on
``<key>/@adv/sub/<zid>/<eid>/_``.
"""

from __future__ import annotations

import functools
import logging
import threading
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
from pyzenoh.ext.advanced.miss_detection import Miss, SeqState, TsState
from pyzenoh.ext.advanced.protocol import (
    ADV,
    EMPTY,
    history_params,
    join_key,
    sn_add,
    sn_selector,
)
from pyzenoh.ext.advanced.recovery import Recovery
from pyzenoh.handlers import Callback, Handler
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import (
    EntityGlobalId,
    LivelinessToken,
    Locality,
    Sample,
    Session,
    Subscriber,
    TimestampId,
    ZError,
)

log = logging.getLogger(__name__)


class AdvancedSubscriber(Recovery, Generic[H]):
    """A subscriber that orders each source's samples, asks for history and recovers
    missed samples (see :func:`declare_advanced_subscriber`). Its ordering and miss
    listeners are :class:`~.miss_detection.MissDetection`'s, its queries
    :class:`~.recovery.Recovery`'s."""

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
        self._delivery = make_delivery(handler)
        self._lock = threading.RLock()
        self._open = True
        self._history = history
        self._recovery = recovery is not None
        self._period = None if recovery is None else recovery.periodic_queries
        self._max_depth = history.max_samples if history is not None and history.max_samples else None
        self._global_pending = 1 if history is not None else 0
        self._seq: dict[EntityGlobalId, SeqState] = {}
        self._ts: dict[TimestampId, TsState] = {}
        self._miss: dict[int, Delivery[Miss]] = {}
        self._next_lid = 0
        self._stop = threading.Event()
        self._timers: list[tuple[float, int, EntityGlobalId]] = []  # (due, generation, source)
        self._timer_gen: dict[EntityGlobalId, int] = {}
        self._timer_cond = threading.Condition(self._lock)
        self._liveliness_sub: Subscriber[Any] | None = None
        self._heartbeat_sub: Subscriber[Any] | None = None
        self._token: LivelinessToken | None = None
        self._subscriber: Subscriber[Any] = session.declare_subscriber(
            key_expr, Callback(self._on_sample, self._on_subscriber_drop), allowed_origin=allowed_origin
        )
        self._key_expr = self._subscriber.key_expr
        self._key = str(self._key_expr)
        try:
            if self._period is not None:
                threading.Thread(target=self._run_timers, name="pyzenoh-adv-queries", daemon=True).start()
            if history is not None:
                params = history_params(history)
                self._query(join_key(self._key, ADV, "**"), params, self._on_initial_done)
                if history.detect_late_publishers:
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
            start = None if state.last is None else sn_add(state.last, 1)
        self._query(self._source_key(source), sn_selector(start, None), functools.partial(self._on_seq_done, source))

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
