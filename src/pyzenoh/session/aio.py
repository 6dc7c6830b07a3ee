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
import time
from typing import Any, Self, TypeVar

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.aio_entities import (
    AsyncLivelinessToken,
    AsyncMatchingListener,
    AsyncPublisher,
    AsyncQuerier,
    AsyncQueryable,
    AsyncSubscriber,
)
from pyzenoh.session.api import (
    PublisherState,
    QuerierSettings,
    SessionInfo,
    attach_token,
    block_of,
    check_token,
    del_body,
    get_call,
    put_body,
)
from pyzenoh.session.api.operations import (
    liveliness_get,
    publication,
    querier_declaration,
    queryable_declaration,
    subscriber_declaration,
)
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.config import Config, to_config
from pyzenoh.session.handlers import make_sink
from pyzenoh.session.lifetime import aclose_on_loop, close_on_drop
from pyzenoh.session.runtime import Runtime

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

H = TypeVar("H")


async def open(config: Config | dict[str, Any] | str | None = None) -> AsyncSession:
    """Open a session in the running loop (client or peer mode)."""
    cfg = to_config(config)
    cfg.check_open()  # the whole tree; refuses security a session does not implement
    rt = Runtime(cfg, asyncio.get_running_loop(), threaded=False)
    await rt.connect()
    return AsyncSession(rt)


class AsyncLiveliness:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def declare_token(self, key_expr: KeyExpr | str) -> AsyncLivelinessToken:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        local = rt.call(lambda: rt.core.declare_token(str(ke)))
        return AsyncLivelinessToken(rt, ke, functools.partial(rt.core.undeclare_token, local), local)

    async def declare_subscriber(
        self, key_expr: KeyExpr | str, handler: Any = None, *, history: bool | None = None
    ) -> AsyncSubscriber[Any]:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        iid = rt.call(lambda: rt.core.declare_liveliness_subscriber(str(ke), bool(history), sink))
        return AsyncSubscriber(rt, ke, functools.partial(rt.core.undeclare_liveliness_subscriber, iid), returned, iid)

    async def get(
        self,
        key_expr: KeyExpr | str,
        handler: Any = None,
        *,
        timeout: float | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> Any:
        rt = self._session._live()
        check_token(cancellation_token)
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        iid = rt.call(liveliness_get(rt, ke, sink, timeout))
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_liveliness_get, iid))
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

    @property
    def id(self) -> t.EntityGlobalId:
        """The session's global id (its zid, entity 0)."""
        return t.EntityGlobalId(self._rt.zid, 0)

    def zid(self) -> ZenohId:
        return self._rt.zid

    def is_closed(self) -> bool:
        return self._rt.closed

    def new_timestamp(self) -> t.Timestamp:
        return t.Timestamp(t.NTP64._from_ns(time.time_ns()), self._rt.zid)

    async def declare_keyexpr(self, key_expr: KeyExpr | str) -> KeyExpr:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        rt.call(lambda: rt.core.declare_user_keyexpr(str(ke)))
        return ke

    async def undeclare(self, obj: Any) -> None:
        """Undeclare a key expression declared with :meth:`declare_keyexpr` (or any
        declared entity: the same as its own ``undeclare()``)."""
        if isinstance(obj, KeyExpr):
            rt = self._live()
            key = str(obj)
            rt.call(lambda: rt.core.undeclare_user_keyexpr(key))
            return
        undeclare = getattr(obj, "undeclare", None)
        if not callable(undeclare):
            raise UsageError(f"cannot undeclare {obj!r}")
        await undeclare()

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
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        allowed_destination: t.Locality | None = None,
        source_info: t.SourceInfo | None = None,
        reliability: t.Reliability | None = None,
    ) -> None:
        body = put_body(payload, encoding, attachment, timestamp, source_info)
        await self._put(
            key_expr,
            body,
            congestion_control,
            priority,
            express,
            reliability,
            allowed_destination,
            timestamp_instrumentation,
        )

    async def delete(
        self,
        key_expr: KeyExpr | str,
        *,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        allowed_destination: t.Locality | None = None,
        source_info: t.SourceInfo | None = None,
        reliability: t.Reliability | None = None,
    ) -> None:
        body = del_body(attachment, timestamp, source_info)
        await self._put(
            key_expr,
            body,
            congestion_control,
            priority,
            express,
            reliability,
            allowed_destination,
            timestamp_instrumentation,
        )

    async def _put(
        self,
        key_expr: KeyExpr | str,
        body: Any,
        congestion_control: t.CongestionControl | None,
        priority: t.Priority | None,
        express: bool | None,
        reliability: t.Reliability | None,
        allowed_destination: t.Locality | None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None,
    ) -> None:
        """A PUT or DELETE body to its key, as the blocking API sends it."""
        rt = self._live()
        p = publication(
            rt,
            key_expr,
            body,
            congestion_control,
            priority,
            express,
            reliability,
            allowed_destination,
            timestamp_instrumentation,
        )
        if await rt.await_room(p.block):
            p.send()
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
        allowed_destination: t.Locality | None = None,
    ) -> AsyncPublisher:
        rt = self._live()
        st = PublisherState(
            t.to_key_expr(key_expr), encoding, congestion_control, priority, express, reliability, allowed_destination
        )
        rt.call(lambda: st.declare(rt))
        return AsyncPublisher(rt, st)

    async def declare_subscriber(
        self, key_expr: KeyExpr | str, handler: Any = None, *, allowed_origin: t.Locality | None = None
    ) -> AsyncSubscriber[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        local, eid = rt.call(subscriber_declaration(rt, ke, sink, allowed_origin))
        return AsyncSubscriber(rt, ke, functools.partial(rt.core.undeclare_subscriber, local), returned, eid)

    async def declare_queryable(
        self,
        key_expr: KeyExpr | str,
        handler: Any = None,
        *,
        complete: bool | None = None,
        allowed_origin: t.Locality | None = None,
    ) -> AsyncQueryable[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=True)
        local, eid = rt.call(queryable_declaration(rt, ke, complete, sink, allowed_origin))
        return AsyncQueryable(rt, ke, functools.partial(rt.core.undeclare_queryable, local), returned, eid)

    async def declare_querier(
        self,
        key_expr: KeyExpr | str,
        *,
        target: t.QueryTarget | None = None,
        consolidation: Any = None,
        accept_replies: t.ReplyKeyExpr | None = None,
        timeout: float | None = None,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        allowed_destination: t.Locality | None = None,
    ) -> AsyncQuerier:
        """An :class:`AsyncQuerier` on ``key_expr`` whose gets use these settings."""
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        qs = QuerierSettings(
            target, consolidation, accept_replies, timeout, congestion_control, priority, express, allowed_destination
        )
        local = rt.call(querier_declaration(rt, ke, qs, allowed_destination))
        return AsyncQuerier(rt, ke, local, qs)

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
        allowed_destination: t.Locality | None = None,
        source_info: t.SourceInfo | None = None,
        cancellation_token: CancellationToken | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
    ) -> Any:
        """Query; returns an async channel of :class:`Reply` (``async for``) by default."""
        rt = self._live()
        check_token(cancellation_token)
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
            allowed_destination=allowed_destination,
            source_info=source_info,
            timestamp_instrumentation=timestamp_instrumentation,
        )
        block = block_of(congestion_control, default=True)
        await rt.await_room(block)
        rid = rt.call(call)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_get, rid))
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
