"""The compressed batch header: round trip, raw fallback, and a peer's bad batches."""

from __future__ import annotations

import lz4.block
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.compression import BATCH_HEADER_COMPRESSION, compress_batch, decompress_batch
from pyzenoh.errors import DecodeError, PeerError

MAX = 0xFFFF - 2


@given(st.binary(min_size=1, max_size=MAX) | st.binary(min_size=1, max_size=64).map(lambda b: b * 500))
def test_round_trip(payload: bytes) -> None:
    payload = payload[:MAX]
    wire = compress_batch(payload)
    assert decompress_batch(wire, MAX) == payload
    # compressed only when it makes the batch smaller, as zenoh's WBatch::compress
    assert len(wire) <= len(payload) + 1
    assert bool(wire[0] & BATCH_HEADER_COMPRESSION) == (len(wire) <= len(payload))


def test_repetitive_payload_is_compressed_as_an_lz4_block() -> None:
    payload = b"zenoh" * 1000
    wire = compress_batch(payload)
    assert wire[0] == BATCH_HEADER_COMPRESSION
    assert lz4.block.decompress(wire[1:], uncompressed_size=len(payload)) == payload


def test_random_bytes_go_raw() -> None:
    payload = bytes(range(7))
    assert compress_batch(payload) == b"\x00" + payload


@pytest.mark.parametrize(
    "wire",
    [
        b"",  # no header byte
        b"\x01\xff\xff\xff\xff",  # not an lz4 block
        b"\x01",  # flag set, nothing behind it
    ],
)
def test_bad_batches_are_the_peers_error(wire: bytes) -> None:
    with pytest.raises(DecodeError) as e:
        decompress_batch(wire, MAX)
    assert isinstance(e.value, PeerError)


def test_a_batch_growing_past_the_batch_size_is_refused() -> None:
    payload = b"a" * 4000
    wire = compress_batch(payload)
    assert decompress_batch(wire, 4000) == payload
    with pytest.raises(DecodeError):
        decompress_batch(wire, 3999)


@given(st.binary(max_size=200))
def test_garbage_never_crashes(body: bytes) -> None:
    try:
        out = decompress_batch(b"\x01" + body, 1024)
    except DecodeError:
        return
    assert 0 < len(out) <= 1024
