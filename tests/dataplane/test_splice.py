"""Routed bytes written from received ones: timestamp columns and spliced runs."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from pyzenoh.codec import Push, Put, Timestamp
from pyzenoh.codec.primitives import vle_len, write_vle
from pyzenoh.dataplane import scan_run
from pyzenoh.dataplane.splice import encode_time, splice_run, timestamp_columns
from pyzenoh.routing.hlc import Hlc
from tests.dataplane.test_runs import frame_payload
from tests.hyp import ROUNDTRIP
from tests.routing.support import CAPTURE_EPOCH, ROUTER_ZID, we


def test_timestamp_columns_are_the_codec_encoding() -> None:
    hlc = Hlc(ROUTER_ZID)
    t0 = hlc.reserve(CAPTURE_EPOCH, 300)
    cols = timestamp_columns(t0, 300, ROUTER_ZID)
    assert cols is not None
    for i in (0, 1, 127, 128, 299):
        out = bytearray()
        Timestamp(t0 + i, ROUTER_ZID).write(out)
        assert cols[i].tobytes() == bytes(out)
    assert hlc.new_timestamp(CAPTURE_EPOCH).time == t0 + 300
    # A z64 is at most nine bytes (the codec's rule, the only one): times from 2**63 on
    # are nine bytes too, the ninth carrying eight bits (runs once allowed ten).
    for t0 in (2**63 - 2, 2**64 - 4):
        cols = timestamp_columns(t0, 4, ROUTER_ZID)
        assert cols is not None
        for i in range(4):
            out = bytearray()
            Timestamp(t0 + i, ROUTER_ZID).write(out)
            assert cols[i].tobytes() == bytes(out)
    assert timestamp_columns(2**56 - 2, 4, ROUTER_ZID) is None  # eight bytes, then nine


@ROUNDTRIP
@given(st.integers(1, 3000).flatmap(lambda n: st.tuples(st.integers(0, 2**64 - n), st.just(n))))
def test_timestamp_columns_for_any_times(times: tuple[int, int]) -> None:
    t0, n = times
    cols = timestamp_columns(t0, n, ROUTER_ZID)
    if vle_len(t0) != vle_len(t0 + n - 1):
        assert cols is None
        return
    assert cols is not None
    for i in {i for i in (0, 1, n // 2, n - 2, n - 1) if 0 <= i < n}:
        out = bytearray()
        Timestamp(t0 + i, ROUTER_ZID).write(out)
        assert cols[i].tobytes() == bytes(out)


@ROUNDTRIP
@given(st.one_of(st.integers(0, 2**64 - 1), st.integers(2**56, 2**63 - 1)), st.integers(0, 2**29))
@example(int(1_795_264_773.25 * 2**32), 1)  # a current clock's
@example(2**63 - 1, 0)
def test_encode_time_is_the_codecs_vle(t: int, step: int) -> None:
    """Cached from bit 28 on: a time, one across the next 2**28 boundary and one just
    after it encode as the codec writes them."""
    for time in {t, min(t + step, 2**64 - 1), (t | 0x0FFF_FFFF) + 1 if t < 2**63 else t}:
        out = bytearray()
        write_vle(out, time)
        assert encode_time(time) == bytes(out), hex(time)


def test_splice_without_changes_is_the_received_bytes() -> None:
    msgs = [Push(we("k/a"), Put(b"abc" * (i + 1))) for i in range(8)]
    payload = frame_payload(msgs)
    run = scan_run(payload, 2, len(payload))
    assert run is not None
    data, ends = splice_run(run, None, None)
    assert data is run.data and ends is run.ends
