"""Zenoh (data) layer: PUT, DEL, QUERY, REPLY, ERR (zenoh-wire.md 4).

These are the bodies carried by PUSH, REQUEST and RESPONSE.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from pyzenoh.codec.extensions import (
    Extension,
    KnownExtensions,
    add_optional,
    expect_end,
    read_extensions,
    unknown_extension,
    write_extensions,
)
from pyzenoh.codec.primitives import (
    MAX_PAYLOAD_LEN,
    U64_MAX,
    Encoding,
    Reader,
    SourceInfo,
    Timestamp,
    check_bound,
    write_vle,
    write_zbytes,
    write_zstr,
)
from pyzenoh.errors import DecodeError

ID_PUT = 0x01
ID_DEL = 0x02
ID_QUERY = 0x03
ID_REPLY = 0x04
ID_ERR = 0x05

FLAG_Z = 0x80
FLAG_T = 0x20  # PUT/DEL: timestamp present
FLAG_E = 0x40  # PUT/ERR: encoding present
FLAG_C = 0x20  # QUERY/REPLY: consolidation present
FLAG_P = 0x40  # QUERY: parameters present

EXT_SOURCE_INFO = 0x41
EXT_SHM = 0x12
EXT_PUT_ATTACHMENT = 0x43
EXT_DEL_ATTACHMENT = 0x42
EXT_QUERY_BODY = 0x43
EXT_QUERY_BODY_SHM = 0x04
EXT_QUERY_ATTACHMENT = 0x45

_PUT_EXTS = frozenset({EXT_SOURCE_INFO, EXT_SHM, EXT_PUT_ATTACHMENT})
_DEL_EXTS = frozenset({EXT_SOURCE_INFO, EXT_DEL_ATTACHMENT})
_QUERY_EXTS = frozenset({EXT_SOURCE_INFO, EXT_QUERY_BODY, EXT_QUERY_BODY_SHM, EXT_QUERY_ATTACHMENT})
_ERR_EXTS = frozenset({EXT_SOURCE_INFO, EXT_SHM})

#: Query parameters are a usize on the wire; we bound them like a payload.
MAX_PARAMETERS_LEN = MAX_PAYLOAD_LEN


class Consolidation(IntEnum):
    AUTO = 0
    NONE = 1
    MONOTONIC = 2
    LATEST = 3


def _source_info(e: KnownExtensions) -> SourceInfo | None:
    raw = e.zbuf(EXT_SOURCE_INFO)
    if raw is None:
        return None
    r = Reader(raw)
    info = SourceInfo.read(r)
    expect_end(r, "SourceInfo")
    return info


def _source_info_bytes(info: SourceInfo) -> bytes:
    out = bytearray()
    info.write(out)
    return bytes(out)


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Put:
    payload: bytes = b""
    encoding: Encoding = Encoding.DEFAULT
    timestamp: Timestamp | None = None
    source_info: SourceInfo | None = None
    attachment: bytes | None = None
    shm: bool = False
    extensions: tuple[Extension, ...] = ()

    def with_timestamp(self, timestamp: Timestamp | None) -> Put:
        """This PUT with another timestamp (a router stamping data it forwards)."""
        return Put(self.payload, self.encoding, timestamp, self.source_info, self.attachment, self.shm, self.extensions)

    def write(self, out: bytearray) -> None:
        header = ID_PUT
        if self.timestamp is not None:
            header |= FLAG_T
        if not self.encoding.is_default():
            header |= FLAG_E
        exts = []
        if self.source_info is not None:
            exts.append(Extension(EXT_SOURCE_INFO, _source_info_bytes(self.source_info)))
        add_optional(exts, EXT_SHM, self.shm)
        add_optional(exts, EXT_PUT_ATTACHMENT, self.attachment)
        exts.extend(self.extensions)
        if exts:
            header |= FLAG_Z
        out.append(header)
        if self.timestamp is not None:
            self.timestamp.write(out)
        if header & FLAG_E:
            self.encoding.write(out)
        if exts:
            write_extensions(out, exts)
        write_zbytes(out, self.payload)

    @classmethod
    def read(cls, r: Reader, header: int) -> Put:
        timestamp = Timestamp.read(r) if header & FLAG_T else None
        encoding = Encoding.read(r) if header & FLAG_E else Encoding.DEFAULT
        e = KnownExtensions(r, header, _PUT_EXTS)
        payload = r.zbytes(MAX_PAYLOAD_LEN)
        return cls(
            payload, encoding, timestamp, _source_info(e), e.zbuf(EXT_PUT_ATTACHMENT), e.flag(EXT_SHM), tuple(e.others)
        )


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Del:
    timestamp: Timestamp | None = None
    source_info: SourceInfo | None = None
    attachment: bytes | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        header = ID_DEL
        if self.timestamp is not None:
            header |= FLAG_T
        exts = []
        if self.source_info is not None:
            exts.append(Extension(EXT_SOURCE_INFO, _source_info_bytes(self.source_info)))
        add_optional(exts, EXT_DEL_ATTACHMENT, self.attachment)
        exts.extend(self.extensions)
        if exts:
            header |= FLAG_Z
        out.append(header)
        if self.timestamp is not None:
            self.timestamp.write(out)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> Del:
        timestamp = Timestamp.read(r) if header & FLAG_T else None
        e = KnownExtensions(r, header, _DEL_EXTS)
        return cls(timestamp, _source_info(e), e.zbuf(EXT_DEL_ATTACHMENT), tuple(e.others))


@dataclass(frozen=True, slots=True)
class QueryBody:
    """The optional value sent with a query: an encoding and raw bytes."""

    payload: bytes = b""
    encoding: Encoding = Encoding.DEFAULT


@dataclass(frozen=True, slots=True)
class Query:
    consolidation: int | None = None
    parameters: str = ""
    body: QueryBody | None = None
    source_info: SourceInfo | None = None
    attachment: bytes | None = None
    body_shm: bool = False
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        header = ID_QUERY
        if self.consolidation is not None:
            header |= FLAG_C
        if self.parameters:
            header |= FLAG_P
        exts = []
        if self.source_info is not None:
            exts.append(Extension(EXT_SOURCE_INFO, _source_info_bytes(self.source_info)))
        add_optional(exts, EXT_QUERY_BODY_SHM, self.body_shm)
        if self.body is not None:
            inner = bytearray()
            self.body.encoding.write(inner)
            inner += self.body.payload
            exts.append(Extension(EXT_QUERY_BODY, bytes(inner)))
        add_optional(exts, EXT_QUERY_ATTACHMENT, self.attachment)
        exts.extend(self.extensions)
        if exts:
            header |= FLAG_Z
        out.append(header)
        if self.consolidation is not None:
            check_bound(self.consolidation, U64_MAX, "consolidation")
            write_vle(out, self.consolidation)
        if self.parameters:
            write_zstr(out, self.parameters)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> Query:
        consolidation = r.vle(U64_MAX) if header & FLAG_C else None
        parameters = r.zstr(MAX_PARAMETERS_LEN) if header & FLAG_P else ""
        e = KnownExtensions(r, header, _QUERY_EXTS)
        body = None
        raw_body = e.zbuf(EXT_QUERY_BODY)
        if raw_body is not None:
            inner = Reader(raw_body)
            encoding = Encoding.read(inner)
            body = QueryBody(inner.rest(), encoding)
        return cls(
            consolidation,
            parameters,
            body,
            _source_info(e),
            e.zbuf(EXT_QUERY_ATTACHMENT),
            e.flag(EXT_QUERY_BODY_SHM),
            tuple(e.others),
        )


@dataclass(frozen=True, slots=True)
class Reply:
    body: Put | Del
    consolidation: int | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        header = ID_REPLY
        if self.consolidation is not None:
            header |= FLAG_C
        if self.extensions:
            header |= FLAG_Z
        out.append(header)
        if self.consolidation is not None:
            write_vle(out, self.consolidation)
        if self.extensions:
            write_extensions(out, self.extensions)
        self.body.write(out)

    @classmethod
    def read(cls, r: Reader, header: int) -> Reply:
        consolidation = r.vle(U64_MAX) if header & FLAG_C else None
        others: list[Extension] = []
        if header & FLAG_Z:
            others = [unknown_extension(ext, r) for ext in read_extensions(r)]
        return cls(read_push_body(r), consolidation, tuple(others))


@dataclass(frozen=True, slots=True)
class Err:
    payload: bytes = b""
    encoding: Encoding = Encoding.DEFAULT
    source_info: SourceInfo | None = None
    shm: bool = False
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        header = ID_ERR
        if not self.encoding.is_default():
            header |= FLAG_E
        exts = []
        if self.source_info is not None:
            exts.append(Extension(EXT_SOURCE_INFO, _source_info_bytes(self.source_info)))
        add_optional(exts, EXT_SHM, self.shm)
        exts.extend(self.extensions)
        if exts:
            header |= FLAG_Z
        out.append(header)
        if header & FLAG_E:
            self.encoding.write(out)
        if exts:
            write_extensions(out, exts)
        write_zbytes(out, self.payload)

    @classmethod
    def read(cls, r: Reader, header: int) -> Err:
        encoding = Encoding.read(r) if header & FLAG_E else Encoding.DEFAULT
        e = KnownExtensions(r, header, _ERR_EXTS)
        payload = r.zbytes(MAX_PAYLOAD_LEN)
        return cls(payload, encoding, _source_info(e), e.flag(EXT_SHM), tuple(e.others))


def _read_one_of(r: Reader, readers: dict[int, Callable[[Reader, int], Any]], what: str) -> Any:
    """Read a body whose header id must be one of ``readers``."""
    start = r.pos
    header = r.u8()
    reader = readers.get(header & 0x1F)
    if reader is None:
        raise DecodeError(f"expected {what}, found id 0x{header & 0x1F:02x}", start)
    return reader(r, header)


_PUSH_BODIES: dict[int, Callable[[Reader, int], Any]] = {ID_PUT: Put.read, ID_DEL: Del.read}
_REQUEST_BODIES: dict[int, Callable[[Reader, int], Any]] = {ID_QUERY: Query.read}
_RESPONSE_BODIES: dict[int, Callable[[Reader, int], Any]] = {ID_REPLY: Reply.read, ID_ERR: Err.read}


def read_push_body(r: Reader) -> Put | Del:
    """PUSH and REPLY carry a PUT or a DEL."""
    body: Put | Del = _read_one_of(r, _PUSH_BODIES, "PUT or DEL")
    return body


def read_request_body(r: Reader) -> Query:
    query: Query = _read_one_of(r, _REQUEST_BODIES, "QUERY")
    return query


def read_response_body(r: Reader) -> Reply | Err:
    body: Reply | Err = _read_one_of(r, _RESPONSE_BODIES, "REPLY or ERR")
    return body
