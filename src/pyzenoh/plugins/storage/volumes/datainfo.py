"""The encoding and timestamp the persistent backends keep beside each value, encoded
with zenoh-ext's serialization as they do (so their databases stay readable by zenohd):

* zenoh-backend-filesystem (``data_info_mgt.rs``): ``(u64 time, [u8; 16] id, u16
  encoding id, Vec<u8> schema)``;
* zenoh-backend-rocksdb (``lib.rs``): ``(u64 time, [u8; 16] id, bool deleted, u16
  encoding id, Vec<u8> schema)``.

zenoh-ext writes integers little-endian, a bool as one byte, and arrays and vectors as a
LEB128 length then their items. An empty schema means none.
"""

from __future__ import annotations

import struct

from pyzenoh.codec import Encoding, Timestamp, ZenohId

__all__ = ["DataInfoError", "decode", "encode"]


class DataInfoError(ValueError):
    """A data-info value that does not decode (a damaged or foreign database)."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise DataInfoError("truncated length")
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, pos


def encode(encoding: Encoding, timestamp: Timestamp, *, deleted: bool | None = None) -> bytes:
    """``deleted`` None: the filesystem backend's tuple; a bool: the RocksDB backend's."""
    out = bytearray(struct.pack("<Q", timestamp.time))
    out += _varint(16) + timestamp.id.value.to_bytes(16, "little")
    if deleted is not None:
        out.append(1 if deleted else 0)
    schema = encoding.schema or b""
    out += struct.pack("<H", encoding.id) + _varint(len(schema)) + schema
    return bytes(out)


def decode(data: bytes, *, with_deleted: bool) -> tuple[Encoding, Timestamp, bool]:
    try:
        (time,) = struct.unpack_from("<Q", data, 0)
        n, pos = _read_varint(data, 8)
        if n != 16 or pos + 16 > len(data):
            raise DataInfoError("bad timestamp id")
        zid = int.from_bytes(data[pos : pos + 16], "little")
        pos += 16
        deleted = False
        if with_deleted:
            if pos >= len(data) or data[pos] > 1:
                raise DataInfoError("bad deleted flag")
            deleted = data[pos] == 1
            pos += 1
        (enc_id,) = struct.unpack_from("<H", data, pos)
        n, pos = _read_varint(data, pos + 2)
        schema = data[pos : pos + n]
        if len(schema) != n or pos + n != len(data):
            raise DataInfoError("bad encoding schema")
        return Encoding(enc_id, schema or None), Timestamp(time, ZenohId(zid)), deleted
    except Exception as exc:  # struct.error, a zero id (UsageError) ...
        if isinstance(exc, DataInfoError):
            raise
        raise DataInfoError(f"cannot decode data-info: {exc}") from None
