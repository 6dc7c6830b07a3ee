"""Serialization: :func:`z_serialize` and a writer per supported type, looked up by the
value's exact type; lists and sets of fixed-width numbers are packed in one go.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final

from pyzenoh.ext.serialization.kinds import (
    _C_LONG_MAX,
    _C_LONG_MIN,
    _F32,
    _F64,
    _INTS,
    _NOT_C_LONG,
    _OUT_OF_RANGE,
    _IntSpec,
)
from pyzenoh.ext.serialization.wrappers import Float32, Float64
from pyzenoh.session.types import ZBytes

_Writer = Callable[[bytearray, Any], None]

_SAME_TYPE: Final = "all items of serialized collections must have the same type"


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
        return OverflowError("can't convert negative int to unsigned" if value < 0 else "int too big to convert")
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
