"""Handlers: how received items (samples, replies, queries) reach user code.

As in zenoh-python, a ``handler`` argument is one of:

* ``None`` / :class:`DefaultHandler` / :class:`FifoChannel` (bounded queue, default
  capacity 256) / :class:`RingChannel` (bounded, drops the oldest when full): the call
  returns a receiver you iterate (``for x in sub`` / ``async for x in sub``);
* a callable, or :class:`Callback` (with an optional ``drop`` called at the end);
* a ``(callable, obj)`` tuple: the callable gets the items, ``obj`` is returned as the handler.

A FIFO channel never blocks the network thread: when it is full the session stops reading
from the socket (TCP back-pressure) until the consumer catches up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from typing_extensions import override

from pyzenoh.errors import PyZenohError, UsageError

T = TypeVar("T")

#: Capacity of the default FIFO channel (zenoh-python's default handler too).
DEFAULT_CHANNEL_CAPACITY = 256


class ChannelClosedError(PyZenohError):
    """recv() or try_recv() on a channel that is closed and empty (a ``ZError``, as
    zenoh-python raises there)."""


# --- What the user passes -----------------------------------------------------------------


class FifoChannel(Generic[T]):
    """A bounded FIFO channel of ``capacity`` items (zenoh's ``handlers.FifoChannel``)."""

    __slots__ = ("capacity",)

    def __init__(self, capacity: int = DEFAULT_CHANNEL_CAPACITY) -> None:
        self.capacity = capacity

    @override
    def __repr__(self) -> str:
        return f"FifoChannel({self.capacity})"


class RingChannel(Generic[T]):
    """A bounded channel that drops the oldest item when full (``handlers.RingChannel``)."""

    __slots__ = ("capacity",)

    def __init__(self, capacity: int = DEFAULT_CHANNEL_CAPACITY) -> None:
        self.capacity = capacity

    @override
    def __repr__(self) -> str:
        return f"RingChannel({self.capacity})"


class DefaultHandler(Generic[T]):
    """The handler used when none is given: a FIFO channel of the default capacity."""

    __slots__ = ()

    @override
    def __repr__(self) -> str:
        return "DefaultHandler()"


class Callback(Generic[T]):
    """A callback, an optional ``drop`` called once the entity is undeclared, and
    ``indirect`` (True: run in the session's callback thread; False: in its network
    thread, which must then never block)."""

    __slots__ = ("_callback", "_drop", "_indirect")

    def __init__(
        self,
        callback: Callable[[T], Any],
        drop: Callable[[], Any] | None = None,
        *,
        indirect: bool = True,
    ) -> None:
        if not callable(callback):
            raise UsageError(f"a Callback needs a callable, not {callback!r}")
        if drop is not None and not callable(drop):
            raise UsageError(f"a Callback's drop must be callable, not {drop!r}")
        self._callback = callback
        self._drop = drop
        self._indirect = bool(indirect)

    @property
    def callback(self) -> Callable[[T], Any]:
        return self._callback

    @property
    def drop(self) -> Callable[[], Any] | None:
        return self._drop

    @property
    def indirect(self) -> bool:
        return self._indirect

    def __call__(self, arg: T, /) -> Any:
        return self._callback(arg)

    @override
    def __repr__(self) -> str:
        return f"Callback({self._callback!r}, drop={self._drop!r}, indirect={self._indirect})"


# --- Sinks: the producer side, fed by the session in its event loop -----------------------


class Sink:
    """Producer interface the session runtime uses (always from the event-loop thread)."""

    def push(self, item: Any) -> None:
        raise NotImplementedError

    def push_many(self, items: list[Any]) -> None:
        """Several items at once, in order (a FRAME's samples on one key)."""
        for item in items:
            self.push(item)

    def close(self) -> None:
        raise NotImplementedError

    @property
    def full(self) -> bool:
        """True asks the runtime to stop reading the socket until :attr:`on_space` fires."""
        return False

    @property
    def flow(self) -> Any:
        """The object whose ``full``/``on_space`` govern back-pressure (shared by sinks
        that feed the same dispatcher thread)."""
        return self

    on_space: Callable[[], None] | None = None


class _BoundedSink(Sink, Generic[T]):
    """The queue both channel kinds share: bounded FIFO (or ring), back-pressure signalled
    by :attr:`full` and released through :attr:`on_space` once half drained."""

    def __init__(self, capacity: int = DEFAULT_CHANNEL_CAPACITY, ring: bool = False) -> None:
        if capacity < 1:
            raise UsageError("channel capacity must be at least 1")
        self.capacity = capacity
        self.ring = ring
        self._items: deque[T] = deque()
        self._closed = False
        self._was_full = False
        self.dropped = 0
        self.on_space: Callable[[], None] | None = None

    @property
    @override
    def full(self) -> bool:
        if self.ring:
            return False
        if len(self._items) >= self.capacity:
            self._was_full = True
            return True
        return False

    def _pop(self) -> T:
        item = self._items.popleft()
        if self._was_full and len(self._items) < max(self.capacity // 2, 1):
            self._was_full = False
            cb = self.on_space
            if cb is not None:
                cb()
        return item


class Handler(_BoundedSink[T]):
    """A bounded FIFO (or ring) receiver read from any thread: ``recv``, ``try_recv``, iteration."""

    def __init__(self, capacity: int = DEFAULT_CHANNEL_CAPACITY, ring: bool = False) -> None:
        super().__init__(capacity, ring)
        self._cond = threading.Condition(threading.Lock())

    # producer side
    @override
    def push(self, item: T) -> None:
        with self._cond:
            if self._closed:
                return
            if self.ring and len(self._items) >= self.capacity:
                self._items.popleft()
                self.dropped += 1
            self._items.append(item)
            self._cond.notify()

    @override
    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # consumer side
    def try_recv(self) -> T | None:
        """The next item, None if there is none yet; ChannelClosedError once the
        channel is closed and empty (as zenoh-python)."""
        with self._cond:
            if self._items:
                return self._pop()
            if self._closed:
                raise ChannelClosedError("channel closed")
            return None

    def recv(self, timeout: float | None = None) -> T:
        """Next item; blocks. Raises ChannelClosedError at the end, TimeoutError on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._items:
                if self._closed:
                    raise ChannelClosedError("channel closed")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError("no item before the timeout")
                self._cond.wait(remaining)
            return self._pop()

    @property
    def is_closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Handler[T]:
        return self

    def __next__(self) -> T:
        try:
            return self.recv()
        except ChannelClosedError:
            raise StopIteration from None


class AsyncHandler(_BoundedSink[T]):
    """A bounded FIFO (or ring) receiver for asyncio code in the session's own loop."""

    def __init__(self, capacity: int = DEFAULT_CHANNEL_CAPACITY, ring: bool = False) -> None:
        super().__init__(capacity, ring)
        self._event = asyncio.Event()

    @override
    def push(self, item: T) -> None:
        if self._closed:
            return
        if self.ring and len(self._items) >= self.capacity:
            self._items.popleft()
            self.dropped += 1
        self._items.append(item)
        self._event.set()

    @override
    def close(self) -> None:
        self._closed = True
        self._event.set()

    def try_recv(self) -> T | None:
        if self._items:
            return self._pop()
        if self._closed:
            raise ChannelClosedError("channel closed")
        return None

    async def recv(self) -> T:
        while not self._items:
            if self._closed:
                raise ChannelClosedError("channel closed")
            self._event.clear()
            await self._event.wait()
        return self._pop()

    @property
    def is_closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._items)

    def __aiter__(self) -> AsyncHandler[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.recv()
        except ChannelClosedError:
            raise StopAsyncIteration from None


class DirectCallbackSink(Sink):
    """Calls the callback right away in the event loop (asyncio API)."""

    def __init__(self, callback: Callable[[Any], Any], drop: Callable[[], Any] | None = None) -> None:
        self.callback = callback
        self.drop = drop

    @override
    def push(self, item: Any) -> None:
        try:
            self.callback(item)
        except Exception:
            import logging

            logging.getLogger(__name__).exception("user callback failed")

    @override
    def close(self) -> None:
        if self.drop is not None:
            try:
                self.drop()
            except Exception:
                import logging

                logging.getLogger(__name__).exception("user drop callback failed")
            self.drop = None


#: A dispatcher runs callbacks of the sync API in its own thread, so user code may block
#: or call the session back; past this many undelivered items the socket stops being read.
DISPATCH_BACKLOG = 1024


class Dispatcher:
    """One thread per sync session that runs user callbacks in order."""

    def __init__(self, name: str) -> None:
        # (callback, item), or (callback, items, True) for a batch handed over at once
        self._items: deque[tuple[Any, ...]] = deque()
        self._queued = 0  # items waiting, batches counted item by item
        self._cond = threading.Condition(threading.Lock())
        self._stopping = False
        self._was_full = False
        self.on_space: Callable[[], None] | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[Any], Any], item: Any) -> None:
        with self._cond:
            self._items.append((fn, item))
            self._queued += 1
            self._cond.notify()

    def submit_many(self, fn: Callable[[Any], Any], items: list[Any]) -> None:
        """``fn`` on each of ``items`` in turn: one hand-over (and wake-up) for all."""
        with self._cond:
            self._items.append((fn, items, True))
            self._queued += len(items)
            self._cond.notify()

    @property
    def full(self) -> bool:
        if self._queued >= DISPATCH_BACKLOG:
            self._was_full = True
            return True
        return False

    def _run(self) -> None:
        import logging

        logger = logging.getLogger(__name__)
        while True:
            with self._cond:
                while not self._items and not self._stopping:
                    self._cond.wait()
                if not self._items:
                    return
                entry = self._items.popleft()
                self._queued -= len(entry[1]) if len(entry) == 3 else 1
                space = self._was_full and self._queued < DISPATCH_BACKLOG // 2
                if space:
                    self._was_full = False
            if space and self.on_space is not None:
                self.on_space()
            fn = entry[0]
            if len(entry) == 3:
                for item in entry[1]:
                    try:
                        fn(item)
                    except Exception:
                        logger.exception("user callback failed")
            else:
                try:
                    fn(entry[1])
                except Exception:
                    logger.exception("user callback failed")
            # drop our references now: a Query is finalised when the last one goes
            del fn, entry

    def barrier(self, timeout: float | None = None) -> None:
        """Wait until every callback queued so far has run (at once from the thread itself,
        or when it has stopped)."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return
        done = threading.Event()
        self.submit(lambda _: done.set(), None)
        done.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Run what is queued, then end the thread; wait up to ``timeout`` (not from itself)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if timeout > 0 and threading.current_thread() is not self._thread:
            self._thread.join(timeout)


class ThreadCallbackSink(Sink):
    """Hands items to the session's dispatcher thread (sync API callbacks)."""

    def __init__(
        self, dispatcher: Dispatcher, callback: Callable[[Any], Any], drop: Callable[[], Any] | None = None
    ) -> None:
        self.dispatcher = dispatcher
        self.callback = callback
        self.drop = drop

    @override
    def push(self, item: Any) -> None:
        self.dispatcher.submit(self.callback, item)

    @override
    def push_many(self, items: list[Any]) -> None:
        self.dispatcher.submit_many(self.callback, items)

    @override
    def close(self) -> None:
        drop = self.drop
        if drop is not None:
            self.drop = None
            self.dispatcher.submit(lambda _: drop(), None)

    @property
    @override
    def full(self) -> bool:
        return self.dispatcher.full

    @property
    @override
    def flow(self) -> Any:
        return self.dispatcher


def make_sink(
    handler: Any,
    *,
    asynchronous: bool,
    dispatcher: Callable[[], Dispatcher] | None = None,
) -> tuple[Sink, Any]:
    """Turn a user ``handler`` argument into (sink for the session, object to return)."""
    if handler is None or isinstance(handler, DefaultHandler):
        handler = FifoChannel()
    if isinstance(handler, FifoChannel | RingChannel):
        ring = isinstance(handler, RingChannel)
        if asynchronous:
            ach: AsyncHandler[Any] = AsyncHandler(handler.capacity, ring)
            return ach, ach
        ch: Handler[Any] = Handler(handler.capacity, ring)
        return ch, ch
    returned: Any = None
    drop = None
    if isinstance(handler, tuple):
        if len(handler) != 2 or not callable(handler[0]):
            raise UsageError("a handler tuple is (callback, handler_object)")
        handler, returned = handler
    direct = False
    if isinstance(handler, Callback):
        drop = handler.drop
        direct = not handler.indirect
        handler = handler.callback
    if not callable(handler):
        raise UsageError(f"unsupported handler {handler!r}")
    if asynchronous or dispatcher is None or direct:
        return DirectCallbackSink(handler, drop), returned
    return ThreadCallbackSink(dispatcher(), handler, drop), returned
