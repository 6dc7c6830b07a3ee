"""Primitive encodings against the reference's worked examples."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.primitives import (
    U16_MAX,
    U64_MAX,
    Encoding,
    Reader,
    Timestamp,
    ZenohId,
    vle_bytes,
    vle_len,
    write_vle,
)
from pyzenoh.errors import DecodeError, UsageError
from tests.hyp import ROUNDTRIP


def vle(value: int) -> bytes:
    out = bytearray()
    write_vle(out, value)
    return bytes(out)


def test_vle_ninth_byte_carries_eight_bits() -> None:
    assert Reader(bytes.fromhex("a0e4a094d3a0e4806b")).vle() == 0x6B01910532883220
    assert vle(0x6B01910532883220) == bytes.fromhex("a0e4a094d3a0e4806b")
    assert vle(U64_MAX) == b"\xff" * 8 + b"\xff"
    assert len(vle(2**56)) == 9


@ROUNDTRIP
@given(st.integers(0, U64_MAX))
def test_vle_roundtrip_and_length(value: int) -> None:
    raw = vle(value)
    assert len(raw) == vle_len(value) <= 9
    r = Reader(raw)
    assert r.vle() == value and r.at_end()


@ROUNDTRIP
@given(st.one_of(st.integers(0, 2**35), st.integers(0, U64_MAX)))
def test_vle_bytes_is_write_vle(value: int) -> None:
    assert vle_bytes(value) == vle(value)


@pytest.mark.parametrize("edge", [0x7F, 0x3FFF, 0x1F_FFFF, 0xFFF_FFFF, 0xFFFF_FFFF])
def test_vle_bytes_at_each_width_edge(edge: int) -> None:
    for value in (edge, edge + 1):
        assert vle_bytes(value) == vle(value)
    with pytest.raises(UsageError):
        vle_bytes(-1)


def test_vle_bounds_and_truncation() -> None:
    with pytest.raises(DecodeError):
        Reader(vle(U16_MAX + 1)).vle(U16_MAX)
    with pytest.raises(DecodeError):
        Reader(b"\x80\x80").vle()
    # Non-minimal encodings are accepted when read.
    assert Reader(b"\x81\x00").vle() == 1
    with pytest.raises(UsageError):
        write_vle(bytearray(), -1)


def test_zenoh_id_wire_forms() -> None:
    assert ZenohId.from_str("c1c2c3c4c5c6c7c8").to_wire() == bytes.fromhex("c8c7c6c5c4c3c2c1")
    assert ZenohId.from_str("100").to_wire() == b"\x00\x01"
    assert str(ZenohId.from_wire(b"\x00\x01")) == "100"
    with pytest.raises(DecodeError):
        ZenohId.from_wire(b"\x00")
    with pytest.raises(UsageError):
        ZenohId(0)


def test_encoding_strings_and_bytes() -> None:
    out = bytearray()
    Encoding.from_str("text/plain").write(out)
    Encoding.from_str("application/json").write(out)
    assert bytes(out) == b"\x08\x0a"
    enc = Encoding.from_str("text/plain;charset=utf-8")
    assert (enc.id, enc.schema, str(enc)) == (4, b"charset=utf-8", "text/plain;charset=utf-8")
    custom = Encoding.from_str("foo/bar;x")
    assert (custom.id, custom.schema, str(custom)) == (0xFFFF, b"foo/bar;x", "foo/bar;x")
    assert str(Encoding()) == "zenoh/bytes"


def test_timestamp_from_ns() -> None:
    zid = ZenohId(1)
    ts = Timestamp.from_ns(1_500_000_000, zid)
    assert ts.time >> 32 == 1 and abs(ts.to_seconds() - 1.5) < 1e-9
