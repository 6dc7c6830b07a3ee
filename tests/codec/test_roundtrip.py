"""encode -> decode is the identity for every message type with arbitrary legal fields."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import BatchReader, decode_batch, encode_batch, frame_batch
from pyzenoh.codec.data import read_push_body, read_request_body, read_response_body
from pyzenoh.codec.extensions import expect_end
from pyzenoh.codec.network import decode_network_message, encode_network_message
from pyzenoh.codec.primitives import Encoding, Reader, Timestamp
from pyzenoh.codec.transport import Frame, frame_header
from tests.codec import strategies as s
from tests.hyp import ROUNDTRIP


def _body_roundtrip(msg, reader):  # type: ignore[no-untyped-def]
    out = bytearray()
    msg.write(out)
    r = Reader(bytes(out))
    assert reader(r) == msg
    expect_end(r, "body")


@ROUNDTRIP
@given(s.network_messages)
def test_network_message_roundtrip(msg) -> None:  # type: ignore[no-untyped-def]
    assert decode_network_message(encode_network_message(msg)) == msg


@ROUNDTRIP
@given(st.one_of(s.puts, s.dels))
def test_push_body_roundtrip(body) -> None:  # type: ignore[no-untyped-def]
    _body_roundtrip(body, read_push_body)


@ROUNDTRIP
@given(s.queries)
def test_query_roundtrip(query) -> None:  # type: ignore[no-untyped-def]
    _body_roundtrip(query, read_request_body)


@ROUNDTRIP
@given(st.one_of(s.replies, s.errs))
def test_response_body_roundtrip(body) -> None:  # type: ignore[no-untyped-def]
    _body_roundtrip(body, read_response_body)


@ROUNDTRIP
@given(s.batches)
def test_batch_roundtrip(messages) -> None:  # type: ignore[no-untyped-def]
    payload = encode_batch(messages)
    assert decode_batch(payload) == messages
    assert encode_batch(decode_batch(payload)) == payload


@ROUNDTRIP
@given(s.timestamps, s.encodings)
def test_primitive_roundtrip(ts, enc) -> None:  # type: ignore[no-untyped-def]
    out = bytearray()
    ts.write(out)
    enc.write(out)
    r = Reader(bytes(out))
    assert Timestamp.read(r) == ts
    assert Encoding.read(r) == enc
    assert r.at_end()


@pytest.mark.slow
@ROUNDTRIP
@given(st.lists(s.batches, min_size=1, max_size=4), st.data())
def test_stream_whole_and_split_give_the_same_batches(batch_list, data) -> None:  # type: ignore[no-untyped-def]
    payloads = [encode_batch(b) for b in batch_list]
    payloads = [p for p in payloads if len(p) <= 0xFFFF]
    stream = b"".join(frame_batch(p) for p in payloads)
    whole = BatchReader().feed(stream)
    assert whole == payloads
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    reader = BatchReader()
    got = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        got += reader.feed(stream[prev:cut])
        prev = cut
    assert got == payloads
    by_byte = BatchReader()
    assert [b for i in range(len(stream)) for b in by_byte.feed(stream[i : i + 1])] == payloads
    # As a TcpLink reads: views of one buffer that the next read overwrites. Nothing the
    # reader keeps or returns may still point into it.
    shared = bytearray(len(stream) + 1)
    reader = BatchReader()
    got = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        piece = stream[prev:cut]
        shared[: len(piece)] = piece
        got += reader.feed(memoryview(shared)[: len(piece)])
        shared[:] = b"\xee" * len(shared)
        prev = cut
    assert got == payloads and all(type(p) is bytes for p in got)


@ROUNDTRIP
@given(st.booleans(), st.integers(0, 0xFFFF_FFFF), st.integers(0, 7))
def test_frame_header_is_the_frames_own(reliable: bool, sn: int, priority: int) -> None:
    out = bytearray()
    Frame(reliable, sn, (), priority).write_header(out)
    assert frame_header(reliable, sn, priority) == bytes(out)
