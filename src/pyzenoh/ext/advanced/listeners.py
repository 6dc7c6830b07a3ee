"""An advanced subscriber's sample miss listeners: :class:`Miss` notifications to a
callback or a channel (a blocking one, or an async one for the asyncio subscriber)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Generic, Protocol, Self

from pyzenoh.ext.advanced.delivery import Delivery, H, async_channel_of, channel_of
from pyzenoh.ext.advanced.miss_detection import Miss


class _Owner(Protocol):
    def _remove_miss_listener(self, lid: int) -> None: ...


class SampleMissListener(Generic[H]):
    """:class:`Miss` notifications of an :class:`AdvancedSubscriber`, to a callback or a channel."""

    def __init__(self, owner: _Owner, lid: int, delivery: Delivery[Miss]) -> None:
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


class AsyncSampleMissListener(Generic[H]):
    """:class:`Miss` notifications of an :class:`AsyncAdvancedSubscriber`, to a callback
    (called in the event loop) or an async channel (``async for``)."""

    def __init__(self, owner: _Owner, lid: int, delivery: Delivery[Miss]) -> None:
        self._owner = owner
        self._lid = lid
        self._delivery = delivery

    @property
    def handler(self) -> H:
        ret: H = self._delivery.returned
        return ret

    async def undeclare(self) -> None:
        self._owner._remove_miss_listener(self._lid)

    def try_recv(self) -> Miss | None:
        item: Miss | None = async_channel_of(self._delivery.returned).try_recv()
        return item

    async def recv(self) -> Miss:
        item: Miss = await async_channel_of(self._delivery.returned).recv()
        return item

    def __aiter__(self) -> AsyncIterator[Miss]:
        ch: Any = async_channel_of(self._delivery.returned)
        it: AsyncIterator[Miss] = ch
        return it

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()
