"""The ``pyzenoh`` Spark data source over a recording directory (batch and streaming).

    spark.dataSource.register(ZenohRecordingDataSource)
    spark.read.format("pyzenoh").load(DIR)                  # every complete record now
    spark.readStream.format("pyzenoh").load(DIR)            # replayable micro-batches
    df.write.format("pyzenoh").option("connect", EP)...     # publish rows (see .sink)

Options (reading):

``table``
    ``messages`` (default: one row per network message, decoded), ``routes`` (the
    router's routing decisions) or ``links`` (link open/close events, and messages
    access control denied on a link).
``maxRecordsPerTrigger``
    Streaming admission limit, in records of the chosen table.
``startingOffsets`` / ``endingOffsets``
    ``earliest`` / ``latest`` / JSON ``{"seg": N, "rec": K}``. Both default to the whole
    recording; a restarted stream always resumes from its checkpoint instead.
``partitionRecords``
    Largest number of records one Spark task reads (default 200000).

Offsets are ``{"seg": N, "rec": K}``: the next unread record of the table's channel is
the K-th (from 0) of segment N. Only complete chunk groups are ever counted, so an offset
never points into data a crash could still tear. Filter pushdown is deliberately not
implemented (see the project's Spark notes: it corrupts later queries in 4.3.0).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType
from typing_extensions import override

from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.columnar import ChunkRows, chunk_rows, index_offsets, rows_batch
from pyzenoh.pipeline.samples import SampleRows
from pyzenoh.recording import format as fmt
from pyzenoh.recording.reader import (
    SegmentInfo,
    list_segments,
    read_chunk,
    scan_segment,
)

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]

FORMAT_NAME = "pyzenoh"
DEFAULT_PARTITION_RECORDS = 200_000
#: The recording channel each table is read from (samples: from the network messages).
TABLE_CHANNEL = {"messages": fmt.CH_NET, "routes": fmt.CH_ROUTE, "links": fmt.CH_LINK, "samples": fmt.CH_NET}

LinkState = tuple[tuple[int, str | None, str | None, str | None], ...]


# --- driver side: what the recording holds ----------------------------------------------


class SegmentCatalog:
    """Scans of a recording's segments, kept between micro-batches (driver only).

    Final segments are scanned once; the open one is rescanned from where the last scan
    stopped.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._infos: dict[int, SegmentInfo] = {}
        self._files: dict[int, tuple[int, int]] = {}  # (inode, device) scanned
        self._link_states: dict[int, list[LinkState]] = {}
        self._lock = threading.Lock()

    def refresh(self) -> list[SegmentInfo]:
        with self._lock:
            out = []
            for number, path in list_segments(self.directory):
                try:
                    st = os.stat(path)
                except FileNotFoundError:
                    continue  # deleted between listing and now
                prev = self._infos.get(number)
                identity = (st.st_ino, st.st_dev)
                # A file replaced, shrunk, or changed after its footer is not the one we
                # scanned (e.g. a recording regenerated in place): start over.
                if prev is not None and (
                    self._files.get(number) != identity
                    or st.st_size < prev.size
                    or (prev.closed and st.st_size != prev.size)
                ):
                    prev = None
                    self._link_states.pop(number, None)
                info = scan_segment(path, prev)
                self._infos[number] = info
                self._files[number] = identity
                out.append(info)
            return out

    def info(self, number: int) -> SegmentInfo | None:
        return self._infos.get(number)

    def links_before(self, info: SegmentInfo, chunk_index: int) -> LinkState:
        """Links open at the start of chunk ``chunk_index`` of a segment."""
        with self._lock:
            states = self._link_states.setdefault(info.number, [()])
            if len(states) > chunk_index:
                return states[chunk_index]
            current = {lid: (z, w, r) for lid, z, w, r in states[-1]}
            with open(info.path, "rb") as f:
                for k in range(len(states) - 1, chunk_index):
                    chunk = info.chunks[k]
                    if chunk.links:
                        _apply_links(current, read_chunk(f, chunk, verify=False))
                    states.append(tuple((lid, *v) for lid, v in sorted(current.items())))
            return states[chunk_index]


def _apply_links(state: dict[int, tuple[str | None, str | None, str | None]], records: memoryview) -> None:
    try:
        entries = fmt.iter_chunk_messages(records)
    except DecodeError:
        return
    for channel, log_time, a, b in entries:
        if channel != fmt.CH_LINK:
            continue
        try:
            rec = fmt.parse_link(records[a:b], log_time)
        except DecodeError:
            continue
        if rec.event == "open":
            state[rec.link] = (rec.zid, rec.whatami, rec.remote)
        elif rec.event == "close":
            state.pop(rec.link, None)


_CATALOGS: dict[str, SegmentCatalog] = {}
_CATALOGS_LOCK = threading.Lock()


def catalog_for(directory: str) -> SegmentCatalog:
    with _CATALOGS_LOCK:
        cat = _CATALOGS.get(directory)
        if cat is None:
            cat = _CATALOGS[directory] = SegmentCatalog(directory)
        return cat


# --- offsets ---------------------------------------------------------------------------


def make_offset(seg: int, rec: int) -> dict[str, int]:
    return {
        "seg": seg,
        "rec": rec,
    }  # always this key order: Spark compares offsets as JSON


def parse_offset(value: Any) -> tuple[int, int]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise UsageError(f"offset {value!r} is not JSON") from None
    if not isinstance(value, dict):
        raise UsageError(f"offset must be an object with seg and rec, not {value!r}")
    seg, rec = value.get("seg"), value.get("rec")
    if not isinstance(seg, int) or not isinstance(rec, int) or seg < 0 or rec < 0:
        raise UsageError(f"offset needs non-negative integers seg and rec: {value!r}")
    return seg, rec


def advance(
    segments: Sequence[SegmentInfo],
    channel: int,
    start: tuple[int, int],
    max_records: int | None = None,
    cap: tuple[int, int] | None = None,
) -> tuple[int, int]:
    """The offset after up to ``max_records`` records from ``start`` (never beyond ``cap``)."""
    seg0, rec0 = start
    end = start
    remaining = max_records
    for info in segments:
        if info.number < seg0:
            continue
        if cap is not None and info.number > cap[0]:
            break
        begin = rec0 if info.number == seg0 else 0
        avail = info.count(channel)
        if cap is not None and info.number == cap[0]:
            avail = min(avail, cap[1])
        take = avail - begin
        if take <= 0:
            continue
        if remaining is not None:
            take = min(take, remaining)
            remaining -= take
        end = (info.number, begin + take)
        if remaining == 0:
            break
    return end


def earliest(segments: Sequence[SegmentInfo]) -> tuple[int, int]:
    return (segments[0].number, 0) if segments else (0, 0)


def _resolve(value: str | None, segments: Sequence[SegmentInfo], channel: int, default: str) -> tuple[int, int]:
    value = (value or default).strip()
    if value == "earliest":
        return earliest(segments)
    if value == "latest":
        return advance(segments, channel, earliest(segments))
    return parse_offset(value)


# --- partitions --------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentSlice(InputPartition):
    """Records ``[start, stop)`` of one channel of one segment, and where to find them."""

    path: str
    seg: int
    run: int
    channel: int
    start: int
    stop: int
    # (records file offset, records length, ordinal of the chunk's first channel record,
    #  file offset after the group's MessageIndex records, the chunk's CRC)
    chunks: tuple[tuple[int, int, int, int, int], ...]
    links: LinkState


def plan_slices(
    catalog: SegmentCatalog,
    segments: Sequence[SegmentInfo],
    channel: int,
    start: tuple[int, int],
    end: tuple[int, int],
    max_records: int = DEFAULT_PARTITION_RECORDS,
) -> list[SegmentSlice]:
    """Cut ``[start, end)`` into per-segment slices of at most ``max_records`` records."""
    out: list[SegmentSlice] = []
    for info in segments:
        if info.number < start[0] or info.number > end[0]:
            continue
        lo = start[1] if info.number == start[0] else 0
        hi = end[1] if info.number == end[0] else info.count(channel)
        hi = min(hi, info.count(channel))
        a = lo
        while a < hi:
            b = min(hi, a + max_records)
            out.append(_slice(catalog, info, channel, a, b))
            a = b
    return out


def _slice(catalog: SegmentCatalog, info: SegmentInfo, channel: int, a: int, b: int) -> SegmentSlice:
    chunks: list[tuple[int, int, int, int, int]] = []
    first_index = -1
    ordinal = 0
    for k, chunk in enumerate(info.chunks):
        n = chunk.count(channel)
        if first_index < 0 and n > 0 and ordinal + n > a:
            first_index = k
        if first_index >= 0:  # later chunks too, even without our records: link events
            chunks.append((chunk.records_at, chunk.records_len, ordinal, chunk.end, chunk.crc))
        ordinal += n
        if ordinal >= b:
            break
    links = catalog.links_before(info, first_index) if first_index >= 0 else ()
    return SegmentSlice(info.path, info.number, info.run, channel, a, b, tuple(chunks), links)


# --- executor side: records -> Arrow ---------------------------------------------------------


def read_slice(part: SegmentSlice, schema: pa.Schema, batch_rows: int = R.BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Decode one slice into Arrow batches of ``schema``."""
    if part.channel == fmt.CH_NET and schema == _messages_schema():
        return _message_batches(part, schema, batch_rows)
    if part.channel == fmt.CH_NET and schema == _samples_schema():
        return R.rows_to_batches(sample_rows(part), schema, batch_rows)
    return R.rows_to_batches(slice_rows(part), schema, batch_rows)


@functools.cache
def _messages_schema() -> pa.Schema:
    return R.arrow_schema(R.MESSAGES_DDL)


@functools.cache
def _samples_schema() -> pa.Schema:
    return R.arrow_schema(R.SAMPLES_DDL)


def sample_rows(part: SegmentSlice) -> Iterator[tuple[Any, ...]]:
    """The ``samples`` rows of a slice (:mod:`.samples`): those of its rx records, each
    completed by its copies in the same chunk (so rows do not depend on the slicing)."""
    links = _links(part)
    collector = SampleRows(part.seg, part.run)
    with open(part.path, "rb") as f:
        for records_at, records_len, first, _, _ in part.chunks:
            if first >= part.stop:
                break
            row = collector.finish()  # copies in another chunk are not looked for
            if row is not None:
                yield row
            mv = memoryview(_read_group(f, part.path, records_at, records_at + records_len))
            try:
                entries = fmt.iter_chunk_messages(mv)
            except DecodeError:
                continue  # a corrupt chunk: its messages rows say so; it has no samples
            ordinal = first
            for channel, log_time, a, b in entries:
                if channel == fmt.CH_LINK:
                    with contextlib.suppress(DecodeError):
                        _follow_link(links, fmt.parse_link(mv[a:b], log_time))
                    continue
                if channel != fmt.CH_NET:
                    continue
                o = ordinal
                ordinal += 1
                if o < part.start or log_time > fmt.MAX_TIME_NS:
                    continue
                try:
                    n = fmt.parse_net(mv[a:b], log_time)
                except DecodeError:
                    continue
                row = collector.on_record(o, n, links.get(n.link), o < part.stop)
                if row is not None:
                    yield row
    row = collector.finish()
    if row is not None:
        yield row


def _follow_link(links: dict[int, tuple[str | None, str | None, str | None]], lrec: fmt.LinkRecord) -> None:
    """A link record: the links open at this point of the recording change."""
    if lrec.event == "open":
        links[lrec.link] = (lrec.zid, lrec.whatami, lrec.remote)
    elif lrec.event == "close":  # a denial changes no link
        links.pop(lrec.link, None)


def _read_group(f: BinaryIO, path: str, records_at: int, group_end: int) -> bytes:
    f.seek(records_at)
    data = f.read(group_end - records_at)
    if len(data) != group_end - records_at:
        raise DecodeError(f"segment {path} shrank while being read", records_at)
    return data


def _message_batches(part: SegmentSlice, schema: pa.Schema, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """The ``messages`` slice, chunk by chunk: columnar where the chunk is intact and its
    index agrees (:mod:`.columnar`, several chunks to a batch), record by record
    otherwise."""
    links = dict(_links(part))
    pending: list[ChunkRows] = []
    held = 0
    with open(part.path, "rb") as f:
        for records_at, records_len, first, group_end, crc in part.chunks:
            if first >= part.stop:
                break
            data = memoryview(_read_group(f, part.path, records_at, group_end))
            records = data[:records_len]
            rows = None
            offsets = index_offsets(data[records_len:])
            if offsets is not None and (crc == 0 or zlib.crc32(records) == crc):
                n = len(offsets.get(fmt.CH_NET, ()))
                k0 = max(part.start - first, 0)
                k1 = max(min(part.stop - first, n), k0)
                rows = chunk_rows(
                    records,
                    offsets,
                    k0,
                    k1,
                    part.seg,
                    first + k0,
                    part.run,
                    links,
                    schema,
                )
            if rows is not None:
                if len(rows):
                    pending.append(rows)
                    held += len(rows)
                if held < batch_rows:
                    continue
            if pending:  # in record order: before a chunk that takes the slow path
                yield rows_batch(pending, schema)
                pending, held = [], 0
            if rows is None:
                yield from R.rows_to_batches(_chunk_rows(part, records, first, links), schema, batch_rows)
    if pending:
        yield rows_batch(pending, schema)


def _links(part: SegmentSlice) -> dict[int, tuple[str | None, str | None, str | None]]:
    return {lid: (z, w, r) for lid, z, w, r in part.links}


def slice_rows(part: SegmentSlice) -> Iterator[tuple[Any, ...]]:
    """The slice's rows as tuples, record by record (any table)."""
    links = _links(part)
    with open(part.path, "rb") as f:
        for records_at, records_len, first, _, _ in part.chunks:
            if first >= part.stop:
                return
            data = _read_group(f, part.path, records_at, records_at + records_len)
            yield from _chunk_rows(part, memoryview(data), first, links)


def _chunk_rows(
    part: SegmentSlice,
    mv: memoryview,
    first: int,
    links: dict[int, tuple[str | None, str | None, str | None]],
) -> Iterator[tuple[Any, ...]]:
    """Rows of one chunk's records for the slice's channel; ``links`` follows the chunk's
    link events."""
    want = part.channel
    seg, run, start, stop = part.seg, part.run, part.start, part.stop
    ordinal = first
    try:
        entries = fmt.iter_chunk_messages(mv)
    except DecodeError as exc:
        if want == fmt.CH_NET and start <= ordinal < stop:
            yield R.invalid_row(seg, ordinal, run, -1, 0, -1, f"corrupt chunk: {exc}", bytes(mv[:256]))
        return
    for channel, log_time, a, b in entries:
        lrec = None
        if channel == fmt.CH_LINK:
            try:
                lrec = fmt.parse_link(mv[a:b], log_time)
            except DecodeError:
                lrec = None
            if lrec is not None:
                _follow_link(links, lrec)
        if channel != want:
            continue
        o = ordinal
        ordinal += 1
        if o < start or o >= stop:
            continue
        if log_time > fmt.MAX_TIME_NS and want != fmt.CH_NET:
            continue  # a damaged time: the row cannot be placed (net records: invalid row)
        if want == fmt.CH_NET:
            try:
                if log_time > fmt.MAX_TIME_NS:
                    log_time = 0
                    raise DecodeError("log time out of range", a)
                n = fmt.parse_net(mv[a:b], log_time)
            except DecodeError as exc:
                yield R.invalid_row(seg, o, run, -1, log_time, -1, f"bad record: {exc}", bytes(mv[a:b]))
                continue
            yield R.message_row(
                seg,
                o,
                run,
                n.seq,
                log_time,
                n.link,
                links.get(n.link),
                n.direction,
                n.cause,
                n.key,
                n.raw,
            )
        elif want == fmt.CH_ROUTE:
            try:
                r = fmt.parse_route(mv[a:b], log_time)
            except DecodeError:
                continue
            yield R.route_row(seg, o, run, r.seq, log_time, r.cause, r.key, r.links)
        elif lrec is not None:
            yield R.link_row(
                seg,
                o,
                run,
                lrec.seq,
                log_time,
                lrec.event,
                lrec.link,
                lrec.zid,
                lrec.whatami,
                lrec.remote,
                lrec.reason,
                lrec.carried,
                lrec.cause,
                lrec.flow,
                lrec.message,
                lrec.key,
            )


# --- the Spark classes ------------------------------------------------------------------------


class _Options:
    def __init__(self, options: Any) -> None:
        path = options.get("path")
        if not path:
            raise UsageError('the pyzenoh source needs a recording directory: .load("DIR")')
        self.path = str(path)
        self.table = str(options.get("table", "messages")).lower()
        if self.table not in TABLE_CHANNEL:
            raise UsageError(f"table must be one of {sorted(TABLE_CHANNEL)}, not {self.table!r}")
        self.channel = TABLE_CHANNEL[self.table]
        self.max_per_trigger = _positive(options.get("maxRecordsPerTrigger"), "maxRecordsPerTrigger")
        self.partition_records = (
            _positive(options.get("partitionRecords"), "partitionRecords") or DEFAULT_PARTITION_RECORDS
        )
        self.starting = options.get("startingOffsets")
        self.ending = options.get("endingOffsets")


def _positive(value: Any, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a positive integer, not {value!r}") from None
    if n <= 0:
        raise UsageError(f"{name} must be a positive integer, not {value!r}")
    return n


class RecordingBatchReader(DataSourceReader):
    def __init__(self, options: Any, schema: StructType) -> None:
        self.opts = _Options(options)
        self.arrow_schema = R.arrow_schema(schema)

    @override
    def partitions(self) -> Sequence[InputPartition]:
        cat = catalog_for(self.opts.path)
        segments = cat.refresh()
        start = _resolve(self.opts.starting, segments, self.opts.channel, "earliest")
        end = _resolve(self.opts.ending, segments, self.opts.channel, "latest")
        slices = plan_slices(cat, segments, self.opts.channel, start, end, self.opts.partition_records)
        return slices or [InputPartition(None)]

    @override
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, SegmentSlice):
            return iter(())
        return read_slice(partition, self.arrow_schema)


class RecordingStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Any, schema: StructType) -> None:
        self.opts = _Options(options)
        self.arrow_schema = R.arrow_schema(schema)
        self._cap: tuple[int, int] | None = None

    def _segments(self) -> list[SegmentInfo]:
        return catalog_for(self.opts.path).refresh()

    @override
    def initialOffset(self) -> dict[str, int]:
        segments = self._segments()
        return make_offset(*_resolve(self.opts.starting, segments, self.opts.channel, "earliest"))

    @override
    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_per_trigger:
            return ReadMaxRows(self.opts.max_per_trigger)
        return ReadAllAvailable()

    @override
    def prepareForTriggerAvailableNow(self) -> None:
        segments = self._segments()
        self._cap = advance(segments, self.opts.channel, earliest(segments))

    @override
    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = advance(
            self._segments(),
            self.opts.channel,
            parse_offset(start),
            max_rows,
            self._cap,
        )
        return make_offset(*end)

    @override
    def reportLatestOffset(self) -> dict[str, int] | None:
        segments = self._segments()
        return make_offset(*advance(segments, self.opts.channel, earliest(segments)))

    @override
    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        cat = catalog_for(self.opts.path)
        segments = cat.refresh()
        return plan_slices(
            cat,
            segments,
            self.opts.channel,
            parse_offset(start),
            parse_offset(end),
            self.opts.partition_records,
        )

    @override
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SegmentSlice)
        return read_slice(partition, self.arrow_schema)

    @override
    def commit(self, end: dict[str, int]) -> None:
        pass  # the recording is never trimmed by the reader: commits lag a batch


class ZenohRecordingDataSource(DataSource):
    """Spark format ``pyzenoh``: read a recording, or publish rows as Zenoh PUTs."""

    @classmethod
    @override
    def name(cls) -> str:
        return FORMAT_NAME

    @override
    def schema(self) -> StructType:
        table = str(self.options.get("table", "messages")).lower()
        ddl = R.TABLE_DDL.get(table)
        if ddl is None:
            raise UsageError(f"table must be one of {sorted(R.TABLE_DDL)}, not {table!r}")
        return R.spark_schema(ddl)

    @override
    def reader(self, schema: StructType) -> DataSourceReader:
        return RecordingBatchReader(self.options, schema)

    @override
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RecordingStreamReader(self.options, schema)

    @override
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from pyzenoh.pipeline.sink import ZenohBatchWriter

        return ZenohBatchWriter(self.options, schema)

    @override
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pyzenoh.pipeline.sink import ZenohStreamWriter

        return ZenohStreamWriter(self.options, schema)


def register(spark: Any) -> None:
    """Register the ``pyzenoh`` format on a SparkSession (idempotent per session)."""
    spark.dataSource.register(ZenohRecordingDataSource)
