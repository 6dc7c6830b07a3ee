"""``import pyzenoh.aio``: the asyncio session API (see :mod:`pyzenoh.session.aio`)."""

from pyzenoh.session.aio import (
    AsyncLiveliness,
    AsyncLivelinessToken,
    AsyncMatchingListener,
    AsyncPublisher,
    AsyncQuerier,
    AsyncQueryable,
    AsyncSession,
    AsyncSubscriber,
    open,
)

__all__ = [
    "AsyncLiveliness",
    "AsyncLivelinessToken",
    "AsyncMatchingListener",
    "AsyncPublisher",
    "AsyncQuerier",
    "AsyncQueryable",
    "AsyncSession",
    "AsyncSubscriber",
    "open",
]
