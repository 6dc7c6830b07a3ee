"""Queries on the wire: REQUEST (a query towards queryables), RESPONSE (one reply or
error), RESPONSE_FINAL (no more replies), all three tied by the request id; and
:func:`with_request_id`, which rewrites only that id in encoded bytes (a router
forwarding a reply does it per reply).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from pyzenoh.codec.data import Err, Query, Reply, read_request_body, read_response_body
from pyzenoh.codec.extensions import (
    Extension,
    add_optional,
    expect_end,
    write_extensions,
)
from pyzenoh.codec.network.header import (
    _NO_EXTS,
    EXT_NODE_ID,
    EXT_TS_STACK,
    ID_REQUEST,
    ID_RESPONSE,
    ID_RESPONSE_FINAL,
    _common_exts,
    _finish,
    _NetExts,
    _read_wire_expr,
    _wire_expr_flags,
)
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import (
    U32_MAX,
    EntityGlobalId,
    Reader,
    Timestamp,
    WireExpr,
    check_bound,
    write_vle,
)
from pyzenoh.errors import DecodeError, UsageError

EXT_TARGET = 0x34
EXT_BUDGET = 0x25
EXT_TIMEOUT = 0x26
EXT_RESPONDER_ID = 0x43


class QueryTarget(IntEnum):
    BEST_MATCHING = 0
    ALL = 1
    ALL_COMPLETE = 2


@dataclass(frozen=True, slots=True)
class Request:
    request_id: int
    wire_expr: WireExpr
    body: Query
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    target: int = QueryTarget.BEST_MATCHING
    budget: int | None = None
    timeout_ms: int | None = None
    node_id: int | None = None
    ts_stack: bytes | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.request_id, U32_MAX, "request id")
        exts = _common_exts(self.qos, self.timestamp)
        if self.target != QueryTarget.BEST_MATCHING:
            exts.append(Extension(EXT_TARGET, int(self.target)))
        add_optional(exts, EXT_BUDGET, self.budget)
        add_optional(exts, EXT_TIMEOUT, self.timeout_ms)
        add_optional(exts, EXT_NODE_ID, self.node_id)
        add_optional(exts, EXT_TS_STACK, self.ts_stack)
        exts.extend(self.extensions)
        _finish(out, ID_REQUEST | _wire_expr_flags(self.wire_expr), exts)
        write_vle(out, self.request_id)
        self.wire_expr.write(out)
        if exts:
            write_extensions(out, exts)
        self.body.write(out)

    @classmethod
    def read(cls, r: Reader, header: int) -> Request:
        request_id = r.vle(U32_MAX)
        wire_expr = _read_wire_expr(r, header)
        e = _NetExts(r, header, _REQUEST_EXTS)
        target = e.z64(EXT_TARGET) or 0
        if target > QueryTarget.ALL_COMPLETE:
            raise DecodeError(f"unknown query target {target}", r.pos)
        body = read_request_body(r)
        return cls(
            request_id,
            wire_expr,
            body,
            e.qos,
            e.timestamp,
            target,
            e.z64(EXT_BUDGET),
            e.z64(EXT_TIMEOUT),
            e.z64(EXT_NODE_ID),
            e.zbuf(EXT_TS_STACK),
            tuple(e.others),
        )


def with_request_id(raw: bytes, request_id: int) -> bytes:
    """The bytes of an encoded REQUEST, RESPONSE or RESPONSE_FINAL (all start with the
    header and the request id) with another request id: what a router forwarding a reply
    changes, without decoding and re-encoding the rest."""
    check_bound(request_id, U32_MAX, "request id")
    p = 1
    while p < len(raw) and raw[p] & 0x80:
        p += 1
    if p >= len(raw) or p > 5:
        raise UsageError("not an encoded message with a request id")
    out = bytearray(raw[:1])
    write_vle(out, request_id)
    out += raw[p + 1 :]
    return bytes(out)


@dataclass(frozen=True, slots=True)
class Response:
    request_id: int
    wire_expr: WireExpr
    body: Reply | Err
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    responder: EntityGlobalId | None = None
    ts_stack: bytes | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.request_id, U32_MAX, "request id")
        exts = _common_exts(self.qos, self.timestamp)
        if self.responder is not None:
            inner = bytearray()
            self.responder.write(inner)
            exts.append(Extension(EXT_RESPONDER_ID, bytes(inner)))
        add_optional(exts, EXT_TS_STACK, self.ts_stack)
        exts.extend(self.extensions)
        _finish(out, ID_RESPONSE | _wire_expr_flags(self.wire_expr), exts)
        write_vle(out, self.request_id)
        self.wire_expr.write(out)
        if exts:
            write_extensions(out, exts)
        self.body.write(out)

    @classmethod
    def read(cls, r: Reader, header: int) -> Response:
        request_id = r.vle(U32_MAX)
        wire_expr = _read_wire_expr(r, header)
        e = _NetExts(r, header, _RESPONSE_EXTS)
        responder = None
        responder_raw = e.zbuf(EXT_RESPONDER_ID)
        if responder_raw is not None:
            inner = Reader(responder_raw)
            responder = EntityGlobalId.read(inner)
            expect_end(inner, "ResponderId")
        body = read_response_body(r)
        return cls(request_id, wire_expr, body, e.qos, e.timestamp, responder, e.zbuf(EXT_TS_STACK), tuple(e.others))


@dataclass(frozen=True, slots=True)
class ResponseFinal:
    request_id: int
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.request_id, U32_MAX, "request id")
        exts = _common_exts(self.qos, self.timestamp)
        exts.extend(self.extensions)
        _finish(out, ID_RESPONSE_FINAL, exts)
        write_vle(out, self.request_id)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> ResponseFinal:
        request_id = r.vle(U32_MAX)
        e = _NetExts(r, header, _NO_EXTS)
        return cls(request_id, e.qos, e.timestamp, tuple(e.others))


_REQUEST_EXTS = frozenset({EXT_TARGET, EXT_BUDGET, EXT_TIMEOUT, EXT_NODE_ID, EXT_TS_STACK})
_RESPONSE_EXTS = frozenset({EXT_RESPONDER_ID, EXT_TS_STACK})
