"""zenoh-ext's serialization format, as ``zenoh.ext.z_serialize`` / ``z_deserialize`` do it.

The format (zenoh RFC "Serialization"): little-endian fixed-width numbers, ``bool`` as one
byte 0/1, sequences as an unsigned LEB128 length followed by the items, tuples as their
items one after the other (no length), maps as a length followed by key, value pairs.

What eclipse-zenoh 1.10.2's Python binding does with Python objects, established by
experiment against it (``tests/ext/test_serialization.py`` re-checks all of it):

* a Python ``int`` is an **i32** (``Int64`` etc. for other widths); a ``float`` is an f64;
  ``Float32`` rounds to nearest and saturates to +-inf like Rust's ``as f32``;
* the type of a value is looked up *exactly* (``type(obj)``): subclasses such as
  ``IntEnum`` members or a ``list`` subclass are refused with ``TypeError``;
* ``list``/``set``/``frozenset``/``dict`` must be homogeneous: every item (every key, and
  every value) of the same exact supported type, else ``ValueError``;
  items are checked and written one at a time, so the first offending item decides which
  error is raised;
* ``z_deserialize`` takes a class or a ``types.GenericAlias`` (``list[int]``,
  ``dict[str, tuple[int, float]]``); ``typing.List``, ``Optional``, ``X | Y`` are refused
  with ``TypeError``.  Types inside an alias are resolved when they are reached, so a type
  error may come after a ``ZDeserializeError`` for truncated data, or not at all when a
  collection is empty;
* **trailing bytes after the value are ignored** (zenoh-python does not check that the
  input was consumed); non-minimal LEB128 lengths are accepted; a tenth length byte must
  be 0 or 1 (a length is a u64).

Deliberate differences, each where the original misbehaves:

* a length prefix larger than the remaining input is a ``ZDeserializeError`` before
  anything is allocated (zenoh-python allocates first: for ``bytes``/``str`` and lists of
  fixed-width numbers a huge prefix aborts the process or raises a Rust panic);
* a collection of zero-size items (``list[tuple[()]]``) consumes no input per item; at
  most :data:`ZERO_SIZE_ITEMS_LIMIT` of them are materialised per call (the original loops
  for as long as the prefix says);
* ``dict[K]`` and ``list[()]`` (missing type parameters) raise ``TypeError``, where the
  original panics (``pyo3_runtime.PanicException``, a ``BaseException``);
* ``list[Int8]`` etc. give ``Int8`` items (the original gives plain ``int``/``float`` in
  that case, so a round trip would re-serialize them as i32/f64), and
  ``frozenset[Int8]`` gives a ``frozenset`` (the original gives a ``set``);
* the ``TypeError`` for an unsupported type names that type (the original names its
  metaclass: "type type is not supported").
"""

from __future__ import annotations

import struct
import types
import typing
from enum import Enum
from typing import Any, Final, Self, TypeVar, cast

from pyzenoh.errors import PyZenohError
from pyzenoh.session.types import ZBytes

__all__ = [
    "ZERO_SIZE_ITEMS_LIMIT",
    "Float32",
    "Float64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Int128",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "UInt128",
    "ZDeserializeError",
    "z_deserialize",
    "z_serialize",
]

_T = TypeVar("_T")

ZERO_SIZE_ITEMS_LIMIT: Final = 1 << 16
"""How many items that occupy no bytes (empty tuples) one ``z_deserialize`` call builds."""


class ZDeserializeError(PyZenohError):
    """Exception raised when deserialization with :func:`z_deserialize` fails."""


# --- Typed wrappers --------------------------------------------------------------------------
# As in zenoh-python, constructing one out of range raises AssertionError with the same
# message; unlike zenoh-python (which uses ``assert``), the check survives ``python -O``.


def _check_range(cls: type, i: int, lo: int, hi: int) -> None:
    if not lo <= i < hi:
        raise AssertionError(f"{i} too big for {cls.__name__}")


class Int8(int):
    """int subclass enabling to (de)serialize 8bit signed integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, -(1 << 7), 1 << 7)
        return int.__new__(cls, i)


class Int16(int):
    """int subclass enabling to (de)serialize 16bit signed integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, -(1 << 15), 1 << 15)
        return int.__new__(cls, i)


class Int32(int):
    """int subclass enabling to (de)serialize 32bit signed integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, -(1 << 31), 1 << 31)
        return int.__new__(cls, i)


class Int64(int):
    """int subclass enabling to (de)serialize 64bit signed integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, -(1 << 63), 1 << 63)
        return int.__new__(cls, i)


class Int128(int):
    """int subclass enabling to (de)serialize 128bit signed integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, -(1 << 127), 1 << 127)
        return int.__new__(cls, i)


class UInt8(int):
    """int subclass enabling to (de)serialize 8bit unsigned integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, 0, 1 << 8)
        return int.__new__(cls, i)


class UInt16(int):
    """int subclass enabling to (de)serialize 16bit unsigned integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, 0, 1 << 16)
        return int.__new__(cls, i)


class UInt32(int):
    """int subclass enabling to (de)serialize 32bit unsigned integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, 0, 1 << 32)
        return int.__new__(cls, i)


class UInt64(int):
    """int subclass enabling to (de)serialize 64bit unsigned integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, 0, 1 << 64)
        return int.__new__(cls, i)


class UInt128(int):
    """int subclass enabling to (de)serialize 128bit unsigned integer."""

    def __new__(cls, i: int) -> Self:
        _check_range(cls, i, 0, 1 << 128)
        return int.__new__(cls, i)


class Float32(float):
    """float subclass enabling to (de)serialize 32bit floating point numbers."""


class Float64(float):
    """float subclass enabling to (de)serialize 64bit floating point numbers."""


# --- Supported types ---------------------------------------------------------------------------


class _Kind(Enum):
    ZBYTES = "ZBytes"
    BYTEARRAY = "bytearray"
    BYTES = "bytes"
    STR = "str"
    INT = "int"
    INT8 = "Int8"
    INT16 = "Int16"
    INT32 = "Int32"
    INT64 = "Int64"
    INT128 = "Int128"
    UINT8 = "UInt8"
    UINT16 = "UInt16"
    UINT32 = "UInt32"
    UINT64 = "UInt64"
    UINT128 = "UInt128"
    FLOAT = "float"
    FLOAT32 = "Float32"
    FLOAT64 = "Float64"
    BOOL = "bool"
    LIST = "list"
    TUPLE = "tuple"
    DICT = "dict"
    SET = "set"
    FROZENSET = "frozenset"


_KINDS: Final[dict[type, _Kind]] = {
    ZBytes: _Kind.ZBYTES,
    bytearray: _Kind.BYTEARRAY,
    bytes: _Kind.BYTES,
    str: _Kind.STR,
    int: _Kind.INT,
    Int8: _Kind.INT8,
    Int16: _Kind.INT16,
    Int32: _Kind.INT32,
    Int64: _Kind.INT64,
    Int128: _Kind.INT128,
    UInt8: _Kind.UINT8,
    UInt16: _Kind.UINT16,
    UInt32: _Kind.UINT32,
    UInt64: _Kind.UINT64,
    UInt128: _Kind.UINT128,
    float: _Kind.FLOAT,
    Float32: _Kind.FLOAT32,
    Float64: _Kind.FLOAT64,
    bool: _Kind.BOOL,
    list: _Kind.LIST,
    tuple: _Kind.TUPLE,
    dict: _Kind.DICT,
    set: _Kind.SET,
    frozenset: _Kind.FROZENSET,
}

# Integer kinds: struct code ("" for the 128-bit ones), lowest and highest value, and how
# pyo3 words an out-of-range value (the first message is for values that fit a C long).
_C_LONG_MIN: Final = -(1 << 63)
_C_LONG_MAX: Final = (1 << 63) - 1
_NOT_C_LONG: Final = "Python int too large to convert to C long"
_OUT_OF_RANGE: Final = "out of range integral type conversion attempted"


class _IntSpec(typing.NamedTuple):
    code: str
    size: int
    lo: int
    hi: int
    signed: bool
    wrapper: type[int]


_INTS: Final[dict[_Kind, _IntSpec]] = {
    _Kind.INT: _IntSpec("i", 4, -(1 << 31), (1 << 31) - 1, True, int),
    _Kind.INT8: _IntSpec("b", 1, -(1 << 7), (1 << 7) - 1, True, Int8),
    _Kind.INT16: _IntSpec("h", 2, -(1 << 15), (1 << 15) - 1, True, Int16),
    _Kind.INT32: _IntSpec("i", 4, -(1 << 31), (1 << 31) - 1, True, Int32),
    _Kind.INT64: _IntSpec("q", 8, _C_LONG_MIN, _C_LONG_MAX, True, Int64),
    _Kind.INT128: _IntSpec("", 16, -(1 << 127), (1 << 127) - 1, True, Int128),
    _Kind.UINT8: _IntSpec("B", 1, 0, (1 << 8) - 1, False, UInt8),
    _Kind.UINT16: _IntSpec("H", 2, 0, (1 << 16) - 1, False, UInt16),
    _Kind.UINT32: _IntSpec("I", 4, 0, (1 << 32) - 1, False, UInt32),
    _Kind.UINT64: _IntSpec("Q", 8, 0, (1 << 64) - 1, False, UInt64),
    _Kind.UINT128: _IntSpec("", 16, 0, (1 << 128) - 1, False, UInt128),
}

# Kinds of fixed width: a list or set of them is written and read as one block. (zenoh-python
# reads the wrapper kinds that way and int/float/bool item by item; with nothing but a
# ZDeserializeError possible for each item, the outcome is the same.)
_BLOCK_KINDS: Final = frozenset(_INTS) | {_Kind.FLOAT, _Kind.FLOAT32, _Kind.FLOAT64, _Kind.BOOL}

_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")
_SAME_TYPE: Final = "all items of serialized collections must have the same type"
_UNSPECIALIZED: Final = "collection types must be specialized with their generic parameter(s)"


def _kind_of_type(tp: type) -> _Kind:
    kind = _KINDS.get(tp)
    if kind is None:
        raise TypeError(f"type {tp.__module__}.{tp.__qualname__} is not supported")
    return kind


def _kind_of(obj: object) -> _Kind:
    return _kind_of_type(type(obj))


# --- Serialization -----------------------------------------------------------------------------


def _write_len(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _int_error(value: int, spec: _IntSpec) -> OverflowError:
    """The OverflowError pyo3 raises when ``value`` does not fit ``spec``."""
    if spec.size >= 8:
        if spec.signed:
            return OverflowError(_NOT_C_LONG)
        return OverflowError(
            "can't convert negative int to unsigned" if value < 0 else "int too big to convert"
        )
    return OverflowError(_NOT_C_LONG if not _C_LONG_MIN <= value <= _C_LONG_MAX else _OUT_OF_RANGE)


def _pack_int(out: bytearray, value: int, spec: _IntSpec) -> None:
    if not spec.lo <= value <= spec.hi:
        raise _int_error(value, spec)
    out += int(value).to_bytes(spec.size, "little", signed=spec.signed)


def _pack_f32(value: float) -> bytes:
    try:
        return _F32.pack(value)
    except OverflowError:  # Rust's `as f32` saturates where struct refuses
        return _F32.pack(float("inf") if value > 0 else float("-inf"))


def _serialize(out: bytearray, obj: Any, kind: _Kind) -> None:
    spec = _INTS.get(kind)
    if spec is not None:
        _pack_int(out, obj, spec)
    elif kind is _Kind.FLOAT or kind is _Kind.FLOAT64:
        out += _F64.pack(obj)
    elif kind is _Kind.FLOAT32:
        out += _pack_f32(obj)
    elif kind is _Kind.BOOL:
        out.append(1 if obj else 0)
    elif kind is _Kind.STR or kind is _Kind.BYTES or kind is _Kind.BYTEARRAY or kind is _Kind.ZBYTES:
        raw = obj.encode("utf-8") if kind is _Kind.STR else bytes(obj)
        _write_len(out, len(raw))
        out += raw
    elif kind is _Kind.TUPLE:
        for item in obj:
            _serialize(out, item, _kind_of(item))
    elif kind is _Kind.DICT:
        _serialize_dict(out, obj)
    else:  # list, set, frozenset
        _serialize_items(out, obj)


def _serialize_items(out: bytearray, items: list[Any] | set[Any] | frozenset[Any]) -> None:
    _write_len(out, len(items))
    if not items:
        return
    first_type = type(next(iter(items)))
    first = _kind_of_type(first_type)
    if first in _BLOCK_KINDS:
        block = _pack_block(items, first_type, first)
        if block is not None:
            out += block
            return
    for item in items:
        kind = _kind_of(item)
        if kind is not first:
            raise ValueError(_SAME_TYPE)
        _serialize(out, item, kind)


def _pack_block(items: list[Any] | set[Any] | frozenset[Any], tp: type, kind: _Kind) -> bytes | None:
    """All items at once when they are all ``tp`` numbers in range; None to go one by one."""
    if not all(type(item) is tp for item in items):
        return None
    spec = _INTS.get(kind)
    code = "d" if kind is _Kind.FLOAT or kind is _Kind.FLOAT64 else "f" if kind is _Kind.FLOAT32 else "?"
    if spec is not None:
        if not spec.code:
            return None
        code = spec.code
    try:
        return struct.pack(f"<{len(items)}{code}", *items)
    except (struct.error, OverflowError):
        return None


def _serialize_dict(out: bytearray, obj: dict[Any, Any]) -> None:
    _write_len(out, len(obj))
    first: tuple[_Kind, _Kind] | None = None
    for key, value in obj.items():
        kinds = (_kind_of(key), _kind_of(value))
        if first is None:
            first = kinds
        elif kinds != first:
            raise ValueError(_SAME_TYPE)
        _serialize(out, key, kinds[0])
        _serialize(out, value, kinds[1])


def z_serialize(obj: Any) -> ZBytes:
    """Serialize an object of supported type according to the `Zenoh serialization format <https://github.com/eclipse-zenoh/roadmap/blob/main/rfcs/ALL/Serialization.md>`_.

    Supported types are:

    * UInt8, UInt16, Uint32, UInt64, UInt128, Int8, Int16, Int32, Int64, Int128, int (handled as int32), Float32, Float64, float (handled as Float64), bool;

    * Str, Bytes, ByteArray;

    * List, Dict, Set, FrozenSet and Tuple of supported types.
    """
    out = bytearray()
    _serialize(out, obj, _kind_of(obj))
    return ZBytes(bytes(out))


# --- Deserialization ---------------------------------------------------------------------------


class _Reader:
    __slots__ = ("data", "pos", "zero_size_budget")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.zero_size_budget = ZERO_SIZE_ITEMS_LIMIT

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def take(self, n: int) -> bytes:
        if n > len(self.data) - self.pos:
            raise ZDeserializeError("deserialization error")
        start = self.pos
        self.pos = start + n
        return self.data[start : self.pos]

    def length(self) -> int:
        """An unsigned LEB128 u64, read as the ``leb128`` crate does."""
        data, pos, end = self.data, self.pos, len(self.data)
        result = shift = 0
        while True:
            if pos >= end:
                raise ZDeserializeError("deserialization error")
            byte = data[pos]
            pos += 1
            if shift == 63 and byte > 1:
                raise ZDeserializeError("deserialization error")
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                self.pos = pos
                return result
            shift += 7

    def block(self, n: int, size: int) -> bytes:
        """``n`` items of ``size`` bytes, refused before anything is built if they are not all there."""
        if n > self.remaining() // size:
            raise ZDeserializeError("deserialization error")
        return self.take(n * size)


_Args = tuple[Any, ...] | None


def _not_a_type(obj: object) -> TypeError:
    return TypeError(f"'{type(obj).__name__}' object cannot be converted to 'PyType'")


def _resolve(tp: object) -> tuple[_Kind, _Args]:
    """The kind of a deserialization target and its type parameters (None when it has none)."""
    if isinstance(tp, types.GenericAlias):
        origin = typing.get_origin(tp)
        if not isinstance(origin, type):
            raise _not_a_type(origin)
        return _kind_of_type(origin), typing.get_args(tp)
    if not isinstance(tp, type):
        raise _not_a_type(tp)
    return _kind_of_type(tp), None


def _is_zero_size(tp: object) -> bool:
    """Whether values of ``tp`` occupy no bytes: tuples of nothing but such tuples."""
    if not isinstance(tp, types.GenericAlias) or typing.get_origin(tp) is not tuple:
        return False
    args = typing.get_args(tp)
    if len(args) > 1 and args[1] is Ellipsis:
        return False
    return all(_is_zero_size(arg) for arg in args)


def _unwrap(args: _Args) -> tuple[Any, ...]:
    if args is None:
        raise ValueError(_UNSPECIALIZED)
    return args


def _deserialize(r: _Reader, tp: object) -> Any:
    kind, args = _resolve(tp)
    return _deserialize_kind(r, kind, args)


def _read_bytes(r: _Reader) -> bytes:
    return r.take(r.length())


def _deserialize_kind(r: _Reader, kind: _Kind, args: _Args) -> Any:
    spec = _INTS.get(kind)
    if spec is not None:
        value = int.from_bytes(r.take(spec.size), "little", signed=spec.signed)
        return value if spec.wrapper is int else int.__new__(spec.wrapper, value)
    if kind is _Kind.FLOAT:
        return _F64.unpack(r.take(8))[0]
    if kind is _Kind.FLOAT64:
        return Float64(_F64.unpack(r.take(8))[0])
    if kind is _Kind.FLOAT32:
        return Float32(_F32.unpack(r.take(4))[0])
    if kind is _Kind.BOOL:
        byte = r.take(1)[0]
        if byte > 1:
            raise ZDeserializeError("deserialization error")
        return byte == 1
    if kind is _Kind.STR:
        try:
            return _read_bytes(r).decode("utf-8")
        except UnicodeDecodeError:
            raise ZDeserializeError("deserialization error") from None
    if kind is _Kind.BYTES:
        return _read_bytes(r)
    if kind is _Kind.BYTEARRAY:
        return bytearray(_read_bytes(r))
    if kind is _Kind.ZBYTES:
        return ZBytes(_read_bytes(r))
    if kind is _Kind.TUPLE:
        items = _unwrap(args)
        if len(items) > 1 and items[1] is Ellipsis:
            raise TypeError("any size tuples are not supported")
        return tuple([_deserialize(r, item) for item in items])
    if kind is _Kind.DICT:
        return _deserialize_dict(r, _unwrap(args))
    return _deserialize_items(r, kind, _unwrap(args))


def _deserialize_block(r: _Reader, kind: _Kind) -> list[Any]:
    """A length and that many fixed-width items, checked to be all there before decoding."""
    n = r.length()
    if kind is _Kind.BOOL:
        raw = r.block(n, 1)
        if raw.translate(None, b"\x00\x01"):
            raise ZDeserializeError("deserialization error")
        return [byte == 1 for byte in raw]
    spec = _INTS.get(kind)
    if spec is None:
        size = 4 if kind is _Kind.FLOAT32 else 8
        floats = list(struct.unpack(f"<{n}{'f' if size == 4 else 'd'}", r.block(n, size)))
        if kind is _Kind.FLOAT:
            return floats
        wrapper: type[float] = Float32 if kind is _Kind.FLOAT32 else Float64
        return [wrapper(x) for x in floats]
    raw = r.block(n, spec.size)
    if spec.code:
        values: list[int] = list(struct.unpack(f"<{n}{spec.code}", raw))
    else:
        values = [int.from_bytes(raw[i : i + 16], "little", signed=spec.signed) for i in range(0, len(raw), 16)]
    wrap = spec.wrapper
    return values if wrap is int else [int.__new__(wrap, v) for v in values]


def _spend_zero_size(r: _Reader, n: int) -> None:
    if n > r.zero_size_budget:
        raise ZDeserializeError("deserialization error")
    r.zero_size_budget -= n


def _deserialize_items(r: _Reader, kind: _Kind, args: tuple[Any, ...]) -> Any:
    if not args:
        raise TypeError(f"{kind.value} must be specialized with its item type")
    item_kind, item_args = _resolve(args[0])
    if item_kind in _BLOCK_KINDS:
        items = _deserialize_block(r, item_kind)
    else:
        n = r.length()
        if n and _is_zero_size(args[0]):
            # Every item is the same and takes no input: build one, repeat it.
            if kind is _Kind.LIST:
                _spend_zero_size(r, n)
            one = _deserialize_kind(r, item_kind, item_args)
            items = [one] * (n if kind is _Kind.LIST else 1)
        else:
            # Each item consumes at least one byte or raises: the loop is bounded by the input.
            items = [_deserialize_kind(r, item_kind, item_args) for _ in range(n)]
    if kind is _Kind.LIST:
        return items
    return set(items) if kind is _Kind.SET else frozenset(items)


def _deserialize_dict(r: _Reader, args: tuple[Any, ...]) -> dict[Any, Any]:
    if len(args) < 2:
        raise TypeError("dict must be specialized with its key and value types")
    key_kind, key_args = _resolve(args[0])
    value_kind, value_args = _resolve(args[1])
    n = r.length()
    out: dict[Any, Any] = {}
    if n and _is_zero_size(args[0]) and _is_zero_size(args[1]):
        n = 1  # every pair is the same and takes no input
    for _ in range(n):
        key = _deserialize_kind(r, key_kind, key_args)
        out[key] = _deserialize_kind(r, value_kind, value_args)
    return out


def z_deserialize(tp: type[_T], zbytes: ZBytes | bytes | bytearray) -> _T:
    """Deserialize into an object of supported type according to the `Zenoh serialization format <https://github.com/eclipse-zenoh/roadmap/blob/main/rfcs/ALL/Serialization.md>`_.

    Supported types are:

    * UInt8, UInt16, Uint32, UInt64, UInt128, Int8, Int16, Int32, Int64, Int128, int (handled as int32), Float32, Float64, float (handled as Float64), bool;

    * Str, Bytes, ByteArray;

    * List, Dict, Set, FrozenSet and Tuple of supported types.

    Bytes after the value are ignored, as zenoh-python does.
    """
    if isinstance(zbytes, ZBytes):
        data = zbytes.to_bytes()
    elif isinstance(zbytes, bytes | bytearray):
        data = bytes(zbytes)
    else:
        raise TypeError(f"argument 'zbytes': '{type(zbytes).__name__}' object cannot be converted to 'ZBytes'")
    return cast(_T, _deserialize(_Reader(data), tp))
