"""DECLARE and its bodies: key expressions, subscribers, queryables and tokens declared
and undeclared, and D_FINAL (the end of the answer to an interest).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.codec.extensions import (
    Extension,
    add_optional,
    expect_end,
    ext_int,
    ext_reader,
    read_extensions,
    unknown_extension,
    write_extensions,
)
from pyzenoh.codec.network.header import (
    _NODE_EXTS,
    EXT_NODE_ID,
    FLAG_I,
    FLAG_N,
    FLAG_Z,
    ID_DECLARE,
    _common_exts,
    _finish,
    _NetExts,
    _read_wire_expr,
    _wire_expr_flags,
)
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import (
    U16_MAX,
    U32_MAX,
    Reader,
    Timestamp,
    WireExpr,
    check_bound,
    write_vle,
)
from pyzenoh.errors import DecodeError

EXT_QUERYABLE_INFO = 0x21
EXT_WIRE_EXPR = 0x5F

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


def _write_entity(out: bytearray, body_id: int, entity_id: int, wire_expr: WireExpr, exts: list[Extension]) -> None:
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
    DeclareKeyExpr
    | UndeclareKeyExpr
    | DeclareSubscriber
    | UndeclareSubscriber
    | DeclareQueryable
    | UndeclareQueryable
    | DeclareToken
    | UndeclareToken
    | DeclareFinal
)

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
