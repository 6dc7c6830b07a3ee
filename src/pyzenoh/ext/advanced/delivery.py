"""Where an advanced subscriber's samples and misses go: the user's ``handler`` argument.

zenoh-python's handler kinds (a channel, a ``(callback, object)`` pair, a callback or a
:class:`~pyzenoh.handlers.Callback` with a drop) become a :class:`Delivery`: a push
function, a drop, and what the declaration returns (channels are async ones for the
asyncio API). User callbacks are guarded: an
exception is logged, not raised into the session's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, TypeVar

from pyzenoh.handlers import Callback, DefaultHandler, FifoChannel, Handler, RingChannel
from pyzenoh.session import ZError
from pyzenoh.session.handlers import AsyncHandler

log = logging.getLogger(__name__)

T = TypeVar("T")
H = TypeVar("H")

#: zenoh-python's handler argument kinds (channels, a (callback, object) pair, a callback)
ChannelArg: TypeAlias = DefaultHandler[T] | FifoChannel[T] | RingChannel[T]
PairArg: TypeAlias = tuple[Callable[[T], Any], H]
CallableArg: TypeAlias = Callable[[T], Any] | Callback[T]


@dataclass(slots=True)
class Delivery(Generic[T]):
    """A user ``handler`` argument made into a push function, a drop and the object the
    declaration returns (a channel, the tuple's object, or None)."""

    push: Callable[[T], None]
    drop: Callable[[], None] | None
    returned: Any


def make_delivery(handler: Any, *, asynchronous: bool = False) -> Delivery[Any]:
    """``asynchronous``: channels are async ones (``async for``; the asyncio API's)."""
    if handler is None or isinstance(handler, DefaultHandler):
        handler = FifoChannel()
    if isinstance(handler, FifoChannel | RingChannel):
        if asynchronous:
            ach: AsyncHandler[Any] = AsyncHandler(handler.capacity, isinstance(handler, RingChannel))
            return Delivery(ach.push, ach.close, ach)
        ch: Handler[Any] = Handler(handler.capacity, isinstance(handler, RingChannel))
        return Delivery(ch.push, ch.close, ch)
    returned: Any = None
    if isinstance(handler, tuple):
        if len(handler) != 2 or not callable(handler[0]):
            raise ZError("a handler tuple is (callback, handler_object)")
        handler, returned = handler
    drop: Callable[[], Any] | None = None
    if isinstance(handler, Callback):
        drop = handler.drop
        handler = handler.callback
    if not callable(handler):
        raise ZError(f"unsupported handler {handler!r}")
    return Delivery(guarded(handler), None if drop is None else guarded_drop(drop), returned)


def guarded(fn: Callable[[Any], Any]) -> Callable[[Any], None]:
    def call(item: Any) -> None:
        try:
            fn(item)
        except Exception:
            log.exception("user callback failed")

    return call


def guarded_drop(fn: Callable[[], Any]) -> Callable[[], None]:
    def call() -> None:
        try:
            fn()
        except Exception:
            log.exception("user drop callback failed")

    return call


def channel_of(returned: Any) -> Handler[Any]:
    if not isinstance(returned, Handler):
        raise ZError("this entity has a callback, not a channel")
    return returned


def async_channel_of(returned: Any) -> AsyncHandler[Any]:
    if not isinstance(returned, AsyncHandler):
        raise ZError("this entity has a callback, not a channel")
    return returned
