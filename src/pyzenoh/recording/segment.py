"""How a segment file is laid out: its opening records, each chunk, and its summary.

Pure functions from what the :class:`~pyzenoh.recording.recorder.Recorder` holds to the
bytes it writes (MCAP records, see :mod:`pyzenoh.recording.format`); the recorder owns
the file, the offsets and the counters.
"""

from __future__ import annotations

import struct
import zlib

from mcap.data_stream import RecordBuilder
from mcap.records import (
    Channel,
    ChunkIndex,
    DataEnd,
    Footer,
    Header,
    Metadata,
    MetadataIndex,
    Statistics,
    SummaryOffset,
)

from pyzenoh.recording import format as fmt
from pyzenoh.recording.index import MessageIndex

#: A chunk record's bytes before its records: record head, fixed fields, compression
#: name (empty) and the records' length.
CHUNK_HEAD_LEN = fmt.RECORD_HEAD.size + fmt.CHUNK_FIXED.size + 4 + 8


def record(rec: object) -> bytes:
    """One MCAP record as written (the mcap library's encoding)."""
    builder = RecordBuilder()
    rec.write(builder)  # type: ignore[attr-defined]
    return bytes(builder.end())  # type: ignore[no-untyped-call]


def channels() -> list[Channel]:
    """The channels every segment declares."""
    return [
        Channel(id=ch, topic=topic, message_encoding=enc, metadata={}, schema_id=0)
        for ch, (topic, enc) in fmt.CHANNELS.items()
    ]


def opening(
    segment: int, run: int, first_seq: int, chans: list[Channel], zid: str | None = None
) -> tuple[list[bytes], MetadataIndex]:
    """A segment's first bytes (magic, header, metadata, channels) and the index entry
    of its metadata record for the summary (``zid``: the recording router's, when known)."""
    header = record(Header(profile=fmt.PROFILE, library=fmt.LIBRARY))
    fields = {"format": str(fmt.FORMAT_VERSION), "segment": str(segment), "run": str(run), "first_seq": str(first_seq)}
    if zid is not None:
        fields["zid"] = zid
    meta = record(Metadata(name=fmt.SEGMENT_METADATA, metadata=fields))
    meta_index = MetadataIndex(offset=len(fmt.MAGIC) + len(header), length=len(meta), name=fmt.SEGMENT_METADATA)
    return [fmt.MAGIC, header, meta, *(record(c) for c in chans)], meta_index


def chunk(
    pos: int, records: bytes | bytearray, indexes: list[tuple[int, MessageIndex]], counts: dict[int, int]
) -> tuple[list[bytes | bytearray], ChunkIndex]:
    """A chunk of ``records`` written at file offset ``pos``, followed by one MessageIndex
    record per channel of ``indexes``: the parts to write and the chunk's index entry.
    Adds each channel's entries to ``counts``."""
    start, end = -1, 0
    index_parts: list[bytes] = []
    index_offsets: dict[int, int] = {}
    index_pos = pos + CHUNK_HEAD_LEN + len(records)
    for channel, index in indexes:
        entries = len(index)
        body, lo, hi = index.encode()
        if entries:
            start = lo if start < 0 else min(start, lo)
            end = max(end, hi)
        part = (
            fmt.RECORD_HEAD.pack(fmt.OP_MESSAGE_INDEX, 2 + 4 + len(body))
            + struct.pack("<HI", channel, len(body))
            + body
        )
        index_offsets[channel] = index_pos
        index_pos += len(part)
        index_parts.append(part)
        counts[channel] += entries
    start = max(start, 0)
    head = (
        fmt.RECORD_HEAD.pack(fmt.OP_CHUNK, CHUNK_HEAD_LEN - fmt.RECORD_HEAD.size + len(records))
        + fmt.CHUNK_FIXED.pack(start, end, len(records), zlib.crc32(records))
        + fmt.U32.pack(0)  # compression: "" (none)
        + fmt.U64.pack(len(records))
    )
    entry = ChunkIndex(
        chunk_length=len(head) + len(records),
        chunk_start_offset=pos,
        compression="",
        compressed_size=len(records),
        message_end_time=end,
        message_index_length=sum(len(p) for p in index_parts),
        message_index_offsets=index_offsets,
        message_start_time=start,
        uncompressed_size=len(records),
    )
    return [head, records, *index_parts], entry


def closing(
    pos: int,
    chans: list[Channel],
    counts: dict[int, int],
    chunks: list[ChunkIndex],
    start: int,
    end: int,
    meta_index: MetadataIndex,
) -> list[bytes]:
    """A segment's last bytes, written at file offset ``pos``: data end, the summary
    (channels, statistics, chunk indexes, metadata index), its offsets, footer, magic."""
    data_end = record(DataEnd(data_section_crc=0))
    summary_start = pos + len(data_end)
    stats = Statistics(
        attachment_count=0,
        channel_count=len(chans),
        channel_message_counts=dict(counts),
        chunk_count=len(chunks),
        message_count=sum(counts.values()),
        message_end_time=end,
        message_start_time=start,
        metadata_count=1,
        schema_count=0,
    )
    groups: list[tuple[int, list[bytes]]] = [
        (fmt.OP_CHANNEL, [record(c) for c in chans]),
        (0x0B, [record(stats)]),
        (0x08, [record(ci) for ci in chunks]),
        (0x0D, [record(meta_index)]),
    ]
    summary = bytearray()
    offsets = bytearray()
    for opcode, records in groups:
        if not records:
            continue
        group_start = summary_start + len(summary)
        blob = b"".join(records)
        summary += blob
        offsets += record(SummaryOffset(group_opcode=opcode, group_start=group_start, group_length=len(blob)))
    summary_offset_start = summary_start + len(summary)
    summary += offsets
    footer = record(Footer(summary_start=summary_start, summary_offset_start=summary_offset_start, summary_crc=0))
    footer_wo_crc = footer[:-4]
    crc = zlib.crc32(footer_wo_crc, zlib.crc32(summary))
    return [data_end, bytes(summary), footer_wo_crc, fmt.U32.pack(crc), fmt.MAGIC]
