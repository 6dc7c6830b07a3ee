"""zenoh-ext's advanced publication and subscription on the asyncio API: the counterpart
of :mod:`pyzenoh.ext`'s ``declare_advanced_publisher`` / ``declare_advanced_subscriber``
for a :class:`~pyzenoh.session.aio.AsyncSession` (same keywords, same behaviour and the
same rules; see :mod:`pyzenoh.ext.advanced`)::

    import pyzenoh.ext.aio as zx

    pub = await zx.declare_advanced_publisher(s, "demo/k", cache=zx.CacheConfig(max_samples=10))
    sub = await zx.declare_advanced_subscriber(s, "demo/k", history=zx.HistoryConfig())
    misses = await sub.sample_miss_listener()
    async for sample in sub:
        ...
"""

from __future__ import annotations

from pyzenoh.ext.advanced.aio_publisher import AsyncAdvancedPublisher, declare_advanced_publisher
from pyzenoh.ext.advanced.aio_subscriber import AsyncAdvancedSubscriber, declare_advanced_subscriber
from pyzenoh.ext.advanced.config import (
    CacheConfig,
    HistoryConfig,
    MissDetectionConfig,
    RecoveryConfig,
    RepliesConfig,
)
from pyzenoh.ext.advanced.listeners import AsyncSampleMissListener
from pyzenoh.ext.advanced.miss_detection import Miss

__all__ = [
    "AsyncAdvancedPublisher",
    "AsyncAdvancedSubscriber",
    "AsyncSampleMissListener",
    "CacheConfig",
    "HistoryConfig",
    "Miss",
    "MissDetectionConfig",
    "RecoveryConfig",
    "RepliesConfig",
    "declare_advanced_publisher",
    "declare_advanced_subscriber",
]
