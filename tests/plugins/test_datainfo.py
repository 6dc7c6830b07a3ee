"""The persistent volumes' data-info values, as zenoh-ext serializes the backends' tuples."""

from __future__ import annotations

import pytest

from pyzenoh.codec import Encoding, Timestamp, ZenohId
from pyzenoh.plugins.storage.volumes.datainfo import DataInfoError, decode, encode

TS = Timestamp(0x0102030405060708, ZenohId(0xE242AA002F9F301A106DC298A61B73C0))


def test_filesystem_tuple_bytes() -> None:
    data = encode(Encoding.from_str("text/plain;utf-8"), TS)
    # u64 LE, [u8; 16] (length 16 then the id little-endian), u16 LE, Vec<u8>
    assert data == (
        bytes.fromhex("0807060504030201") + b"\x10" + TS.id.value.to_bytes(16, "little") + b"\x04\x00" + b"\x05utf-8"
    )
    assert decode(data, with_deleted=False) == (Encoding(4, b"utf-8"), TS, False)


def test_rocksdb_tuple_has_the_deleted_flag() -> None:
    data = encode(Encoding.DEFAULT, TS, deleted=True)
    assert data[25] == 1 and data.endswith(b"\x00\x00\x00")
    assert decode(data, with_deleted=True) == (Encoding.DEFAULT, TS, True)


@pytest.mark.parametrize("data", [b"", b"\x00" * 8, b"garbage value here", encode(Encoding.DEFAULT, TS) + b"x"])
def test_damaged_values_are_refused(data: bytes) -> None:
    with pytest.raises(DataInfoError):
        decode(data, with_deleted=False)
