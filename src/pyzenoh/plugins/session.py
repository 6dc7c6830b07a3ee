"""A plugin's session: a local face of the router, as the admin space and msgq bridge are.

Why a local face rather than the client library over a link: a plugin lives in the
router's process and loop, so its messages go straight into the routing core
(:meth:`RouterDaemon.local_input`) and come back through a sink call, with no encoding,
no socket, no handshake and no dependency on which endpoints the router listens on (a
router listening only on tls/ or behind usrpwd would otherwise have to let its own
plugins in). It is the mechanism the admin space already uses, tested there. The price
is a small session of our own: this module (subscribers, queryables, gets with their
consolidation, key-expression ids the router declares to the face).

The routing core never sends a message back to the face it came from: two plugins that
must see each other's data (REST and a storage) use one session each.

Callbacks run inside the router's delivery: they must not block, and must not raise
(an exception is logged and counted, never propagated into routing).
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import time
import zlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyzenoh.codec import (
    Declare,
    DeclareQueryable,
    DeclareSubscriber,
    Del,
    Encoding,
    EntityGlobalId,
    Err,
    Push,
    Put,
    Query,
    Reply,
    Request,
    Response,
    ResponseFinal,
    Timestamp,
    UndeclareQueryable,
    UndeclareSubscriber,
    WhatAmI,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.data import Consolidation, QueryBody
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.router.key_ids import KeyIds

if TYPE_CHECKING:
    from pyzenoh.router.daemon import RouterDaemon
    from pyzenoh.routing import Send

log = logging.getLogger(__name__)

__all__ = ["DELETE", "PUT", "LocalQuery", "LocalReply", "LocalSample", "LocalSession"]

PUT = "PUT"
DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class LocalSample:
    """A sample received (or a reply's sample): ``kind`` is PUT or DELETE."""

    key: str
    kind: str
    payload: bytes
    encoding: Encoding
    timestamp: Timestamp | None


@dataclass(frozen=True, slots=True)
class LocalReply:
    """One reply to a get: a sample, or an error (``ok`` False: key is ``""``)."""

    ok: bool
    sample: LocalSample


@dataclass(frozen=True, slots=True)
class LocalQuery:
    key: str
    parameters: str
    payload: bytes | None
    encoding: Encoding | None


#: A queryable's answer: (key, payload, encoding, timestamp) per reply.
Answer = tuple[str, bytes, Encoding, Timestamp | None]
#: What a queryable callback returns: its answers, or an awaitable of them.
QueryAnswers = Iterable[Answer] | Awaitable[Iterable[Answer]]


class LocalSession:
    """One local face on a :class:`RouterDaemon`; every method runs in the router's loop."""

    def __init__(self, daemon: RouterDaemon, name: str) -> None:
        self.daemon = daemon
        self.name = name
        #: What ``session.zid()`` says to a plugin: the router's (zenohd's plugins share its runtime).
        self.zid = daemon.zid
        self.face_zid = ZenohId((daemon.zid.value ^ (zlib.crc32(name.encode()) << 24 | 0x706C67)) or 1)
        self.face_id: int | None = None
        self._ids = itertools.count(1)
        self._key_ids = KeyIds()  # key ids the router declared to this face
        self._subs: dict[int, tuple[str, Callable[[LocalSample], None]]] = {}
        self._queryables: dict[int, tuple[str, Callable[[LocalQuery], QueryAnswers]]] = {}
        self._gets: dict[int, _Get] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.callback_errors = 0

    # --- life cycle -----------------------------------------------------------------------

    def open(self) -> None:
        if self.face_id is None:
            self.face_id = self.daemon.add_local_face(
                self.face_zid, self._on_send, WhatAmI.CLIENT, name=f"plugin/{self.name}"
            )

    def close(self) -> None:
        face, self.face_id = self.face_id, None
        for task in self._tasks:
            task.cancel()
        for get in self._gets.values():
            get.finish()
        self._gets.clear()
        self._subs.clear()
        self._queryables.clear()
        if face is not None:
            self.daemon.remove_local_face(face)

    def _input(self, message: Any) -> None:
        if self.face_id is None:
            raise RuntimeError(f"plugin session {self.name!r} is closed")
        self.daemon.local_input(self.face_id, message)

    # --- declarations ---------------------------------------------------------------------

    def declare_subscriber(self, key: str, callback: Callable[[LocalSample], None]) -> int:
        eid = next(self._ids)
        self._subs[eid] = (key, callback)
        self._input(Declare(DeclareSubscriber(eid, WireExpr(0, key, True))))
        return eid

    def undeclare_subscriber(self, eid: int) -> None:
        if self._subs.pop(eid, None) is not None and self.face_id is not None:
            self._input(Declare(UndeclareSubscriber(eid)))

    def declare_queryable(
        self, key: str, callback: Callable[[LocalQuery], QueryAnswers], complete: bool = False
    ) -> int:
        """``callback`` returns the answers, or an awaitable of them (replies then follow
        when it completes; RESPONSE_FINAL waits for it)."""
        eid = next(self._ids)
        self._queryables[eid] = (key, callback)
        self._input(Declare(DeclareQueryable(eid, WireExpr(0, key, True), complete=complete)))
        return eid

    def undeclare_queryable(self, eid: int) -> None:
        if self._queryables.pop(eid, None) is not None and self.face_id is not None:
            self._input(Declare(UndeclareQueryable(eid)))

    # --- publications and gets ------------------------------------------------------------

    def put(
        self, key: str, payload: bytes, encoding: Encoding = Encoding.DEFAULT, timestamp: Timestamp | None = None
    ) -> None:
        self._input(Push(WireExpr(0, key, True), Put(payload=payload, encoding=encoding, timestamp=timestamp)))

    def delete(self, key: str, timestamp: Timestamp | None = None) -> None:
        self._input(Push(WireExpr(0, key, True), Del(timestamp=timestamp)))

    def get(
        self,
        key: str,
        parameters: str = "",
        payload: bytes | None = None,
        encoding: Encoding | None = None,
        *,
        latest: bool = True,
    ) -> asyncio.Queue[LocalReply | None]:
        """Send a query; its replies arrive in the queue, then None. With ``latest``
        (consolidation Latest) the replies are held until the end and only the newest per
        key is given, as zenoh's sessions do; otherwise they are given as they come."""
        rid = next(self._ids)
        get = _Get(latest)
        self._gets[rid] = get
        body = QueryBody(payload=payload, encoding=encoding or Encoding.DEFAULT) if payload else None
        mode = Consolidation.LATEST if latest else Consolidation.NONE
        self._input(Request(rid, WireExpr(0, key, True), Query(consolidation=mode, parameters=parameters, body=body)))
        return get.queue

    # --- what the router sends to the face ------------------------------------------------

    def _resolve(self, wire_expr: WireExpr) -> str | None:
        return self._key_ids.resolve(wire_expr)

    def _on_send(self, send: Send) -> None:
        msg = send.message
        try:
            match msg:
                case Push():
                    self._on_push(msg)
                case Response():
                    self._on_response(msg)
                case ResponseFinal():
                    get = self._gets.pop(msg.request_id, None)
                    if get is not None:
                        get.finish()
                case Request():
                    self._on_request(msg)
                case Declare():
                    self._key_ids.on_declare(msg.body)
                case _:
                    pass
        except Exception:  # a plugin's bug must never reach the router's delivery
            self.callback_errors += 1
            log.exception("plugin %s: failed handling %s", self.name, type(msg).__name__)

    def _on_push(self, msg: Push) -> None:
        key = self._resolve(msg.wire_expr)
        if key is None:
            return
        body = msg.body
        if isinstance(body, Put):
            sample = LocalSample(key, PUT, bytes(body.payload), body.encoding, body.timestamp or msg.timestamp)
        else:
            sample = LocalSample(key, DELETE, b"", Encoding.DEFAULT, body.timestamp or msg.timestamp)
        for sub_key, callback in list(self._subs.values()):
            if intersects(sub_key, key):
                try:
                    callback(sample)
                except Exception:
                    self.callback_errors += 1
                    log.exception("plugin %s: subscriber callback on %s failed", self.name, key)

    def _on_response(self, msg: Response) -> None:
        get = self._gets.get(msg.request_id)
        if get is None:
            return
        body = msg.body
        if isinstance(body, Err):
            get.add(LocalReply(False, LocalSample("", PUT, bytes(body.payload), body.encoding, None)))
            return
        key = self._resolve(msg.wire_expr) or ""
        inner = body.body
        if isinstance(inner, Put):
            get.add(LocalReply(True, LocalSample(key, PUT, bytes(inner.payload), inner.encoding, inner.timestamp)))
        else:
            get.add(LocalReply(True, LocalSample(key, DELETE, b"", Encoding.DEFAULT, inner.timestamp)))

    def _on_request(self, msg: Request) -> None:
        key = self._resolve(msg.wire_expr)
        query = msg.body
        qbody = query.body
        local = LocalQuery(
            key or "",
            query.parameters,
            None if qbody is None else bytes(qbody.payload),
            None if qbody is None else qbody.encoding,
        )
        # Answer on the next loop turn: the daemon is still delivering the request.
        asyncio.get_running_loop().call_soon(self._answer, msg.request_id, msg.qos, local)

    def _answer(self, rid: int, qos: int, query: LocalQuery) -> None:
        """Run the matching queryables: their answers now, or later for those that return
        an awaitable (a storage reading a disk in a thread); RESPONSE_FINAL after all."""
        if self.face_id is None:
            return
        pending: list[tuple[int, Awaitable[Iterable[Answer]]]] = []
        for eid, (qkey, callback) in list(self._queryables.items()):
            if not query.key or not intersects(qkey, query.key):
                continue
            try:
                answers = callback(query)
            except Exception as exc:  # noqa: BLE001 - a plugin's bug becomes an error reply
                self._error(rid, qos, query, eid, qkey, exc)
                continue
            if inspect.isawaitable(answers):
                pending.append((eid, answers))
            else:
                self._reply(rid, qos, answers)
        if not pending:
            self._input(ResponseFinal(rid, qos))
            return
        task = asyncio.get_running_loop().create_task(self._answer_later(rid, qos, query, pending))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer_later(
        self, rid: int, qos: int, query: LocalQuery, pending: list[tuple[int, Awaitable[Iterable[Answer]]]]
    ) -> None:
        for eid, awaitable in pending:
            try:
                answers = await awaitable
            except Exception as exc:  # noqa: BLE001 - a plugin's bug becomes an error reply
                if self.face_id is not None:
                    self._error(rid, qos, query, eid, "", exc)
                continue
            if self.face_id is None:
                return
            self._reply(rid, qos, answers)
        if self.face_id is not None:
            self._input(ResponseFinal(rid, qos))

    def _reply(self, rid: int, qos: int, answers: Iterable[Answer]) -> None:
        responder = EntityGlobalId(self.daemon.zid, 0)
        for key, payload, encoding, timestamp in answers:
            reply = Reply(Put(payload=payload, encoding=encoding, timestamp=timestamp))
            self._input(Response(rid, WireExpr(0, key, True), reply, qos=qos, responder=responder))

    def _error(self, rid: int, qos: int, query: LocalQuery, eid: int, qkey: str, exc: Exception) -> None:
        self.callback_errors += 1
        log.error("plugin %s: queryable %s failed: %s", self.name, qkey, exc)
        err = Err(payload=str(exc).encode(), encoding=Encoding.from_str("text/plain"))
        self._input(
            Response(rid, WireExpr(0, query.key, True), err, qos=qos, responder=EntityGlobalId(self.daemon.zid, eid))
        )


class _Get:
    __slots__ = ("held", "latest", "queue")

    def __init__(self, latest: bool) -> None:
        self.latest = latest
        self.queue: asyncio.Queue[LocalReply | None] = asyncio.Queue()
        self.held: dict[str, LocalReply] = {}

    def add(self, reply: LocalReply) -> None:
        if not self.latest or not reply.ok:
            self.queue.put_nowait(reply)
            return
        key = reply.sample.key
        old = self.held.get(key)
        if old is None or _newer(reply.sample.timestamp, old.sample.timestamp):
            self.held[key] = reply

    def finish(self) -> None:
        for reply in self.held.values():
            self.queue.put_nowait(reply)
        self.held.clear()
        self.queue.put_nowait(None)


def ts_key(ts: Timestamp) -> tuple[int, bytes]:
    """HLC timestamps ordered as uhlc orders them: time, then the id's bytes."""
    return ts.time, ts.id.value.to_bytes(16, "little")


def _newer(a: Timestamp | None, b: Timestamp | None) -> bool:
    if a is None:
        return False
    return b is None or ts_key(a) > ts_key(b)


def wall_now() -> float:
    return time.time()
