"""Arbitrary and mutated bytes only ever raise DecodeError (2,000 examples each in CI, 500 locally)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import BatchReader, decode_batch, encode_batch
from pyzenoh.codec.data import read_push_body, read_request_body, read_response_body
from pyzenoh.codec.network import decode_network_message, encode_network_message
from pyzenoh.codec.primitives import Encoding, Reader, Timestamp
from pyzenoh.errors import DecodeError
from tests.codec import strategies as s
from tests.codec.sessions import split_batches, streams
from tests.hyp import FUZZ

DECODERS: dict[str, Callable[[bytes], object]] = {
    "batch": decode_batch,
    "batch_raw": lambda b: decode_batch(b, keep_raw=True),
    "network": decode_network_message,
    "push_body": lambda b: read_push_body(Reader(b)),
    "request_body": lambda b: read_request_body(Reader(b)),
    "response_body": lambda b: read_response_body(Reader(b)),
    "timestamp": lambda b: Timestamp.read(Reader(b)),
    "encoding": lambda b: Encoding.read(Reader(b)),
    "stream": lambda b: [decode_batch(p) for p in BatchReader().feed(b)],
}

# Real traffic is the best seed for mutations: it reaches deep into every decoder.
REAL_BATCHES = [p for stream in streams() for p in split_batches(stream.data) if len(p) < 2000]


def _only_decode_errors(decoder: Callable[[bytes], object], data: bytes) -> None:
    try:
        decoder(data)
    except DecodeError:
        pass


def _mutate(data: bytes, ops: list[tuple[int, int, int]]) -> bytes:
    buf = bytearray(data)
    for kind, pos, value in ops:
        if not buf:
            buf.append(value)
            continue
        pos %= len(buf)
        if kind == 0:
            buf[pos] = value
        elif kind == 1:
            buf.insert(pos, value)
        elif kind == 2:
            del buf[pos]
        else:
            del buf[pos:]
    return bytes(buf)


mutations = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4)


@pytest.mark.parametrize("name", sorted(DECODERS))
@FUZZ
@given(data=st.binary(max_size=200))
def test_arbitrary_bytes(name: str, data: bytes) -> None:
    _only_decode_errors(DECODERS[name], data)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["batch", "network"])
@FUZZ
@given(seed=st.data(), ops=mutations)
def test_mutated_valid_messages(name: str, seed: st.DataObject, ops: list[tuple[int, int, int]]) -> None:
    if name == "batch":
        base = seed.draw(st.one_of(st.sampled_from(REAL_BATCHES), s.batches.map(encode_batch)))
    else:
        base = seed.draw(s.network_messages.map(encode_network_message))
    _only_decode_errors(DECODERS[name], _mutate(base, ops))


def test_declared_lengths_never_allocate() -> None:
    # A ZBuf extension claiming 4 GiB in a tiny message must fail fast, not allocate.
    with pytest.raises(DecodeError):
        decode_network_message(bytes.fromhex("9d00") + b"\x41\xff\xff\xff\xff\x0f" + b"\x01\x00")
    with pytest.raises(DecodeError):
        BatchReader(max_batch_size=1024).feed(b"\xff\xff" + b"\x00" * 10)
