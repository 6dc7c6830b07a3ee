"""The asyncio API's declared entities: :mod:`pyzenoh.session.api.entities`,
:mod:`~pyzenoh.session.api.publisher` and :mod:`~pyzenoh.session.api.querier` in the
caller's event loop (what they deliver goes to async channels or loop callbacks)."""

from __future__ import annotations

import functools
from typing import Any, Generic, Self, TypeVar

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.api import (
    PublisherSettings,
    PublisherState,
    QuerierSettings,
    attach_token,
    block_of,
    check_token,
    del_body,
    put_body,
)
from pyzenoh.session.api.operations import is_plain_put, matching_registration, publisher_send, querier_get
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.handlers import AsyncHandler, make_sink
from pyzenoh.session.lifetime import Undeclaration
from pyzenoh.session.runtime import Runtime

H = TypeVar("H")


class _AsyncEntity:
    """A declared entity (see :class:`pyzenoh.session.api.entities.Entity`: the same
    undeclaration, on drop too unless ``background``)."""

    def __init__(
        self, rt: Runtime, key_expr: KeyExpr, undeclare: Any, eid: int = 0, *, background: bool = False
    ) -> None:
        self._rt = rt
        self._key_expr = key_expr
        self._undeclaration = Undeclaration(self, rt, undeclare, background=background)
        self._eid = eid

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @property
    def id(self) -> t.EntityGlobalId:
        """This entity's global id: its session's zid and its entity id."""
        return t.EntityGlobalId(self._rt.zid, self._eid)

    async def undeclare(self) -> None:
        self._undeclaration.run()


class _AsyncReceiver(_AsyncEntity, Generic[H]):
    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Any, handler: H, eid: int = 0) -> None:
        super().__init__(rt, key_expr, undeclare, eid, background=handler is None)
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
        super().__init__(rt, state.key_expr, functools.partial(rt.core.undeclare_publisher, state.local), state.local)
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
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        source_info: t.SourceInfo | None = None,
    ) -> None:
        self._check()
        st = self._state
        rt = self._rt
        if not await rt.await_room(st.block):
            return
        if is_plain_put(encoding, attachment, timestamp, timestamp_instrumentation, source_info):
            st.put_run([t.to_payload(payload)])
        else:
            body = put_body(
                payload, encoding if encoding is not None else st.encoding, attachment, timestamp, source_info
            )
            publisher_send(rt, st, body, timestamp_instrumentation)()
        rt.pump()

    async def delete(
        self,
        *,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        source_info: t.SourceInfo | None = None,
    ) -> None:
        self._check()
        if not await self._rt.await_room(self._state.block):
            return
        publisher_send(self._rt, self._state, del_body(attachment, timestamp, source_info), timestamp_instrumentation)()
        self._rt.pump()

    async def declare_matching_listener(self, handler: Any = None) -> AsyncMatchingListener[Any]:
        self._check()
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=True)
        registration = matching_registration(rt, self._state.local, sink, querier=False)
        rt.call(registration.add)
        return AsyncMatchingListener(rt, self.key_expr, registration.remove, returned)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()


class AsyncQuerier(_AsyncEntity):
    """Queries on one key expression with settings fixed at declaration, in the event loop
    (:class:`pyzenoh.session.api.querier.Querier`'s asyncio counterpart)."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, local: int, settings: QuerierSettings) -> None:
        super().__init__(rt, key_expr, functools.partial(rt.core.undeclare_querier, local), local)
        self._local = local
        self._settings = settings

    @property
    def accept_replies(self) -> t.ReplyKeyExpr:
        return self._settings.accept

    @property
    def matching_status(self) -> t.MatchingStatus:
        return t.MatchingStatus(self._rt.core.querier_matching(self._local))

    async def get(
        self,
        handler: Any = None,
        *,
        parameters: t.Parameters | dict[str, str] | str | None = None,
        payload: Any = None,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
        source_info: t.SourceInfo | None = None,
        cancellation_token: CancellationToken | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
    ) -> Any:
        """Query the querier's key expression; returns an async channel of :class:`Reply`
        (``async for``) by default."""
        rt = self._rt
        if rt.closed or self._undeclaration.done:
            raise UsageError("the querier is undeclared or its session closed")
        check_token(cancellation_token)
        sink, returned = make_sink(handler, asynchronous=True)
        call = querier_get(
            rt,
            self.key_expr,
            self._settings,
            sink,
            parameters,
            payload,
            encoding,
            attachment,
            source_info,
            timestamp_instrumentation,
        )
        await rt.await_room(block_of(self._settings.block, default=True))
        rid = rt.call(call)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_get, rid))
        return returned

    async def declare_matching_listener(self, handler: Any = None) -> AsyncMatchingListener[Any]:
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=True)
        registration = matching_registration(rt, self._local, sink, querier=True)
        rt.call(registration.add)
        return AsyncMatchingListener(rt, self.key_expr, registration.remove, returned)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.undeclare()
