"""The blocking session: :func:`open`, :class:`Session` and its liveliness namespace.

:func:`open` starts the session's event loop in a background thread (``_LoopThread``)
and connects; every :class:`Session` method checks its arguments in the caller's thread
and runs the core call in that loop (waiting for its result when it has one).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from typing import Any, Self

from pyzenoh.codec import ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import KeyExpr
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.api.arguments import (
    CALL_TIMEOUT_S,
    attach_token,
    check_token,
    del_body,
    get_call,
    put_body,
)
from pyzenoh.session.api.entities import LivelinessToken, Queryable, Subscriber
from pyzenoh.session.api.operations import (
    liveliness_get,
    publication,
    querier_declaration,
    queryable_declaration,
    subscriber_declaration,
)
from pyzenoh.session.api.publisher import Publisher, PublisherState
from pyzenoh.session.api.querier import Querier, QuerierSettings
from pyzenoh.session.api.session_info import SessionInfo
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.config import Config, to_config
from pyzenoh.session.connector import open_timeout_s
from pyzenoh.session.handlers import make_sink
from pyzenoh.session.lifetime import aclose_on_loop, close_on_drop
from pyzenoh.session.runtime import Runtime
from pyzenoh.session.scouting import scouting_budget_s

log = logging.getLogger(__name__)


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


def open(
    config: Config | dict[str, Any] | str | None = None,
    *,
    timestamp_callback: ins.TimestampCallback | None = None,
) -> Session:
    """Open a session (client or peer mode) to the first reachable ``connect/endpoints``.

    ``timestamp_callback`` makes the timestamp-stack records this session takes custom
    bytes (see :mod:`pyzenoh.session.instrumentation`)."""
    cfg = to_config(config)
    cfg.check_open()  # the whole tree; refuses security a session does not implement
    if timestamp_callback is not None and not callable(timestamp_callback):
        raise UsageError(f"timestamp_callback must be callable, not {timestamp_callback!r}")
    lt = _LoopThread()
    rt = Runtime(cfg, lt.loop, threaded=True)
    rt.core.ts_callback = timestamp_callback
    fut = asyncio.run_coroutine_threadsafe(rt.connect(), lt.loop)
    retrying = open_timeout_s(cfg)  # connect/timeout_ms: None waits for a router forever, as zenoh
    budget = (
        None
        if retrying is None
        else (cfg.open_timeout_s * max(len(cfg.connect), 1) + 5.0 + scouting_budget_s(cfg) + retrying)
    )
    try:
        fut.result(budget)
    except BaseException:
        fut.cancel()
        lt.stop()
        raise
    return Session(rt, lt)


def _close_dropped(rt: Runtime, lt: _LoopThread) -> None:
    """A dropped session's finalizer: its close started on its own loop, which then stops
    with its dispatcher; nothing here waits (the collector runs it at any allocation, in
    any thread: blocking there stalled another session's handshake once)."""

    def stop() -> None:
        lt.stop()
        dispatcher = rt.callbacks.started
        if dispatcher is not None:
            dispatcher.stop(0)  # runs what is queued, then ends

    aclose_on_loop(rt, then=stop)


def _close(rt: Runtime, lt: _LoopThread, lock: threading.Lock) -> None:
    """Close a session's runtime and stop its loop thread, waiting for both (not from the
    loop thread itself, which cannot wait for itself)."""
    if threading.current_thread() is lt.thread:
        _close_dropped(rt, lt)
        return
    with lock:
        if lt.loop.is_closed():
            return
        if not (rt.closed and not rt.links):
            fut = asyncio.run_coroutine_threadsafe(rt.aclose(), lt.loop)
            try:
                fut.result(10.0)
            except Exception as exc:  # noqa: BLE001  (closing must not fail)
                log.debug("error while closing: %s", exc)
        lt.stop()
        dispatcher = rt.callbacks.started
        if dispatcher is not None:
            dispatcher.stop(5.0)  # let queued callbacks finish (no-op from a callback)


# --- the session ----------------------------------------------------------------------------


class Liveliness:
    def __init__(self, session: Session) -> None:
        self._session = session

    def declare_token(self, key_expr: KeyExpr | str) -> LivelinessToken:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        local = rt.call(lambda: rt.core.declare_token(str(ke)), CALL_TIMEOUT_S)
        return LivelinessToken(rt, ke, functools.partial(rt.core.undeclare_token, local), local)

    def declare_subscriber(
        self, key_expr: KeyExpr | str, handler: Any = None, *, history: bool | None = None
    ) -> Subscriber[Any]:
        rt = self._session._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        iid = rt.call(lambda: rt.core.declare_liveliness_subscriber(str(ke), bool(history), sink), CALL_TIMEOUT_S)
        return Subscriber(rt, ke, functools.partial(rt.core.undeclare_liveliness_subscriber, iid), returned, iid)

    def get(
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
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        iid = rt.call(liveliness_get(rt, ke, sink, timeout), CALL_TIMEOUT_S)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_liveliness_get, iid))
        return returned


class Session:
    """A client session (one router) or a peer session (its links); see :func:`open`."""

    def __init__(self, rt: Runtime, loop_thread: _LoopThread) -> None:
        self._rt = rt
        self._lt = loop_thread
        self._close_lock = threading.Lock()
        # Dropped without close(), it is closed as zenoh-python's sessions are; without
        # waiting, since the collector may run this in any thread, this loop's included.
        self._on_drop = close_on_drop(self, functools.partial(_close_dropped, rt, loop_thread))

    def _live(self) -> Runtime:
        if self._rt.closed:
            raise UsageError("the session is closed")
        return self._rt

    # --- info -----------------------------------------------------------------------------

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

    def undeclare(self, obj: Any) -> None:
        """Undeclare a key expression declared with :meth:`declare_keyexpr` (or any
        declared entity: the same as its own ``undeclare()``)."""
        if isinstance(obj, KeyExpr):
            rt = self._live()
            key = str(obj)
            rt.call(lambda: rt.core.undeclare_user_keyexpr(key), CALL_TIMEOUT_S)
            return
        undeclare = getattr(obj, "undeclare", None)
        if not callable(undeclare):
            raise UsageError(f"cannot undeclare {obj!r}")
        undeclare()

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
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        allowed_destination: t.Locality | None = None,
        source_info: t.SourceInfo | None = None,
        reliability: t.Reliability | None = None,
    ) -> None:
        body = put_body(payload, encoding, attachment, timestamp, source_info)
        self._publish(
            key_expr,
            body,
            congestion_control,
            priority,
            express,
            reliability,
            allowed_destination,
            timestamp_instrumentation,
        )

    def delete(
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
        self._publish(
            key_expr,
            body,
            congestion_control,
            priority,
            express,
            reliability,
            allowed_destination,
            timestamp_instrumentation,
        )

    def _publish(
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
        if rt.wait_room(p.block):
            rt.submit(p.send)

    def declare_publisher(
        self,
        key_expr: KeyExpr | str,
        *,
        encoding: t.Encoding | str | None = None,
        congestion_control: t.CongestionControl | None = None,
        priority: t.Priority | None = None,
        express: bool | None = None,
        reliability: t.Reliability | None = None,
        allowed_destination: t.Locality | None = None,
    ) -> Publisher:
        rt = self._live()
        st = PublisherState(
            t.to_key_expr(key_expr), encoding, congestion_control, priority, express, reliability, allowed_destination
        )
        rt.call(lambda: st.declare(rt), CALL_TIMEOUT_S)
        return Publisher(rt, st)

    def declare_keyexpr(self, key_expr: KeyExpr | str) -> KeyExpr:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        rt.call(lambda: rt.core.declare_user_keyexpr(str(ke)), CALL_TIMEOUT_S)
        return ke

    # --- subscription / queries -------------------------------------------------------------

    def declare_subscriber(
        self, key_expr: KeyExpr | str, handler: Any = None, *, allowed_origin: t.Locality | None = None
    ) -> Subscriber[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        local, eid = rt.call(subscriber_declaration(rt, ke, sink, allowed_origin), CALL_TIMEOUT_S)
        return Subscriber(rt, ke, functools.partial(rt.core.undeclare_subscriber, local), returned, eid)

    def declare_queryable(
        self,
        key_expr: KeyExpr | str,
        handler: Any = None,
        *,
        complete: bool | None = None,
        allowed_origin: t.Locality | None = None,
    ) -> Queryable[Any]:
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        local, eid = rt.call(queryable_declaration(rt, ke, complete, sink, allowed_origin), CALL_TIMEOUT_S)
        return Queryable(rt, ke, functools.partial(rt.core.undeclare_queryable, local), returned, eid)

    def declare_querier(
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
    ) -> Querier:
        """A :class:`Querier` on ``key_expr`` whose gets use these settings."""
        rt = self._live()
        ke = t.to_key_expr(key_expr)
        qs = QuerierSettings(
            target, consolidation, accept_replies, timeout, congestion_control, priority, express, allowed_destination
        )
        local = rt.call(querier_declaration(rt, ke, qs, allowed_destination), CALL_TIMEOUT_S)
        return Querier(rt, ke, local, qs)

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
        allowed_destination: t.Locality | None = None,
        source_info: t.SourceInfo | None = None,
        cancellation_token: CancellationToken | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
    ) -> Any:
        """Query; returns the handler (a channel of :class:`Reply` by default)."""
        rt = self._live()
        check_token(cancellation_token)
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
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
        rid = rt.call(call, CALL_TIMEOUT_S)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_get, rid))
        return returned

    def liveliness(self) -> Liveliness:
        return Liveliness(self)

    # --- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Send CLOSE and stop; every channel ends, pending gets end."""
        self._on_drop.detach()
        _close(self._rt, self._lt, self._close_lock)

    def _abort(self) -> None:
        """Tests only: drop the TCP connection without CLOSE, like a killed process."""
        self._rt.loop.call_soon_threadsafe(self._rt.abort)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
