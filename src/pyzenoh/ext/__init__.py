"""pyzenoh's counterpart of ``zenoh.ext``: zenoh-ext's serialization format.

``z_serialize`` writes byte for byte what eclipse-zenoh's ``zenoh.ext.z_serialize`` writes;
``z_deserialize`` reads it back. See :mod:`pyzenoh.ext.serialization` for the details and
the few deliberate differences.
"""

from __future__ import annotations

from pyzenoh.ext.serialization import (
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
    ZDeserializeError,
    z_deserialize,
    z_serialize,
)

__all__ = [
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
