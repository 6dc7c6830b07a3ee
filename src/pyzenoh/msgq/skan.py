"""The "Skan" binary encoding used by BIND 10's msgq from October 2009 to June 2010.

A Skan *message* is the 4 bytes ``b"Skan"`` (protocol version 0x536b616e, big-endian)
followed by the contents of a top-level HASH whose length is "the rest of the buffer":
no type byte and no length field. Everything else is an *item*::

    item     = tylen [length] data
    tylen    = type (low nibble) | length form (bits 0x30); bits 0xc0 are ignored
    length   = 1 byte (LENGTH_8 0x20), 2 bytes BE (LENGTH_16 0x10) or 4 bytes BE (LENGTH_32 0x00)
    HASH     = repeated ( taglen(1 byte) tag(UTF-8) item )
    LIST     = repeated item
    NULL     = the tylen byte alone: no length field and no data, whatever the length bits say

Item types: DATA 0x01 (called BLOB after Nov 2009), HASH 0x02, LIST 0x03, NULL 0x04, and the
typed scalars BIND 10 actually sent from Nov 2009: BOOL 0x05 (``b"1"``/``b"0"``), INT 0x06
(ASCII decimal), REAL 0x07 (ASCII of Python ``str(float)``), UTF8 0x08 (UTF-8 text).

Encoder dialects (:class:`Dialect`)
-----------------------------------
* ``"bind10"`` (default): what BIND 10's ``isc.cc.message.to_wire`` sent in mid-2010.
  ``None`` -> NULL, ``bool`` -> BOOL, ``int`` -> INT, ``float`` -> REAL, ``str`` -> UTF8,
  ``bytes``/``bytearray``/``memoryview`` -> DATA, any ``Mapping`` with ``str`` keys -> HASH,
  ``list`` -> LIST. The checks use ``isinstance`` (BIND 10 used exact ``type() ==`` tests, so an
  ``IntEnum`` or an ``OrderedDict`` fell through to its catch-all).
* ``"seed"``: the original four-type encoding of the design text (and of the Oct 2009 code):
  every scalar becomes DATA holding its text (``str(x)``: ints ``b"1234"``, bools
  ``b"True"``/``b"False"``, floats ``str(x)``, strings as UTF-8), ``None`` -> NULL. Lossy: a
  seed message decodes to ``bytes`` for every scalar.

Both dialects always use the smallest length form that fits (< 256: LENGTH_8, < 65536:
LENGTH_16, else LENGTH_32), and keep the mapping's iteration order for HASH tags.

Other values (tuple, set, arbitrary objects) raise :class:`SkanEncodeError` unless a
``default`` callable is given, as with :func:`json.dumps`. BIND 10 instead sent ``str(x)`` as UTF8
for anything it did not know (a tuple became the text ``"(1, 2)"``); ``encode(v, default=str)``
reproduces that byte for byte.

Decoder
-------
:func:`decode` reads both dialects and any length form (non-minimal forms included), and
returns a ``dict``. DATA -> ``bytes``, UTF8 -> ``str``, INT -> ``int``, REAL -> ``float``,
BOOL -> ``True`` only for exactly ``b"1"`` (BIND 10's rule, so every other payload, ``b"\\x01"``
included, is ``False``), NULL -> ``None``, HASH -> ``dict`` (a duplicate tag: the last value
wins), LIST -> ``list``. INT and REAL texts go through Python's ``int()``/``float()`` after a strict
ASCII check, so surrounding spaces are accepted as BIND 10 did.

Every problem raises :class:`SkanError` (a :class:`~pyzenoh.errors.DecodeError`), including the
cases where BIND 10 raised an accidental exception: length bits 0x30 (``UnboundLocalError``),
invalid UTF-8 (``UnicodeDecodeError``), bad number text (``ValueError``).

Decisions on points the design text and BIND 10 disagree on
------------------------------------------------------------
* **Zero-length tags.** The design text says "a tag length of zero is invalid"; BIND 10's
  decoder accepted one (key ``""``) and its encoder emitted one. We are liberal in what we read
  and follow the dialect when writing: :func:`decode` accepts an empty tag (key ``""``), the
  ``"bind10"`` encoder writes it as BIND 10 did, the ``"seed"`` encoder refuses it with
  :class:`SkanEncodeError` because a seed-conforming peer must reject it.
* **The empty hash.** ``{}`` can only be encoded as ``b"Skan"`` (the top level has no length of
  its own). BIND 10's decoder rejected those 4 bytes as "too short", so it could not read what
  its own encoder wrote; its C++ decoder accepted them. By default :func:`decode` returns ``{}``
  for ``b"Skan"``, making decode the exact inverse of encode. ``decode(data,
  allow_empty=False)`` restores BIND 10's rejection. A nested empty hash (``22 00``) is always
  fine.

Limits (module constants)
-------------------------
``MAX_DEPTH`` nested HASH/LIST levels below the top level, ``MAX_MESSAGE_SIZE`` bytes per
decoded buffer, ``MAX_TAG_LENGTH`` bytes per tag (fixed by the 1-byte tag length),
``MAX_NUMBER_TEXT`` bytes of INT/REAL text, ``MAX_ITEM_LENGTH`` (the 32-bit length field).
Lengths read from the wire are checked against the bytes actually present before anything is
sliced, so no allocation depends on an unchecked length.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any, TypeAlias

from pyzenoh.errors import DecodeError, UsageError

__all__ = [
    "LENGTH_8",
    "LENGTH_16",
    "LENGTH_32",
    "LENGTH_MASK",
    "MAGIC",
    "MAX_DEPTH",
    "MAX_ITEM_LENGTH",
    "MAX_MESSAGE_SIZE",
    "MAX_NUMBER_TEXT",
    "MAX_TAG_LENGTH",
    "TYPE_MASK",
    "Decoded",
    "Dialect",
    "ItemType",
    "SkanEncodeError",
    "SkanError",
    "SkanValue",
    "decode",
    "decode_ex",
    "detect_dialect",
    "encode",
]

MAGIC = b"Skan"
"""Protocol version 0x536b616e written big-endian."""

TYPE_MASK = 0x0F
LENGTH_MASK = 0x30
LENGTH_32 = 0x00
LENGTH_16 = 0x10
LENGTH_8 = 0x20
_LENGTH_UNDEFINED = 0x30

MAX_DEPTH = 64
"""Nested HASH/LIST levels allowed below the top-level hash (BIND 10 had no limit)."""
MAX_MESSAGE_SIZE = 64 * 1024 * 1024
"""Largest buffer :func:`decode` accepts by default."""
MAX_TAG_LENGTH = 255
"""A tag length is one byte."""
MAX_NUMBER_TEXT = 1024
"""Longest INT/REAL text read or written: keeps ``int()`` (quadratic in digits) cheap."""
MAX_ITEM_LENGTH = 0xFFFF_FFFF
"""The largest length the 32-bit form can carry."""


class ItemType(IntEnum):
    """Item type codes (the low nibble of the type/length byte)."""

    DATA = 0x01
    HASH = 0x02
    LIST = 0x03
    NULL = 0x04
    BOOL = 0x05
    INT = 0x06
    REAL = 0x07
    UTF8 = 0x08


BLOB = ItemType.DATA  # the Nov 2009 name of the same code


class Dialect(StrEnum):
    """Which scalar encoding a peer speaks (see the module docstring)."""

    SEED = "seed"
    BIND10 = "bind10"


SkanValue: TypeAlias = None | bool | int | float | str | bytes | list["SkanValue"] | dict[str, "SkanValue"]
"""What :func:`decode` returns inside the top-level dict."""


class SkanError(DecodeError):
    """Bytes that are not a valid Skan message or frame."""


class SkanEncodeError(UsageError):
    """A value that cannot be Skan-encoded (bad key, unknown type, too deep, too long)."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded message and the dialect its scalars reveal.

    ``dialect`` is ``BIND10`` if any typed scalar (BOOL/INT/REAL/UTF8) was seen, ``SEED`` if
    scalars were all DATA, and ``None`` when there was no scalar at all (only NULLs, empty
    containers, or nothing).
    """

    value: dict[str, SkanValue]
    dialect: Dialect | None


# ---------------------------------------------------------------------------------------
# Decoding


_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


class _Reader:
    """Decoder state for one buffer; a class so the recursion shares flags cheaply."""

    __slots__ = ("buf", "max_depth", "saw_data", "saw_typed")

    def __init__(self, buf: bytes, max_depth: int) -> None:
        self.buf = buf
        self.max_depth = max_depth
        self.saw_typed = False
        self.saw_data = False

    def hash_body(self, pos: int, end: int, depth: int) -> dict[str, SkanValue]:
        buf = self.buf
        out: dict[str, SkanValue] = {}
        while pos < end:
            taglen = buf[pos]
            pos += 1
            if taglen > end - pos:
                raise SkanError("Data underrun while decoding", pos)
            try:
                tag = buf[pos : pos + taglen].decode("utf-8")
            except UnicodeDecodeError:
                raise SkanError("invalid UTF-8 in tag", pos) from None
            pos += taglen
            if pos >= end:
                raise SkanError("Data underrun while decoding", pos)
            value, pos = self.item(pos, end, depth)
            out[tag] = value
        return out

    def list_body(self, pos: int, end: int, depth: int) -> list[SkanValue]:
        out: list[SkanValue] = []
        while pos < end:
            value, pos = self.item(pos, end, depth)
            out.append(value)
        return out

    def item(self, pos: int, end: int, depth: int) -> tuple[SkanValue, int]:
        buf = self.buf
        start = pos
        tylen = buf[pos]
        pos += 1
        itype = tylen & TYPE_MASK
        if itype == ItemType.NULL:
            # No length field is read for NULL, whatever the length bits say.
            return None, pos
        form = tylen & LENGTH_MASK
        if form == LENGTH_8:
            if pos >= end:
                raise SkanError("Data underrun while decoding", pos)
            length = buf[pos]
            pos += 1
        elif form == LENGTH_16:
            if end - pos < 2:
                raise SkanError("Data underrun while decoding", pos)
            (length,) = _U16.unpack_from(buf, pos)
            pos += 2
        elif form == LENGTH_32:
            if end - pos < 4:
                raise SkanError("Data underrun while decoding", pos)
            (length,) = _U32.unpack_from(buf, pos)
            pos += 4
        else:
            raise SkanError("undefined length form 0x30", start)
        if length > end - pos:
            raise SkanError("Data underrun while decoding", pos)
        data_end = pos + length
        if itype == ItemType.DATA:
            self.saw_data = True
            return buf[pos:data_end], data_end
        if itype == ItemType.HASH or itype == ItemType.LIST:
            if depth >= self.max_depth:
                raise SkanError(f"nesting deeper than {self.max_depth} levels", start)
            if itype == ItemType.HASH:
                return self.hash_body(pos, data_end, depth + 1), data_end
            return self.list_body(pos, data_end, depth + 1), data_end
        if itype == ItemType.UTF8:
            self.saw_typed = True
            try:
                return buf[pos:data_end].decode("utf-8"), data_end
            except UnicodeDecodeError:
                raise SkanError("invalid UTF-8 in UTF8 item", pos) from None
        if itype == ItemType.BOOL:
            self.saw_typed = True
            # BIND 10 compares the whole payload with b"1"; anything else is False.
            return (length == 1 and buf[pos] == 0x31), data_end
        if itype == ItemType.INT or itype == ItemType.REAL:
            self.saw_typed = True
            if length > MAX_NUMBER_TEXT:
                raise SkanError(f"number text longer than {MAX_NUMBER_TEXT} bytes", pos)
            raw = buf[pos:data_end]
            # int()/float() also accept non-ASCII digits; the wire only ever carried ASCII.
            if not raw.isascii():
                raise SkanError("invalid character in number text", pos)
            text = raw.decode("ascii")
            try:
                number: int | float = int(text) if itype == ItemType.INT else float(text)
            except ValueError:
                kind = "INT" if itype == ItemType.INT else "REAL"
                raise SkanError(f"invalid {kind} text {text[:40]!r}", pos) from None
            return number, data_end
        raise SkanError(f"Unknown item type in decode: {itype:02x}", start)


def decode_ex(
    data: bytes | bytearray | memoryview,
    *,
    allow_empty: bool = True,
    max_depth: int = MAX_DEPTH,
    max_size: int = MAX_MESSAGE_SIZE,
) -> Decoded:
    """Decode one Skan message and report the dialect its scalars reveal.

    Raises :class:`SkanError` for anything malformed; never any other exception for bad bytes.
    """
    size = data.nbytes if isinstance(data, memoryview) else len(data)
    if size > max_size:
        raise SkanError(f"message of {size} bytes exceeds the {max_size}-byte limit", 0)
    buf = bytes(data)
    if len(buf) < len(MAGIC) + (0 if allow_empty else 1):
        raise SkanError("Data is too short to decode", len(buf))
    if buf[:4] != MAGIC:
        raise SkanError("Incorrect protocol version", 0)
    reader = _Reader(buf, max_depth)
    value = reader.hash_body(4, len(buf), 0)
    dialect = Dialect.BIND10 if reader.saw_typed else Dialect.SEED if reader.saw_data else None
    return Decoded(value, dialect)


def decode(
    data: bytes | bytearray | memoryview,
    *,
    allow_empty: bool = True,
    max_depth: int = MAX_DEPTH,
    max_size: int = MAX_MESSAGE_SIZE,
) -> dict[str, SkanValue]:
    """Decode one Skan message (magic + top-level hash contents) into a ``dict``.

    ``allow_empty=False`` rejects ``b"Skan"`` as BIND 10 did (see the module docstring).
    """
    return decode_ex(data, allow_empty=allow_empty, max_depth=max_depth, max_size=max_size).value


def detect_dialect(data: bytes | bytearray | memoryview) -> Dialect | None:
    """The dialect of an encoded message, or ``None`` if it is undecidable or undecodable."""
    try:
        return decode_ex(data).dialect
    except SkanError:
        return None


# ---------------------------------------------------------------------------------------
# Encoding


def _tylen(itype: int, length: int) -> bytes:
    """The type/length prefix using the smallest length form that fits."""
    if length < 0x100:
        return bytes((itype | LENGTH_8, length))
    if length < 0x10000:
        return bytes((itype | LENGTH_16,)) + _U16.pack(length)
    if length <= MAX_ITEM_LENGTH:
        return bytes((itype | LENGTH_32,)) + _U32.pack(length)
    raise SkanEncodeError(f"item of {length} bytes does not fit a 32-bit length")


class _Writer:
    __slots__ = ("default", "max_depth", "seed")

    def __init__(self, dialect: Dialect, default: Callable[[Any], Any] | None, max_depth: int) -> None:
        self.seed = dialect == Dialect.SEED
        self.default = default
        self.max_depth = max_depth

    def hash_body(self, value: Mapping[Any, Any], depth: int, parts: list[bytes]) -> None:
        for key, item in value.items():
            if not isinstance(key, str):
                raise SkanEncodeError(f"hash keys must be str, not {type(key).__name__}")
            try:
                tag = key.encode("utf-8")
            except UnicodeEncodeError:
                raise SkanEncodeError(f"hash key {key!r} is not valid UTF-8 text") from None
            if len(tag) > MAX_TAG_LENGTH:
                raise SkanEncodeError(f"hash key of {len(tag)} bytes exceeds {MAX_TAG_LENGTH} bytes")
            if not tag and self.seed:
                raise SkanEncodeError("the seed dialect forbids an empty hash key")
            parts.append(bytes((len(tag),)))
            parts.append(tag)
            self.item(item, depth, parts)

    def scalar(self, itype: int, data: bytes, parts: list[bytes]) -> None:
        parts.append(_tylen(itype, len(data)))
        parts.append(data)

    def item(self, value: Any, depth: int, parts: list[bytes], convert: bool = True) -> None:
        if value is None:
            parts.append(bytes((ItemType.NULL,)))
        elif isinstance(value, (bytes, bytearray, memoryview)):
            self.scalar(ItemType.DATA, bytes(value), parts)
        elif isinstance(value, bool):
            if self.seed:
                self.scalar(ItemType.DATA, b"True" if value else b"False", parts)
            else:
                self.scalar(ItemType.BOOL, b"1" if value else b"0", parts)
        elif isinstance(value, int):
            text = _int_text(value)
            self.scalar(ItemType.DATA if self.seed else ItemType.INT, text, parts)
        elif isinstance(value, float):
            text = float.__repr__(value).encode("ascii")  # str(float) of BIND 10, no override
            self.scalar(ItemType.DATA if self.seed else ItemType.REAL, text, parts)
        elif isinstance(value, str):
            try:
                data = value.encode("utf-8")
            except UnicodeEncodeError:
                raise SkanEncodeError("string is not valid UTF-8 text") from None
            self.scalar(ItemType.DATA if self.seed else ItemType.UTF8, data, parts)
        elif isinstance(value, (Mapping, list)):
            if depth >= self.max_depth:
                raise SkanEncodeError(f"nesting deeper than {self.max_depth} levels")
            inner: list[bytes] = []
            if isinstance(value, list):
                for element in value:
                    self.item(element, depth + 1, inner)
                itype = ItemType.LIST
            else:
                self.hash_body(value, depth + 1, inner)
                itype = ItemType.HASH
            body = b"".join(inner)
            parts.append(_tylen(itype, len(body)))
            parts.append(body)
        elif self.default is not None and convert:
            # One conversion only: a default() that returns another unknown object is an error,
            # not a loop.
            self.item(self.default(value), depth, parts, convert=False)
        else:
            raise SkanEncodeError(f"cannot Skan-encode a {type(value).__name__}")


def _int_text(value: int) -> bytes:
    # int.__str__ of an int subclass may be overridden (IntEnum); format the plain int.
    plain = int(value)
    if plain.bit_length() > MAX_NUMBER_TEXT * 4:  # cheap pre-check (3.32 bits a digit)
        raise SkanEncodeError(f"int text longer than {MAX_NUMBER_TEXT} digits")
    text = str(plain).encode("ascii")
    if len(text) > MAX_NUMBER_TEXT:
        raise SkanEncodeError(f"int text longer than {MAX_NUMBER_TEXT} digits")
    return text


def encode(
    value: Mapping[str, Any],
    *,
    dialect: Dialect | str = Dialect.BIND10,
    default: Callable[[Any], Any] | None = None,
    max_depth: int = MAX_DEPTH,
) -> bytes:
    """Encode a mapping as a Skan message (magic + top-level hash contents).

    ``default`` converts values of unknown types (``default=str`` mimics BIND 10). Raises
    :class:`SkanEncodeError` for anything that cannot be encoded.
    """
    if not isinstance(value, Mapping):
        raise SkanEncodeError(f"a Skan message is a mapping, not a {type(value).__name__}")
    try:
        writer = _Writer(Dialect(dialect), default, max_depth)
    except ValueError:
        raise SkanEncodeError(f"unknown dialect {dialect!r}") from None
    parts = [MAGIC]
    writer.hash_body(value, 0, parts)
    return b"".join(parts)
