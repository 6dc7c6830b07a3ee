"""The asyncio API: the same operations as the blocking API, in the caller's event loop.

::

    import pyzenoh.session.aio as aio

    async with await aio.open({"mode": "client", "connect": {"endpoints": [ep]}}) as s:
        sub = await s.declare_subscriber("demo/**")
        await s.put("demo/a", "hello")
        async for sample in sub:
            ...
        async for reply in await s.get("demo/**"):
            ...

Handlers default to an async channel (``async for``); a plain callable is called in the
loop and must not block. Query reply methods are plain (non-blocking) calls.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Generic, Self, TypeVar

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import types as t
from pyzenoh.session.api import (
    PublisherSettings,
    PublisherState,
    SessionInfo,
    block_of,
    del_body,
    get_call,
    prio_of,
    put_body,
    timeout_of,
)
from pyzenoh.session.config import Config, to_config
from pyzenoh.session.handlers import AsyncHandler, make_sink
from pyzenoh.session.lifetime import Undeclaration, aclose_on_loop, close_on_drop
from pyzenoh.session.runtime import Runtime

__all__ = [
    "AsyncLiveliness",
    "AsyncLivelinessToken",
    "AsyncMatchingListener",
    "AsyncPublisher",
    "AsyncQueryable",
    "AsyncSession",
    "AsyncSubscriber",
    "open",
]

H = TypeVar("H")


async def open(config: Config | dict[str, Any] | str | None = None) -> AsyncSession:
    """Open a session in the running loop (client or peer mode)."""
    cfg = to_config(config)
    cfg.check_open()  # the whole tree; refuses security a session does not implement
    rt = Runtime(cfg, asyncio.get_running_loop(), threaded=False)
    await rt.connect()
    return AsyncSession(rt)


class _AsyncEntity:
    """A declared entity (see :class:`pyzenoh.session.api.entities.Entity`: the same
    undeclaration, on drop too unless ``background``)."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Any, *, background: bool = False) -> None:
        self._rt = rt
        self._key_expr = key_expr
        self._undeclaration = Undeclaration(self, rt, undeclare, background=background)

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    async def undeclare(self) -> None:
        self._undeclaration.run()


class _AsyncReceiver(_AsyncEntity, Generic[H]):
    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Any, handler: H) -> None:
        super().__init__(rt, key_expr, undeclare, background=handler is None)
        self._handler = handler

    @property
    def handler(self) -> H:
        return self._handler

    def _channel(self) -> AsyncHandler[Any]:
        if not isinstance(self._handler, AsyncHandler):
            raise UsageError("this entity has a callback, not a channel")
        return self._handler

    async def recv(self) -> Any:
        return await self._channel().recv()

    def try_recv(self) -> Any:
        return self._channel().try_recv()

    def __aiter__(self) -> AsyncHandler[Any]:
        return self._channel()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()


class AsyncSubscriber(_AsyncReceiver[H]):
    pass


class AsyncQueryable(_AsyncReceiver[H]):
    pass


class AsyncMatchingListener(_AsyncReceiver[H]):
    pass


class AsyncLivelinessToken(_AsyncEntity):
    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()


class AsyncPublisher(PublisherSettings, _AsyncEntity):
    def __init__(self, rt: Runtime, state: PublisherState) -> None:
        super().__init__(rt, state.key_expr, functools.partial(rt.core.undeclare_publisher, state.local))
        self._state = state

    @property
    def matching_status(self) -> t.MatchingStatus:
        return t.MatchingStatus(self._rt.core.publisher_matching(self._state.local))

    def _check(self) -> None:
        if self._rt.closed or self._undeclaration.done:
            raise UsageError("the publisher is undeclared or its session closed")

    async def put(
        self,
        payload: Any,
        *,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
    ) -> None:
        self._check()
        st = self._state
        rt = self._rt
        if not await rt.await_room(st.block):
            return
        if encoding is None and attachment is None and timestamp is None:
            st.put_run([t.to_payload(payload)])
        else:
            body = put_body(payload, encoding if encoding is not None else st.encoding, attachment, timestamp)
            rt.core.put(st.key, body, priority=st.priority, block=st.block, express=st.express, reliable=st.reliable)
        rt.pump()

    async def delete(self, *, attachment: Any = None, timestamp: t.Timestamp | None = None) -> None:
        self._check()
        st = self._state
        rt = self._rt
        if not await rt.await_room(st.block):
            return
        rt.core.put(
            st.key,
            del_body(attachment, timestamp),
            priority=st.priority,
            block=st.block,
            express=st.express,
            reliable=st.reliable,
        )
        rt.pump()

    async def declare_matching_listener(self, handler: Any = None) -> AsyncMatchingListener[Any]:
        self._check()
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=True)
        local = self._state.local
        rt.call(lambda: rt.core.add_matching_listener(local, sink))
        return AsyncMatchingListener(
            rt, self.key_expr, functools.partial(rt.core.remove_matching_listener, local, sink), returned
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()


class AsyncLiveliness:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def declare_token(self, key_expr: KeyExpr | str) -> AsyncLivelinessToken:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        local = rt.call(lambda: rt.core.declare_token(str(ke)))
        return AsyncLivelinessToken(rt, ke, functools.partial(rt.core.undeclare_token, local))

    async def declare_subscriber(
        self, key_expr: KeyExpr | str, handler: Any = None, *, history: bool | None = None
    ) -> AsyncSubscriber[Any]:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        iid = rt.call(lambda: rt.core.declare_liveliness_subscriber(str(ke), bool(history), sink))
        return AsyncSubscriber(rt, ke, functools.partial(rt.core.undeclare_liveliness_subscriber, iid), returned)

    async def get(self, key_expr: KeyExpr | str, handler: Any = None, *, timeout: float | None = None) -> Any:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        to = timeout_of(timeout)
        rt.call(lambda: rt.core.liveliness_get(str(ke), sink, rt.loop.time(), to))
        return returned


class AsyncSession:
    """A client or peer session running in the current event loop; see :func:`open`."""

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        # Dropped without close(): closed on its loop, as zenoh-python's sessions are.
        self._on_drop = close_on_drop(self, functools.partial(aclose_on_loop, rt))

    def _live(self) -> Runtime:
        if self._rt.closed:
            raise UsageError("the session is closed")
        return self._rt

    @property
    def info(self) -> SessionInfo:
        return SessionInfo(self._rt)

    def zid(self) -> ZenohId:
        return self._rt.zid

    def is_closed(self) -> bool:
        return self._rt.closed

    async def put(
        self,
        key_expr: KeyExpr | str,
        payload: Any,
        *,
        encoding: t.Encoding | str | None = None,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        reliability: t.Reliability | None = None,
    ) -> None:
        rt = self._live()
        key = str(t.to_key_expr(key_expr))
        body = put_body(payload, encoding, attachment, timestamp)
        block = block_of(congestion_control)
        if await rt.await_room(block):
            rt.core.put(
                key,
                body,
                priority=prio_of(priority),
                block=block,
                express=bool(express),
                reliable=reliability is not t.Reliability.BEST_EFFORT,
            )
            rt.pump()

    async def delete(
        self,
        key_expr: KeyExpr | str,
        *,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        reliability: t.Reliability | None = None,
    ) -> None:
        rt = self._live()
        key = str(t.to_key_expr(key_expr))
        block = block_of(congestion_control)
        if await rt.await_room(block):
            rt.core.put(
                key,
                del_body(attachment, timestamp),
                priority=prio_of(priority),
                block=block,
                express=bool(express),
                reliable=reliability is not t.Reliability.BEST_EFFORT,
            )
            rt.pump()

    async def declare_publisher(
        self,
        key_expr: KeyExpr | str,
        *,
        encoding: t.Encoding | str | None = None,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        reliability: t.Reliability | None = None,
    ) -> AsyncPublisher:
        rt = self._live()
        st = PublisherState(t.to_key_expr(key_expr), encoding, congestion_control, priority, express, reliability)
        rt.call(lambda: st.declare(rt))
        return AsyncPublisher(rt, st)

    async def declare_subscriber(self, key_expr: KeyExpr | str, handler: Any = None) -> AsyncSubscriber[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        local = rt.call(lambda: rt.core.declare_subscriber(str(ke), sink))
        return AsyncSubscriber(rt, ke, functools.partial(rt.core.undeclare_subscriber, local), returned)

    async def declare_queryable(
        self, key_expr: KeyExpr | str, handler: Any = None, *, complete: bool | None = None
    ) -> AsyncQueryable[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        local = rt.call(lambda: rt.core.declare_queryable(str(ke), bool(complete), sink))
        return AsyncQueryable(rt, ke, functools.partial(rt.core.undeclare_queryable, local), returned)

    async def get(
        self,
        selector: t.Selector | KeyExpr | str,
        handler: Any = None,
        *,
        target: t.QueryTarget | None = None,
        consolidation: Any = None,
        accept_replies: t.ReplyKeyExpr | None = None,
        timeout: float | None = None,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        payload: Any = None,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
    ) -> Any:
        """Query; returns an async channel of :class:`Reply` (``async for``) by default."""
        rt = self._live()
        sink, returned = make_sink(handler, asynchronous=True)
        call = get_call(
            rt,
            selector,
            sink,
            target,
            consolidation,
            accept_replies,
            timeout,
            congestion_control,
            priority,
            express,
            payload,
            encoding,
            attachment,
        )
        block = block_of(congestion_control, default=True)
        await rt.await_room(block)
        rt.call(call)
        return returned

    def liveliness(self) -> AsyncLiveliness:
        return AsyncLiveliness(self)

    async def close(self) -> None:
        self._on_drop.detach()
        await self._rt.aclose()

    def _abort(self) -> None:
        """Tests only: drop the connection without CLOSE."""
        self._rt.abort()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
