"""The typed wrappers: ``int`` and ``float`` subclasses that choose the width a number is
serialized with (a plain ``int`` is an i32, a plain ``float`` an f64).

As in zenoh-python, constructing one out of range raises AssertionError with the same
message; unlike zenoh-python (which uses ``assert``), the check survives ``python -O``.
"""

from __future__ import annotations

from typing import Self


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
