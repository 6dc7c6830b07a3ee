"""The traffic recorder the router calls for every network message it receives or sends.

File layout: see :mod:`pyzenoh.recording.format`. The recorder never reads a clock: every
call carries ``now_ns`` from the router, and time-based chunk flushes and segment rotation
are decided from those values. It is not thread-safe; the router calls it from its event
loop.

Cost model: :meth:`Recorder.message` packs the record header and the key with one
precompiled ``struct`` call, appends it and the raw bytes to the chunk's list of parts and
notes (time, offset) for the message index; everything else (joining, CRC, the index
records, the write itself) happens once per chunk. That is about 0.6 us per call.

Durability: a chunk is written (one ``writev``) when it reaches its size, or on the first
call at least a second of router time after the previous one. A router going idle should
call :meth:`Recorder.tick` now and then so the last records do not wait in memory.
"""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Self

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

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import intersects, validate
from pyzenoh.recording import format as fmt
from pyzenoh.recording.reader import resume_point

# A chunk is written when it holds this many bytes, or when this much router time has
# passed since the previous chunk: that bounds what a kill -9 can lose.
CHUNK_BYTES = 1 << 20
MIN_CHUNK_BYTES = 4 << 10
CHUNK_NS = 1_000_000_000
# Per-key memo of the filter's verdict; cleared when it grows past this.
FILTER_CACHE_SIZE = 4096

_M32 = 0xFFFFFFFF
_NET_FIXED = fmt.NET_RECORD.size - fmt.RECORD_HEAD.size
_ROUTE_FIXED = fmt.ROUTE_RECORD.size - fmt.RECORD_HEAD.size
_MSG_FIXED = fmt.MESSAGE_HEAD.size - fmt.RECORD_HEAD.size
# Hot-path names bound once (module globals are cheaper than attribute lookups).
_PACK_ROUTE = fmt.ROUTE_RECORD.pack
_OP_MESSAGE = fmt.OP_MESSAGE
_CH_NET = fmt.CH_NET
_CH_ROUTE = fmt.CH_ROUTE
_NO_KEY = fmt.NO_KEY
# Per key: the packer of header + key, the key bytes, the key-length field, the length.
_KeyEntry = tuple[Callable[..., bytes], bytes, int, int]


@lru_cache(maxsize=1024)
def _net_packer(key_len: int) -> Callable[..., bytes]:
    """Packs a whole net record header followed by a key of ``key_len`` bytes."""
    return struct.Struct(f"{fmt.NET_RECORD.format}{key_len}s").pack


_NO_KEY_ENTRY: _KeyEntry = (_net_packer(0), b"", fmt.NO_KEY, 0)
# Route records with up to this many links are packed by one precompiled Struct.
_ROUTE_PACKERS = [
    struct.Struct(fmt.ROUTE_RECORD.format + "I" * n).pack for n in range(17)
]


def _direction(direction: str) -> int:
    if direction == "rx":
        return 0
    if direction == "tx":
        return 1
    raise UsageError(f"direction must be 'rx' or 'tx', not {direction!r}")


def _record(rec: object) -> bytes:
    builder = RecordBuilder()
    rec.write(builder)  # type: ignore[attr-defined]
    return bytes(builder.end())  # type: ignore[no-untyped-call]


class Recorder:
    """Writes a recording directory of rotating, chunked MCAP segments."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segment_bytes: int = 64 << 20,
        max_segment_seconds: float = 300.0,
        key_filter: str | None = None,
    ) -> None:
        if max_segment_bytes <= 0:
            raise UsageError("max_segment_bytes must be positive")
        if not max_segment_seconds > 0:
            raise UsageError("max_segment_seconds must be positive")
        if key_filter is not None:
            try:
                validate(key_filter)
            except ValueError as exc:
                raise UsageError(f"key_filter: {exc}") from None
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._max_bytes = max_segment_bytes
        self._max_ns = int(max_segment_seconds * 1e9)
        self._chunk_limit = max(
            MIN_CHUNK_BYTES, min(CHUNK_BYTES, max_segment_bytes // 4)
        )
        self._chunk_ns = min(CHUNK_NS, self._max_ns)
        self._filter = key_filter
        self._intersects = intersects if key_filter is not None else None
        self._verdicts: dict[str, bool] = {}
        self._keys: dict[str, _KeyEntry] = {}
        self._links: dict[int, tuple[str, str, str]] = {}
        self._closed = False

        last_segment, next_seq = resume_point(self._dir)
        self._seq = next_seq
        self._run = last_segment + 1
        self._segment = last_segment  # _open_segment increments
        self._fd = -1
        # The current chunk's records, as the byte strings to join (cheaper than growing
        # one bytearray), and their total size.
        self._parts: list[bytes] = []
        self._size = 0
        # Per channel, the chunk's MessageIndex entries as they come: time, offset, ...
        self._net_idx: list[int] = []
        self._link_idx: list[int] = []
        self._route_idx: list[int] = []
        self._chunk_t0 = 0
        self._pos = 0
        self._counts: dict[int, int] = {}
        self._chunk_indexes: list[ChunkIndex] = []
        self._seg_t0: int | None = None
        self._seg_start = 0
        self._seg_end = 0
        self._open_segment(None)

    # -- the router's API ----------------------------------------------------------------

    def link_opened(
        self, now_ns: int, link_id: int, zid: str, whatami: str, remote: str
    ) -> None:
        self._check_open()
        self._links[link_id] = (zid, whatami, remote)
        self._add_link(
            now_ns,
            fmt.link_json(
                self._seq, "open", link_id, zid=zid, whatami=whatami, remote=remote
            ),
        )

    def link_closed(self, now_ns: int, link_id: int, reason: str) -> None:
        self._check_open()
        self._links.pop(link_id, None)
        self._add_link(
            now_ns, fmt.link_json(self._seq, "close", link_id, reason=reason)
        )

    def message(
        self,
        now_ns: int,
        link_id: int,
        direction: str,
        key: str | None,
        raw: bytes,
        cause: int = -1,
    ) -> int:
        """Record one network message; returns its seq, or -1 when the key filter drops it.

        Messages without a key (RESPONSE_FINAL, undeclarations, D_FINAL, ...) are always
        kept: the pipeline needs them to close queries and entities.
        """
        if self._closed:
            raise UsageError("recorder is closed")
        d = _direction(direction)
        entry = self._entry(key)
        if entry is None:
            return -1
        return self._append(now_ns, d, entry, ((link_id, raw),), cause)

    def messages(
        self,
        now_ns: int,
        direction: str,
        key: str | None,
        sends: Sequence[tuple[int, bytes]],
        cause: int = -1,
    ) -> int:
        """Record several messages sharing time, direction, key and cause in one call,
        e.g. the copies of one routed PUSH sent to each face: ``sends`` holds
        ``(link_id, raw)`` pairs. Returns the first seq (-1 when filtered out)."""
        if self._closed:
            raise UsageError("recorder is closed")
        entry = self._entry(key)
        if entry is None or not sends:
            return -1
        return self._append(now_ns, _direction(direction), entry, sends, cause)

    def _entry(self, key: str | None) -> _KeyEntry | None:
        """The packer and encoded key for ``key``; None when the key filter drops it.

        Messages without a key (RESPONSE_FINAL, undeclarations, D_FINAL, ...) are always
        kept: the pipeline needs them to close queries and entities.
        """
        if key is None:
            return _NO_KEY_ENTRY
        if self._filter is not None and not self._accept(key):
            return None
        entry = self._keys.get(key)
        return entry if entry is not None else self._key_entry(key)

    def _append(
        self, now_ns: int, d: int, entry: _KeyEntry, sends: Sequence[tuple[int, bytes]], cause: int
    ) -> int:
        pack, kb, klen, kblen = entry
        first = seq = self._seq
        size = self._size
        idx = self._net_idx
        parts = self._parts
        for link_id, raw in sends:
            if type(raw) is not bytes:
                raw = bytes(raw)  # never keep a view of a buffer the caller may reuse
            idx.append(now_ns)
            idx.append(size)
            length = _NET_FIXED + kblen + len(raw)
            parts.append(
                pack(_OP_MESSAGE, length, _CH_NET, seq & _M32, now_ns, now_ns, seq, cause,
                     link_id, d, klen, kb)
            )
            parts.append(raw)
            size += length + 9
            seq += 1
        self._seq = seq
        self._size = size
        if size >= self._chunk_limit or now_ns - self._chunk_t0 >= self._chunk_ns:
            self._flush(now_ns)
        return first

    def route(
        self, now_ns: int, cause: int, key: str, expected_links: list[int]
    ) -> None:
        """Record that rx record ``cause`` (key ``key``) had subscribers on ``expected_links``."""
        if self._closed:
            raise UsageError("recorder is closed")
        if self._filter is not None and not self._accept(key):
            return
        entry = self._keys.get(key)
        if entry is None:
            entry = self._key_entry(key)
        kb, kblen = entry[1], entry[3]
        n = len(expected_links)
        seq = self._seq
        length = _ROUTE_FIXED + 4 * n + kblen
        try:
            if n < len(_ROUTE_PACKERS):  # the usual case: links packed with the header
                head = _ROUTE_PACKERS[n](
                    _OP_MESSAGE, length, _CH_ROUTE, seq & _M32, now_ns, now_ns, seq, cause, n, kblen,
                    *expected_links,
                )  # fmt: skip
            else:
                links = array(fmt.U32_CODE, expected_links)
                if not fmt.LITTLE_ENDIAN:
                    links.byteswap()
                head = (
                    _PACK_ROUTE(
                        _OP_MESSAGE,
                        length,
                        _CH_ROUTE,
                        seq & _M32,
                        now_ns,
                        now_ns,
                        seq,
                        cause,
                        n,
                        kblen,
                    )
                    + links.tobytes()
                )
        except (struct.error, OverflowError, TypeError):
            raise UsageError("link ids must be integers in 0..2**32-1") from None
        self._seq = seq + 1
        size = self._size
        idx = self._route_idx
        idx.append(now_ns)
        idx.append(size)
        parts = self._parts
        parts.append(head)
        parts.append(kb)
        size += length + 9
        self._size = size
        if size >= self._chunk_limit or now_ns - self._chunk_t0 >= self._chunk_ns:
            self._flush(now_ns)

    def tick(self, now_ns: int) -> None:
        """Let time pass without traffic: writes a chunk older than the flush interval and
        rotates a segment older than ``max_segment_seconds``."""
        self._check_open()
        stale_chunk = self._size > 0 and now_ns - self._chunk_t0 >= self._chunk_ns
        old_segment = self._seg_t0 is not None and now_ns - self._seg_t0 >= self._max_ns
        if stale_chunk or old_segment:
            self._flush(now_ns)

    def close(self) -> None:
        """Write the pending chunk and the summary; the last segment is then a complete MCAP file."""
        if self._closed:
            return
        self._closed = True
        try:
            self._write_chunk()
            self._finish_segment()
        finally:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def segment(self) -> int:
        """Number of the segment being written."""
        return self._segment

    @property
    def next_seq(self) -> int:
        return self._seq

    # -- internals -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("recorder is closed")

    def _accept(self, key: str) -> bool:
        verdict = self._verdicts.get(key)
        if verdict is None:
            assert self._intersects is not None and self._filter is not None
            try:
                verdict = bool(self._intersects(self._filter, key))
            except ValueError:
                verdict = False  # an invalid key cannot intersect anything
            if len(self._verdicts) >= FILTER_CACHE_SIZE:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return verdict

    def _key_entry(self, key: str) -> _KeyEntry:
        kb = key.encode("utf-8", "surrogateescape")
        if len(kb) > fmt.MAX_KEY_BYTES:
            raise UsageError("key expression too long to record")
        if len(self._keys) >= FILTER_CACHE_SIZE:
            self._keys.clear()
        entry = self._keys[key] = (_net_packer(len(kb)), kb, len(kb), len(kb))
        return entry

    def _add_link(self, now_ns: int, data: bytes) -> None:
        self._append_link(now_ns, data)
        if self._size >= self._chunk_limit or now_ns - self._chunk_t0 >= self._chunk_ns:
            self._flush(now_ns)

    def _append_link(self, now_ns: int, data: bytes) -> None:
        seq = self._seq
        self._seq = seq + 1
        self._link_idx.append(now_ns)
        self._link_idx.append(self._size)
        length = _MSG_FIXED + len(data)
        self._parts.append(
            fmt.MESSAGE_HEAD.pack(
                _OP_MESSAGE, length, fmt.CH_LINK, seq & _M32, now_ns, now_ns
            )
            + data
        )
        self._size += length + 9

    def _flush(self, now_ns: int) -> None:
        self._write_chunk()
        self._chunk_t0 = now_ns
        if self._seg_t0 is None:
            return
        if self._pos >= self._max_bytes or now_ns - self._seg_t0 >= self._max_ns:
            self._finish_segment()
            os.close(self._fd)
            self._fd = -1
            self._open_segment(now_ns)

    def _write_all(self, parts: list[bytes | bytearray]) -> None:
        total = sum(len(p) for p in parts)
        written = os.writev(self._fd, parts)
        if written != total:  # short write: finish the rest byte-exactly
            rest = memoryview(b"".join(parts))[written:]
            while rest:
                n = os.write(self._fd, rest)
                rest = rest[n:]
        self._pos += total

    def _write_chunk(self) -> None:
        if not self._parts:
            return
        buf = b"".join(self._parts)
        start, end = -1, 0
        index_parts: list[bytes] = []
        index_offsets: dict[int, int] = {}
        chunk_head_len = fmt.RECORD_HEAD.size + fmt.CHUNK_FIXED.size + 4 + 8
        index_pos = self._pos + chunk_head_len + len(buf)
        counts = self._counts
        for channel, entries in (
            (fmt.CH_NET, self._net_idx),
            (fmt.CH_LINK, self._link_idx),
            (fmt.CH_ROUTE, self._route_idx),
        ):
            if entries:
                times = entries[0::2]
                lo, hi = min(times), max(times)
                start = lo if start < 0 else min(start, lo)
                end = max(end, hi)
            body = fmt.u64_array(entries)
            part = (
                fmt.RECORD_HEAD.pack(fmt.OP_MESSAGE_INDEX, 2 + 4 + len(body))
                + struct.pack("<HI", channel, len(body))
                + body
            )
            index_offsets[channel] = index_pos
            index_pos += len(part)
            index_parts.append(part)
            counts[channel] += len(entries) // 2
        start = max(start, 0)
        crc = zlib.crc32(buf)
        head = (
            fmt.RECORD_HEAD.pack(
                fmt.OP_CHUNK, chunk_head_len - fmt.RECORD_HEAD.size + len(buf)
            )
            + fmt.CHUNK_FIXED.pack(start, end, len(buf), crc)
            + fmt.U32.pack(0)  # compression: "" (none)
            + fmt.U64.pack(len(buf))
        )
        chunk_offset = self._pos
        self._write_all([head, buf, *index_parts])
        self._chunk_indexes.append(
            ChunkIndex(
                chunk_length=len(head) + len(buf),
                chunk_start_offset=chunk_offset,
                compression="",
                compressed_size=len(buf),
                message_end_time=end,
                message_index_length=sum(len(p) for p in index_parts),
                message_index_offsets=index_offsets,
                message_start_time=start,
                uncompressed_size=len(buf),
            )
        )
        if self._seg_t0 is None:
            self._seg_t0 = start
            self._seg_start = start
        self._seg_start = min(self._seg_start, start)
        self._seg_end = max(self._seg_end, end)
        self._parts = []
        self._size = 0
        self._net_idx = []
        self._link_idx = []
        self._route_idx = []

    def _open_segment(self, now_ns: int | None) -> None:
        self._segment += 1
        path = self._dir / fmt.segment_name(self._segment)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._pos = 0
        self._counts = {fmt.CH_NET: 0, fmt.CH_LINK: 0, fmt.CH_ROUTE: 0}
        self._chunk_indexes = []
        self._seg_t0 = None
        self._seg_start = 0
        self._seg_end = 0
        header = _record(Header(profile=fmt.PROFILE, library=fmt.LIBRARY))
        meta = Metadata(
            name=fmt.SEGMENT_METADATA,
            metadata={
                "format": str(fmt.FORMAT_VERSION),
                "segment": str(self._segment),
                "run": str(self._run),
                "first_seq": str(self._seq),
            },
        )
        meta_bytes = _record(meta)
        self._meta_index = MetadataIndex(
            offset=len(fmt.MAGIC) + len(header),
            length=len(meta_bytes),
            name=fmt.SEGMENT_METADATA,
        )
        self._channels = [
            Channel(id=ch, topic=topic, message_encoding=enc, metadata={}, schema_id=0)
            for ch, (topic, enc) in fmt.CHANNELS.items()
        ]
        self._write_all(
            [fmt.MAGIC, header, meta_bytes, *(_record(c) for c in self._channels)]
        )
        if now_ns is not None:
            self._chunk_t0 = now_ns
            for link_id, (zid, whatami, remote) in self._links.items():
                data = fmt.link_json(
                    self._seq,
                    "open",
                    link_id,
                    zid=zid,
                    whatami=whatami,
                    remote=remote,
                    carried=True,
                )
                self._append_link(now_ns, data)

    def _finish_segment(self) -> None:
        data_end = _record(DataEnd(data_section_crc=0))
        summary_start = self._pos + len(data_end)
        groups: list[tuple[int, list[bytes]]] = [
            (fmt.OP_CHANNEL, [_record(c) for c in self._channels]),
            (
                0x0B,
                [
                    _record(
                        Statistics(
                            attachment_count=0,
                            channel_count=len(self._channels),
                            channel_message_counts=dict(self._counts),
                            chunk_count=len(self._chunk_indexes),
                            message_count=sum(self._counts.values()),
                            message_end_time=self._seg_end,
                            message_start_time=self._seg_start,
                            metadata_count=1,
                            schema_count=0,
                        )
                    )
                ],
            ),
            (0x08, [_record(ci) for ci in self._chunk_indexes]),
            (0x0D, [_record(self._meta_index)]),
        ]
        summary = bytearray()
        offsets = bytearray()
        for opcode, records in groups:
            if not records:
                continue
            group_start = summary_start + len(summary)
            blob = b"".join(records)
            summary += blob
            offsets += _record(
                SummaryOffset(
                    group_opcode=opcode, group_start=group_start, group_length=len(blob)
                )
            )
        summary_offset_start = summary_start + len(summary)
        summary += offsets
        footer_wo_crc = _record(
            Footer(
                summary_start=summary_start,
                summary_offset_start=summary_offset_start,
                summary_crc=0,
            )
        )[:-4]
        crc = zlib.crc32(footer_wo_crc, zlib.crc32(summary))
        self._write_all(
            [data_end, summary, footer_wo_crc, fmt.U32.pack(crc), fmt.MAGIC]
        )
