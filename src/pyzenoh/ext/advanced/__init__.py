"""zenoh-ext's advanced publication and subscription, on pyzenoh's session API.

``declare_advanced_publisher`` and ``declare_advanced_subscriber`` (and their configs) have
zenoh-python 1.10's ``zenoh.ext`` names and keywords and follow eclipse-zenoh 1.10.2's
zenoh-ext protocol, so each side works with the real other side:

* An :class:`AdvancedPublisher` publishes on its key. With ``sample_miss_detection`` each
  sample carries a source info (the publisher's id and a sequence number from 0); with a
  ``cache`` the last ``max_samples`` samples are kept and served by a queryable on
  ``<key>/@adv/pub/<zid>/<eid>/_`` (``<eid>`` is ``uhlc`` without miss detection: samples
  are then ordered by their timestamps). The queryable answers the parameters ``_sn``
  (``a..b``, ``a..``, ``..b`` or ``a``: sequence numbers, wrapping), ``_max`` (the last N)
  and ``_time`` (a time range) with the cached samples themselves (their key, source info,
  timestamp). ``publisher_detection`` declares a liveliness token on the same key; a
  heartbeat (``MissDetectionConfig``) puts the last sequence number (``z_serialize`` of a
  u32) on it periodically.
* An :class:`AdvancedSubscriber` subscribes to the key and orders each source's samples:
  by sequence number (one state per publisher id) or by timestamp (one per timestamp id).
  ``history`` queries ``<key>/@adv/**`` once (``_max``, ``_time=[now(-age s)..]``) and,
  with ``detect_late_publishers``, each publisher token appearing on
  ``<key>/@adv/pub/**``; live samples are held back until those queries end. ``recovery``
  asks a publisher's cache for what is missing (``<key>/@adv/*/<zid>/<eid>/**?_sn=..``):
  when a gap is seen, periodically (``periodic_queries``) or when a heartbeat announces a
  newer sequence number (``heartbeat``). A gap that cannot be filled is reported to the
  :meth:`AdvancedSubscriber.sample_miss_listener` listeners as a :class:`Miss`.
  ``subscriber_detection`` declares a token on ``<key>/@adv/sub/<zid>/<eid>/_``.

All queries use target All, no consolidation, any reply key and a 10 s timeout, as the
real subscriber. Differences: pyzenoh sessions have no HLC (a real client session has
none by default either: the router stamps its samples), so an AdvancedPublisher with a
cache and no miss detection, which orders by timestamps, stamps its samples itself
(strictly increasing, the session's zid as id) where the real one needs
``timestamping/enabled``; with miss detection it leaves them unstamped, as a real
client. Subscriber states are never garbage-collected (the Rust API's
``retention_period`` is not in zenoh-python 1.10).

The modules: :mod:`.config` (the configurations), :mod:`.protocol` (``@adv`` keys,
sequence numbers, query parameters), :mod:`.delivery` (handler arguments). The rules,
sans-IO and shared by the blocking and the asyncio API: :mod:`.miss_detection`
(per-source ordering, :class:`Miss`), :mod:`.recovery` (history and recovery queries,
heartbeats: which queries to send, which timers to arm), :mod:`.cache` and
:mod:`.publication` (the publishing side). The shells that do their I/O:
:mod:`.subscriber` and :mod:`.publisher` on a blocking ``Session`` (threads, a lock),
:mod:`.aio_subscriber` and :mod:`.aio_publisher` on an ``AsyncSession`` (tasks and
``loop.call_later``; see :mod:`pyzenoh.ext.aio`); :mod:`.listeners` (sample miss
listeners of both).
"""

from __future__ import annotations

from pyzenoh.ext.advanced.config import (
    CacheConfig,
    HistoryConfig,
    MissDetectionConfig,
    RecoveryConfig,
    RepliesConfig,
)
from pyzenoh.ext.advanced.listeners import SampleMissListener
from pyzenoh.ext.advanced.miss_detection import Miss
from pyzenoh.ext.advanced.protocol import QUERY_TIMEOUT_S as QUERY_TIMEOUT_S
from pyzenoh.ext.advanced.publisher import AdvancedPublisher, declare_advanced_publisher
from pyzenoh.ext.advanced.subscriber import (
    AdvancedSubscriber,
    declare_advanced_subscriber,
)

__all__ = [
    "AdvancedPublisher",
    "AdvancedSubscriber",
    "CacheConfig",
    "HistoryConfig",
    "Miss",
    "MissDetectionConfig",
    "RecoveryConfig",
    "RepliesConfig",
    "SampleMissListener",
    "declare_advanced_publisher",
    "declare_advanced_subscriber",
]
