"""Recovery: the queries an advanced subscriber sends to publishers' caches, decided sans-IO.

``history`` asks ``<key>/@adv/**`` once at declaration (``_max``, ``_time``) and, with
``detect_late_publishers``, each publisher whose token appears later. ``recovery`` asks a
publisher's cache for what is missing (``<key>/@adv/*/<zid>/<eid>/**?_sn=..``): when a
gap is seen, every ``periodic_queries`` period, or when a heartbeat announces a newer
sequence number. All queries use target All, no consolidation, any reply key and a
10 s timeout, as zenoh-ext's; replies go through the subscriber's ordering
(:mod:`.miss_detection`), and the samples held back are flushed when a query ends.

:class:`Recovery` decides; it sends nothing and keeps no timer. Each event method returns
:class:`Actions`: the queries to send (a :class:`QueryOrder`, handed back to
:meth:`Recovery.query_done` when the query ends) and the sources whose periodic queries
(re)start, the first one a period from now (the shell then calls
:meth:`Recovery.periodic_due` every period). The blocking shell (:mod:`.subscriber`)
sends with threads and its lock, the asyncio one (:mod:`.aio_subscriber`) with tasks.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from pyzenoh.ext.advanced.config import HistoryConfig, RecoveryConfig
from pyzenoh.ext.advanced.miss_detection import MissDetection, SeqState, TsState
from pyzenoh.ext.advanced.protocol import (
    ADV,
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
from pyzenoh.keyexpr import intersects
from pyzenoh.session import EntityGlobalId, Sample, SampleKind, TimestampId

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class QueryOrder:
    """A get to send on ``key`` with ``params``; ``waiter`` is what waits for its end:
    a publisher (sequence numbers), a timestamp id, or None (a history query)."""

    key: str
    params: str
    waiter: EntityGlobalId | TimestampId | None


@dataclass(slots=True)
class Actions:
    queries: list[QueryOrder] = field(default_factory=list)
    #: sources whose periodic queries (re)start, the first one a period from now
    arm: list[EntityGlobalId] = field(default_factory=list)


class Recovery(MissDetection):
    """An advanced subscriber's ordering plus its history, late-publisher, heartbeat and
    periodic query decisions."""

    def __init__(
        self,
        key: str,
        deliver: Callable[[Sample], None],
        history: HistoryConfig | None,
        recovery: RecoveryConfig | None,
    ) -> None:
        max_depth = history.max_samples if history is not None and history.max_samples else None
        super().__init__(deliver, recovery=recovery is not None, max_depth=max_depth)
        # live samples wait for the history query from the subscriber's declaration on
        self.global_pending = 1 if history is not None else 0
        self.key = key
        self._history = history
        #: the periodic_queries period, if any
        self.period = None if recovery is None else recovery.periodic_queries

    # --- queries -----------------------------------------------------------------------------

    def start(self) -> Actions:
        """At declaration: the history query, if any."""
        if self._history is None:
            return Actions()
        return Actions([QueryOrder(join_key(self.key, ADV, "**"), history_params(self._history), None)])

    def _arm(self, acts: Actions, source: EntityGlobalId) -> None:
        if self.period is not None:
            acts.arm.append(source)

    def source_key(self, source: EntityGlobalId) -> str:
        return join_key(self.key, ADV, "*", str(source.zid), str(source.eid), "**")

    def on_reply(self, sample: Sample | None) -> None:
        if sample is None or not intersects(self.key, str(sample.key_expr)):
            return
        self.handle(sample)

    def query_done(self, order: QueryOrder) -> Actions:
        """``order``'s query ended (replied, timed out or failed)."""
        acts = Actions()
        waiter = order.waiter
        if waiter is None:
            self.global_pending = max(self.global_pending - 1, 0)
            if self.global_pending == 0:
                for source, state in self.seq.items():
                    self.flush_seq(source, state)
                    self._arm(acts, source)
                for tstate in self.ts.values():
                    self.flush_ts(tstate)
        elif isinstance(waiter, EntityGlobalId):
            sstate = self.seq.get(waiter)
            if sstate is not None:
                sstate.pending_queries = max(sstate.pending_queries - 1, 0)
                if self.global_pending == 0:
                    self.flush_seq(waiter, sstate)
        else:
            tsstate = self.ts.get(waiter)
            if tsstate is not None:
                tsstate.pending_queries = max(tsstate.pending_queries - 1, 0)
                if self.global_pending == 0:
                    self.flush_ts(tsstate)
        return acts

    def on_sample(self, sample: Sample) -> Actions:
        """A live sample: ordered, and a gap with recovery asks the publisher's cache."""
        acts = Actions()
        new = self.handle(sample)
        info = sample.source_info
        if info is None:
            return acts
        source = info.source_id
        state = self.seq.get(source)
        if state is None:
            return acts
        if new:
            self._arm(acts, source)
        if self._recovery and state.pending_queries == 0 and state.pending:
            state.pending_queries += 1
            start = None if state.last is None else sn_add(state.last, 1)
            acts.queries.append(QueryOrder(self.source_key(source), sn_selector(start, None), source))
        return acts

    # --- late publishers and heartbeats ------------------------------------------------------

    def on_token(self, sample: Sample) -> Actions:
        """A publisher token on ``<key>/@adv/pub/**`` (late joiner detection)."""
        acts = Actions()
        key = str(sample.key_expr)
        parsed = parse_adv(key)
        if parsed is None:
            log.warning("malformed liveliness token key expression: %s", key)
            return acts
        assert self._history is not None
        params = history_params(self._history)
        zid = zid_of(parsed.zid)
        alive = sample.kind is SampleKind.PUT
        waiter: EntityGlobalId | TimestampId | None
        if zid is not None and parsed.eid == UHLC:
            tid = TimestampId(zid)
            if not alive:
                if tid in self.ts:
                    self.ts[tid].alive = False
                return acts
            tstate = self.ts.setdefault(tid, TsState())
            tstate.pending_queries += 1
            tstate.alive = True
            waiter = tid
        elif zid is not None:
            eid = eid_of(parsed.eid)
            if eid is None:
                return acts
            source = EntityGlobalId(zid, eid)
            if not alive:
                if source in self.seq:
                    self.seq[source].alive = False
                return acts
            if source not in self.seq:
                self.seq[source] = SeqState()
                self._arm(acts, source)
            state = self.seq[source]
            state.pending_queries += 1
            state.alive = True
            waiter = source
        else:
            if not alive:
                return acts
            self.global_pending += 1
            waiter = None
        acts.queries.append(QueryOrder(key, params, waiter))
        return acts

    def on_heartbeat(self, sample: Sample) -> Actions:
        acts = Actions()
        if sample.kind is not SampleKind.PUT or not self.open:
            return acts
        key = str(sample.key_expr)
        parsed = parse_adv(key)
        if parsed is None:
            return acts
        zid = zid_of(parsed.zid)
        eid = eid_of(parsed.eid)
        payload = sample.payload.to_bytes()
        if zid is None or eid is None or len(payload) != 4:
            return acts
        (hb_sn,) = struct.unpack("<I", payload)
        source = EntityGlobalId(zid, eid)
        if source not in self.seq:
            self.seq[source] = SeqState()
            self._arm(acts, source)
            if self.global_pending > 0:
                return acts
        state = self.seq[source]
        if not ((state.last is None or sn_cmp(hb_sn, state.last) > 0) and state.pending_queries == 0):
            return acts
        start = None if state.last is None else sn_add(state.last, 1)
        state.pending_queries += 1
        acts.queries.append(QueryOrder(key, sn_selector(start, hb_sn), source))
        return acts

    # --- periodic queries --------------------------------------------------------------------

    def periodic_due(self, source: EntityGlobalId) -> Actions:
        """A period of ``source``'s periodic queries has passed: ask for what is newer."""
        acts = Actions()
        state = self.seq.get(source)
        if state is not None and self.open:
            state.pending_queries += 1
            start = None if state.last is None else sn_add(state.last, 1)
            acts.queries.append(QueryOrder(self.source_key(source), sn_selector(start, None), source))
        return acts
