"""The input of a deserialization: a cursor over the bytes that refuses to read past their
end (:class:`ZDeserializeError`), reads LEB128 lengths as zenoh's ``leb128`` crate does,
and keeps the budget of zero-size items one call may build.
"""

from __future__ import annotations

from typing import Final

from pyzenoh.errors import PyZenohError

ZERO_SIZE_ITEMS_LIMIT: Final = 1 << 16
"""How many items that occupy no bytes (empty tuples) one ``z_deserialize`` call builds."""


class ZDeserializeError(PyZenohError):
    """Exception raised when deserialization with :func:`z_deserialize` fails."""


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
