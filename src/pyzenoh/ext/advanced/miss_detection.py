"""Sample miss detection: an advanced subscriber's per-source ordering, and its misses.

zenoh-ext's ``handle_sample``: a sample with a source info is delivered in sequence
number order per publisher (``SeqState``); one with only a timestamp in timestamp order
per timestamp id (``TsState``); others at once. While history or recovery queries run,
samples wait in ``pending`` (up to the history's ``max_samples``); a gap that recovery
cannot fill, or any gap without recovery, is reported to the miss listeners as a
:class:`Miss` and delivery goes on after it.

:class:`MissDetection` is sans-IO (no lock, no thread, no clock): the blocking and the
asyncio subscribers (:mod:`.subscriber`, :mod:`.aio_subscriber`) both drive it, the
blocking one under its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from pyzenoh.ext.advanced.delivery import Delivery
from pyzenoh.ext.advanced.protocol import SN_MOD, sn_add, sn_cmp, sn_sorted
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


class MissDetection:
    """An advanced subscriber's ordering per source and its miss listeners: samples in,
    samples and :class:`Miss` out (to ``deliver`` and the listeners' deliveries)."""

    def __init__(self, deliver: Callable[[Sample], None], *, recovery: bool, max_depth: int | None) -> None:
        self._deliver_fn = deliver
        #: the subscriber is declared (its handlers not dropped)
        self.open = True
        self._miss: dict[int, Delivery[Miss]] = {}
        self._next_lid = 0
        #: recovery is configured: a gap waits for the queries that may fill it
        self._recovery = recovery
        #: the history's max_samples, if any (samples held per source while queries run)
        self._max_depth = max_depth
        #: history queries still running (live samples wait for them)
        self.global_pending = 0
        self.seq: dict[EntityGlobalId, SeqState] = {}
        self.ts: dict[TimestampId, TsState] = {}

    # --- miss listeners ----------------------------------------------------------------------

    def add_miss_listener(self, delivery: Delivery[Miss]) -> int:
        lid = self._next_lid
        self._next_lid += 1
        self._miss[lid] = delivery
        return lid

    def remove_miss_listener(self, lid: int) -> Delivery[Miss] | None:
        return self._miss.pop(lid, None)

    def close(self) -> list[Delivery[Miss]]:
        """The subscriber is gone: nothing is delivered any more; the listeners to drop."""
        self.open = False
        listeners = list(self._miss.values())
        self._miss.clear()
        return listeners

    # --- ordering and delivery ---------------------------------------------------------------

    def _deliver(self, sample: Sample) -> None:
        if self.open:
            self._deliver_fn(sample)

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

    def handle(self, sample: Sample) -> bool:
        """zenoh-ext's handle_sample; True when the sample's source is new."""
        if not self.open:
            return False
        info = sample.source_info
        if info is not None:
            sn = info.source_sn
            new = info.source_id not in self.seq
            state = self.seq.setdefault(info.source_id, SeqState())
            if state.last is None and self.global_pending != 0:
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
            tstate = self.ts.setdefault(ts.get_id(), TsState())
            if tstate.last is None or tstate.last < ts:
                if (self.global_pending == 0 and tstate.pending_queries == 0) or self._max_depth == 1:
                    tstate.last = ts
                    self._deliver(sample)
                else:
                    tstate.pending.setdefault(ts, sample)
                    if self._max_depth is not None and len(tstate.pending) >= self._max_depth:
                        self.flush_ts(tstate)
            return False
        self._deliver(sample)
        return False

    def flush_seq(self, source: EntityGlobalId, state: SeqState) -> None:
        if state.pending_queries != 0 or not state.pending or not self.open:
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

    def flush_ts(self, state: TsState) -> None:
        if state.pending_queries != 0 or not state.pending or not self.open:
            return
        pending, state.pending = state.pending, {}
        for ts in sorted(pending):
            if state.last is None or ts > state.last:
                state.last = ts
                self._deliver(pending[ts])
