"""Recovery: the queries an advanced subscriber sends to publishers' caches.

``history`` asks ``<key>/@adv/**`` once at declaration (``_max``, ``_time``) and, with
``detect_late_publishers``, each publisher whose token appears later. ``recovery`` asks a
publisher's cache for what is missing (``<key>/@adv/*/<zid>/<eid>/**?_sn=..``): when a
gap is seen, every ``periodic_queries`` period, or when a heartbeat announces a newer
sequence number. All queries use target All, no consolidation, any reply key and a
10 s timeout, as zenoh-ext's; replies go through the subscriber's ordering
(:mod:`.miss_detection`), and the samples held back are flushed when a query ends.
"""

from __future__ import annotations

import functools
import heapq
import logging
import struct
import threading
import time
from collections.abc import Callable

from pyzenoh.ext.advanced.config import HistoryConfig
from pyzenoh.ext.advanced.miss_detection import MissDetection, SeqState, TsState
from pyzenoh.ext.advanced.protocol import (
    ADV,
    QUERY_TIMEOUT_S,
    UHLC,
    eid_of,
    history_params,
    join_key,
    parse_adv,
    sn_add,
    sn_cmp,
    sn_selector,
    zid_of,
)
from pyzenoh.handlers import Callback
from pyzenoh.keyexpr import intersects
from pyzenoh.session import (
    ConsolidationMode,
    EntityGlobalId,
    QueryConsolidation,
    QueryTarget,
    Reply,
    ReplyKeyExpr,
    Sample,
    SampleKind,
    Session,
    TimestampId,
)

log = logging.getLogger(__name__)


class Recovery(MissDetection):
    """An advanced subscriber's history, late-publisher, heartbeat and periodic queries
    (the state is set up by :class:`~pyzenoh.ext.advanced.subscriber.AdvancedSubscriber`)."""

    _session: Session
    _key: str
    _history: HistoryConfig | None
    #: the periodic_queries period, if any
    _period: float | None
    _stop: threading.Event
    #: periodic query tasks: a heap of (due, generation, source); a source's newest
    #: generation is in _timer_gen (older entries are skipped)
    _timers: list[tuple[float, int, EntityGlobalId]]
    _timer_gen: dict[EntityGlobalId, int]
    _timer_cond: threading.Condition

    # --- queries -----------------------------------------------------------------------------

    def _query(self, key: str, params: str, done: Callable[[], None]) -> None:
        """A get as zenoh-ext sends them; ``done`` runs once it ends (even if it fails)."""
        selector = f"{key}?{params}" if params else key
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

    def _source_key(self, source: EntityGlobalId) -> str:
        return join_key(self._key, ADV, "*", str(source.zid), str(source.eid), "**")

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

    # --- late publishers and heartbeats ------------------------------------------------------

    def _on_token(self, sample: Sample) -> None:
        """A publisher token on ``<key>/@adv/pub/**`` (late joiner detection)."""
        key = str(sample.key_expr)
        parsed = parse_adv(key)
        if parsed is None:
            log.warning("malformed liveliness token key expression: %s", key)
            return
        assert self._history is not None
        params = history_params(self._history)
        zid = zid_of(parsed.zid)
        alive = sample.kind is SampleKind.PUT
        done: Callable[[], None]
        with self._lock:
            if zid is not None and parsed.eid == UHLC:
                tid = TimestampId(zid)
                if not alive:
                    if tid in self._ts:
                        self._ts[tid].alive = False
                    return
                tstate = self._ts.setdefault(tid, TsState())
                tstate.pending_queries += 1
                tstate.alive = True
                done = functools.partial(self._on_ts_done, tid)
            elif zid is not None:
                eid = eid_of(parsed.eid)
                if eid is None:
                    return
                source = EntityGlobalId(zid, eid)
                if not alive:
                    if source in self._seq:
                        self._seq[source].alive = False
                    return
                if source not in self._seq:
                    self._seq[source] = SeqState()
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
        parsed = parse_adv(key)
        if parsed is None:
            return
        zid = zid_of(parsed.zid)
        eid = eid_of(parsed.eid)
        payload = sample.payload.to_bytes()
        if zid is None or eid is None or len(payload) != 4:
            return
        (hb_sn,) = struct.unpack("<I", payload)
        source = EntityGlobalId(zid, eid)
        with self._lock:
            if not self._open:
                return
            if source not in self._seq:
                self._seq[source] = SeqState()
                self._spawn_periodic(source)
                if self._global_pending > 0:
                    return
            state = self._seq[source]
            if not ((state.last is None or sn_cmp(hb_sn, state.last) > 0) and state.pending_queries == 0):
                return
            start = None if state.last is None else sn_add(state.last, 1)
            state.pending_queries += 1
        self._query(key, sn_selector(start, hb_sn), functools.partial(self._on_seq_done, source))

    # --- periodic queries --------------------------------------------------------------------

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
                    start = None if state.last is None else sn_add(state.last, 1)
                    due_source = source
            if due_source is not None:
                self._query(
                    self._source_key(due_source),
                    sn_selector(start, None),
                    functools.partial(self._on_seq_done, due_source),
                )
