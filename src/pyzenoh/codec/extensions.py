"""Extension chains (zenoh-wire.md 1.8).

An extension header is ``|Z|ENC|M|ID|``. Extensions are identified by the whole low
7 bits (ENC + M + ID), so QoS ``0x01`` and QoSLink ``0x21`` are different extensions.
Each message decoder takes the extensions it knows out of the chain; an unknown
non-mandatory one is kept (and forwarded), an unknown mandatory one fails the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyzenoh.codec.primitives import (
    MAX_PAYLOAD_LEN,
    U64_MAX,
    Reader,
    write_vle,
    write_zbytes,
)
from pyzenoh.errors import CloseReason, DecodeError, UsageError

FLAG_Z = 0x80
ENC_MASK = 0x60
ENC_UNIT = 0x00
ENC_Z64 = 0x20
ENC_ZBUF = 0x40
FLAG_MANDATORY = 0x10
EXT_ID_MASK = 0x7F

#: A chain longer than this is treated as an attack, not a message.
MAX_EXTENSIONS = 64

ExtValue = None | int | bytes


@dataclass(frozen=True, slots=True)
class Extension:
    """One extension: ``id`` is the header's low 7 bits; the value's type follows ENC."""

    id: int
    value: ExtValue = None

    @property
    def mandatory(self) -> bool:
        return bool(self.id & FLAG_MANDATORY)

    @property
    def encoding(self) -> int:
        return self.id & ENC_MASK


def read_extensions(r: Reader) -> list[Extension]:
    """Read a chain of extensions; the caller has seen the Z flag of its header."""
    exts: list[Extension] = []
    more = True
    while more:
        if len(exts) >= MAX_EXTENSIONS:
            raise r.fail("too many extensions")
        header = r.u8()
        more = bool(header & FLAG_Z)
        ext_id = header & EXT_ID_MASK
        enc = header & ENC_MASK
        if enc == ENC_UNIT:
            exts.append(Extension(ext_id))
        elif enc == ENC_Z64:
            exts.append(Extension(ext_id, r.vle(U64_MAX)))
        elif enc == ENC_ZBUF:
            exts.append(Extension(ext_id, r.zbytes(MAX_PAYLOAD_LEN)))
        else:
            raise DecodeError(f"reserved extension encoding in 0x{header:02x}", r.pos - 1)
    return exts


def unknown_extension(ext: Extension, r: Reader) -> Extension:
    """Keep an extension the message does not know, unless it is mandatory."""
    if ext.mandatory:
        raise DecodeError(f"unknown mandatory extension 0x{ext.id:02x}", r.pos, CloseReason.UNSUPPORTED)
    return ext


def write_extensions(out: bytearray, exts: Iterable[Extension]) -> None:
    """Write a chain; the caller has set the Z flag of its header when it is non-empty."""
    chain = list(exts)
    last = len(chain) - 1
    for i, ext in enumerate(chain):
        header = ext.id | (FLAG_Z if i < last else 0)
        enc = ext.id & ENC_MASK
        value = ext.value
        if enc == ENC_UNIT:
            if value is not None:
                raise UsageError(f"unit extension 0x{ext.id:02x} carries a value")
            out.append(header)
        elif enc == ENC_Z64:
            if not isinstance(value, int):
                raise UsageError(f"Z64 extension 0x{ext.id:02x} needs an int")
            out.append(header)
            write_vle(out, value)
        elif enc == ENC_ZBUF:
            if not isinstance(value, bytes | bytearray | memoryview):
                raise UsageError(f"ZBuf extension 0x{ext.id:02x} needs bytes")
            out.append(header)
            write_zbytes(out, bytes(value))
        else:
            raise UsageError(f"extension id 0x{ext.id:02x} uses the reserved encoding")


def ext_bytes(ext: Extension) -> bytes:
    """The body of a known ZBuf extension (its ENC is part of its id, so always bytes)."""
    assert isinstance(ext.value, bytes)
    return ext.value


def ext_int(ext: Extension) -> int:
    """The value of a known Z64 extension."""
    assert isinstance(ext.value, int)
    return ext.value


def ext_reader(ext: Extension) -> Reader:
    """A reader over a ZBuf extension body."""
    return Reader(ext_bytes(ext))


def expect_end(r: Reader, what: str) -> None:
    """Structured bodies must be consumed exactly; trailing bytes are malformed."""
    if not r.at_end():
        raise DecodeError(f"{r.remaining()} trailing bytes in {what}", r.pos)


class KnownExtensions:
    """A message's extension chain: the ids in ``known`` kept by id (the last wins), any
    other kept in arrival order, or refused when mandatory (:func:`unknown_extension`)."""

    __slots__ = ("known", "others")

    def __init__(self, r: Reader, header: int, known: frozenset[int]) -> None:
        self.known: dict[int, Extension] = {}
        self.others: list[Extension] = []
        if header & FLAG_Z:
            for ext in read_extensions(r):
                if ext.id in known:
                    self.known[ext.id] = ext
                else:
                    self.others.append(unknown_extension(ext, r))

    def flag(self, ext_id: int) -> bool:
        return ext_id in self.known

    def z64(self, ext_id: int) -> int | None:
        ext = self.known.get(ext_id)
        return None if ext is None else ext_int(ext)

    def zbuf(self, ext_id: int) -> bytes | None:
        ext = self.known.get(ext_id)
        return None if ext is None else ext_bytes(ext)


def add_optional(exts: list[Extension], ext_id: int, value: None | bool | int | bytes) -> None:
    """Append an optional extension: a Unit one when ``value`` is True, a valued one when
    it is an int or bytes; nothing for None or False."""
    if value is None or value is False:
        return
    exts.append(Extension(ext_id, None if value is True else value))
