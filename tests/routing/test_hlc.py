"""The router's hybrid logical clock."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import Timestamp, ZenohId
from pyzenoh.routing import Hlc, ntp64
from tests.hyp import ROUNDTRIP

ID = ZenohId.from_str("a1a2a3a4a5a6a7a8")


def test_ntp64_is_seconds_since_1970_in_32_32_fixed_point() -> None:
    assert ntp64(0.0) == 0
    assert ntp64(1.5) == (1 << 32) | (1 << 31)
    assert ntp64(-3.0) == 0 and ntp64(math.nan) == 0
    assert ntp64(1e30) == (1 << 64) - 1
    # The capture's router timestamp: 0x6b01910532883220 is 1795264773.197 s.
    assert abs(Timestamp(0x6B01910532883220, ID).to_seconds() - 1_795_264_773.197) < 1e-3


def test_new_timestamps_follow_the_clock_with_a_logical_counter() -> None:
    clock = Hlc(ID)
    a = clock.new_timestamp(100.0)
    assert a.id == ID and a.time == ntp64(100.0) & ~0xF
    b = clock.new_timestamp(100.0)
    assert b.time == a.time + 1
    c = clock.new_timestamp(101.0)
    assert c.time == ntp64(101.0) & ~0xF


def test_received_timestamps_advance_the_clock_unless_too_far_ahead() -> None:
    clock = Hlc(ID, max_delta=0.5)
    assert clock.update(Timestamp(ntp64(100.4), ID), 100.0)
    assert clock.last == ntp64(100.4)
    assert clock.new_timestamp(100.0).time == ntp64(100.4) + 1
    assert not clock.update(Timestamp(ntp64(101.0), ID), 100.0)
    assert clock.last == ntp64(100.4) + 1


@ROUNDTRIP
@given(st.lists(st.tuples(st.floats(0, 4e9), st.booleans()), min_size=1, max_size=60))
def test_issued_timestamps_strictly_increase(steps: list[tuple[float, bool]]) -> None:
    clock = Hlc(ID)
    last = -1
    for now, observe in steps:
        if observe:
            clock.update(Timestamp(ntp64(now), ID), now)
        t = clock.new_timestamp(now).time
        assert t > last
        last = t


@ROUNDTRIP
@given(st.integers(0, 2**64 - 1), st.integers(1, 2**128 - 1))
def test_encode_timestamp_is_the_codecs_encoding(time: int, zid: int) -> None:
    from pyzenoh.dataplane.splice import encode_timestamp

    ts = Timestamp(time, ZenohId(zid))
    out = bytearray()
    ts.write(out)
    assert encode_timestamp(ts) == bytes(out)


@ROUNDTRIP
@given(
    st.lists(st.tuples(st.one_of(st.floats(-10, 4e9), st.just(float("nan"))), st.booleans()), min_size=1, max_size=60),
    st.integers(1, 2**128 - 1),
)
def test_new_encoded_is_the_encoded_new_timestamp(steps: list[tuple[float, bool]], zid: int) -> None:
    """Two clocks given the same observations: one issues Timestamps, the other their
    encodings (what the lone-PUSH lane splices in)."""
    from pyzenoh.dataplane.splice import encode_timestamp

    objects, encoded = Hlc(ZenohId(zid)), Hlc(ZenohId(zid))
    for now, observe in steps:
        if observe and not math.isnan(now):
            seen = Timestamp(ntp64(now), ID)
            assert objects.update(seen, now) == encoded.update(seen, now)
        assert encoded.new_encoded(now) == encode_timestamp(objects.new_timestamp(now))
        assert encoded.last == objects.last
