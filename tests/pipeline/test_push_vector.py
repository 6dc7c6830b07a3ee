"""``push_columns`` (numpy, many PUSHes at once) against the per-message codec template."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.data import Del, Put
from pyzenoh.codec.network import Push, encode_network_message
from pyzenoh.codec.primitives import Encoding, Timestamp, WireExpr, ZenohId
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.push_vector import push_columns
from tests.codec.strategies import encodings, plain_pushes, pushes, wire_exprs, zids
from tests.hyp import examples

# Current NTP64 times (>= 2**56): the nine-byte form the vector path reads.
current_times = st.integers(2**56, 2**64 - 1)
stamps = st.builds(Timestamp, st.one_of(current_times, st.integers(0, 2**64 - 1)), zids)
# The shape the vector path reads: one-byte scope, plain encoding, a current time.
shaped_pushes = plain_pushes(
    st.builds(WireExpr, st.integers(0, 127), st.text(max_size=150), st.booleans()),
    st.builds(Encoding, st.integers(0, 63)),
    st.builds(Timestamp, current_times, zids),
)
any_plain_pushes = plain_pushes(wire_exprs, encodings, stamps)


def _mutate(raw: bytes, where: int, value: int) -> bytes:
    if not raw:
        return raw
    at = where % len(raw)
    return raw[:at] + bytes([value]) + raw[at + 1 :]


messages = st.one_of(
    shaped_pushes.map(encode_network_message),
    any_plain_pushes.map(encode_network_message),
    pushes.map(encode_network_message),
    st.tuples(shaped_pushes.map(encode_network_message), st.integers(0), st.integers(0, 255)).map(
        lambda t: _mutate(*t)
    ),
    st.binary(max_size=40).map(lambda b: b"\x1d" + b),
    st.binary(max_size=40),
)


def assert_matches_codec(raws: list[bytes]) -> np.ndarray:
    ok, columns = push_columns(pa.array(raws, pa.binary()))
    assert len(ok) == len(raws)
    fast = [raw for raw, good in zip(raws, ok, strict=True) if good]
    for c, column in columns.items():
        assert len(column) == len(fast)
        values = column.to_pylist()
        for raw, value in zip(fast, values, strict=True):
            assert value == R._codec_template(raw)[c], (R.MESSAGE_COLUMNS[c], raw.hex())
    for raw in fast:  # and every column the codec fills is one the vector path gives
        template = R._codec_template(raw)
        filled = {c for c in range(R.C_MSG, R.N_COLUMNS) if template[c] is not None}
        assert filled <= set(columns), raw.hex()
    return ok


@examples(400, 100)
@given(raws=st.lists(messages, max_size=30))
def test_vector_push_columns_equal_the_codec(raws: list[bytes]) -> None:
    assert_matches_codec(raws)


@examples(400, 100)
@given(msgs=st.lists(shaped_pushes, max_size=30))
def test_the_vector_path_takes_what_the_push_template_takes(msgs: list[Push]) -> None:
    raws = [encode_network_message(m) for m in msgs]
    ok = assert_matches_codec(raws)
    assert ok.tolist() == [R._push_template(raw) is not None for raw in raws]


def test_common_shapes_take_the_vector_path() -> None:
    zid = ZenohId(0x1234_5678_9ABC)
    stamp = Timestamp((1_700_000_000 << 32) | 0x8000_0000, zid)
    shapes = [
        Push(WireExpr(0, "demo/a"), Put(b"x" * 200, Encoding(0), stamp)),
        Push(WireExpr(0, "demo/" + "k" * 200), Put(b"", Encoding(10), None), qos=0x1A),
        Push(WireExpr(7, ""), Del(stamp)),
        Push(WireExpr(7, "/b", mapping_sender=True), Put(b"y" * 70_000, Encoding(5))),
    ]
    raws = [encode_network_message(m) for m in shapes]
    ok = assert_matches_codec(raws)
    assert ok.all()


def test_synthetic_traffic_mostly_takes_the_vector_path(tmp_path: Path) -> None:
    from pyzenoh.pipeline.synth import generate
    from pyzenoh.recording import read_records
    from pyzenoh.recording.format import NetRecord

    generate(tmp_path, 3_000)
    raws = [r.raw for r in read_records(tmp_path) if isinstance(r, NetRecord)]
    ok = assert_matches_codec(raws)
    pushes_seen = sum(1 for raw in raws if raw[0] & 0x1F == 0x1D)
    assert ok.sum() == pushes_seen > 1_000


@pytest.mark.parametrize("raws", [[], [b""], [b"\x1d"], [b"\x1d\x00\x01"]])
def test_degenerate_inputs(raws: list[bytes]) -> None:
    assert_matches_codec(raws)
