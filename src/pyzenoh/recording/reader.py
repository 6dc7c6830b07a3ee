"""Reading recordings: segment indexes, records, and the resume point for a new recorder.

Readers only trust *complete chunk groups* (a Chunk record followed by its
``CHANNEL_COUNT`` MessageIndex records, all fully on disk), so a segment that is still
being written, or whose writer was killed, reads cleanly up to its last complete chunk.
A segment is *final* when it has a footer or when a later segment exists.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pyzenoh.errors import DecodeError
from pyzenoh.recording import format as fmt

__all__ = [
    "ChunkInfo",
    "SegmentInfo",
    "SegmentReader",
    "chunk_records",
    "list_segments",
    "read_chunk",
    "read_records",
    "resume_point",
    "scan_segment",
]

# Chunk fields up to and including the compression string's length.
_CHUNK_FIXED_LEN = fmt.CHUNK_FIXED.size + 4
_INDEX_HEAD = struct.Struct("<HI")  # MessageIndex: channel, entries length


def list_segments(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """``(number, path)`` of every segment file in ``directory``, in order."""
    found: list[tuple[int, Path]] = []
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for entry in entries:
        n = fmt.segment_number(entry.name)
        if n is not None and entry.is_file():
            found.append((n, Path(entry.path)))
    found.sort()
    return found


@dataclass(frozen=True, slots=True)
class ChunkInfo:
    """One complete chunk group of a segment."""

    offset: int  # file offset of the Chunk record
    records_at: int  # file offset of the chunk's records
    records_len: int
    end: int  # file offset just after the group's last MessageIndex
    start_time: int
    end_time: int
    crc: int
    net: int  # number of records per channel
    links: int
    routes: int

    def count(self, channel: int) -> int:
        if channel == fmt.CH_NET:
            return self.net
        if channel == fmt.CH_LINK:
            return self.links
        return self.routes


@dataclass(frozen=True, slots=True)
class SegmentInfo:
    """What a scan of one segment file found."""

    number: int
    path: str
    run: int
    first_seq: int
    chunks: tuple[ChunkInfo, ...]
    data_end: int  # offset after the last complete group (where a rescan resumes)
    closed: bool  # the footer was found
    size: int  # file size at scan time
    zid: str | None = None  # the recording router's (segment metadata; older ones: None)

    def count(self, channel: int) -> int:
        return sum(c.count(channel) for c in self.chunks)


def _read_exact(f: BinaryIO, at: int, n: int, size: int) -> bytes | None:
    if n < 0 or at + n > size:
        return None
    f.seek(at)
    data = f.read(n)
    return data if len(data) == n else None


def _parse_metadata(body: bytes) -> tuple[str, dict[str, str]]:
    mv = memoryview(body)

    def string(at: int) -> tuple[str, int]:
        if at + 4 > len(mv):
            raise DecodeError("truncated metadata string", at)
        (n,) = fmt.U32.unpack_from(mv, at)
        if at + 4 + n > len(mv):
            raise DecodeError("metadata string past the record", at)
        try:
            return str(mv[at + 4 : at + 4 + n], "utf-8"), at + 4 + n
        except UnicodeDecodeError:
            raise DecodeError("metadata string is not UTF-8", at) from None

    name, at = string(0)
    if at + 4 > len(mv):
        raise DecodeError("truncated metadata map", at)
    (maplen,) = fmt.U32.unpack_from(mv, at)
    at += 4
    stop = at + maplen
    if stop > len(mv):
        raise DecodeError("metadata map past the record", at)
    out: dict[str, str] = {}
    while at < stop:
        k, at = string(at)
        v, at = string(at)
        out[k] = v
    return name, out


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


def scan_segment(path: str | os.PathLike[str], previous: SegmentInfo | None = None) -> SegmentInfo:
    """Index a segment's complete chunk groups, resuming after ``previous`` when given.

    Never raises on bad file contents: scanning stops at the first group that is not
    complete and well-formed.
    """
    path = str(path)
    number = fmt.segment_number(os.path.basename(path))
    if number is None:
        raise DecodeError(f"not a segment file name: {path}")
    if previous is not None and previous.closed:
        return previous
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if previous is not None:
            run, first_seq, zid = previous.run, previous.first_seq, previous.zid
            chunks = list(previous.chunks)
            at = previous.data_end
        else:
            run, first_seq, chunks, zid = number, 0, [], None
            magic = _read_exact(f, 0, len(fmt.MAGIC), size)
            if magic != fmt.MAGIC:
                return SegmentInfo(number, path, run, first_seq, (), 0, False, size)
            at = len(fmt.MAGIC)
        closed = False
        head = fmt.RECORD_HEAD
        while True:
            raw = _read_exact(f, at, head.size, size)
            if raw is None:
                break
            op, length = head.unpack(raw)
            if length > fmt.MAX_RECORD_BYTES:
                break
            body_at = at + head.size
            if op == fmt.OP_CHUNK:
                group = _scan_group(f, at, length, size)
                if group is None:
                    break
                chunks.append(group)
                at = group.end
                continue
            if body_at + length > size:
                break
            if op == fmt.OP_METADATA:
                body = _read_exact(f, body_at, length, size)
                try:
                    name, meta = _parse_metadata(body or b"")
                except DecodeError:
                    break
                if name == fmt.SEGMENT_METADATA:
                    run = _int(meta.get("run"), run)
                    first_seq = _int(meta.get("first_seq"), first_seq)
                    zid = meta.get("zid")
            elif op in (fmt.OP_DATA_END, fmt.OP_FOOTER):
                tail = _read_exact(f, size - len(fmt.MAGIC), len(fmt.MAGIC), size)
                closed = tail == fmt.MAGIC
                break
            at = body_at + length
        return SegmentInfo(number, path, run, first_seq, tuple(chunks), at, closed, size, zid)


def _scan_group(f: BinaryIO, at: int, length: int, size: int) -> ChunkInfo | None:
    body_at = at + fmt.RECORD_HEAD.size
    fixed = _read_exact(f, body_at, _CHUNK_FIXED_LEN, size)
    if fixed is None:
        return None
    start, end, usize, crc = fmt.CHUNK_FIXED.unpack_from(fixed, 0)
    (clen,) = fmt.U32.unpack_from(fixed, fmt.CHUNK_FIXED.size)
    if clen != 0:
        return None  # the recorder never compresses; a compressed chunk is not ours
    rl = _read_exact(f, body_at + _CHUNK_FIXED_LEN, 8, size)
    if rl is None:
        return None
    (records_len,) = fmt.U64.unpack(rl)
    records_at = body_at + _CHUNK_FIXED_LEN + 8
    if records_at + records_len != body_at + length or records_len != usize:
        return None
    pos = body_at + length
    counts = {fmt.CH_NET: 0, fmt.CH_LINK: 0, fmt.CH_ROUTE: 0}
    for _ in range(fmt.CHANNEL_COUNT):
        raw = _read_exact(f, pos, fmt.RECORD_HEAD.size + 6, size)
        if raw is None:
            return None
        op, ilen = fmt.RECORD_HEAD.unpack_from(raw, 0)
        channel, entries_len = _INDEX_HEAD.unpack_from(raw, fmt.RECORD_HEAD.size)
        if op != fmt.OP_MESSAGE_INDEX or ilen != 6 + entries_len or entries_len % 16:
            return None
        pos += fmt.RECORD_HEAD.size + ilen
        if pos > size:
            return None
        if channel in counts:
            counts[channel] = entries_len // 16
    return ChunkInfo(
        offset=at,
        records_at=records_at,
        records_len=records_len,
        end=pos,
        start_time=start,
        end_time=end,
        crc=crc,
        net=counts[fmt.CH_NET],
        links=counts[fmt.CH_LINK],
        routes=counts[fmt.CH_ROUTE],
    )


def read_chunk(f: BinaryIO, chunk: ChunkInfo, *, verify: bool = True) -> memoryview:
    """The records of one chunk; with ``verify`` a CRC mismatch raises DecodeError."""
    f.seek(chunk.records_at)
    data = f.read(chunk.records_len)
    if len(data) != chunk.records_len:
        raise DecodeError("chunk shorter than indexed", chunk.records_at)
    if verify and chunk.crc and zlib.crc32(data) != chunk.crc:
        raise DecodeError("chunk CRC mismatch", chunk.offset)
    return memoryview(data)


def chunk_records(records: memoryview, *, channels: frozenset[int] | None = None) -> Iterator[fmt.Record]:
    """Parse the records of one chunk, optionally only those of ``channels``."""
    for channel, log_time, a, b in fmt.iter_chunk_messages(records):
        if channels is not None and channel not in channels:
            continue
        data = records[a:b]
        if channel == fmt.CH_NET:
            yield fmt.parse_net(data, log_time)
        elif channel == fmt.CH_ROUTE:
            yield fmt.parse_route(data, log_time)
        elif channel == fmt.CH_LINK:
            yield fmt.parse_link(data, log_time)


class SegmentReader:
    """Records of one segment file, in order (a truncated segment reads to its last chunk)."""

    def __init__(self, path: str | os.PathLike[str], *, verify: bool = True) -> None:
        self.path = Path(path)
        self.verify = verify
        self.info = scan_segment(self.path)

    def records(self, *, include_carried: bool = True) -> Iterator[fmt.Record]:
        with open(self.path, "rb") as f:
            for chunk in self.info.chunks:
                for rec in chunk_records(read_chunk(f, chunk, verify=self.verify)):
                    if not include_carried and isinstance(rec, fmt.LinkRecord) and rec.carried:
                        continue
                    yield rec

    def __iter__(self) -> Iterator[fmt.Record]:
        return self.records()


def read_records(
    directory: str | os.PathLike[str],
    *,
    include_carried: bool = False,
    verify: bool = True,
) -> Iterator[fmt.Record]:
    """Every record of every segment of a recording, in seq order.

    The link events a segment repeats at its start (``carried``) are skipped unless asked
    for, so each link appears opened once.
    """
    for _, path in list_segments(directory):
        yield from SegmentReader(path, verify=verify).records(include_carried=include_carried)


def resume_point(directory: Path) -> tuple[int, int]:
    """``(last segment number, next seq)`` for a recorder starting in ``directory``."""
    segments = list_segments(directory)
    if not segments:
        return 0, 0
    last_number = segments[-1][0]
    for _, path in reversed(segments):
        info = scan_segment(path)
        next_seq = info.first_seq
        seen = bool(info.chunks)
        if info.chunks:
            with open(path, "rb") as f:
                records = read_chunk(f, info.chunks[-1], verify=False)
            try:
                for rec in chunk_records(records):
                    next_seq = max(next_seq, rec.seq + 1)
            except DecodeError:
                pass  # keep what parsed; a damaged tail cannot hold a higher seq we could trust
        if seen or info.first_seq:
            return last_number, next_seq
    return last_number, 0
