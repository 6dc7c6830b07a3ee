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
  with ``TypeError``. The item (key, value) type of a collection is looked up before its
  length is read, a tuple's item types one by one as they are reached, and a missing type
  parameter (``list[list]``) only when an item needs it: a type error may come after a
  ``ZDeserializeError`` for truncated data, or not at all when a collection is empty;
* **trailing bytes after the value are ignored** (zenoh-python does not check that the
  input was consumed); non-minimal LEB128 lengths are accepted; a tenth length byte must
  be 0 or 1 (a length is a u64).

Deliberate differences, each where the original misbehaves:

* a length prefix larger than the remaining input is a ``ZDeserializeError`` before
  anything is allocated (``str``, ``bytes``, ``bytearray``, ``ZBytes``, lists and sets of
  fixed-width numbers are checked up front; other collections are read item by item and
  every item consumes input). zenoh-python allocates first: a huge prefix there aborts
  the process ("memory allocation failed") or raises a Rust panic ("capacity overflow");
* a collection of zero-size items (``list[tuple[()]]``) consumes no input per item; at
  most :data:`ZERO_SIZE_ITEMS_LIMIT` of them are materialised per call (the original loops
  for as long as the prefix says);
* ``dict[K]`` and ``list[()]`` (missing type parameters) raise ``TypeError``, where the
  original panics (``pyo3_runtime.PanicException``, a ``BaseException``);
* ``list[Int8]`` etc. give ``Int8`` items (the original gives plain ``int``/``float`` in
  that case, so a round trip would re-serialize them as i32/f64), and
  ``frozenset[Int8]`` gives a ``frozenset`` (the original gives a ``set``, which makes
  ``set[frozenset[Int8]]`` fail there with "unhashable type: 'set'");
* the typed wrappers check their range even under ``python -O`` (zenoh-python uses
  ``assert``); the error is the same ``AssertionError``;
* :class:`ZDeserializeError` derives from :class:`pyzenoh.errors.PyZenohError` (an
  ``Exception``, as zenoh's is);
* the ``TypeError`` for an unsupported type names that type (the original names its
  metaclass: "type type is not supported").
"""

from __future__ import annotations

import struct
import types
import typing
from collections.abc import Callable
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

# pyo3's words for an int that does not fit (zenoh-python's errors, kept): for the types up
# to 32 bits, the first if the value does not even fit a C long, else the second.
_C_LONG_MIN: Final = -(1 << 63)
_C_LONG_MAX: Final = (1 << 63) - 1
_NOT_C_LONG: Final = "Python int too large to convert to C long"
_OUT_OF_RANGE: Final = "out of range integral type conversion attempted"


class _IntSpec(typing.NamedTuple):
    """An integer kind: struct code ("" for 128 bits), width, range, and the class read back."""

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


# --- Serialization -----------------------------------------------------------------------------


_Writer = Callable[[bytearray, Any], None]


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


def _int_writer(spec: _IntSpec) -> _Writer:
    lo, hi, size, signed = spec.lo, spec.hi, spec.size, spec.signed

    def write(out: bytearray, value: int) -> None:
        if not lo <= value <= hi:
            raise _int_error(value, spec)
        out += value.to_bytes(size, "little", signed=signed)

    return write


def _write_f64(out: bytearray, value: float) -> None:
    out += _F64.pack(value)


def _write_f32(out: bytearray, value: float) -> None:
    try:
        out += _F32.pack(value)
    except OverflowError:  # Rust's `as f32` saturates where struct refuses
        out += _F32.pack(float("inf") if value > 0 else float("-inf"))


def _write_bool(out: bytearray, value: bool) -> None:
    out.append(1 if value else 0)


def _write_str(out: bytearray, value: str) -> None:
    raw = value.encode("utf-8")
    _write_len(out, len(raw))
    out += raw


def _write_bytes(out: bytearray, value: bytes | bytearray | ZBytes) -> None:
    raw = bytes(value)
    _write_len(out, len(raw))
    out += raw


def _write_tuple(out: bytearray, value: tuple[Any, ...]) -> None:
    for item in value:
        _writer_of_type(type(item))(out, item)


def _write_items(out: bytearray, items: list[Any] | set[Any] | frozenset[Any]) -> None:
    """A length, then items that must all be of the type of the first."""
    _write_len(out, len(items))
    if not items:
        return
    first = type(next(iter(items)))
    write = _writer_of_type(first)
    code = _BLOCK_CODES.get(first)
    if code is not None and all(type(item) is first for item in items):
        try:
            out += struct.pack(f"<{len(items)}{code}", *items)
            return
        except (struct.error, OverflowError):
            pass  # out of range somewhere: one at a time, for zenoh's error at the right item
    for item in items:
        if type(item) is not first:
            _writer_of_type(type(item))  # an unsupported type is a TypeError first
            raise ValueError(_SAME_TYPE)
        write(out, item)


def _write_dict(out: bytearray, value: dict[Any, Any]) -> None:
    """A length, then key, value pairs; all keys of one type, all values of one type."""
    _write_len(out, len(value))
    types_: tuple[type, type] | None = None
    write_key: _Writer = _write_bool  # both replaced at the first pair
    write_value: _Writer = _write_bool
    for key, item in value.items():
        pair = (type(key), type(item))
        if types_ is None:
            types_ = pair
            write_key, write_value = _writer_of_type(pair[0]), _writer_of_type(pair[1])
        elif pair != types_:
            _writer_of_type(pair[0]), _writer_of_type(pair[1])
            raise ValueError(_SAME_TYPE)
        write_key(out, key)
        write_value(out, item)


_WRITERS: Final[dict[type, _Writer]] = {
    ZBytes: _write_bytes,
    bytearray: _write_bytes,
    bytes: _write_bytes,
    str: _write_str,
    **{spec.wrapper: _int_writer(spec) for spec in _INTS.values()},
    float: _write_f64,
    Float32: _write_f32,
    Float64: _write_f64,
    bool: _write_bool,
    list: _write_items,
    tuple: _write_tuple,
    dict: _write_dict,
    set: _write_items,
    frozenset: _write_items,
}
# struct codes of the types whose lists and sets can be packed in one go.
_BLOCK_CODES: Final[dict[type, str]] = {
    **{spec.wrapper: spec.code for spec in _INTS.values() if spec.code},
    float: "d",
    Float32: "f",
    Float64: "d",
    bool: "?",
}


def _writer_of_type(tp: type) -> _Writer:
    write = _WRITERS.get(tp)
    if write is None:
        raise TypeError(f"type {tp.__module__}.{tp.__qualname__} is not supported")
    return write


def z_serialize(obj: Any) -> ZBytes:
    """Serialize an object of supported type according to the `Zenoh serialization format <https://github.com/eclipse-zenoh/roadmap/blob/main/rfcs/ALL/Serialization.md>`_.

    Supported types are:

    * UInt8, UInt16, Uint32, UInt64, UInt128, Int8, Int16, Int32, Int64, Int128, int (handled as int32), Float32, Float64, float (handled as Float64), bool;

    * Str, Bytes, ByteArray;

    * List, Dict, Set, FrozenSet and Tuple of supported types.
    """
    out = bytearray()
    _writer_of_type(type(obj))(out, obj)
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


_RESOLVED: dict[object, tuple[_Kind, _Args]] = {}
_RESOLVED_MAX: Final = 1024


def _resolve(tp: object) -> tuple[_Kind, _Args]:
    """The kind of a deserialization target and its type parameters (None when it has none).

    Successful resolutions are remembered (the same types come back for every item of a
    collection); failures are not, so they are raised again where zenoh raises them.
    """
    try:
        return _RESOLVED[tp]
    except KeyError:
        hashable = True
    except TypeError:  # list[[1]]: resolved all the same, but not remembered
        hashable = False
    resolved = _resolve_uncached(tp)
    if hashable:
        if len(_RESOLVED) >= _RESOLVED_MAX:
            _RESOLVED.clear()
        _RESOLVED[tp] = resolved
    return resolved


def _resolve_uncached(tp: object) -> tuple[_Kind, _Args]:
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


_Read = Callable[[_Reader, _Args], Any]


def _deserialize(r: _Reader, tp: object) -> Any:
    kind, args = _resolve(tp)
    return _READERS[kind](r, args)


def _int_reader(spec: _IntSpec) -> _Read:
    size, signed, wrapper = spec.size, spec.signed, spec.wrapper
    if wrapper is int:
        return lambda r, _args: int.from_bytes(r.take(size), "little", signed=signed)
    return lambda r, _args: int.__new__(wrapper, int.from_bytes(r.take(size), "little", signed=signed))


def _read_float(r: _Reader, _args: _Args) -> float:
    value: float = _F64.unpack(r.take(8))[0]
    return value


def _read_float64(r: _Reader, _args: _Args) -> Float64:
    return Float64(_F64.unpack(r.take(8))[0])


def _read_float32(r: _Reader, _args: _Args) -> Float32:
    return Float32(_F32.unpack(r.take(4))[0])


def _read_bool(r: _Reader, _args: _Args) -> bool:
    byte = r.take(1)[0]
    if byte > 1:
        raise ZDeserializeError("deserialization error")
    return byte == 1


def _read_str(r: _Reader, _args: _Args) -> str:
    try:
        return r.take(r.length()).decode("utf-8")
    except UnicodeDecodeError:
        raise ZDeserializeError("deserialization error") from None


def _read_bytes(r: _Reader, _args: _Args) -> bytes:
    return r.take(r.length())


def _read_bytearray(r: _Reader, _args: _Args) -> bytearray:
    return bytearray(r.take(r.length()))


def _read_zbytes(r: _Reader, _args: _Args) -> ZBytes:
    return ZBytes(r.take(r.length()))


def _read_tuple(r: _Reader, args: _Args) -> tuple[Any, ...]:
    items = _unwrap(args)
    if len(items) > 1 and items[1] is Ellipsis:
        raise TypeError("any size tuples are not supported")
    return tuple([_deserialize(r, item) for item in items])


def _read_block(r: _Reader, kind: _Kind) -> list[Any]:
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


def _read_items(r: _Reader, args: _Args, kind: _Kind) -> list[Any]:
    """The items of a list, set or frozenset, in order."""
    params = _unwrap(args)
    if not params:
        raise TypeError(f"{kind.value} must be specialized with its item type")
    item_kind, item_args = _resolve(params[0])
    if item_kind in _BLOCK_KINDS:
        return _read_block(r, item_kind)
    n = r.length()
    read = _READERS[item_kind]
    if n and _is_zero_size(params[0]):
        # Every item is the same and takes no input: read one, repeat it (a set needs one).
        if kind is _Kind.LIST:
            if n > r.zero_size_budget:
                raise ZDeserializeError("deserialization error")
            r.zero_size_budget -= n
        return [read(r, item_args)] * (n if kind is _Kind.LIST else 1)
    # Each item consumes at least one byte or raises: the loop is bounded by the input.
    return [read(r, item_args) for _ in range(n)]


def _read_list(r: _Reader, args: _Args) -> list[Any]:
    return _read_items(r, args, _Kind.LIST)


def _read_set(r: _Reader, args: _Args) -> set[Any]:
    return set(_read_items(r, args, _Kind.SET))


def _read_frozenset(r: _Reader, args: _Args) -> frozenset[Any]:
    return frozenset(_read_items(r, args, _Kind.FROZENSET))


def _read_dict(r: _Reader, args: _Args) -> dict[Any, Any]:
    params = _unwrap(args)
    if len(params) < 2:
        raise TypeError("dict must be specialized with its key and value types")
    key_kind, key_args = _resolve(params[0])
    value_kind, value_args = _resolve(params[1])
    read_key, read_value = _READERS[key_kind], _READERS[value_kind]
    n = r.length()
    if n and _is_zero_size(params[0]) and _is_zero_size(params[1]):
        n = 1  # every pair is the same and takes no input
    out: dict[Any, Any] = {}
    for _ in range(n):
        key = read_key(r, key_args)
        out[key] = read_value(r, value_args)  # an unhashable key fails here, as in zenoh
    return out


_READERS: Final[dict[_Kind, _Read]] = {
    _Kind.ZBYTES: _read_zbytes,
    _Kind.BYTEARRAY: _read_bytearray,
    _Kind.BYTES: _read_bytes,
    _Kind.STR: _read_str,
    **{kind: _int_reader(spec) for kind, spec in _INTS.items()},
    _Kind.FLOAT: _read_float,
    _Kind.FLOAT32: _read_float32,
    _Kind.FLOAT64: _read_float64,
    _Kind.BOOL: _read_bool,
    _Kind.LIST: _read_list,
    _Kind.TUPLE: _read_tuple,
    _Kind.DICT: _read_dict,
    _Kind.SET: _read_set,
    _Kind.FROZENSET: _read_frozenset,
}


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
