"""An advanced publisher's cache: its last samples, served to recovery and history queries.

The cache keeps the last ``max_samples`` samples (with their source info and timestamp)
and answers queries on the publisher's ``@adv`` key with them, filtered by the ``_sn``,
``_time`` and ``_max`` parameters, each reply being the sample itself (key, timestamp,
source info) with the configured QoS. It declares nothing itself: the blocking and the
asyncio publishers declare a queryable calling :meth:`Cache.on_query` (a reply is a plain
call in both APIs).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from pyzenoh.ext.advanced.config import CacheConfig
from pyzenoh.ext.advanced.protocol import SN_MOD, in_sn_range, sn_range, time_filter
from pyzenoh.session import (
    CongestionControl,
    Encoding,
    Query,
    SampleKind,
    SourceInfo,
    Timestamp,
    ZBytes,
    ZError,
)
from pyzenoh.session.api import del_body, put_body

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CachedSample:
    kind: SampleKind
    payload: ZBytes
    encoding: Encoding | str | None
    attachment: Any
    timestamp: Timestamp | None
    source_info: SourceInfo | None


class Cache:
    """The publisher's last samples, and the answers to the queries on its ``@adv`` key."""

    def __init__(self, key: str, config: CacheConfig) -> None:
        if config.max_samples == 0:
            raise ZError("max_samples must not be zero")
        self._key = key
        self._max = config.max_samples
        self._replies = config.replies_config
        self._lock = threading.Lock()
        self._samples: list[CachedSample] = []

    def add(self, sample: CachedSample) -> None:
        with self._lock:
            if len(self._samples) >= self._max:
                del self._samples[0]
            self._samples.append(sample)

    def on_query(self, query: Query) -> None:
        params = query.parameters
        sn_text = params.get("_sn")
        rng = sn_range(sn_text) if sn_text is not None else (None, None)
        unbounded = rng == (None, None)
        max_text = params.get("_max")
        limit = int(max_text) if max_text is not None and max_text.isdigit() and int(max_text) < SN_MOD else None
        time_text = params.get("_time")
        in_time = None if time_text is None else time_filter(time_text)
        with self._lock:
            chosen = []
            for s in self._samples:
                if not unbounded and (s.source_info is None or not in_sn_range(s.source_info.source_sn, rng)):
                    continue
                if (
                    in_time is not None
                    and s.timestamp is not None
                    and not in_time(s.timestamp.get_time_as_ntp64().as_nanos() / 1e9)
                ):
                    continue
                chosen.append(s)
        if limit is not None:
            chosen = chosen[max(len(chosen) - limit, 0) :] if limit else []
        try:
            for s in chosen:
                try:
                    self._reply(query, s)
                except ZError as exc:  # e.g. a query without _anyke on the @adv key: as zenoh-ext, logged
                    log.warning("AdvancedCache: error replying to query %s: %s", query, exc)
        finally:
            query.drop()

    def _reply(self, query: Query, s: CachedSample) -> None:
        """Reply with the sample itself: its key, timestamp and source info.

        ``Query.reply`` takes no source info (neither does zenoh-python's), so the reply
        is built here and handed to the query's responder."""
        rc = self._replies
        key = query._check(self._key)
        block = rc.congestion_control is not CongestionControl.DROP
        if s.kind is SampleKind.DELETE:
            body: Any = del_body(s.attachment, s.timestamp, s.source_info)
        else:
            body = put_body(s.payload, s.encoding, s.attachment, s.timestamp, s.source_info)
        query._responder.query_reply(query._qref, key, body, rc.priority, rc.express, block)
