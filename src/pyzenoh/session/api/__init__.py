"""The blocking API, shaped like eclipse-zenoh's Python API.

``pyzenoh.session.open(config)`` returns a :class:`Session`; its event loop runs in a
background thread. Callbacks run in one dispatcher thread per session (so they may block
or call the session again); channel handlers are read from any thread.

Differences from zenoh-python worth knowing: declared entities live until they are
undeclared or the session closes (dropping the Python object does not undeclare them);
``recv`` on channels accepts an optional ``timeout``. A client whose router goes away
reconnects and re-declares everything (see :mod:`pyzenoh.session.connector`); a peer
listens on ``listen/endpoints``.
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
from pyzenoh.session import instrumentation as ins
from pyzenoh.session import types as t
from pyzenoh.session.cancel import CancellationToken
from pyzenoh.session.config import Config, to_config
from pyzenoh.session.connector import open_timeout_s
from pyzenoh.session.core import LOCAL_AND_REMOTE
from pyzenoh.session.handlers import Handler, Sink, make_sink
from pyzenoh.session.info import Link, LinkEvent, Transport, TransportEvent, locator
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


def put_body(payload: Any, encoding: Any, attachment: Any, timestamp: t.Timestamp | None,
             source_info: t.SourceInfo | None = None) -> Put:  # fmt: skip
    return Put(
        t.to_payload(payload), t.to_encoding(encoding),
        timestamp_of(timestamp), source_info_of(source_info),
        attachment=None if attachment is None else t.to_payload(attachment),
    )  # fmt: skip


def del_body(attachment: Any, timestamp: t.Timestamp | None, source_info: t.SourceInfo | None = None) -> Del:
    return Del(timestamp_of(timestamp), source_info_of(source_info),
               attachment=None if attachment is None else t.to_payload(attachment))  # fmt: skip


def timestamp_of(value: t.Timestamp | None) -> Any:
    if value is None:
        return None
    if not isinstance(value, t.Timestamp):
        raise UsageError(f"timestamp must be a Timestamp, not {value!r}")
    return value.wire


def source_info_of(value: t.SourceInfo | None) -> Any:
    if value is None:
        return None
    if not isinstance(value, t.SourceInfo):
        raise UsageError(f"source_info must be a SourceInfo, not {value!r}")
    return value.wire


def locality_of(value: t.Locality | None, name: str) -> int:
    """The Locality value of an ``allowed_origin``/``allowed_destination`` argument."""
    if value is None:
        return LOCAL_AND_REMOTE
    if not isinstance(value, t.Locality):
        raise UsageError(f"{name} must be a Locality, not {value!r}")
    return value.value


def ts_stack_of(rt: Runtime, instrumentation: ins.TimestampInstrumentation | None) -> bytes | None:
    """The timestamp-stack extension a message sent now carries (with its Send record)."""
    if instrumentation is None:
        return None
    return ins.start(instrumentation, rt.zid, time.time_ns(), rt.core.ts_callback, rt.whatami)


def check_token(token: CancellationToken | None) -> None:
    if token is not None:
        if not isinstance(token, CancellationToken):
            raise UsageError(f"cancellation_token must be a CancellationToken, not {token!r}")
        if token.is_cancelled:
            raise UsageError("the cancellation token is already cancelled")


def cancel_in(rt: Runtime, fn: Callable[[], None]) -> None:
    """Run a core cancellation in the loop and wait for the callbacks it ends."""
    if not rt.closed:

        def run() -> None:
            fn()
            rt.pump()  # the END reaches the handler before cancel() returns

        try:
            rt.call(run, CALL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001  (the session may be closing: nothing left to cancel)
            log.debug("cancellation: %s", exc)
    dispatcher = rt._dispatcher
    if dispatcher is not None:
        dispatcher.barrier(CALL_TIMEOUT_S)


def attach_token(rt: Runtime, token: CancellationToken | None, fn: Callable[[], None]) -> None:
    """Let ``token`` cancel an operation that was just started (``fn`` cancels it)."""
    if token is None:
        return
    op = functools.partial(cancel_in, rt, fn)
    try:
        token._register(op)
    except UsageError:
        op()  # cancelled while the operation started: end it now
        raise


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
        "destination",
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
        allowed_destination: t.Locality | None = None,
    ) -> None:
        self.key_expr = key_expr
        self.destination = locality_of(allowed_destination, "allowed_destination")
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
    budget = None if retrying is None else (cfg.open_timeout_s * max(len(cfg.connect), 1) + 5.0
                                            + scouting_budget_s(cfg) + retrying)  # fmt: skip
    try:
        fut.result(budget)
    except BaseException:
        fut.cancel()
        lt.stop()
        raise
    return Session(rt, lt)


# --- entities -----------------------------------------------------------------------------


class _Entity:
    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Callable[[], None], eid: int = 0) -> None:
        self._rt = rt
        self._key_expr = key_expr
        self._undeclare_fn: Callable[[], None] | None = undeclare
        self._eid = eid

    @property
    def key_expr(self) -> KeyExpr:
        return self._key_expr

    @property
    def id(self) -> t.EntityGlobalId:
        """This entity's global id: its session's zid and its entity id."""
        return t.EntityGlobalId(self._rt.zid, self._eid)

    def _undeclare(self) -> None:
        fn = self._undeclare_fn
        if fn is not None and not self._rt.closed:
            self._undeclare_fn = None
            self._rt.submit(fn)


class _Receiver(_Entity, Generic[H]):
    """An entity that delivers items to a handler (channel or callback)."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, undeclare: Callable[[], None], handler: H,
                 eid: int = 0) -> None:  # fmt: skip
        super().__init__(rt, key_expr, undeclare, eid)
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
    """Changes of a publisher's or querier's matching status, to a callback or a channel."""


class TransportEventsListener(_Receiver[H]):
    """The session's transport opening (history) and closing, as TransportEvents."""


class LinkEventsListener(_Receiver[H]):
    """The session's link added (history) and removed, as LinkEvents."""


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
        super().__init__(rt, state.key_expr, functools.partial(rt.core.undeclare_publisher, state.local),
                         state.local)  # fmt: skip
        self._state = state

    @property
    def matching_status(self) -> t.MatchingStatus:
        local = self._state.local
        return t.MatchingStatus(self._rt.call(lambda: self._rt.core.publisher_matching(local), CALL_TIMEOUT_S))

    def put(
        self,
        payload: Any,
        *,
        encoding: t.Encoding | str | None = None,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        source_info: t.SourceInfo | None = None,
    ) -> None:
        rt = self._rt
        if rt.closed or self._undeclare_fn is None:
            raise UsageError("the publisher is undeclared or its session closed")
        st = self._state
        if not rt.wait_room(st.block):
            return
        core = rt.core
        if (encoding is None and attachment is None and timestamp is None and timestamp_instrumentation is None
                and source_info is None):  # fmt: skip
            data = t.to_payload(payload)
            rt.submit(functools.partial(_put_fast, core, st, data))
            return
        body = put_body(payload, encoding if encoding is not None else st.encoding, attachment, timestamp,
                        source_info)  # fmt: skip
        stack = ts_stack_of(rt, timestamp_instrumentation)
        rt.submit(functools.partial(core.put, st.key, body, priority=st.priority, block=st.block,
                                    express=st.express, reliable=st.reliable, destination=st.destination,
                                    ts_stack=stack))  # fmt: skip

    def delete(
        self,
        *,
        attachment: Any = None,
        timestamp: t.Timestamp | None = None,
        timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
        source_info: t.SourceInfo | None = None,
    ) -> None:
        rt = self._rt
        if rt.closed or self._undeclare_fn is None:
            raise UsageError("the publisher is undeclared or its session closed")
        st = self._state
        if not rt.wait_room(st.block):
            return
        body = del_body(attachment, timestamp, source_info)
        stack = ts_stack_of(rt, timestamp_instrumentation)
        rt.submit(functools.partial(rt.core.put, st.key, body, priority=st.priority, block=st.block,
                                    express=st.express, reliable=st.reliable, destination=st.destination,
                                    ts_stack=stack))  # fmt: skip

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
                     block=st.block, express=st.express, reliable=st.reliable,
                     destination=st.destination)  # fmt: skip


class QuerierSettings:
    """What a querier was declared with; its gets use it."""

    __slots__ = ("accept", "block", "consolidation", "destination", "express", "priority", "target", "timeout")

    def __init__(
        self,
        target: t.QueryTarget | None,
        consolidation: Any,
        accept_replies: t.ReplyKeyExpr | None,
        timeout: float | None,
        congestion_control: t.CongestionControl | None,
        priority: t.Priority | None,
        express: bool | None,
        allowed_destination: t.Locality | None,
    ) -> None:
        self.target = target if target is not None else t.QueryTarget.BEST_MATCHING
        target_of(self.target)
        consolidation_of(consolidation)
        self.consolidation = consolidation
        if accept_replies is not None and not isinstance(accept_replies, t.ReplyKeyExpr):
            raise UsageError(f"accept_replies must be a ReplyKeyExpr, not {accept_replies!r}")
        self.accept = accept_replies if accept_replies is not None else t.ReplyKeyExpr.MATCHING_QUERY
        self.timeout = timeout_of(timeout)
        block_of(congestion_control, default=True)
        self.block = congestion_control
        prio_of(priority)
        self.priority = priority
        self.express = express
        self.destination = allowed_destination
        locality_of(allowed_destination, "allowed_destination")


class Querier(_Entity):
    """Queries on one key expression with settings fixed at declaration (``get``), and
    whether queryables match them (``matching_status``, matching listeners)."""

    def __init__(self, rt: Runtime, key_expr: KeyExpr, local: int, settings: QuerierSettings) -> None:
        super().__init__(rt, key_expr, functools.partial(rt.core.undeclare_querier, local), local)
        self._local = local
        self._settings = settings

    @property
    def accept_replies(self) -> t.ReplyKeyExpr:
        return self._settings.accept

    @property
    def matching_status(self) -> t.MatchingStatus:
        local = self._local
        return t.MatchingStatus(self._rt.call(lambda: self._rt.core.querier_matching(local), CALL_TIMEOUT_S))

    def get(
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
        """Query the querier's key expression; returns the handler (a channel of
        :class:`Reply` by default)."""
        rt = self._rt
        if rt.closed or self._undeclare_fn is None:
            raise UsageError("the querier is undeclared or its session closed")
        check_token(cancellation_token)
        qs = self._settings
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        call = get_call(rt, t.Selector(self.key_expr, parameters), sink, qs.target, qs.consolidation, qs.accept,
                        qs.timeout, qs.block, qs.priority, qs.express, payload, encoding, attachment,
                        allowed_destination=qs.destination, source_info=source_info,
                        timestamp_instrumentation=timestamp_instrumentation)  # fmt: skip
        rid = rt.call(call, CALL_TIMEOUT_S)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_get, rid))
        return returned

    def declare_matching_listener(self, handler: Any = None) -> MatchingListener[Any]:
        rt = self._rt
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)
        local = self._local
        rt.call(lambda: rt.core.add_querier_matching_listener(local, sink), CALL_TIMEOUT_S)
        return MatchingListener(rt, self.key_expr,
                                functools.partial(rt.core.remove_querier_matching_listener, local, sink),
                                returned)  # fmt: skip

    def undeclare(self) -> None:
        self._undeclare()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undeclare()


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
        to = timeout_of(timeout)
        iid = rt.call(lambda: rt.core.liveliness_get(str(ke), sink, rt.loop.time(), to), CALL_TIMEOUT_S)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_liveliness_get, iid))
        return returned


class SessionInfo:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    def zid(self) -> ZenohId:
        return self._rt.zid

    def _zids(self, whatami: Any) -> list[ZenohId]:
        return [p.zid for p in list(self._rt.peers.values()) if p.whatami is whatami]

    def routers_zid(self) -> list[ZenohId]:
        from pyzenoh.codec import WhatAmI

        return self._zids(WhatAmI.ROUTER)

    def peers_zid(self) -> list[ZenohId]:
        from pyzenoh.codec import WhatAmI

        return self._zids(WhatAmI.PEER)

    def transports(self) -> list[Transport]:
        """The session's transports: one per open link (a client's router; a peer's
        routers and peers)."""
        rt = self._rt
        if rt.closed:
            return []
        return [tr for fid in list(rt.peers) if (tr := _face_transport(rt, fid)) is not None]

    def links(self) -> list[Link]:
        """The session's open links."""
        rt = self._rt
        if rt.closed:
            return []
        return [ln for fid in list(rt.peers) if (ln := _face_link(rt, fid)) is not None]

    def _listener(self, make: Callable[[t.SampleKind, int], Any], history: bool | None, handler: Any,
                  cls: type[_Receiver[Any]]) -> Any:  # fmt: skip
        rt = self._rt
        if rt.closed:
            raise UsageError("the session is closed")
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher if rt.threaded else None)
        local = rt.call(lambda: rt.core.add_info_listener(sink, make, bool(history)), CALL_TIMEOUT_S)
        return cls(rt, KeyExpr._trusted("@/info"), functools.partial(rt.core.remove_info_listener, local),
                   returned, local)  # fmt: skip

    def declare_transport_events_listener(self, handler: Any = None, *, history: bool | None = None) -> Any:
        """TransportEvents: the open transports (``history``), then every transport
        opening (a reconnection included) or closing."""
        return self._listener(functools.partial(_transport_event, self._rt), history, handler,
                              TransportEventsListener)  # fmt: skip

    def declare_link_events_listener(self, handler: Any = None, *, history: bool | None = None) -> Any:
        """LinkEvents: the open links (``history``), then every link added or removed."""
        return self._listener(functools.partial(_link_event, self._rt), history, handler, LinkEventsListener)


def _face_transport(rt: Runtime, fid: int) -> Transport | None:
    peer = rt.peers.get(fid)
    return None if peer is None else Transport(peer.zid, peer.whatami, peer.qos)


def _face_link(rt: Runtime, fid: int) -> Link | None:
    peer, link = rt.peers.get(fid), rt.links.get(fid)
    if peer is None or link is None:
        return None
    proto = getattr(link, "protocol", "tcp")
    return Link(peer.zid, locator(proto, getattr(link, "local_address", None)),
                locator(proto, getattr(link, "remote_address", None)), peer.batch_size,
                auth_identifier=peer.username)  # fmt: skip


def _transport_event(rt: Runtime, kind: t.SampleKind, fid: int) -> TransportEvent | None:
    tr = _face_transport(rt, fid)
    return None if tr is None else TransportEvent(kind, tr)


def _link_event(rt: Runtime, kind: t.SampleKind, fid: int) -> LinkEvent | None:
    ln = _face_link(rt, fid)
    return None if ln is None else LinkEvent(kind, ln)


class Session:
    """A client session (one router) or a peer session (its links); see :func:`open`."""

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
        rt = self._live()
        key = str(t.to_key_expr(key_expr))
        body = put_body(payload, encoding, attachment, timestamp, source_info)
        block = block_of(congestion_control)
        dest = locality_of(allowed_destination, "allowed_destination")
        prio = prio_of(priority)
        stack = ts_stack_of(rt, timestamp_instrumentation)
        if rt.wait_room(block):
            rt.submit(functools.partial(rt.core.put, key, body, priority=prio, block=block,
                                        express=bool(express),
                                        reliable=reliability is not t.Reliability.BEST_EFFORT,
                                        destination=dest, ts_stack=stack))  # fmt: skip

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
        rt = self._live()
        key = str(t.to_key_expr(key_expr))
        body = del_body(attachment, timestamp, source_info)
        block = block_of(congestion_control)
        dest = locality_of(allowed_destination, "allowed_destination")
        prio = prio_of(priority)
        stack = ts_stack_of(rt, timestamp_instrumentation)
        if rt.wait_room(block):
            rt.submit(functools.partial(rt.core.put, key, body, priority=prio, block=block,
                                        express=bool(express),
                                        reliable=reliability is not t.Reliability.BEST_EFFORT,
                                        destination=dest, ts_stack=stack))  # fmt: skip

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
        st = PublisherState(t.to_key_expr(key_expr), encoding, congestion_control, priority, express, reliability,
                            allowed_destination)  # fmt: skip
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
        origin = locality_of(allowed_origin, "allowed_origin")
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)

        def declare() -> tuple[int, int]:
            local = rt.core.declare_subscriber(str(ke), sink, origin)
            return local, rt.core.subscriber_wire_id(local)

        local, eid = rt.call(declare, CALL_TIMEOUT_S)
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
        origin = locality_of(allowed_origin, "allowed_origin")
        sink, returned = make_sink(handler, asynchronous=False, dispatcher=rt.dispatcher)

        def declare() -> tuple[int, int]:
            local = rt.core.declare_queryable(str(ke), bool(complete), sink, origin)
            return local, rt.core.queryable_wire_id(local)

        local, eid = rt.call(declare, CALL_TIMEOUT_S)
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
        qs = QuerierSettings(target, consolidation, accept_replies, timeout, congestion_control, priority,
                             express, allowed_destination)  # fmt: skip
        tgt = target_of(qs.target)
        dest = locality_of(allowed_destination, "allowed_destination")
        local = rt.call(lambda: rt.core.declare_querier(str(ke), tgt, dest), CALL_TIMEOUT_S)
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
        call = get_call(rt, selector, sink, target, consolidation, accept_replies, timeout,
                        congestion_control, priority, express, payload, encoding, attachment,
                        allowed_destination=allowed_destination, source_info=source_info,
                        timestamp_instrumentation=timestamp_instrumentation)  # fmt: skip
        rid = rt.call(call, CALL_TIMEOUT_S)
        attach_token(rt, cancellation_token, functools.partial(rt.core.cancel_get, rid))
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
            if not (rt.closed and not rt.links):
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
    *,
    allowed_destination: t.Locality | None = None,
    source_info: t.SourceInfo | None = None,
    timestamp_instrumentation: ins.TimestampInstrumentation | None = None,
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
    dest = locality_of(allowed_destination, "allowed_destination")
    source = source_info_of(source_info)
    stack = ts_stack_of(rt, timestamp_instrumentation)

    def call() -> int:
        return rt.core.get(key, params, sink, rt.loop.time(), target=tgt, consolidation=cons, timeout_s=to,
                           payload=data, encoding=enc, attachment=att, priority=prio, block=block,
                           express=bool(express), accept_any=any_key, destination=dest,
                           source_info=source, ts_stack=stack)  # fmt: skip

    return call
