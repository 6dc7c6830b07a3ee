"""Wire primitives: VLE integers, byte slices, ZenohId, Timestamp, Encoding, WireExpr.

Everything here is pure: a :class:`Reader` walks an immutable buffer and raises
:class:`~pyzenoh.errors.DecodeError` on any problem; writers append to a ``bytearray``.
Lengths read from the wire are checked against the bytes left and against a named bound
before anything is sliced.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

from typing_extensions import override

from pyzenoh.errors import DecodeError, UsageError

# --- Bounds (zenoh-wire.md 1.1 / 1.3) --------------------------------------------------

U8_MAX = 0xFF
U16_MAX = 0xFFFF
U32_MAX = 0xFFFF_FFFF
U64_MAX = 0xFFFF_FFFF_FFFF_FFFF
VLE_MAX_BYTES = 9

#: Largest key-expression suffix (z16 length).
MAX_SUFFIX_LEN = U16_MAX
#: Largest encoding schema (z8 length).
MAX_SCHEMA_LEN = U8_MAX
#: Largest payload / ZBuf extension body (z32 length).
MAX_PAYLOAD_LEN = U32_MAX
#: ZenohId length bounds.
ZID_MAX_LEN = 16


class Reader:
    """A cursor over an immutable byte buffer, raising DecodeError on every problem."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def fail(self, reason: str) -> DecodeError:
        return DecodeError(reason, self.pos)

    def u8(self) -> int:
        pos = self.pos
        if pos >= self.end:
            raise DecodeError("truncated: expected a byte", pos)
        self.pos = pos + 1
        return self.buf[pos]

    def peek_u8(self) -> int:
        if self.pos >= self.end:
            raise DecodeError("truncated: expected a byte", self.pos)
        return self.buf[self.pos]

    def u16_le(self) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise DecodeError("truncated: expected 2 bytes", pos)
        self.pos = pos + 2
        return self.buf[pos] | (self.buf[pos + 1] << 8)

    def vle(self, maximum: int = U64_MAX) -> int:
        """A LEB128 integer of at most 9 bytes (the 9th carries 8 bits), checked <= maximum."""
        buf = self.buf
        pos = self.pos
        end = self.end
        if pos < end and buf[pos] < 0x80:  # one-byte values dominate: ids, lengths, flags
            value = buf[pos]
            if value > maximum:
                raise DecodeError(f"integer {value} exceeds bound {maximum}", pos)
            self.pos = pos + 1
            return value
        value = 0
        shift = 0
        for i in range(VLE_MAX_BYTES):
            if pos >= end:
                raise DecodeError("truncated variable-length integer", pos)
            byte = buf[pos]
            pos += 1
            if i == VLE_MAX_BYTES - 1:
                value |= byte << 56
                break
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        if value > maximum:
            raise DecodeError(f"integer {value} exceeds bound {maximum}", self.pos)
        self.pos = pos
        return value

    def take(self, n: int) -> bytes:
        pos = self.pos
        if n < 0 or n > self.end - pos:
            raise DecodeError(f"truncated: {n} bytes declared, {self.end - pos} left", pos)
        self.pos = pos + n
        return self.buf[pos : pos + n]

    def rest(self) -> bytes:
        data = self.buf[self.pos : self.end]
        self.pos = self.end
        return data

    def zbytes(self, max_len: int = MAX_PAYLOAD_LEN) -> bytes:
        """A VLE length (checked against ``max_len`` and the bytes left) and that many bytes."""
        start = self.pos
        n = self.vle(max_len)
        if n > self.end - self.pos:
            raise DecodeError(f"truncated: {n} bytes declared, {self.end - self.pos} left", start)
        return self.take(n)

    def zstr(self, max_len: int = MAX_PAYLOAD_LEN) -> str:
        start = self.pos
        raw = self.zbytes(max_len)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError("string is not valid UTF-8", start) from None

    def sub(self, n: int) -> Reader:
        """A reader over the next ``n`` bytes; this reader skips past them."""
        pos = self.pos
        if n > self.end - pos:
            raise DecodeError(f"truncated: {n} bytes declared, {self.end - pos} left", pos)
        self.pos = pos + n
        return Reader(self.buf, pos, pos + n)


def write_vle(out: bytearray, value: int) -> None:
    """Append ``value`` as minimal LEB128 with Zenoh's 9-byte rule."""
    if value < 0x80:
        if value < 0:
            raise UsageError(f"negative integer {value} cannot be encoded")
        out.append(value)
        return
    if value > U64_MAX:
        raise UsageError(f"integer {value} does not fit in 64 bits")
    for _ in range(VLE_MAX_BYTES - 1):
        if value < 0x80:
            out.append(value)
            return
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)  # the 9th byte carries the top 8 bits and no continuation bit


#: Each one-byte VLE, made once (most SNs, lengths and ids of a small link).
_ONE_BYTE_VLE = [bytes((v,)) for v in range(0x80)]


def vle_bytes(value: int) -> bytes:
    """``value`` as :func:`write_vle` writes it, as bytes of its own. Unrolled up to four
    bytes (28 bits: every SN of a 28-bit resolution): a sender frames each batch's SN
    with it, and a loop per byte costs more than the rest of the header."""
    if 0 <= value < 0x80:
        return _ONE_BYTE_VLE[value]
    if 0 < value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if 0 < value < 0x20_0000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    if 0 < value < 0x1000_0000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, ((value >> 14) & 0x7F) | 0x80, value >> 21))
    out = bytearray()
    write_vle(out, value)
    return bytes(out)


def vle_len(value: int) -> int:
    """Bytes of ``value`` as :func:`write_vle` writes it: 7 bits a byte, the ninth holding 8."""
    return min(max(1, (value.bit_length() + 6) // 7), VLE_MAX_BYTES)


def write_zbytes(out: bytearray, data: bytes) -> None:
    write_vle(out, len(data))
    out += data


def write_zstr(out: bytearray, text: str) -> None:
    write_zbytes(out, text.encode("utf-8"))


def check_bound(value: int, maximum: int, what: str) -> None:
    if not 0 <= value <= maximum:
        raise UsageError(f"{what} {value} out of range 0..{maximum}")


# --- WhatAmI -----------------------------------------------------------------------------


class WhatAmI(IntEnum):
    """Node kind as the in-memory enum / LINKSTATE uses it (1, 2, 4)."""

    ROUTER = 1
    PEER = 2
    CLIENT = 4

    def to_code(self) -> int:
        """The 2-bit code of INIT and JOIN (00 router, 01 peer, 10 client)."""
        return {WhatAmI.ROUTER: 0, WhatAmI.PEER: 1, WhatAmI.CLIENT: 2}[self]

    @classmethod
    def from_code(cls, code: int, offset: int = -1) -> WhatAmI:
        if code == 0:
            return cls.ROUTER
        if code == 1:
            return cls.PEER
        if code == 2:
            return cls.CLIENT
        raise DecodeError(f"invalid WhatAmI code {code}", offset)

    @override
    def __str__(self) -> str:
        return self.name.lower()

    @override
    def __repr__(self) -> str:
        return self.name.capitalize()  # zenoh-python's repr: Router, Peer, Client


# --- ZenohId -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZenohId:
    """A non-zero 128-bit id; on the wire its little-endian bytes, trimmed."""

    value: int

    def __post_init__(self) -> None:
        if not 0 < self.value < (1 << 128):
            raise UsageError("a ZenohId is a non-zero 128-bit integer")

    @classmethod
    def from_str(cls, text: str) -> ZenohId:
        try:
            value = int(text, 16)
        except ValueError:
            raise UsageError(f"ZenohId {text!r} is not hexadecimal") from None
        return cls(value)

    @classmethod
    def from_wire(cls, data: bytes, offset: int = -1) -> ZenohId:
        value = int.from_bytes(data, "little")
        if value == 0 or not 1 <= len(data) <= ZID_MAX_LEN:
            raise DecodeError("invalid ZenohId", offset)
        return cls(value)

    @classmethod
    def random(cls, rand_bytes: bytes) -> ZenohId:
        """A ZenohId from 16 random bytes supplied by the caller (the core reads no RNG)."""
        value = int.from_bytes(rand_bytes[:16], "little") or 1
        return cls(value)

    def to_wire(self) -> bytes:
        return self.value.to_bytes((self.value.bit_length() + 7) // 8, "little")

    @override
    def __str__(self) -> str:
        return format(self.value, "x")

    @override
    def __repr__(self) -> str:
        return format(self.value, "x")  # zenoh-python's repr is the id itself


def read_zid_nibble(r: Reader, flags: int) -> ZenohId:
    """Encoding A/B: the length sits in the high nibble of an already-read flags byte."""
    length = (flags >> 4) + 1
    start = r.pos
    return ZenohId.from_wire(r.take(length), start)


def zid_nibble_flags(zid: ZenohId) -> tuple[int, bytes]:
    wire = zid.to_wire()
    return (len(wire) - 1) << 4, wire


# --- Timestamp -----------------------------------------------------------------------------


# Not frozen (a router stamps every PUT it routes, and a frozen dataclass's __init__
# costs twice as much); hashable all the same: treat it as immutable.
@dataclass(slots=True, unsafe_hash=True)
class Timestamp:
    """An HLC timestamp: NTP64 time (seconds since 1970 << 32 | fraction) and the HLC id."""

    time: int
    id: ZenohId

    @classmethod
    def read(cls, r: Reader) -> Timestamp:
        time = r.vle(U64_MAX)
        start = r.pos
        raw = r.zbytes(ZID_MAX_LEN)
        return cls(time, ZenohId.from_wire(raw, start))

    def write(self, out: bytearray) -> None:
        write_vle(out, self.time)
        write_zbytes(out, self.id.to_wire())

    def to_seconds(self) -> float:
        return (self.time >> 32) + (self.time & 0xFFFF_FFFF) / 2**32

    @classmethod
    def from_ns(cls, unix_ns: int, hlc_id: ZenohId) -> Timestamp:
        secs, ns = divmod(unix_ns, 1_000_000_000)
        return cls((secs << 32) | ((ns << 32) // 1_000_000_000), hlc_id)


# --- Encoding ------------------------------------------------------------------------------

ENCODING_NAMES: tuple[str, ...] = (
    "zenoh/bytes",
    "zenoh/string",
    "zenoh/serialized",
    "application/octet-stream",
    "text/plain",
    "application/json",
    "text/json",
    "application/cdr",
    "application/cbor",
    "application/yaml",
    "text/yaml",
    "text/json5",
    "application/python-serialized-object",
    "application/protobuf",
    "application/java-serialized-object",
    "application/openmetrics-text",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/bmp",
    "image/webp",
    "application/xml",
    "application/x-www-form-urlencoded",
    "text/html",
    "text/xml",
    "text/css",
    "text/javascript",
    "text/markdown",
    "text/csv",
    "application/sql",
    "application/coap-payload",
    "application/json-patch+json",
    "application/json-seq",
    "application/jsonpath",
    "application/jwt",
    "application/mp4",
    "application/soap+xml",
    "application/yang",
    "audio/aac",
    "audio/flac",
    "audio/mp4",
    "audio/ogg",
    "audio/vorbis",
    "video/h261",
    "video/h263",
    "video/h264",
    "video/h265",
    "video/h266",
    "video/mp4",
    "video/ogg",
    "video/raw",
    "video/vp8",
    "video/vp9",
)
ENCODING_IDS: dict[str, int] = {name: i for i, name in enumerate(ENCODING_NAMES)}
ENCODING_CUSTOM_ID = 0xFFFF


@dataclass(frozen=True, slots=True)
class Encoding:
    """An encoding id (predefined table) and an optional schema."""

    id: int = 0
    schema: bytes | None = None

    DEFAULT: ClassVar[Encoding]

    def is_default(self) -> bool:
        return self.id == 0 and self.schema is None

    @classmethod
    def from_str(cls, text: str) -> Encoding:
        """Parse the API's string form: ``"text/plain;charset=utf-8"`` -> id 4 + schema."""
        prefix, sep, schema = text.partition(";")
        known = ENCODING_IDS.get(prefix)
        if known is None:
            return cls(ENCODING_CUSTOM_ID, text.encode("utf-8"))
        return cls(known, schema.encode("utf-8") if sep else None)

    @override
    def __str__(self) -> str:
        schema = None if self.schema is None else self.schema.decode("utf-8", "replace")
        if self.id < len(ENCODING_NAMES):
            name = ENCODING_NAMES[self.id]
            return name if schema is None else f"{name};{schema}"
        if self.id == ENCODING_CUSTOM_ID and schema is not None:
            return schema
        return f"unknown({self.id})" if schema is None else f"unknown({self.id});{schema}"

    @classmethod
    def read(cls, r: Reader) -> Encoding:
        start = r.pos
        head = r.vle(U32_MAX)
        enc_id = head >> 1
        if enc_id > U16_MAX:
            raise DecodeError(f"encoding id {enc_id} exceeds 16 bits", start)
        schema = r.zbytes(MAX_SCHEMA_LEN) if head & 1 else None
        return cls(enc_id, schema)

    def write(self, out: bytearray) -> None:
        check_bound(self.id, U16_MAX, "encoding id")
        if self.schema is None:
            write_vle(out, self.id << 1)
        else:
            if len(self.schema) > MAX_SCHEMA_LEN:
                raise UsageError("encoding schema longer than 255 bytes")
            write_vle(out, (self.id << 1) | 1)
            write_zbytes(out, self.schema)


Encoding.DEFAULT = Encoding()


# --- WireExpr ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WireExpr:
    """A key expression on the wire: ``scope`` (0 or a declared id) + ``suffix``.

    ``mapping_sender`` is the M flag: True when ``scope`` is an id declared by the sender
    of the message, False when it is one declared by the receiver.
    """

    scope: int = 0
    suffix: str = ""
    mapping_sender: bool = True

    @property
    def has_suffix(self) -> bool:
        return bool(self.suffix)

    @staticmethod
    def read(r: Reader, has_suffix: bool, mapping_sender: bool) -> WireExpr:
        scope = r.vle(U16_MAX)
        suffix = r.zstr(MAX_SUFFIX_LEN) if has_suffix else ""
        return WireExpr(scope, suffix, mapping_sender)

    def write(self, out: bytearray) -> None:
        check_bound(self.scope, U16_MAX, "expression id")
        write_vle(out, self.scope)
        if self.suffix:
            raw = self.suffix.encode("utf-8")
            if len(raw) > MAX_SUFFIX_LEN:
                raise UsageError("key expression longer than 65535 bytes")
            write_zbytes(out, raw)

    @override
    def __str__(self) -> str:
        if self.scope == 0:
            return self.suffix
        side = "S" if self.mapping_sender else "R"
        return f"[{self.scope}{side}]{self.suffix}"


# --- Entity ids used by ResponderId and SourceInfo -----------------------------------------


@dataclass(frozen=True, slots=True)
class EntityGlobalId:
    zid: ZenohId
    eid: int = 0

    @classmethod
    def read(cls, r: Reader) -> EntityGlobalId:
        flags = r.u8()
        zid = read_zid_nibble(r, flags)
        return cls(zid, r.vle(U32_MAX))

    def write(self, out: bytearray) -> None:
        flags, wire = zid_nibble_flags(self.zid)
        out.append(flags)
        out += wire
        write_vle(out, self.eid)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    zid: ZenohId
    eid: int = 0
    sn: int = 0

    @classmethod
    def read(cls, r: Reader) -> SourceInfo:
        flags = r.u8()
        zid = read_zid_nibble(r, flags)
        return cls(zid, r.vle(U32_MAX), r.vle(U32_MAX))

    def write(self, out: bytearray) -> None:
        flags, wire = zid_nibble_flags(self.zid)
        out.append(flags)
        out += wire
        write_vle(out, self.eid)
        write_vle(out, self.sn)
