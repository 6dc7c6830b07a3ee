"""An advanced publisher's rules, sans-IO: what each sample carries, what the cache keeps,
and when a heartbeat goes out.

With ``sample_miss_detection`` each sample carries a source info (the publisher's id and
a sequence number from 0) and, with a heartbeat period, the last sequence number is put
on the publisher's ``@adv`` key every period (``z_serialize`` of a u32; sporadic: only
after a publication). Without it, samples are stamped here (strictly increasing
timestamps, the session's zid as id): subscribers order them by timestamp. The blocking
(:mod:`.publisher`) and the asyncio (:mod:`.aio_publisher`) publishers send what these
rules decide; the blocking one calls them under its lock.
"""

from __future__ import annotations

from typing import Any

from pyzenoh.ext.advanced.cache import Cache, CachedSample
from pyzenoh.ext.advanced.config import CacheConfig, MissDetectionConfig
from pyzenoh.ext.advanced.protocol import ADV, EMPTY, UHLC, join_key, sn_add
from pyzenoh.ext.serialization import UInt32, z_serialize
from pyzenoh.session import (
    CongestionControl,
    Encoding,
    EntityGlobalId,
    SampleKind,
    SourceInfo,
    Timestamp,
    ZBytes,
    ZenohId,
    ZError,
)


def check_cache(cache: CacheConfig | None) -> None:
    if cache is not None and cache.max_samples == 0:
        raise ZError("max_samples must not be zero")


class Publication:
    """The sequence numbers or timestamps, cache and heartbeats of the publisher ``pid``
    on ``key`` (a session ``zid``'s)."""

    def __init__(
        self,
        key: str,
        pid: EntityGlobalId,
        zid: ZenohId,
        cache: CacheConfig | None,
        sample_miss_detection: MissDetectionConfig | None,
    ) -> None:
        self._pid = pid
        self._zid = zid
        self.sequenced = sample_miss_detection is not None
        suffix = join_key(ADV, "pub", str(pid.zid), str(pid.eid) if self.sequenced else UHLC, EMPTY)
        #: the cache's queryable, the token and the heartbeats are on this key
        self.adv_key = join_key(key, suffix)
        self.cache = None if cache is None else Cache(key, cache)
        md = sample_miss_detection
        #: the heartbeat period (s), if any
        self.heartbeat_period = None if md is None else md.period
        self._sporadic = md is not None and md.sporadic
        #: a sporadic heartbeat must not be dropped (zenoh-ext's: CongestionControl.BLOCK)
        self.heartbeat_congestion = CongestionControl.BLOCK if self._sporadic else None
        self._next_sn = 0
        self._last_time = 0
        self._last_beat = 0

    def stamp(self, now: int) -> tuple[SourceInfo | None, Timestamp | None]:
        """The next source info (miss detection), or else a timestamp from ``now`` (NTP64),
        strictly increasing (pyzenoh's stand-in for the HLC the real one needs then)."""
        if self.sequenced:
            info = SourceInfo(self._pid, self._next_sn)
            self._next_sn = sn_add(self._next_sn, 1)
            return info, None
        self._last_time = now = max(now, self._last_time + 1)
        return None, Timestamp(now, self._zid)

    def publish(
        self,
        kind: SampleKind,
        payload: Any,
        encoding: Encoding | str | None,
        attachment: Any,
        timestamp: Timestamp | None,
        now: int,
    ) -> tuple[ZBytes, SourceInfo | None, Timestamp | None]:
        """A sample to send: its payload, source info and timestamp (kept in the cache).
        ``encoding``: the sample's, else the publisher's."""
        info, stamp = self.stamp(now)
        ts = timestamp if timestamp is not None else stamp
        data = ZBytes() if payload is None else payload if isinstance(payload, ZBytes) else ZBytes(payload)
        if self.cache is not None:
            att = None if attachment is None else ZBytes(attachment)
            enc = encoding if kind is SampleKind.PUT else None
            self.cache.add(CachedSample(kind, data, enc, att, ts, info))
        return data, info, ts

    def heartbeat(self) -> ZBytes | None:
        """A heartbeat period passed: the payload to put, if one is due."""
        seqnum = self._next_sn
        if seqnum > 0 and (not self._sporadic or seqnum > self._last_beat):
            self._last_beat = seqnum
            return z_serialize(UInt32(seqnum - 1))
        return None
