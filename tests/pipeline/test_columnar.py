"""The columnar ``messages`` path against the record-by-record one (no JVM).

Both paths must give the same table for every recording: intact, with link events inside
a chunk, and with bytes damaged anywhere in the file.
"""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.data import Put
from pyzenoh.codec.network import Push, encode_network_message
from pyzenoh.codec.primitives import WireExpr
from pyzenoh.errors import DecodeError
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.columnar import chunk_rows, index_offsets
from pyzenoh.pipeline.source import SegmentCatalog, plan_slices, read_slice, slice_rows
from pyzenoh.pipeline.synth import generate
from pyzenoh.recording import Recorder
from pyzenoh.recording import format as fmt
from pyzenoh.recording.reader import list_segments, scan_segment
from tests.codec.strategies import (
    encodings,
    plain_pushes,
    pushes,
    timestamps,
    wire_exprs,
)
from tests.hyp import examples
from tests.pipeline import scenario

SCHEMA = R.arrow_schema(R.MESSAGES_DDL)


def both_paths(directory: Path, partition: int) -> tuple[pa.Table, pa.Table]:
    cat = SegmentCatalog(str(directory))
    segments = cat.refresh()
    if not segments:
        empty = SCHEMA.empty_table()
        return empty, empty
    end = (segments[-1].number, segments[-1].count(fmt.CH_NET))
    parts = plan_slices(cat, segments, fmt.CH_NET, (segments[0].number, 0), end, partition)
    fast = [b for p in parts for b in read_slice(p, SCHEMA)]
    slow = [b for p in parts for b in R.rows_to_batches(slice_rows(p), SCHEMA)]
    return (
        pa.Table.from_batches(fast, schema=SCHEMA).combine_chunks(),
        pa.Table.from_batches(slow, schema=SCHEMA).combine_chunks(),
    )


def assert_same(fast: pa.Table, slow: pa.Table) -> None:
    assert fast.num_rows == slow.num_rows
    for name in SCHEMA.names:
        assert fast[name].equals(slow[name]), name


@pytest.mark.parametrize("partition", [1, 7, 1000, 200_000])
def test_scripted_scenario_reads_the_same_both_ways(tmp_path: Path, partition: int) -> None:
    scenario.build(tmp_path / "rec", max_segment_bytes=4096)
    fast, slow = both_paths(tmp_path / "rec", partition)
    assert fast.num_rows > 0
    assert "invalid" in fast["msg_type"].to_pylist()  # the scenario's undecodable record
    assert_same(fast, slow)


def test_generated_recording_reads_the_same_both_ways(tmp_path: Path) -> None:
    generate(tmp_path / "rec", 20_000, seed=3)
    fast, slow = both_paths(tmp_path / "rec", 3_000)
    assert fast.num_rows > 10_000
    assert_same(fast, slow)


def test_link_events_inside_a_chunk_apply_in_record_order(tmp_path: Path) -> None:
    raw = encode_network_message(Push(WireExpr(0, "a/b"), Put(b"x")))
    with Recorder(tmp_path / "rec") as rec:
        rec.link_opened(1, 1, "aa", "client", "tcp/127.0.0.1:1")
        rec.message(2, 1, "rx", "a/b", raw)
        rec.link_closed(3, 1, "gone")
        rec.message(4, 1, "rx", "a/b", raw)  # after its link closed: no details
        rec.link_opened(5, 1, "bb", "peer", "tcp/127.0.0.1:2")  # the id, reused
        rec.message(6, 1, "tx", None, raw)
    fast, slow = both_paths(tmp_path / "rec", 100)
    assert_same(fast, slow)
    assert fast["zid"].to_pylist() == ["aa", None, "bb"]
    assert fast["whatami"].to_pylist() == ["client", None, "peer"]
    assert fast["direction"].to_pylist() == ["rx", "rx", "tx"]
    assert fast["key"].to_pylist() == [
        "a/b",
        "a/b",
        "a/b",
    ]  # the last from its wire key


def test_a_denial_inside_a_chunk_is_not_a_close(tmp_path: Path) -> None:
    raw = encode_network_message(Push(WireExpr(0, "a/b"), Put(b"x")))
    with Recorder(tmp_path / "rec") as rec:
        rec.link_opened(1, 1, "aa", "client", "tcp/127.0.0.1:1")
        s = rec.message(2, 1, "rx", "a/b", raw)
        rec.access_denied(2, s, 1, "ingress", "put", "a/b", "ingress put denied by rule 'r'")
        rec.message(3, 1, "rx", "a/b", raw)
        rec.link_closed(4, 1, "gone")
        rec.message(5, 1, "rx", "a/b", raw)
    fast, slow = both_paths(tmp_path / "rec", 100)
    assert_same(fast, slow)
    assert fast["zid"].to_pylist() == ["aa", "aa", None]


@pytest.fixture(scope="module")
def small_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("small")
    scenario.build(d / "rec", max_segment_bytes=1 << 20)
    return d / "rec"


def _damage(src: Path, dst: Path, where: float, value: int) -> None:
    shutil.copytree(src, dst)
    _, path = list_segments(dst)[0]
    data = bytearray(path.read_bytes())
    data[int(where * (len(data) - 1))] = value
    path.write_bytes(bytes(data))


@examples(100, 25)
@given(where=st.floats(0, 1), value=st.integers(0, 255))
def test_damaged_bytes_anywhere_read_the_same_both_ways(
    small_recording: Path,
    tmp_path_factory: pytest.TempPathFactory,
    where: float,
    value: int,
) -> None:
    dst = tmp_path_factory.mktemp("damaged") / "rec"
    _damage(small_recording, dst, where, value)
    try:
        fast, slow = both_paths(dst, 5)
    except DecodeError:
        return  # a segment shorter than its scan: both paths raise it
    assert_same(fast, slow)


def test_damaged_index_with_intact_chunk_falls_back(small_recording: Path, tmp_path: Path) -> None:
    """A MessageIndex is outside the chunk's CRC: an offset pointing elsewhere must be caught."""
    dst = tmp_path / "rec"
    shutil.copytree(small_recording, dst)
    _, path = list_segments(dst)[0]
    chunk = next(c for c in scan_segment(path).chunks if c.net >= 2)
    data = bytearray(path.read_bytes())
    at = chunk.records_at + chunk.records_len
    while True:  # find the network channel's MessageIndex
        _, length = fmt.RECORD_HEAD.unpack_from(data, at)
        (channel,) = struct.unpack_from("<H", data, at + 9)
        if channel == fmt.CH_NET:
            break
        at += 9 + length
    second_offset = at + 9 + 6 + 16 + 8  # entries are (log_time, offset) u64 pairs
    data[second_offset] ^= 0x01  # net record 1's offset, moved by one byte
    path.write_bytes(bytes(data))
    records = bytes(data[chunk.records_at : chunk.records_at + chunk.records_len])
    offsets = index_offsets(bytes(data[chunk.records_at + chunk.records_len : chunk.end]))
    assert offsets is not None
    assert chunk_rows(records, offsets, 0, chunk.net, 1, 0, 1, {}, SCHEMA) is None
    fast, slow = both_paths(dst, 1000)
    assert_same(fast, slow)
    original, _ = both_paths(small_recording, 1000)
    assert_same(fast, original)  # the records themselves are intact


@examples(800, 200)
@given(msg=st.one_of(plain_pushes(wire_exprs, encodings, timestamps), pushes))
def test_push_template_equals_the_codec_template(msg: Push) -> None:
    raw = encode_network_message(msg)
    fast = R._push_template(raw)
    if fast is not None:
        assert fast == R._codec_template(raw)


@examples(800, 200)
@given(raw=st.binary(max_size=64).map(lambda b: bytes([0x1D]) + b))
def test_push_template_on_arbitrary_bytes(raw: bytes) -> None:
    fast = R._push_template(raw)
    if fast is not None:
        assert fast == R._codec_template(raw)


@examples(2_000, 500)
@given(tail=st.binary(max_size=200))
def test_index_parser_never_raises(tail: bytes) -> None:
    offsets = index_offsets(tail)
    assert offsets is None or set(offsets) <= {fmt.CH_NET, fmt.CH_LINK, fmt.CH_ROUTE} or True


def test_a_bad_link_event_in_an_intact_chunk_changes_nothing(tmp_path: Path) -> None:
    raw = encode_network_message(Push(WireExpr(0, "a/b"), Put(b"x")))
    with Recorder(tmp_path / "rec") as rec:
        rec.link_opened(1, 1, "aa", "client", "tcp/127.0.0.1:1")
        rec.link_opened(2, 2, "cc", "client", "tcp/127.0.0.1:3")
        rec.message(3, 1, "rx", "a/b", raw)
        rec.link_closed(4, 1, "gone")  # damaged below: link 1 then stays open
        rec.message(5, 1, "rx", "a/b", raw)
        rec.link_closed(6, 2, "gone")
        rec.message(7, 2, "rx", "a/b", raw)
    _, path = list_segments(tmp_path / "rec")[0]
    data = bytearray(path.read_bytes())
    (chunk,) = scan_segment(path).chunks
    at = data.index(b'"event":"close"', chunk.records_at)
    data[at - 1] = ord("[")  # no longer a JSON object
    records = bytes(data[chunk.records_at : chunk.records_at + chunk.records_len])
    struct.pack_into("<I", data, chunk.offset + 9 + 24, zlib.crc32(records))  # still intact
    path.write_bytes(bytes(data))
    offsets = index_offsets(bytes(data[chunk.records_at + chunk.records_len : chunk.end]))
    assert offsets is not None
    assert chunk_rows(records, offsets, 0, chunk.net, 1, 0, 1, {}, SCHEMA) is not None
    fast, slow = both_paths(tmp_path / "rec", 100)
    assert_same(fast, slow)
    assert fast["zid"].to_pylist() == ["aa", "aa", None]


@examples(120, 30)
@given(
    where=st.floats(0, 1),
    value=st.integers(0, 255),
    table=st.sampled_from(["routes", "links"]),
)
def test_damaged_bytes_never_break_the_other_tables(
    small_recording: Path,
    tmp_path_factory: pytest.TempPathFactory,
    where: float,
    value: int,
    table: str,
) -> None:
    dst = tmp_path_factory.mktemp("damaged") / "rec"
    _damage(small_recording, dst, where, value)
    channel = {"routes": fmt.CH_ROUTE, "links": fmt.CH_LINK}[table]
    schema = R.arrow_schema(R.TABLE_DDL[table])
    cat = SegmentCatalog(str(dst))
    segments = cat.refresh()
    if not segments:
        return
    end = (segments[-1].number, segments[-1].count(channel))
    try:
        for part in plan_slices(cat, segments, channel, (segments[0].number, 0), end, 5):
            for batch in read_slice(part, schema):
                assert batch.schema == schema
    except DecodeError:
        pass  # a segment shorter than its scan
