"""zenoh-python's ``zenoh.shm`` names, present so that programs fail with a reason:
pyzenoh does not support shared memory.

Every name of zenoh-python 1.10's ``zenoh.shm`` exists here, and using one (calling it,
or reading any of its attributes such as ``AllocAlignment.ALIGN_8_BYTE`` or
``ShmProvider.default_backend``) raises :class:`ShmNotSupportedError`, a ``ZError``
whose message says that shared memory is not supported, instead of an
``AttributeError``. A program that wants shared memory only when it is there can test
``pyzenoh.shm.SUPPORTED`` (False). Payloads always travel in the network messages.
"""

from __future__ import annotations

from typing import Any, NoReturn

from typing_extensions import override

from pyzenoh.errors import PyZenohError

__all__ = [
    "SUPPORTED",
    "AllocAlignment",
    "BlockOn",
    "Deallocate",
    "Defragment",
    "GarbageCollect",
    "JustAlloc",
    "MemoryLayout",
    "ShmNotSupportedError",
    "ShmProvider",
    "ZShm",
    "ZShmMut",
]

#: pyzenoh has no shared-memory transport.
SUPPORTED = False


class ShmNotSupportedError(PyZenohError, NotImplementedError):
    """Shared memory was asked for: pyzenoh (pure Python) does not support it."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"shared memory is not supported by pyzenoh (pure Python): {what}; send the payload as bytes instead"
        )


class _Unsupported(type):
    """Metaclass of the zenoh.shm names: any use raises ShmNotSupportedError."""

    @override
    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        raise ShmNotSupportedError(f"zenoh.shm.{cls.__name__}(...)")

    def __getattr__(cls, name: str) -> NoReturn:
        if name.startswith("_"):  # introspection (hasattr(x, "__wrapped__") ...) stays quiet
            raise AttributeError(name)
        raise ShmNotSupportedError(f"zenoh.shm.{cls.__name__}.{name}")


class AllocAlignment(metaclass=_Unsupported):
    """Not supported: shared memory."""


class JustAlloc(metaclass=_Unsupported):
    """Not supported: shared memory."""


class BlockOn(metaclass=_Unsupported):
    """Not supported: shared memory."""


class Deallocate(metaclass=_Unsupported):
    """Not supported: shared memory."""


class Defragment(metaclass=_Unsupported):
    """Not supported: shared memory."""


class GarbageCollect(metaclass=_Unsupported):
    """Not supported: shared memory."""


class MemoryLayout(metaclass=_Unsupported):
    """Not supported: shared memory."""


class ShmProvider(metaclass=_Unsupported):
    """Not supported: shared memory."""


class ZShm(metaclass=_Unsupported):
    """Not supported: shared memory (no instance can exist)."""

    def __bytes__(self) -> bytes:
        raise ShmNotSupportedError("bytes(ZShm)")


class ZShmMut(metaclass=_Unsupported):
    """Not supported: shared memory (no instance can exist)."""

    def __bytes__(self) -> bytes:
        raise ShmNotSupportedError("bytes(ZShmMut)")

    def __setitem__(self, item: int | slice, value: int | bytes | bytearray) -> None:
        raise ShmNotSupportedError("ZShmMut[...] = ...")


def is_shm_object(value: object) -> bool:
    """True for an instance of one of the zenoh.shm names (there can be none, but a
    payload check may ask)."""
    return isinstance(type(value), _Unsupported)


def __getattr__(name: str) -> NoReturn:
    """Any other name is missing as usual (AttributeError), but says why."""
    raise AttributeError(f"module 'pyzenoh.shm' has no attribute {name!r} (shared memory is not supported by pyzenoh)")
