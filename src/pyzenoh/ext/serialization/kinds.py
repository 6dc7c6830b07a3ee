"""The supported types: each exact type's :class:`_Kind`, the width, range and struct code
of every integer kind, the kinds of fixed width (whose lists and sets go as one block),
and the float structs; both directions look types up here.
"""

from __future__ import annotations

import struct
import typing
from enum import Enum
from typing import Final

from pyzenoh.ext.serialization.wrappers import (
    Float32,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    Int128,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    UInt128,
)
from pyzenoh.session.types import ZBytes


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


def _kind_of_type(tp: type) -> _Kind:
    kind = _KINDS.get(tp)
    if kind is None:
        raise TypeError(f"type {tp.__module__}.{tp.__qualname__} is not supported")
    return kind
