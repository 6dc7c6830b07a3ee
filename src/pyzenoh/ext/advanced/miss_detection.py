"""Sample miss detection: an advanced subscriber's per-source ordering, and its misses.

zenoh-ext's ``handle_sample``: a sample with a source info is delivered in sequence
number order per publisher (``SeqState``); one with only a timestamp in timestamp order
per timestamp id (``TsState``); others at once. While history or recovery queries run,
samples wait in ``pending`` (up to the history's ``max_samples``); a gap that recovery
cannot fill, or any gap without recovery, is reported to the miss listeners as a
:class:`Miss` and delivery goes on after it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Self, overload

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
from pyzenoh.ext.advanced.protocol import SN_MOD, sn_add, sn_cmp, sn_sorted
from pyzenoh.handlers import Handler
from pyzenoh.session import EntityGlobalId, Sample, Timestamp, TimestampId

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Miss:
    """``nb`` consecutive samples of the publisher ``source`` that were not received."""

    source: EntityGlobalId
    nb: int


@dataclass(slots=True)
class SeqState:
    last: int | None = None
    pending_queries: int = 0
    pending: dict[int, Sample] = field(default_factory=dict)
    alive: bool = False


@dataclass(slots=True)
class TsState:
    last: Timestamp | None = None
    pending_queries: int = 0
    pending: dict[Timestamp, Sample] = field(default_factory=dict)
    alive: bool = False


class SampleMissListener(Generic[H]):
    """:class:`Miss` notifications of an :class:`AdvancedSubscriber`, to a callback or a channel."""

    def __init__(self, owner: MissDetection, lid: int, delivery: Delivery[Miss]) -> None:
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
        item: Miss | None = channel_of(self._delivery.returned).try_recv()
        return item

    def recv(self, timeout: float | None = None) -> Miss:
        item: Miss = channel_of(self._delivery.returned).recv(timeout)
        return item

    def __iter__(self) -> Iterator[Miss]:
        return iter(channel_of(self._delivery.returned))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


class MissDetection:
    """An advanced subscriber's ordering per source and its miss listeners (the state is
    set up by :class:`~pyzenoh.ext.advanced.subscriber.AdvancedSubscriber`)."""

    _lock: threading.RLock
    #: the subscriber is declared (its handlers not dropped)
    _open: bool
    _delivery: Delivery[Any]
    _miss: dict[int, Delivery[Miss]]
    _next_lid: int
    #: recovery is configured: a gap waits for the queries that may fill it
    _recovery: bool
    #: the history's max_samples, if any (samples held per source while queries run)
    _max_depth: int | None
    #: history queries still running (live samples wait for them)
    _global_pending: int
    _seq: dict[EntityGlobalId, SeqState]
    _ts: dict[TimestampId, TsState]

    # --- miss listeners ----------------------------------------------------------------------

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
            lid = self._next_lid
            self._next_lid += 1
            self._miss[lid] = delivery
        return SampleMissListener(self, lid, delivery)

    def _remove_miss_listener(self, lid: int) -> None:
        with self._lock:
            d = self._miss.pop(lid, None)
        if d is not None and d.drop is not None:
            d.drop()

    # --- ordering and delivery (always under self._lock) -------------------------------------

    def _deliver(self, sample: Sample) -> None:
        if self._open:
            self._delivery.push(sample)

    def _report_miss(self, source: EntityGlobalId, nb: int) -> None:
        log.debug("sample missed: missed %d samples from %s", nb, source)
        miss = Miss(source, nb)
        for d in list(self._miss.values()):
            d.push(miss)

    def _deliver_and_flush(self, state: SeqState, sample: Sample, sn: int) -> None:
        self._deliver(sample)
        state.last = sn
        while (nxt := sn_add(sn, 1)) in state.pending:
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
            state = self._seq.setdefault(info.source_id, SeqState())
            if state.last is None and self._global_pending != 0:
                if self._max_depth == 1:
                    state.last = sn
                    self._deliver(sample)
                else:
                    state.pending[sn] = sample
                    if self._max_depth is not None and len(state.pending) >= self._max_depth:
                        first = sn_sorted(list(state.pending))[0]
                        self._deliver_and_flush(state, state.pending.pop(first), first)
            elif state.last is not None and sn != sn_add(state.last, 1):
                if sn_cmp(sn, state.last) > 0:
                    if self._recovery:
                        state.pending[sn] = sample
                    else:
                        self._report_miss(info.source_id, (sn - state.last - 1) % SN_MOD)
                        self._deliver(sample)
                        state.last = sn
            else:
                self._deliver_and_flush(state, sample, sn)
            return new
        ts = sample.timestamp
        if ts is not None:
            tstate = self._ts.setdefault(ts.get_id(), TsState())
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

    def _flush_seq(self, source: EntityGlobalId, state: SeqState) -> None:
        if state.pending_queries != 0 or not state.pending or not self._open:
            return
        pending, state.pending = state.pending, {}
        for sn in sn_sorted(list(pending)):
            sample = pending[sn]
            if state.last is None or sn == sn_add(state.last, 1):
                state.last = sn
                self._deliver(sample)
            elif sn_cmp(sn, sn_add(state.last, 1)) > 0:
                self._report_miss(source, (sn - state.last - 1) % SN_MOD)
                state.last = sn
                self._deliver(sample)

    def _flush_ts(self, state: TsState) -> None:
        if state.pending_queries != 0 or not state.pending or not self._open:
            return
        pending, state.pending = state.pending, {}
        for ts in sorted(pending):
            if state.last is None or ts > state.last:
                state.last = ts
                self._deliver(pending[ts])
