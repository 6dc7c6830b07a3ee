"""Payloads and their encodings: :class:`ZBytes` and :class:`Encoding`.

``to_payload`` and ``to_encoding`` turn what the API accepts (bytes, str, ZBytes ...;
an Encoding or its text) into wire values. ``Encoding``'s constants
(``Encoding.TEXT_PLAIN`` ...) are made from the wire's encoding table.
"""

from __future__ import annotations

import builtins
from typing import Any, ClassVar

from typing_extensions import override

from pyzenoh.codec import primitives as _p
from pyzenoh.errors import UsageError

# --- ZBytes -------------------------------------------------------------------------------


class ZBytes:
    """Opaque payload bytes (``to_bytes()``, ``to_string()``)."""

    __slots__ = ("_b",)

    def __init__(self, bytes: builtins.bytes | bytearray | memoryview | str | ZBytes | None = None) -> None:
        data = bytes  # zenoh-python's parameter name
        if data is None:
            self._b = b""
        elif isinstance(data, builtins.bytes):
            self._b = data
        elif isinstance(data, str):
            self._b = data.encode("utf-8")
        elif isinstance(data, ZBytes):
            self._b = data._b
        elif isinstance(data, bytearray | memoryview):
            self._b = builtins.bytes(data)
        else:
            from pyzenoh.shm import ShmNotSupportedError, is_shm_object

            if is_shm_object(data):
                raise ShmNotSupportedError("ZBytes from a shared-memory buffer")
            raise UsageError(f"cannot make ZBytes from {type(data).__name__}")

    def to_bytes(self) -> bytes:
        return self._b

    def to_string(self) -> str:
        return self._b.decode("utf-8")

    def as_shm(self) -> None:
        """Never a shared-memory buffer: pyzenoh does not support shared memory."""
        return

    def __bytes__(self) -> builtins.bytes:
        return self._b

    def __len__(self) -> int:
        return len(self._b)

    def __bool__(self) -> bool:
        return bool(self._b)

    @override
    def __eq__(self, other: object) -> bool:
        if isinstance(other, ZBytes):
            return self._b == other._b
        if isinstance(other, bytes | bytearray):
            return self._b == other
        if isinstance(other, str):
            return self._b == other.encode("utf-8")
        return NotImplemented

    @override
    def __hash__(self) -> int:
        return hash(self._b)

    @override
    def __str__(self) -> str:
        return self._b.decode("utf-8", "replace")

    @override
    def __repr__(self) -> str:
        return f"ZBytes({self._b!r})"


def to_payload(value: Any) -> bytes:
    """The bytes of anything zenoh accepts as a payload (bytes, str, ZBytes, bytearray)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, ZBytes):
        return value._b
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise UsageError(f"unsupported payload type {type(value).__name__}")


# --- Encoding -----------------------------------------------------------------------------


class Encoding:
    """A MIME-like encoding, ``type/subtype[;schema]``; ids as on the wire (zenoh-wire.md 1.6)."""

    __slots__ = ("_wire",)
    _wire: _p.Encoding

    ZENOH_BYTES: ClassVar[Encoding]
    ZENOH_STRING: ClassVar[Encoding]
    TEXT_PLAIN: ClassVar[Encoding]
    APPLICATION_JSON: ClassVar[Encoding]
    APPLICATION_OCTET_STREAM: ClassVar[Encoding]

    def __init__(self, encoding: str | None = None) -> None:
        self._wire = _p.Encoding.DEFAULT if encoding is None else _p.Encoding.from_str(encoding)

    @classmethod
    def from_wire(cls, wire: _p.Encoding) -> Encoding:
        if wire.is_default():
            return DEFAULT_ENCODING
        enc = object.__new__(cls)
        enc._wire = wire
        return enc

    @property
    def wire(self) -> _p.Encoding:
        return self._wire

    def with_schema(self, schema: str) -> Encoding:
        return Encoding.from_wire(_p.Encoding(self._wire.id, schema.encode("utf-8")))

    @override
    def __str__(self) -> str:
        return str(self._wire)

    @override
    def __repr__(self) -> str:
        return f"Encoding({str(self)!r})"

    @override
    def __eq__(self, other: object) -> bool:
        if isinstance(other, Encoding):
            return self._wire == other._wire
        if isinstance(other, str):
            return self._wire == _p.Encoding.from_str(other)
        return NotImplemented

    @override
    def __hash__(self) -> int:
        return hash(self._wire)


def to_encoding(value: Encoding | str | None) -> _p.Encoding:
    if value is None:
        return _p.Encoding.DEFAULT
    if isinstance(value, Encoding):
        return value._wire
    if isinstance(value, str):
        return _p.Encoding.from_str(value)
    raise UsageError(f"unsupported encoding {value!r}")


#: The default encoding (id 0): one object, which ``Encoding.from_wire`` returns for it.
DEFAULT_ENCODING = object.__new__(Encoding)
DEFAULT_ENCODING._wire = _p.Encoding.DEFAULT
for _i, _name in enumerate(_p.ENCODING_NAMES):
    _const = _name.upper()
    for _ch in "/-+.":
        _const = _const.replace(_ch, "_")
    setattr(Encoding, _const, DEFAULT_ENCODING if _i == 0 else Encoding.from_wire(_p.Encoding(_i)))
