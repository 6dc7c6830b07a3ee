"""Network layer: PUSH, REQUEST, RESPONSE, RESPONSE_FINAL, DECLARE, INTEREST, OAM.

Network messages travel inside FRAMEs (or reassembled FRAGMENTs). They carry no length:
a reader parses one message and stops where it ends (zenoh-wire.md 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum, IntFlag

from pyzenoh.codec.data import (
    Del,
    Err,
    Put,
    Query,
    Reply,
    read_push_body,
    read_request_body,
    read_response_body,
)
from pyzenoh.codec.extensions import (
    ENC_MASK,
    ENC_UNIT,
    ENC_Z64,
    ENC_ZBUF,
    Extension,
    KnownExtensions,
    add_optional,
    expect_end,
    ext_int,
    ext_reader,
    read_extensions,
    unknown_extension,
    write_extensions,
)
from pyzenoh.codec.primitives import (
    MAX_PAYLOAD_LEN,
    U16_MAX,
    U32_MAX,
    U64_MAX,
    EntityGlobalId,
    Reader,
    Timestamp,
    WireExpr,
    check_bound,
    write_vle,
    write_zbytes,
)
from pyzenoh.errors import DecodeError, UsageError

ID_INTEREST = 0x19
ID_RESPONSE_FINAL = 0x1A
ID_RESPONSE = 0x1B
ID_REQUEST = 0x1C
ID_PUSH = 0x1D
ID_DECLARE = 0x1E
ID_OAM = 0x1F
#: Network ids are >= this; transport ids are below. This is how a FRAME ends.
FIRST_NETWORK_ID = ID_INTEREST

FLAG_Z = 0x80
FLAG_M = 0x40  # mapping: the scope id was declared by the sender
FLAG_N = 0x20  # the WireExpr has a suffix
FLAG_I = 0x20  # DECLARE: interest id present

EXT_QOS = 0x21
EXT_TIMESTAMP = 0x42
EXT_NODE_ID = 0x33
EXT_TS_STACK = 0x47
EXT_TARGET = 0x34
EXT_BUDGET = 0x25
EXT_TIMEOUT = 0x26
EXT_RESPONDER_ID = 0x43
EXT_QUERYABLE_INFO = 0x21
EXT_WIRE_EXPR = 0x5F


# --- QoS ---------------------------------------------------------------------------------


class Priority(IntEnum):
    CONTROL = 0
    REAL_TIME = 1
    INTERACTIVE_HIGH = 2
    INTERACTIVE_LOW = 3
    DATA_HIGH = 4
    DATA = 5
    DATA_LOW = 6
    BACKGROUND = 7


QOS_PRIORITY_MASK = 0x07
QOS_BLOCK = 0x08  # congestion control: block (else drop)
QOS_EXPRESS = 0x10
QOS_BLOCK_FIRST = 0x20
#: Data priority, drop, not express: the value every message omits.
QOS_DEFAULT = 0x05
#: What real nodes put on DECLARE and INTEREST: Control | Block.
QOS_DECLARE = 0x08
#: What real nodes put on REQUEST / RESPONSE / RESPONSE_FINAL: Data | Block.
QOS_REQUEST = 0x0D


def qos_value(priority: int = Priority.DATA, block: bool = False, express: bool = False) -> int:
    check_bound(priority, 7, "priority")
    return priority | (QOS_BLOCK if block else 0) | (QOS_EXPRESS if express else 0)


class QueryTarget(IntEnum):
    BEST_MATCHING = 0
    ALL = 1
    ALL_COMPLETE = 2


class InterestMode(IntEnum):
    FINAL = 0
    CURRENT = 1
    FUTURE = 2
    CURRENT_FUTURE = 3


class InterestOptions(IntFlag):
    KEYEXPRS = 0x01
    SUBSCRIBERS = 0x02
    QUERYABLES = 0x04
    TOKENS = 0x08


NO_OPTIONS = InterestOptions(0)
OPT_RESTRICTED = 0x10
OPT_NAMED = 0x20
OPT_MAPPING = 0x40
OPT_AGGREGATE = 0x80


# --- Common extension handling --------------------------------------------------------------


def _timestamp_ext(ext: Extension) -> Timestamp:
    r = ext_reader(ext)
    ts = Timestamp.read(r)
    expect_end(r, "Timestamp extension")
    return ts


def _timestamp_bytes(ts: Timestamp) -> bytes:
    out = bytearray()
    ts.write(out)
    return bytes(out)


def _common_exts(
    qos: int, timestamp: Timestamp | None
) -> list[Extension]:
    exts: list[Extension] = []
    if qos != QOS_DEFAULT:
        exts.append(Extension(EXT_QOS, qos))
    if timestamp is not None:
        exts.append(Extension(EXT_TIMESTAMP, _timestamp_bytes(timestamp)))
    return exts


def _read_wire_expr(r: Reader, header: int) -> WireExpr:
    return WireExpr.read(r, bool(header & FLAG_N), bool(header & FLAG_M))


def _wire_expr_flags(wire_expr: WireExpr) -> int:
    flags = 0
    if wire_expr.suffix:
        flags |= FLAG_N
    if wire_expr.mapping_sender:
        flags |= FLAG_M
    return flags


def _finish(out: bytearray, header: int, exts: list[Extension]) -> int:
    """Append the header (with Z when there are extensions); return its index."""
    if exts:
        header |= FLAG_Z
    out.append(header)
    return len(out) - 1


# --- PUSH ----------------------------------------------------------------------------------


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Push:
    wire_expr: WireExpr
    body: Put | Del
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    node_id: int | None = None
    ts_stack: bytes | None = None
    extensions: tuple[Extension, ...] = ()
    #: Where the body (PUT/DEL header) starts in the bytes this PUSH was decoded from
    #: (-1 when built locally): lets a router edit the body without re-encoding it all.
    body_offset: int = field(default=-1, compare=False, repr=False)

    def routed(self, wire_expr: WireExpr, body: Put | Del, timestamp: Timestamp | None,
               node_id: int | None = None) -> Push:  # fmt: skip
        """This PUSH as a router forwards it: another key representation, body, network
        timestamp and NodeId (set only towards a router neighbour)."""
        return Push(wire_expr, body, self.qos, timestamp, node_id, self.ts_stack, self.extensions)

    def write_head(self, out: bytearray) -> None:
        """Everything but the body: header, key and extensions."""
        exts = _common_exts(self.qos, self.timestamp)
        add_optional(exts, EXT_NODE_ID, self.node_id)
        add_optional(exts, EXT_TS_STACK, self.ts_stack)
        exts.extend(self.extensions)
        _finish(out, ID_PUSH | _wire_expr_flags(self.wire_expr), exts)
        self.wire_expr.write(out)
        if exts:
            write_extensions(out, exts)

    def write(self, out: bytearray) -> None:
        self.write_head(out)
        self.body.write(out)

    @classmethod
    def read(cls, r: Reader, header: int) -> Push:
        start = r.pos - 1  # the header byte was read by the dispatcher
        wire_expr = _read_wire_expr(r, header)
        e = _NetExts(r, header, _PUSH_EXTS)
        body_offset = r.pos - start
        body = read_push_body(r)
        return cls(wire_expr, body, e.qos, e.timestamp, e.z64(EXT_NODE_ID), e.zbuf(EXT_TS_STACK),
                   tuple(e.others), body_offset)  # fmt: skip


# --- REQUEST / RESPONSE / RESPONSE_FINAL ------------------------------------------------------


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
        return cls(request_id, wire_expr, body, e.qos, e.timestamp, target, e.z64(EXT_BUDGET),
                   e.z64(EXT_TIMEOUT), e.z64(EXT_NODE_ID), e.zbuf(EXT_TS_STACK),
                   tuple(e.others))  # fmt: skip


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
        return cls(request_id, wire_expr, body, e.qos, e.timestamp, responder,
                   e.zbuf(EXT_TS_STACK), tuple(e.others))  # fmt: skip


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


class _NetExts(KnownExtensions):
    """A network message's extensions: QoS and Timestamp (every network message may carry
    them) decoded, plus the ids in ``known``."""

    __slots__ = ("qos", "timestamp")

    def __init__(self, r: Reader, header: int, known: frozenset[int]) -> None:
        super().__init__(r, header, known | _COMMON_EXTS)
        qos = self.z64(EXT_QOS)
        self.qos = QOS_DEFAULT if qos is None else qos
        ts = self.known.get(EXT_TIMESTAMP)
        self.timestamp: Timestamp | None = None if ts is None else _timestamp_ext(ts)


_COMMON_EXTS = frozenset({EXT_QOS, EXT_TIMESTAMP})
_NO_EXTS: frozenset[int] = frozenset()
_NODE_EXTS = frozenset({EXT_NODE_ID})
_PUSH_EXTS = frozenset({EXT_NODE_ID, EXT_TS_STACK})
_REQUEST_EXTS = frozenset({EXT_TARGET, EXT_BUDGET, EXT_TIMEOUT, EXT_NODE_ID, EXT_TS_STACK})
_RESPONSE_EXTS = frozenset({EXT_RESPONDER_ID, EXT_TS_STACK})


# --- INTEREST ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Interest:
    interest_id: int
    mode: InterestMode
    options: InterestOptions = NO_OPTIONS
    wire_expr: WireExpr | None = None  # None: not restricted (all keys)
    aggregate: bool = False
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    node_id: int | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.interest_id, U32_MAX, "interest id")
        exts = _common_exts(self.qos, self.timestamp)
        add_optional(exts, EXT_NODE_ID, self.node_id)
        exts.extend(self.extensions)
        _finish(out, ID_INTEREST | (int(self.mode) << 5), exts)
        write_vle(out, self.interest_id)
        if self.mode != InterestMode.FINAL:
            options = int(self.options) & 0x0F
            if self.wire_expr is not None:
                options |= OPT_RESTRICTED
                if self.wire_expr.suffix:
                    options |= OPT_NAMED
                if self.wire_expr.mapping_sender:
                    options |= OPT_MAPPING
            if self.aggregate:
                options |= OPT_AGGREGATE
            out.append(options)
            if self.wire_expr is not None:
                self.wire_expr.write(out)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> Interest:
        mode = InterestMode((header >> 5) & 0x03)
        interest_id = r.vle(U32_MAX)
        options = InterestOptions(0)
        wire_expr = None
        aggregate = False
        if mode != InterestMode.FINAL:
            raw = r.u8()
            options = InterestOptions(raw & 0x0F)
            aggregate = bool(raw & OPT_AGGREGATE)
            if raw & OPT_RESTRICTED:
                wire_expr = WireExpr.read(r, bool(raw & OPT_NAMED), bool(raw & OPT_MAPPING))
        e = _NetExts(r, header, _NODE_EXTS)
        return cls(interest_id, mode, options, wire_expr, aggregate, e.qos, e.timestamp,
                   e.z64(EXT_NODE_ID), tuple(e.others))  # fmt: skip


# --- DECLARE and its bodies ----------------------------------------------------------------

D_KEYEXPR = 0x00
U_KEYEXPR = 0x01
D_SUBSCRIBER = 0x02
U_SUBSCRIBER = 0x03
D_QUERYABLE = 0x04
U_QUERYABLE = 0x05
D_TOKEN = 0x06
U_TOKEN = 0x07
D_FINAL = 0x1A

#: The "null" WireExprExt that real nodes put on U_QUERYABLE and U_TOKEN.
NULL_WIRE_EXPR = WireExpr(0, "", False)


def _body_exts(r: Reader, header: int) -> list[Extension]:
    if not header & FLAG_Z:
        return []
    return [unknown_extension(ext, r) for ext in read_extensions(r)]


def _write_body_header(out: bytearray, header: int, exts: tuple[Extension, ...]) -> None:
    out.append(header | (FLAG_Z if exts else 0))


@dataclass(frozen=True, slots=True)
class DeclareKeyExpr:
    expr_id: int
    wire_expr: WireExpr  # its scope is always one of the sender's ids
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.expr_id, U16_MAX, "expression id")
        _write_body_header(out, D_KEYEXPR | (FLAG_N if self.wire_expr.suffix else 0), self.extensions)
        write_vle(out, self.expr_id)
        self.wire_expr.write(out)
        if self.extensions:
            write_extensions(out, self.extensions)

    @classmethod
    def read(cls, r: Reader, header: int) -> DeclareKeyExpr:
        expr_id = r.vle(U16_MAX)
        wire_expr = WireExpr.read(r, bool(header & FLAG_N), True)
        return cls(expr_id, wire_expr, tuple(_body_exts(r, header)))


@dataclass(frozen=True, slots=True)
class UndeclareKeyExpr:
    expr_id: int
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.expr_id, U16_MAX, "expression id")
        _write_body_header(out, U_KEYEXPR, self.extensions)
        write_vle(out, self.expr_id)
        if self.extensions:
            write_extensions(out, self.extensions)

    @classmethod
    def read(cls, r: Reader, header: int) -> UndeclareKeyExpr:
        expr_id = r.vle(U16_MAX)
        return cls(expr_id, tuple(_body_exts(r, header)))


@dataclass(frozen=True, slots=True)
class DeclareSubscriber:
    entity_id: int
    wire_expr: WireExpr
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        _write_entity(out, D_SUBSCRIBER, self.entity_id, self.wire_expr, list(self.extensions))

    @classmethod
    def read(cls, r: Reader, header: int) -> DeclareSubscriber:
        entity_id = r.vle(U32_MAX)
        wire_expr = _read_wire_expr(r, header)
        return cls(entity_id, wire_expr, tuple(_body_exts(r, header)))


@dataclass(frozen=True, slots=True)
class DeclareQueryable:
    entity_id: int
    wire_expr: WireExpr
    complete: bool = False
    distance: int = 0
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.distance, U16_MAX, "queryable distance")
        exts = []
        if self.complete or self.distance:
            exts.append(Extension(EXT_QUERYABLE_INFO, int(self.complete) | (self.distance << 8)))
        exts.extend(self.extensions)
        _write_entity(out, D_QUERYABLE, self.entity_id, self.wire_expr, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> DeclareQueryable:
        entity_id = r.vle(U32_MAX)
        wire_expr = _read_wire_expr(r, header)
        complete = False
        distance = 0
        others: list[Extension] = []
        if header & FLAG_Z:
            for ext in read_extensions(r):
                if ext.id == EXT_QUERYABLE_INFO:
                    info = ext_int(ext)
                    complete = bool(info & 1)
                    distance = (info >> 8) & U16_MAX
                else:
                    others.append(unknown_extension(ext, r))
        return cls(entity_id, wire_expr, complete, distance, tuple(others))


@dataclass(frozen=True, slots=True)
class DeclareToken:
    entity_id: int
    wire_expr: WireExpr
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        _write_entity(out, D_TOKEN, self.entity_id, self.wire_expr, list(self.extensions))

    @classmethod
    def read(cls, r: Reader, header: int) -> DeclareToken:
        entity_id = r.vle(U32_MAX)
        wire_expr = _read_wire_expr(r, header)
        return cls(entity_id, wire_expr, tuple(_body_exts(r, header)))


def _write_entity(
    out: bytearray, body_id: int, entity_id: int, wire_expr: WireExpr, exts: list[Extension]
) -> None:
    check_bound(entity_id, U32_MAX, "entity id")
    out.append(body_id | _wire_expr_flags(wire_expr) | (FLAG_Z if exts else 0))
    write_vle(out, entity_id)
    wire_expr.write(out)
    if exts:
        write_extensions(out, exts)


def _wire_expr_ext_bytes(wire_expr: WireExpr) -> bytes:
    out = bytearray()
    out.append((1 if wire_expr.suffix else 0) | (2 if wire_expr.mapping_sender else 0))
    check_bound(wire_expr.scope, U16_MAX, "expression id")
    write_vle(out, wire_expr.scope)
    out += wire_expr.suffix.encode("utf-8")  # no length: the suffix runs to the ext's end
    return bytes(out)


def _wire_expr_ext(ext: Extension) -> WireExpr:
    r = ext_reader(ext)
    flags = r.u8()
    scope = r.vle(U16_MAX)
    suffix = ""
    if flags & 1:
        raw = r.rest()
        try:
            suffix = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("WireExpr extension suffix is not UTF-8", r.pos) from None
    expect_end(r, "WireExpr extension")
    return WireExpr(scope, suffix, bool(flags & 2))


@dataclass(frozen=True, slots=True)
class _Undeclare:
    entity_id: int
    ext_wire_expr: WireExpr | None = None
    extensions: tuple[Extension, ...] = ()

    BODY_ID = -1

    def write(self, out: bytearray) -> None:
        check_bound(self.entity_id, U32_MAX, "entity id")
        exts = []
        if self.ext_wire_expr is not None:
            exts.append(Extension(EXT_WIRE_EXPR, _wire_expr_ext_bytes(self.ext_wire_expr)))
        exts.extend(self.extensions)
        out.append(self.BODY_ID | (FLAG_Z if exts else 0))
        write_vle(out, self.entity_id)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> _Undeclare:
        entity_id = r.vle(U32_MAX)
        ext_wire_expr = None
        others: list[Extension] = []
        if header & FLAG_Z:
            for ext in read_extensions(r):
                if ext.id == EXT_WIRE_EXPR:
                    ext_wire_expr = _wire_expr_ext(ext)
                else:
                    others.append(unknown_extension(ext, r))
        return cls(entity_id, ext_wire_expr, tuple(others))


@dataclass(frozen=True, slots=True)
class UndeclareSubscriber(_Undeclare):
    """1.10.2 omits the WireExpr extension here."""

    BODY_ID = U_SUBSCRIBER


@dataclass(frozen=True, slots=True)
class UndeclareQueryable(_Undeclare):
    """1.10.2 always writes the (null) WireExpr extension here."""

    ext_wire_expr: WireExpr | None = NULL_WIRE_EXPR
    BODY_ID = U_QUERYABLE


@dataclass(frozen=True, slots=True)
class UndeclareToken(_Undeclare):
    """1.10.2 always writes the (null) WireExpr extension here."""

    ext_wire_expr: WireExpr | None = NULL_WIRE_EXPR
    BODY_ID = U_TOKEN


@dataclass(frozen=True, slots=True)
class DeclareFinal:
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        _write_body_header(out, D_FINAL, self.extensions)
        if self.extensions:
            write_extensions(out, self.extensions)

    @classmethod
    def read(cls, r: Reader, header: int) -> DeclareFinal:
        return cls(tuple(_body_exts(r, header)))


DeclarationBody = (
    DeclareKeyExpr | UndeclareKeyExpr | DeclareSubscriber | UndeclareSubscriber
    | DeclareQueryable | UndeclareQueryable | DeclareToken | UndeclareToken | DeclareFinal
)  # fmt: skip

_BODY_READERS = {
    D_KEYEXPR: DeclareKeyExpr.read,
    U_KEYEXPR: UndeclareKeyExpr.read,
    D_SUBSCRIBER: DeclareSubscriber.read,
    U_SUBSCRIBER: UndeclareSubscriber.read,
    D_QUERYABLE: DeclareQueryable.read,
    U_QUERYABLE: UndeclareQueryable.read,
    D_TOKEN: DeclareToken.read,
    U_TOKEN: UndeclareToken.read,
    D_FINAL: DeclareFinal.read,
}


@dataclass(frozen=True, slots=True)
class Declare:
    body: DeclarationBody
    interest_id: int | None = None
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    node_id: int | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        exts = _common_exts(self.qos, self.timestamp)
        add_optional(exts, EXT_NODE_ID, self.node_id)
        exts.extend(self.extensions)
        _finish(out, ID_DECLARE | (FLAG_I if self.interest_id is not None else 0), exts)
        if self.interest_id is not None:
            check_bound(self.interest_id, U32_MAX, "interest id")
            write_vle(out, self.interest_id)
        if exts:
            write_extensions(out, exts)
        self.body.write(out)

    @classmethod
    def read(cls, r: Reader, header: int) -> Declare:
        interest_id = r.vle(U32_MAX) if header & FLAG_I else None
        e = _NetExts(r, header, _NODE_EXTS)
        start = r.pos
        body_header = r.u8()
        reader = _BODY_READERS.get(body_header & 0x1F)
        if reader is None:
            raise DecodeError(f"unknown declaration body 0x{body_header & 0x1F:02x}", start)
        body = reader(r, body_header)
        return cls(body, interest_id, e.qos, e.timestamp, e.z64(EXT_NODE_ID), tuple(e.others))  # type: ignore[arg-type]


# --- Network OAM ---------------------------------------------------------------------------

OAM_LINKSTATE = 0x0001


@dataclass(frozen=True, slots=True)
class NetworkOam:
    oam_id: int
    body: None | int | bytes = None
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.oam_id, U16_MAX, "OAM id")
        exts = _common_exts(self.qos, self.timestamp)
        exts.extend(self.extensions)
        _finish(out, ID_OAM | _oam_encoding(self.body), exts)
        write_vle(out, self.oam_id)
        if exts:
            write_extensions(out, exts)
        _write_oam_body(out, self.body)

    @classmethod
    def read(cls, r: Reader, header: int) -> NetworkOam:
        oam_id = r.vle(U16_MAX)
        e = _NetExts(r, header, _NO_EXTS)
        body = read_oam_body(r, header)
        return cls(oam_id, body, e.qos, e.timestamp, tuple(e.others))


def _oam_encoding(body: None | int | bytes) -> int:
    if body is None:
        return ENC_UNIT
    if isinstance(body, int):
        return ENC_Z64
    return ENC_ZBUF


def _write_oam_body(out: bytearray, body: None | int | bytes) -> None:
    if isinstance(body, int):
        write_vle(out, body)
    elif body is not None:
        write_zbytes(out, body)


def read_oam_body(r: Reader, header: int) -> None | int | bytes:
    """The body of a network or transport OAM, whose type is in header bits 5-6."""
    enc = header & ENC_MASK
    if enc == ENC_UNIT:
        return None
    if enc == ENC_Z64:
        return r.vle(U64_MAX)
    if enc == ENC_ZBUF:
        return r.zbytes(MAX_PAYLOAD_LEN)
    raise DecodeError("reserved OAM body encoding", r.pos)


# --- Dispatch ------------------------------------------------------------------------------

NetworkMessage = Push | Request | Response | ResponseFinal | Declare | Interest | NetworkOam

_NETWORK_READERS = {
    ID_PUSH: Push.read,
    ID_REQUEST: Request.read,
    ID_RESPONSE: Response.read,
    ID_RESPONSE_FINAL: ResponseFinal.read,
    ID_DECLARE: Declare.read,
    ID_INTEREST: Interest.read,
    ID_OAM: NetworkOam.read,
}


def read_network_message(r: Reader) -> NetworkMessage:
    start = r.pos
    header = r.u8()
    reader = _NETWORK_READERS.get(header & 0x1F)
    if reader is None:
        raise DecodeError(f"unknown network message id 0x{header & 0x1F:02x}", start)
    return reader(r, header)  # type: ignore[return-value]


def decode_network_message(data: bytes | bytearray | memoryview) -> NetworkMessage:
    """Decode exactly one network message filling ``data``."""
    r = Reader(bytes(data))
    msg = read_network_message(r)
    expect_end(r, "network message")
    return msg


def encode_network_message(msg: NetworkMessage) -> bytes:
    out = bytearray()
    msg.write(out)
    return bytes(out)

