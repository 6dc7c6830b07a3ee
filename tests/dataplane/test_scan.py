"""The fast batch decoder must agree with the codec on every input: same messages, same
raw bytes, and a DecodeError exactly when the codec raises one.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import (
    Del,
    Encoding,
    Frame,
    Push,
    Put,
    Timestamp,
    WireExpr,
    ZenohId,
    decode_batch,
    encode_batch,
)
from pyzenoh.codec.network import encode_network_message
from pyzenoh.codec.primitives import Reader
from pyzenoh.codec.transport import FLAG_R
from pyzenoh.dataplane import batch as fast_batch
from pyzenoh.dataplane import scan as fastpath
from pyzenoh.errors import DecodeError
from tests.codec import strategies as cs
from tests.hyp import FUZZ, ROUNDTRIP

# Publications of the shape the fast path handles (and their near misses).
simple_puts = st.builds(
    Put,
    payload=st.binary(max_size=300),
    encoding=st.one_of(st.just(Encoding.DEFAULT), st.builds(Encoding, st.integers(0, 70))),
    timestamp=st.none() | cs.timestamps,
)
simple_dels = st.builds(Del, timestamp=st.none() | cs.timestamps)
simple_pushes = st.builds(
    Push,
    wire_expr=st.builds(WireExpr, st.integers(0, 200), st.text(max_size=200), st.booleans()),
    body=st.one_of(simple_puts, simple_dels),
    qos=st.one_of(st.just(5), st.integers(0, 0x3F)),
)
simple_frames = st.builds(
    Frame,
    reliable=st.booleans(),
    sn=st.one_of(cs.u32, st.integers(0, 0x0FFF_FFFF)),
    messages=st.lists(st.one_of(simple_pushes, simple_pushes, cs.network_messages), min_size=1, max_size=6).map(tuple),
    priority=st.integers(0, 7),
)
batches = st.lists(st.one_of(simple_frames, simple_frames, cs.non_fragment_transport), min_size=1, max_size=4)


def _seed_batches() -> list[bytes]:
    """Deterministic, varied publication batches: cheap inputs for the 10k-example fuzz."""
    rng = random.Random(4)
    zid = ZenohId.from_str("a1a2a3a4a5a6a7a8")
    out = []
    for _ in range(64):
        msgs = []
        for _ in range(rng.randint(1, 4)):
            ts = Timestamp(rng.getrandbits(rng.choice([7, 28, 63, 64])), zid) if rng.random() < 0.6 else None
            body: Put | Del = (
                Put(rng.randbytes(rng.randint(0, 40)), Encoding(rng.randint(0, 70)), ts)
                if rng.random() < 0.8
                else Del(ts)
            )
            key = "/".join(rng.choice(["a", "bb", "*", "é", "x" * 130]) for _ in range(rng.randint(1, 3)))
            msgs.append(
                Push(
                    WireExpr(rng.choice([0, 1, 127, 200]), key, rng.random() < 0.5),
                    body,
                    rng.choice([5, 5, 0x0D, 0x1A, 0x3F]),
                )
            )
        frame = Frame(rng.random() < 0.7, rng.getrandbits(rng.choice([7, 28, 32])), tuple(msgs), rng.randint(0, 7))
        out.append(encode_batch([frame]))
    return out


seed_batches = st.sampled_from(_seed_batches())


def both(payload: bytes) -> tuple[object, object]:
    """(codec result or its DecodeError type, fast result or its DecodeError type)."""
    try:
        want: object = decode_batch(payload, keep_raw=True)
    except DecodeError:
        want = DecodeError
    try:
        got: object = fast_batch.decode_batch(payload, keep_raw=True)
    except DecodeError:
        got = DecodeError
    return want, got


def lone_push(payload: bytes) -> tuple[Push, int, int, int] | None:
    """:func:`fastpath.scan_lone` with the PUSH built: (the PUSH, SN, priority, offset)."""
    lone = fastpath.scan_lone(payload)
    if lone is None:
        return None
    fields, sn, priority, at = lone
    return fastpath.push_of(fields, payload), sn, priority, at


def check_lone(payload: bytes) -> None:
    """Whenever :func:`fastpath.scan_lone` answers, it means the one FRAME holding one PUSH
    that the decoder finds."""
    lone = lone_push(payload)
    if lone is None:
        return
    push, sn, priority, at = lone
    assert (
        fast_batch.decode_batch(payload, keep_raw=True)
        == decode_batch(payload, keep_raw=True)
        == [Frame(bool(payload[0] & FLAG_R), sn, (push,), priority, (), (payload[at:],))]
    )


def raws(msgs: object) -> list[object]:
    return [m.raw for m in msgs if isinstance(m, Frame)] if isinstance(msgs, list) else []


@ROUNDTRIP
@given(batches)
def test_agrees_with_codec(msgs: list[object]) -> None:
    payload = encode_batch(msgs)  # type: ignore[arg-type]
    want, got = both(payload)
    assert got == want == msgs
    assert raws(got) == raws(want)
    check_lone(payload)


@pytest.mark.slow
@FUZZ
@given(seed_batches, st.data())
def test_agrees_with_codec_on_mutations(seed: bytes, data: st.DataObject) -> None:
    payload = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(payload) - 1))
        payload[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del payload[data.draw(st.integers(0, len(payload) - 1)) :]
    want, got = both(bytes(payload))
    assert got == want
    assert raws(got) == raws(want)
    check_lone(bytes(payload))


@FUZZ
@given(st.binary(max_size=120))
def test_agrees_with_codec_on_noise(blob: bytes) -> None:
    want, got = both(blob)
    assert got == want
    check_lone(blob)


@ROUNDTRIP
@given(simple_pushes, st.booleans(), st.one_of(cs.u32, st.integers(0, 0x7F)), st.integers(0, 7))
def test_a_lone_push_is_found(push: Push, reliable: bool, sn: int, priority: int) -> None:
    """A batch of one FRAME holding one common-shape PUSH (every message of a ping-pong)
    is taken by scan_lone; the same with anything after the PUSH is not."""
    if fastpath.decode_push(raw := encode_network_message(push), 0, len(raw)) is None:
        return  # a shape the fast path leaves to the codec
    payload = encode_batch([Frame(reliable, sn, (push,), priority)])
    lone = lone_push(payload)
    assert lone is not None and lone[0] == push and lone[1:3] == (sn, priority)
    check_lone(payload)
    assert fastpath.scan_lone(encode_batch([Frame(reliable, sn, (push, push), priority)])) is None


def test_captured_router_push() -> None:
    # zenoh-wire.md A.6: a router-stamped PUSH using the client's expr id
    payload = bytes.fromhex("25a1bcd96b3d01022f6121a0e4a094d3a0e4806b08a8a7a6a5a4a3a2a10568656c6c6f")
    [frame] = fast_batch.decode_batch(payload)
    assert isinstance(frame, Frame)
    [push] = frame.messages
    ts = Timestamp(0x6B01910532883220, ZenohId.from_str("a1a2a3a4a5a6a7a8"))
    assert push == Push(WireExpr(1, "/a", False), Put(b"hello", timestamp=ts))


@ROUNDTRIP
@given(simple_pushes)
def test_simple_pushes_take_the_fast_path(push: Push) -> None:
    from pyzenoh.codec import encode_network_message

    raw = encode_network_message(push)
    res = fastpath.decode_push(raw, 0, len(raw))
    expect_fast = (
        push.wire_expr.scope < 0x80
        and len(push.wire_expr.suffix.encode()) < 0x4000
        and (not isinstance(push.body, Put) or push.body.encoding.id < 64)
        and (push.qos == 5 or push.qos < 0x80)
    )
    if expect_fast:
        assert res is not None and res == (push, len(raw))
    else:
        assert res is None


@ROUNDTRIP
@given(st.integers(0, 2**64 - 1), st.integers(1, 2**128 - 1))
def test_timestamps_of_every_length(time: int, zid: int) -> None:
    """Nine-byte times (every current NTP64 time) take a word-at-a-time path."""
    ts = Timestamp(time, ZenohId(zid))
    raw = encode_network_message(Push(WireExpr(0, "k"), Put(b"v", timestamp=ts)))
    fields = fastpath.scan_push(raw, 0, len(raw))
    assert fields is not None and fields[0] == len(raw)
    assert fields[7] == ts


def test_key_representations_are_kept_within_bounds() -> None:
    """A PUSH's WireExpr is shared with the previous PUSH on the same key; long suffixes are
    never kept and the cache never grows past MAX_CACHED_KEYS."""

    def push_on(key: str) -> Push:
        payload = encode_batch([Frame(True, 1, (Push(WireExpr(0, key), Put(b"v")),))])
        frame = fast_batch.decode_batch(payload)[0]
        assert isinstance(frame, Frame)
        msg = frame.messages[0]
        assert isinstance(msg, Push)
        return msg

    assert push_on("a/b").wire_expr is push_on("a/b").wire_expr
    long_key = "k" * (fastpath.MAX_CACHED_SUFFIX + 1)
    assert push_on(long_key).wire_expr is not push_on(long_key).wire_expr
    for i in range(fastpath.MAX_CACHED_KEYS + 5):
        push_on(f"many/{i}")
    assert len(fastpath._wire_exprs) <= fastpath.MAX_CACHED_KEYS


@ROUNDTRIP
@given(st.binary(min_size=0, max_size=7), st.integers(0, 7))
def test_read_z32_agrees_with_the_codec(blob: bytes, start: int) -> None:
    """Unrolled for five bytes with room, a loop near the end: either way the codec's z32."""
    for end in range(start, len(blob) + 1):
        found = fastpath.read_z32(blob, start, end)
        r = Reader(blob, start, end) if start <= end else None
        try:
            expected = None if r is None else (r.vle(0xFFFF_FFFF), r.pos)
        except DecodeError:
            expected = None
        if expected is not None and expected[1] - start > 5:
            expected = None
        assert found == expected, (blob.hex(), start, end)
