"""Framing: encode/decode, the streaming reader split at every byte, limits, fuzz."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.msgq.frame import (
    MAX_HEADER_SIZE,
    Frame,
    FrameReader,
    decode_frame,
    encode_frame,
)
from pyzenoh.msgq.protocol import encode_message
from pyzenoh.msgq.skan import SkanEncodeError, SkanError, encode
from tests.hyp import FUZZ, ROUNDTRIP
from tests.msgq.support import load_vectors

FRAME_VECTORS = [bytes.fromhex(v["hex"]) for v in load_vectors() if v["kind"] in ("frame", "frame_decode")]


def test_layout() -> None:
    data = encode_frame(b"Skan\x01a\x04", b"BODY")
    assert data[:6] == struct.pack(">IH", 2 + 7 + 4, 7)
    assert decode_frame(data) == Frame(b"Skan\x01a\x04", b"BODY")
    assert decode_frame(encode_frame(b"H")) == Frame(b"H", None)
    assert encode_frame(b"H", b"") == encode_frame(b"H")
    assert Frame(b"H", b"xy").size == 9
    assert Frame(b"H", b"xy").encode() == encode_frame(b"H", b"xy")


def test_encode_limits() -> None:
    with pytest.raises(SkanEncodeError):
        encode_frame(b"")
    with pytest.raises(SkanEncodeError):
        encode_frame(b"x" * (MAX_HEADER_SIZE + 1))
    assert decode_frame(encode_frame(b"x" * MAX_HEADER_SIZE)).header == b"x" * MAX_HEADER_SIZE


@pytest.mark.parametrize(
    ("prefix", "match"),
    [
        (struct.pack(">IH", 1, 0), "< 2"),
        (struct.pack(">IH", 10, 0), "header length is 0"),
        (struct.pack(">IH", 5, 4), "exceeds total"),
        (struct.pack(">IH", 2**32 - 1, 10), "limit"),
    ],
)
def test_bad_prefixes(prefix: bytes, match: str) -> None:
    reader = FrameReader()
    with pytest.raises(SkanError, match=match):
        reader.feed(prefix)
    # The stream is out of sync for good.
    with pytest.raises(SkanError):
        reader.feed(encode_frame(b"Skan\x01a\x04"))


def test_oversize_is_rejected_before_buffering() -> None:
    reader = FrameReader(max_frame_size=100)
    assert reader.feed(encode_frame(b"h" * 50, b"b" * 48)) == [Frame(b"h" * 50, b"b" * 48)]
    with pytest.raises(SkanError):
        reader.feed(struct.pack(">IH", 101, 1))  # only the prefix has arrived
    with pytest.raises(SkanEncodeError):
        FrameReader(max_frame_size=2)


def test_decode_frame_needs_exact_length() -> None:
    data = encode_frame(b"Skan\x01a\x04", b"body")
    with pytest.raises(SkanError):
        decode_frame(data[:-1])
    with pytest.raises(SkanError):
        decode_frame(data + b"x")
    with pytest.raises(SkanError):
        decode_frame(data[:5])


def test_split_at_every_byte() -> None:
    stream = b"".join(FRAME_VECTORS)
    expected = [decode_frame(f) for f in FRAME_VECTORS]
    for cut in range(len(stream) + 1):
        reader = FrameReader()
        got = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        assert got == expected
        assert not reader.mid_frame
    reader = FrameReader()
    got = []
    for i in range(len(stream)):
        got.extend(reader.feed(stream[i : i + 1]))
        assert reader.buffered <= max(map(len, FRAME_VECTORS))
    assert got == expected


def test_mid_frame_tracking() -> None:
    reader = FrameReader()
    data = encode_frame(b"Skan\x01a\x04", b"body")
    assert reader.feed(data[:3]) == []
    assert reader.mid_frame and reader.buffered == 3
    assert reader.feed(data[3:]) == [Frame(b"Skan\x01a\x04", b"body")]
    assert not reader.mid_frame


@ROUNDTRIP
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=300), st.binary(max_size=300)), max_size=8), st.data())
def test_stream_round_trip_any_split(frames: list[tuple[bytes, bytes]], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(h, b) for h, b in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    reader = FrameReader()
    got: list[Frame] = []
    last = 0
    for cut in [*cuts, len(stream)]:
        got.extend(reader.feed(stream[last:cut]))
        last = cut
    assert got == [Frame(h, b or None) for h, b in frames]


def _frames_or_error(chunks: list[bytes]) -> tuple[list[Frame], bool]:
    reader = FrameReader(max_frame_size=4096)
    frames: list[Frame] = []
    try:
        for chunk in chunks:
            frames.extend(reader.feed(chunk))
    except SkanError:
        return frames, True
    return frames, False


@FUZZ
@given(st.binary(max_size=600))
def test_fuzz_whole_and_byte_by_byte(data: bytes) -> None:
    whole_frames, whole_failed = _frames_or_error([data])
    byte_frames, byte_failed = _frames_or_error([data[i : i + 1] for i in range(len(data))])
    assert whole_failed == byte_failed
    if not whole_failed:
        assert whole_frames == byte_frames
    else:
        # Fed whole, frames before the break are lost with it; fed bytewise they came out.
        assert byte_frames[: len(whole_frames)] == whole_frames


@FUZZ
@given(st.sampled_from(FRAME_VECTORS), st.binary(max_size=40), st.integers(0, 200))
def test_fuzz_mutated_frame_vectors(base: bytes, noise: bytes, pos: int) -> None:
    data = base[:pos] + noise + base[pos:]
    _frames_or_error([data])
    _frames_or_error([data[i : i + 1] for i in range(len(data))])


def test_encode_message_helper() -> None:
    frame = decode_frame(
        encode_message(
            {"type": "ping"},
            {"x": 1},
        )
    )
    assert frame.header == encode({"type": "ping"})
    assert frame.body == encode({"x": 1})
    assert decode_frame(encode_message({"type": "ping"}, b"raw")).body == b"raw"
    assert decode_frame(encode_message({"type": "ping"})).body is None
