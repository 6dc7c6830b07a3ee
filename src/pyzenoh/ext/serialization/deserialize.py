"""Deserialization: :func:`z_deserialize` and a reader per kind, driven by the target type
(:mod:`.targets`); a length prefix larger than the input is refused before anything is
built (:mod:`.reader`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from pyzenoh.ext.serialization.kinds import (
    _BLOCK_KINDS,
    _F32,
    _F64,
    _INTS,
    _IntSpec,
    _Kind,
)
from pyzenoh.ext.serialization.reader import ZDeserializeError, _Reader
from pyzenoh.ext.serialization.targets import _Args, _is_zero_size, _resolve, _unwrap
from pyzenoh.ext.serialization.wrappers import Float32, Float64
from pyzenoh.session.types import ZBytes

_T = TypeVar("_T")

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
