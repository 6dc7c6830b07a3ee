"""The data source's planning and reading logic, driven directly (no JVM)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from pyzenoh.errors import UsageError
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.source import (
    RecordingBatchReader,
    RecordingStreamReader,
    SegmentCatalog,
    SegmentSlice,
    ZenohRecordingDataSource,
    advance,
    make_offset,
    parse_offset,
    plan_slices,
    slice_rows,
)
from pyzenoh.recording import NetRecord, Recorder, read_records
from pyzenoh.recording import format as fmt
from tests.hyp import examples

SEC = 1_000_000_000


def _record(path: Path, n: int = 600, *, close: bool = True, max_segment_bytes: int = 16_000) -> Recorder:
    """Links that open and close along the way, so slices must carry link state."""
    rec = Recorder(path, max_segment_bytes=max_segment_bytes)
    rec.link_opened(0, 1, "a1", "client", "tcp/x:1")
    for i in range(n):
        if i == n // 3:
            rec.link_opened(i, 2, "b2", "peer", "tcp/x:2")
        if i == 2 * n // 3:
            rec.link_closed(i, 1, "bye")
        link = 2 if i >= n // 3 and i % 2 else 1
        rec.message(i, link, "rx", f"k/{i}", b"\x7d\x00\x03k/x\x01\x01" + bytes([i % 256]))
        rec.route(i, i, f"k/{i}", [link])
    if close:
        rec.close()
    return rec


def _reader(path: Path, **opts: Any) -> RecordingBatchReader:
    options = {"path": str(path), **{k: str(v) for k, v in opts.items()}}
    return RecordingBatchReader(options, ZenohRecordingDataSource(options).schema())


def _all_rows(reader: RecordingBatchReader) -> list[dict[str, Any]]:
    out = []
    for part in reader.partitions():
        for batch in reader.read(part):
            assert batch.schema == reader.arrow_schema
            out += batch.to_pylist()
    return out


def test_batch_partitions_cover_every_record_once_with_link_state(
    tmp_path: Path,
) -> None:
    _record(tmp_path)
    truth = [r for r in read_records(tmp_path) if isinstance(r, NetRecord)]
    rows = _all_rows(_reader(tmp_path, partitionRecords=37))
    assert [r["seq"] for r in rows] == [t.seq for t in truth]
    zid_of = {1: "a1", 2: "b2"}
    for row, rec in zip(rows, truth, strict=True):
        assert row["key"] == rec.key and row["link"] == rec.link
        assert row["msg_type"] == "push" and row["payload"] == rec.raw[-1:]
        # Link 1 closes two thirds in: its later messages have no link details.
        assert row["zid"] == (zid_of[rec.link] if not (rec.link == 1 and row["time_ns"] >= 400) else None)
    assert len({(r["seg"], r["rec"]) for r in rows}) == len(rows)


def test_routes_and_links_tables(tmp_path: Path) -> None:
    _record(tmp_path, 90)
    routes = _all_rows(_reader(tmp_path, table="routes"))
    assert [r["cause"] for r in routes] == list(range(90))
    assert all(r["expected_links"] == [r2["link"]] for r, r2 in zip(routes, _all_rows(_reader(tmp_path)), strict=True))
    links = _all_rows(_reader(tmp_path, table="links"))
    real = [(r["event"], r["link"]) for r in links if not r["carried"]]
    assert real == [("open", 1), ("open", 2), ("close", 1)]


def test_denials_are_links_rows_and_change_no_link(tmp_path: Path) -> None:
    """A "denied" event is a links row with its cause, flow, message and key; readers do
    not take it for a close (the link's later messages keep its details), whichever
    path reads them (per record, columnar, carried state across chunks)."""
    with Recorder(tmp_path, max_segment_bytes=1 << 20) as rec:
        rec.link_opened(0, 1, "a1", "client", "tcp/x:1")
        for i in range(40):
            s = rec.message(i * SEC // 10, 1, "rx", "k/a", b"\x7d\x00\x03k/a\x01\x01\x00")
            if i % 10 == 3:
                rec.access_denied(
                    i * SEC // 10,
                    s,
                    1,
                    "ingress",
                    "put",
                    "k/a",
                    "ingress put denied by rule 'r'",
                )
    links = [r for r in _all_rows(_reader(tmp_path, table="links")) if r["event"] == "denied"]
    assert len(links) == 4
    first = links[0]
    assert (
        first["link"],
        first["cause"],
        first["flow"],
        first["message"],
        first["key"],
        first["reason"],
        first["carried"],
        first["zid"],
    ) == (1, 4, "ingress", "put", "k/a", "ingress put denied by rule 'r'", False, None)
    opens = [r for r in _all_rows(_reader(tmp_path, table="links")) if r["event"] == "open"]
    assert opens[0]["cause"] is None
    for partition in (3, 1000):
        rows = _all_rows(_reader(tmp_path, partitionRecords=partition))
        assert len(rows) == 40 and {r["zid"] for r in rows} == {"a1"}
    cat = SegmentCatalog(str(tmp_path))
    (info,) = cat.refresh()
    assert len(info.chunks) > 2
    assert cat.links_before(info, len(info.chunks) - 1) == ((1, "a1", "client", "tcp/x:1"),)


def test_offsets_and_admission_on_a_growing_recording(tmp_path: Path) -> None:
    rec = _record(tmp_path, 300, close=False)
    options = {"path": str(tmp_path), "maxRecordsPerTrigger": "100"}
    stream = RecordingStreamReader(options, ZenohRecordingDataSource(options).schema())
    start = stream.initialOffset()
    assert start == make_offset(1, 0)
    limit = stream.getDefaultReadLimit()
    seen: list[int] = []
    for _ in range(50):
        end = stream.latestOffset(start, limit)
        if end == start:
            break
        for part in stream.partitions(start, end):
            for batch in stream.read(part):
                seen += batch.column("seq").to_pylist()
        start = end
    written = [r.seq for r in read_records(tmp_path) if isinstance(r, NetRecord)]
    assert seen == written  # only complete chunks: the open chunk is not offered yet
    for i in range(300, 400):
        rec.message(i, 1, "rx", "k/late", b"\x01")
    rec.close()
    for _ in range(50):
        end = stream.latestOffset(start, limit)
        if end == start:
            break
        n = sum(b.num_rows for p in stream.partitions(start, end) for b in stream.read(p))
        assert 0 < n <= 100
        seen += [0] * n
        start = end
    assert len(seen) == 400


def test_available_now_stops_at_the_target(tmp_path: Path) -> None:
    rec = _record(tmp_path, 100, close=False)
    rec.tick(10 * SEC)
    options = {"path": str(tmp_path)}
    stream = RecordingStreamReader(options, ZenohRecordingDataSource(options).schema())
    stream.prepareForTriggerAvailableNow()
    for i in range(50):
        rec.message(100 + i, 1, "rx", "k", b"\x01")
    rec.close()
    start = stream.initialOffset()
    end = stream.latestOffset(start, stream.getDefaultReadLimit())
    n = sum(b.num_rows for p in stream.partitions(start, end) for b in stream.read(p))
    assert n == 100
    assert stream.latestOffset(end, stream.getDefaultReadLimit()) == end


def test_offset_helpers() -> None:
    assert parse_offset('{"seg": 3, "rec": 5}') == (3, 5)
    assert parse_offset({"seg": 0, "rec": 0}) == (0, 0)
    for bad in (
        "nope",
        "[]",
        '{"seg": -1, "rec": 0}',
        '{"seg": 1}',
        {"seg": "1", "rec": 0},
    ):
        with pytest.raises(UsageError):
            parse_offset(bad)
    assert list(make_offset(2, 9)) == ["seg", "rec"]


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        _reader(tmp_path, table="nope")
    with pytest.raises(UsageError):
        _reader(tmp_path, maxRecordsPerTrigger="0")
    with pytest.raises(UsageError):
        RecordingBatchReader({}, ZenohRecordingDataSource({}).schema())
    # An empty directory reads as nothing.
    assert _all_rows(_reader(tmp_path)) == []


def test_starting_and_ending_offsets(tmp_path: Path) -> None:
    _record(tmp_path, 400)  # four segments
    full = _all_rows(_reader(tmp_path))
    part = _all_rows(
        _reader(
            tmp_path,
            startingOffsets='{"seg": 2, "rec": 3}',
            endingOffsets='{"seg": 3, "rec": 1}',
        )
    )
    assert part and part[0]["seg"] == 2 and part[0]["rec"] == 3
    assert part[-1]["seg"] == 3 and part[-1]["rec"] == 0
    assert [r["seq"] for r in part] == [r["seq"] for r in full if (2, 3) <= (r["seg"], r["rec"]) < (3, 1)]
    assert _all_rows(_reader(tmp_path, startingOffsets="latest")) == []


@examples(ci=60, local=15)
@given(st.lists(st.integers(1, 80), min_size=1, max_size=6), st.integers(1, 500))
def test_any_cut_into_batches_and_slices_reads_each_record_once(
    tmp_path_factory: pytest.TempPathFactory, limits: list[int], slice_size: int
) -> None:
    path = tmp_path_factory.getbasetemp() / "cuts"
    if not path.exists():
        _record(path, 250, max_segment_bytes=6_000)
    cat = SegmentCatalog(str(path))
    segments = cat.refresh()
    start = (segments[0].number, 0)
    seqs: list[int] = []
    for i in range(1000):
        end = advance(segments, fmt.CH_NET, start, limits[i % len(limits)])
        if end == start:
            break
        for part in plan_slices(cat, segments, fmt.CH_NET, start, end, slice_size):
            assert isinstance(part, SegmentSlice)
            seqs += [row[3] for row in slice_rows(part)]
        start = end
    assert seqs == [r.seq for r in read_records(path) if isinstance(r, NetRecord)]
    assert R.MESSAGE_COLUMNS[3] == "seq"


def test_catalog_notices_a_recording_rewritten_in_place(tmp_path: Path) -> None:
    _record(tmp_path, 100)
    assert len(_all_rows(_reader(tmp_path))) == 100
    shutil.rmtree(tmp_path)
    with Recorder(tmp_path) as rec:
        for i in range(30):
            rec.message(i, 9, "tx", "other", b"\x1a\x01")
    rows = _all_rows(_reader(tmp_path))
    assert [(r["link"], r["msg_type"]) for r in rows] == [(9, "response_final")] * 30
