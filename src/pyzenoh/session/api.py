"""The blocking API, shaped like eclipse-zenoh's Python API.

``pyzenoh.session.open(config)`` returns a :class:`Session`; its event loop runs in a
background thread. Callbacks run in one dispatcher thread per session (so they may block
or call the session again); channel handlers are read from any thread.

Differences from zenoh-python worth knowing: declared entities live until they are
undeclared or the session closes (dropping the Python object does not undeclare them);
``recv`` on channels accepts an optional ``timeout``; sessions do not reconnect.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar

from pyzenoh.codec import Del, Push, Put, WireExpr, ZenohId
from pyzenoh.codec import Encoding as WireEncoding
from pyzenoh.codec.network import qos_value
from pyzenoh.codec.primitives import write_vle
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import types as t
from pyzenoh.session.config import Config, to_config
from pyzenoh.session.handlers import Handler, Sink, make_sink
from pyzenoh.session.runtime import Runtime
from pyzenoh.session.scouting import scouting_budget_s

H = TypeVar("H")
log = logging.getLogger(__name__)

#: Bound on waiting for the background loop to answer a declaration or a query call.
CALL_TIMEOUT_S = 30.0


# --- argument conversion shared with the asyncio API ------------------------------------------


def prio_of(priority: t.Priority | None) -> int:
    if priority is None:
        return t.Priority.DATA.value
    if not isinstance(priority, t.Priority):
        raise UsageError(f"priority must be a Priority, not {priority!r}")
    return priority.value


def block_of(cc: t.CongestionControl | None, default: bool = False) -> bool:
    if cc is None:
        return default
    if not isinstance(cc, t.CongestionControl):
        raise UsageError(f"congestion_control must be a CongestionControl, not {cc!r}")
    return cc is not t.CongestionControl.DROP


def put_body(payload: Any, encoding: Any, attachment: Any, timestamp: t.Timestamp | None) -> Put:
    return Put(
        t.to_payload(payload), t.to_encoding(encoding),
        None if timestamp is None else timestamp.wire,
        attachment=None if attachment is None else t.to_payload(attachment),
    )  # fmt: skip


def del_body(attachment: Any, timestamp: t.Timestamp | None) -> Del:
    return Del(None if timestamp is None else timestamp.wire,
               attachment=None if attachment is None else t.to_payload(attachment))  # fmt: skip


def consolidation_of(value: Any) -> int:
    if value is None:
        return t.ConsolidationMode.AUTO.value
    mode = getattr(value, "mode", value)
    if not isinstance(mode, t.ConsolidationMode):
        raise UsageError(f"consolidation must be a ConsolidationMode, not {value!r}")
    return mode.value


def target_of(value: t.QueryTarget | None) -> int:
    if value is None:
        return 0
    if not isinstance(value, t.QueryTarget):
        raise UsageError(f"target must be a QueryTarget, not {value!r}")
    return value.value


def selector_of(value: t.Selector | KeyExpr | str) -> t.Selector:
    return value if isinstance(value, t.Selector) else t.Selector(value)


def timeout_of(value: float | None) -> float | None:
    if value is None:
        return None
    if value < 0:
        raise UsageError("timeout must be >= 0")
    return float(value)


class PublisherState:
    """What a publisher precomputes: its key, QoS and the encoded PUSH prefix."""

    __slots__ = (
        "block",
        "encoding",
        "express",
        "key",
        "key_expr",
        "local",
        "prefix",
        "priority",
        "reliable",
        "wire_encoding",
    )  # fmt: skip

    def __init__(
        self,
        key_expr: KeyExpr,
        encoding: t.Encoding | str | None,
        congestion_control: t.CongestionControl | None,
        priority: t.Priority | None,
        express: bool | None,
        reliability: t.Reliability | None,
    ) -> None:
        self.key_expr = key_expr
        self.key = str(key_expr)
        self.wire_encoding = t.to_encoding(encoding)
        self.encoding = t.Encoding.from_wire(self.wire_encoding)
        self.priority = prio_of(priority)
        self.block = block_of(congestion_control)
        self.express = bool(express)
        self.reliable = reliability is not t.Reliability.BEST_EFFORT
        self.local = 0
        self.prefix = b""

    def bind(self, local: int, expr_id: int) -> None:
        """Precompute the PUSH bytes up to the payload length, for the declared expr id."""
        self.local = local
        push = Push(WireExpr(expr_id, "", True), Put(b"", self.wire_encoding),
                    qos=qos_value(self.priority, self.block, self.express))  # fmt: skip
        out = bytearray()
        push.write(out)
        assert out[-1] == 0  # the empty payload's length
        self.prefix = bytes(out[:-1])

    def encode(self, payload: bytes) -> bytes:
        n = len(payload)
        if n < 0x80:
            return self.prefix + bytes((n,)) + payload
        out = bytearray(self.prefix)
        write_vle(out, n)
        out += payload
        return bytes(out)

    def declare(self, rt: Runtime) -> None:
        """In the loop: declare the publisher and bind the prefix."""
        core = rt.core
        local = core.declare_publisher(self.key)
        self.bind(local, core.declare_keyexpr(self.key))


# --- the loop thread ------------------------------------------------------------------------


class _LoopThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="pyzenoh-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        try:
            self.loop.call_soon_threadsafe(self.loop.stop)
        except RuntimeError:
            return
        if threading.current_thread() is not self.thread:
            self.thread.join(5.0)
            if not self.thread.is_alive():
                self.loop.close()


def open(config: Config | dict[str, Any] | str | None = None) -> Session:
    """Open a session (client or peer mode) to the first reachable ``connect/endpoints``."""
    cfg = to_config(config)
    cfg.check_open()  # the whole tree; refuses security a session does not implement
    lt = _LoopThread()
    rt = Runtime(cfg, lt.loop, threaded=True)
    fut = asyncio.run_coroutine_threadsafe(rt.connect(), lt.loop)
    budget = cfg.open_timeout_s * max(len(cfg.connect), 1) + 5.0 + scouting_budget_s(cfg)
    try:
        fut.result(budget)
    except BaseException:
        fut.cancel()
        lt.stop()
        raise
    return Session(rt, lt)


# --- entities -----------------------------------------------------------------------------


class _Entity:
    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Callable[[], None]) -> None:
        self._rt = rt
        self._key_expr = key_expr
        self._undeclare_fn: Callable[[], None] | None = undeclare

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    def _undeclare(self) -> None:
        fn = self._undeclare_fn
        if fn is not None and not self._rt.closed:
            self._undeclare_fn = None
            self._rt.submit(fn)


class _Receiver(_Entity, Generic[H]):
    """An entity that delivers items to a handler (channel or callback)."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Callable[[], None], handler: H) -> None:
        super().__init__(rt, key_expr, undeclare)
        self._handler = handler

    @property
    def handler(self) -> H:
        return self._handler

    def _channel(self) -> Any:
        if not isinstance(self._handler, Handler):
            raise UsageError("this entity has a callback, not a channel")
        return self._handler

    def try_recv(self) -> Any:
        return self._channel().try_recv()

    def recv(self, timeout: float | None = None) -> Any:
        return self._channel().recv(timeout)

    def __iter__(self) -> Any:
        return iter(self._channel())

    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


class Subscriber(_Receiver[H]):
    """Samples matching a key expression, to a callback or a channel."""


class Queryable(_Receiver[H]):
    """Queries matching a key expression, to a callback or a channel."""


class MatchingListener(_Receiver[H]):
    """Changes of a publisher's matching status, to a callback or a channel."""


class LivelinessToken(_Entity):
    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


class PublisherSettings:
    """What a publisher (sync or asyncio) was declared with, read from its state."""

    _state: PublisherState

    @property
    def encoding(self) -> t.Encoding:
        return self._state.encoding

    @property
    def priority(self) -> t.Priority:
        return t.Priority(self._state.priority)

    @property
    def congestion_control(self) -> t.CongestionControl:
        return t.CongestionControl.BLOCK if self._state.block else t.CongestionControl.DROP

    @property
    def reliability(self) -> t.Reliability:
        return t.Reliability.RELIABLE if self._state.reliable else t.Reliability.BEST_EFFORT


class Publisher(PublisherSettings, _Entity):
    def __init__(self, rt: Runtime, state: PublisherState) -> None:
        super().__init__(rt, state.key_expr, functools.partial(rt.core.undeclare_publisher, state.local))
        self._state = state

    @property
    def matching_status(self) -> bool:
        local = self._state.local
        return self._rt.call(lambda: self._rt.core.publisher_matching(local), CALL_TIMEOUT_S)

    def put(
        self,
        payload: Any,
        *,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
    ) -> None:
        rt = self._rt
        if rt.closed or self._undeclare_fn is None:
            raise UsageError("the publisher is undeclared or its session closed")
        st = self._state
        if not rt.wait_room(st.block):
            return
        core = rt.core
        if encoding is None and attachment is None and timestamp is None:
            data = t.to_payload(payload)
            rt.submit(functools.partial(_put_fast, core, st, data))
            return
        body = put_body(payload, encoding if encoding is not None else st.encoding, attachment, timestamp)
        rt.submit(functools.partial(core.put, st.key, body, priority=st.priority, block=st.block,
                                    express=st.express, reliable=st.reliable))  # fmt: skip

    def delete(self, *, attachment: Any = None, timestamp: t.Timestamp | None = None) -> None:
        rt = self._rt
        if rt.closed or self._undeclare_fn is None:
            raise UsageError("the publisher is undeclared or its session closed")
        st = self._state
        if not rt.wait_room(st.block):
            return
        body = del_body(attachment, timestamp)
        rt.submit(functools.partial(rt.core.put, st.key, body, priority=st.priority, block=st.block,
                                    express=st.express, reliable=st.reliable))  # fmt: skip

    def declare_matching_listener(self, handler: Any = None) -> MatchingListener[Any]:
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        local = self._state.local
        rt.call(lambda: rt.core.add_matching_listener(local, sink), CALL_TIMEOUT_S)
        return MatchingListener(rt, self.key_expr,
                                functools.partial(rt.core.remove_matching_listener, local, sink), returned)  # fmt: skip

    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


def _put_fast(core: Any, st: PublisherState, data: bytes) -> None:
    core.put_encoded(st.key, st.encode(data), data, st.wire_encoding, priority=st.priority,
                     block=st.block, express=st.express, reliable=st.reliable)  # fmt: skip


class Liveliness:
    def __init__(self, session: Session) -> None:
        self._session = session

    def declare_token(self, key_expr: KeyExpr | str) -> LivelinessToken:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        local = rt.call(lambda: rt.core.declare_token(str(ke)), CALL_TIMEOUT_S)
        return LivelinessToken(rt, ke, functools.partial(rt.core.undeclare_token, local))

    def declare_subscriber(
        self, key_expr: KeyExpr | str, handler: Any = None, *, history: bool | None = None
    ) -> Subscriber[Any]:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        iid = rt.call(lambda: rt.core.declare_liveliness_subscriber(str(ke), bool(history), sink), CALL_TIMEOUT_S)
        return Subscriber(rt, ke, functools.partial(rt.core.undeclare_liveliness_subscriber, iid), returned)

    def get(self, key_expr: KeyExpr | str, handler: Any = None, *, timeout: float | None = None) -> Any:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        to = timeout_of(timeout)
        rt.call(lambda: rt.core.liveliness_get(str(ke), sink, rt.loop.time(), to), CALL_TIMEOUT_S)
        return returned


class SessionInfo:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    def zid(self) -> ZenohId:
        return self._rt.zid

    def routers_zid(self) -> list[ZenohId]:
        peer = self._rt.peer
        from pyzenoh.codec import WhatAmI

        return [peer.zid] if peer is not None and peer.whatami is WhatAmI.ROUTER else []

    def peers_zid(self) -> list[ZenohId]:
        peer = self._rt.peer
        from pyzenoh.codec import WhatAmI

        return [peer.zid] if peer is not None and peer.whatami is WhatAmI.PEER else []


class Session:
    """A client or peer session with one router; see :func:`open`."""

    def __init__(self, rt: Runtime, loop_thread: _LoopThread) -> None:
        self._rt = rt
        self._lt = loop_thread
        self._close_lock = threading.Lock()

    def _live(self) -> Runtime:
        if self._rt.closed:
            raise UsageError("the session is closed")
        return self._rt

    # --- info -----------------------------------------------------------------------------

    @property
    def info(self) -> SessionInfo:
        return SessionInfo(self._rt)

    def zid(self) -> ZenohId:
        return self._rt.zid

    def is_closed(self) -> bool:
        return self._rt.closed

    def new_timestamp(self) -> t.Timestamp:
        return t.Timestamp(time.time_ns() * (1 << 32) // 1_000_000_000, self._rt.zid)

    # --- publication ----------------------------------------------------------------------

    def put(
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
        if rt.wait_room(block):
            rt.submit(functools.partial(rt.core.put, key, body, priority=prio_of(priority), block=block,
                                        express=bool(express),
                                        reliable=reliability is not t.Reliability.BEST_EFFORT))  # fmt: skip

    def delete(
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
        body = del_body(attachment, timestamp)
        block = block_of(congestion_control)
        if rt.wait_room(block):
            rt.submit(functools.partial(rt.core.put, key, body, priority=prio_of(priority), block=block,
                                        express=bool(express),
                                        reliable=reliability is not t.Reliability.BEST_EFFORT))  # fmt: skip

    def declare_publisher(
        self,
        key_expr: KeyExpr | str,
        *,
        encoding: t.Encoding | str | None = None,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        reliability: t.Reliability | None = None,
    ) -> Publisher:
        rt = self._live()
        st = PublisherState(t.to_key_expr(key_expr), encoding, congestion_control, priority, express, reliability)
        rt.call(lambda: st.declare(rt), CALL_TIMEOUT_S)
        return Publisher(rt, st)

    def declare_keyexpr(self, key_expr: KeyExpr | str) -> KeyExpr:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        rt.call(lambda: rt.core.declare_keyexpr(str(ke)), CALL_TIMEOUT_S)
        return ke

    # --- subscription / queries -------------------------------------------------------------

    def declare_subscriber(self, key_expr: KeyExpr | str, handler: Any = None) -> Subscriber[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        local = rt.call(lambda: rt.core.declare_subscriber(str(ke), sink), CALL_TIMEOUT_S)
        return Subscriber(rt, ke, functools.partial(rt.core.undeclare_subscriber, local), returned)

    def declare_queryable(
        self, key_expr: KeyExpr | str, handler: Any = None, *, complete: bool | None = None
    ) -> Queryable[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        local = rt.call(lambda: rt.core.declare_queryable(str(ke), bool(complete), sink), CALL_TIMEOUT_S)
        return Queryable(rt, ke, functools.partial(rt.core.undeclare_queryable, local), returned)

    def get(
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
        """Query; returns the handler (a channel of :class:`Reply` by default)."""
        rt = self._live()
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        call = get_call(rt, selector, sink, target, consolidation, accept_replies, timeout,
                        congestion_control, priority, express, payload, encoding, attachment)  # fmt: skip
        rt.call(call, CALL_TIMEOUT_S)
        return returned

    def liveliness(self) -> Liveliness:
        return Liveliness(self)

    # --- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Send CLOSE and stop; every channel ends, pending gets end."""
        with self._close_lock:
            rt = self._rt
            if self._lt.loop.is_closed():
                return
            if not (rt.closed and rt.link is None):
                fut = asyncio.run_coroutine_threadsafe(rt.aclose(), self._lt.loop)
                try:
                    fut.result(10.0)
                except Exception as exc:  # noqa: BLE001  (closing must not fail)
                    log.debug("error while closing: %s", exc)
            self._lt.stop()
            dispatcher = rt._dispatcher
            if dispatcher is not None:
                dispatcher.stop(5.0)  # let queued callbacks finish (no-op from a callback)

    def _abort(self) -> None:
        """Tests only: drop the TCP connection without CLOSE, like a killed process."""
        self._rt.loop.call_soon_threadsafe(self._rt.abort)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def get_call(
    rt: Runtime,
    selector: t.Selector | KeyExpr | str,
    sink: Sink,
    target: t.QueryTarget | None,
    consolidation: Any,
    accept_replies: t.ReplyKeyExpr | None,
    timeout: float | None,
    congestion_control: t.CongestionControl | None,
    priority: t.Priority | None,
    express: bool | None,
    payload: Any,
    encoding: t.Encoding | str | None,
    attachment: Any,
) -> Callable[[], int]:
    """Validate get() arguments in the caller's thread; the returned call runs in the loop."""
    sel = selector_of(selector)
    key = str(sel.key_expr)
    params = str(sel.parameters)
    tgt = target_of(target)
    cons = consolidation_of(consolidation)
    to = timeout_of(timeout)
    data = None if payload is None else t.to_payload(payload)
    enc: WireEncoding = t.to_encoding(encoding)
    att = None if attachment is None else t.to_payload(attachment)
    prio = prio_of(priority)
    block = block_of(congestion_control, default=True)
    any_key = accept_replies is t.ReplyKeyExpr.ANY

    def call() -> int:
        return rt.core.get(key, params, sink, rt.loop.time(), target=tgt, consolidation=cons, timeout_s=to,
                           payload=data, encoding=enc, attachment=att, priority=prio, block=block,
                           express=bool(express), accept_any=any_key)  # fmt: skip

    return call
