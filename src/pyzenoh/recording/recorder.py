"""The traffic recorder the router calls for every network message it receives or sends.

File layout: see :mod:`pyzenoh.recording.format`. The recorder never reads a clock: every
call carries ``now_ns`` from the router, and time-based chunk flushes and segment rotation
are decided from those values. It is not thread-safe; the router calls it from its event
loop.

Cost model: a record is one precompiled ``struct`` call packing the record header and the
key, appended with the raw bytes to the chunk's ``bytearray`` (so the raw object is not
kept, and a chunk is never joined from parts), plus its (time, offset) for the message
index; everything else (CRC, the index records, the write itself) happens once per
chunk. :meth:`Recorder.routed` writes a received message and its forwarded copies in one
call, which is what the router does for every PUSH it routes. :meth:`Recorder.access_denied`
writes what access control denied (a ``"denied"`` link event naming its rx record).

Durability: a chunk is written (one ``writev``) when it reaches its size, or on the first
call at least a second of router time after the previous one. A router going idle should
call :meth:`Recorder.tick` now and then so the last records do not wait in memory.

:class:`RecorderProcess` takes the same calls and replays them on a Recorder in a child
process: the router then pays for queuing its calls (under half a microsecond per routed
PUSH, batches marshalled and piped included) instead of packing, CRCs and writes (over a
microsecond, and what the kernel charges for page-cache writes varies with the disk).
"""

from __future__ import annotations

import contextlib
import json
import logging
import marshal
import os
import signal
import struct
import subprocess
import sys
import zlib
from array import array
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Self

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

from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.keyexpr import validate
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.recording import format as fmt
from pyzenoh.recording.reader import resume_point
from pyzenoh.recording.runs import RunEnds, Slot, group_records, run_count, run_slices

# A chunk is written when it holds this many bytes, or when this much router time has
# passed since the previous chunk: that bounds what a kill -9 can lose.
CHUNK_BYTES = 1 << 20
MIN_CHUNK_BYTES = 4 << 10
CHUNK_NS = 1_000_000_000
# Per-key memo of the filter's verdict and the key's encoding; cleared when it grows past this.
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
# A net record up to its link id; what follows (direction, key length, key) is the same
# for every record of one key and direction: it is packed as one precomputed "tail".
_NET_HEAD = "<BQHIQQQqI"
_NET_TAIL = struct.Struct("<BI")
assert struct.calcsize(_NET_HEAD) + _NET_TAIL.size == fmt.NET_RECORD.size
# Per key: the packer of a record's header, its rx and tx tails, the record length
# without the raw bytes, the encoded key.
_KeyEntry = tuple[Callable[..., bytes], bytes, bytes, int, bytes]


@lru_cache(maxsize=1024)
def _net_packer(key_len: int) -> Callable[..., bytes]:
    """Packs a net record header and its tail for a key of ``key_len`` bytes: op, length,
    channel, sequence, log time, publish time, seq, cause, link, tail."""
    return struct.Struct(f"{_NET_HEAD}{_NET_TAIL.size + key_len}s").pack


def _key_entry(kb: bytes, klen: int) -> _KeyEntry:
    return (
        _net_packer(len(kb)),
        _NET_TAIL.pack(fmt.DIR_RX, klen) + kb,
        _NET_TAIL.pack(fmt.DIR_TX, klen) + kb,
        _NET_FIXED + len(kb),
        kb,
    )


_NO_KEY_ENTRY = _key_entry(b"", fmt.NO_KEY)
# Route records with up to this many links are packed by one precompiled Struct.
_ROUTE_PACKERS = [
    struct.Struct(fmt.ROUTE_RECORD.format + "I" * n).pack for n in range(17)
]


def _check_options(
    max_segment_bytes: int, max_segment_seconds: float, key_filter: str | None
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


def _accepts(key_filter: str, key: str) -> bool:
    try:
        return bool(intersects(key_filter, key))
    except ValueError:
        return False  # an invalid key cannot intersect anything


def _direction(direction: str) -> int:
    if direction == "rx":
        return 0
    if direction == "tx":
        return 1
    raise UsageError(f"direction must be 'rx' or 'tx', not {direction!r}")


def _check_denial(
    now_ns: int,
    cause: int,
    link_id: int,
    flow: str,
    message: str,
    key: str | None,
    reason: str,
) -> None:
    """UsageError unless the fields of an ``access_denied`` call have the right types
    and ranges (its strings are cut to the format's limits when written)."""
    for name, value, lo, hi in (
        ("now_ns", now_ns, 0, fmt.MAX_TIME_NS),
        ("cause", cause, -1, fmt.MAX_SEQ),
        ("link_id", link_id, 0, fmt.MAX_LINK_ID),
    ):
        if type(value) is not int or not lo <= value <= hi:
            raise UsageError(f"{name} must be an integer in {lo}..{hi}, not {value!r}")
    for name, text in (("flow", flow), ("message", message), ("reason", reason)):
        if type(text) is not str:
            raise UsageError(f"{name} must be a string, not {type(text).__name__}")
    if key is not None and type(key) is not str:
        raise UsageError(f"key must be a string or None, not {type(key).__name__}")


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
        _check_options(max_segment_bytes, max_segment_seconds, key_filter)
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._max_bytes = max_segment_bytes
        self._max_ns = int(max_segment_seconds * 1e9)
        self._chunk_limit = max(
            MIN_CHUNK_BYTES, min(CHUNK_BYTES, max_segment_bytes // 4)
        )
        self._chunk_ns = min(CHUNK_NS, self._max_ns)
        self._filter = key_filter
        # Per key: its packer and encoding, or None when the key filter drops it.
        self._entries: dict[str | None, _KeyEntry | None] = {None: _NO_KEY_ENTRY}
        self._links: dict[int, tuple[str, str, str]] = {}
        self._closed = False

        last_segment, next_seq = resume_point(self._dir)
        self._seq = next_seq
        self._run = last_segment + 1
        self._segment = last_segment  # _open_segment increments
        self._fd = -1
        # The current chunk's records, as written to the file.
        self._buf = bytearray()
        # Per channel, the chunk's MessageIndex entries as they come: time, offset, ...
        self._net_idx: list[int] = []
        self._link_idx: list[int] = []
        self._route_idx: list[int] = []
        # Router time at which a call writes the chunk, whatever its size.
        self._flush_at = self._chunk_ns
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

    def access_denied(
        self,
        now_ns: int,
        cause: int,
        link_id: int,
        flow: str,
        message: str,
        key: str | None,
        reason: str,
    ) -> int:
        """Record that access control denied ``message`` (a rule's message kind, e.g.
        ``put``) on ``key`` in ``flow`` (``ingress``/``egress``) of face ``link_id`` while
        the router was routing rx record ``cause`` (-1: none): a ``"denied"`` link event.

        Returns its seq, or -1 when the key filter drops ``key`` (a denial without a key
        is always kept). Strings are cut to the format's limits; wrong types or
        out-of-range numbers raise :class:`~pyzenoh.errors.UsageError`.
        """
        self._check_open()
        _check_denial(now_ns, cause, link_id, flow, message, key, reason)
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        seq = self._seq
        self._add_link(
            now_ns,
            fmt.link_json(seq, "denied", link_id, cause=cause, reason=reason, flow=flow,
                          message=message, key=key),
        )  # fmt: skip
        return seq

    def message(
        self,
        now_ns: int,
        link_id: int,
        direction: str,
        key: str | None,
        raw: bytes | bytearray | memoryview,
        cause: int = -1,
    ) -> int:
        """Record one network message; returns its seq, or -1 when the key filter drops it.

        Messages without a key (RESPONSE_FINAL, undeclarations, D_FINAL, ...) are always
        kept: the pipeline needs them to close queries and entities.
        """
        if self._closed:
            raise UsageError("recorder is closed")
        d = _direction(direction)
        try:
            entry = self._entries[key]
        except KeyError:
            entry = self._new_entry(key)
        if entry is None:
            return -1
        tail = entry[2] if d else entry[1]
        return self._append(now_ns, entry[0], tail, entry[3], ((link_id, raw),), cause)

    def messages(
        self,
        now_ns: int,
        direction: str,
        key: str | None,
        sends: Sequence[tuple[int, bytes | bytearray | memoryview]],
        cause: int = -1,
    ) -> int:
        """Record several messages sharing time, direction, key and cause in one call,
        e.g. the copies of one routed PUSH sent to each face: ``sends`` holds
        ``(link_id, raw)`` pairs. Returns the first seq (-1 when filtered out)."""
        if self._closed:
            raise UsageError("recorder is closed")
        d = _direction(direction)
        try:
            entry = self._entries[key]
        except KeyError:
            entry = self._new_entry(key)
        if entry is None or not sends:
            return -1
        tail = entry[2] if d else entry[1]
        return self._append(now_ns, entry[0], tail, entry[3], sends, cause)

    def routed(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        raw: bytes | bytearray | memoryview,
        copies: Sequence[tuple[int, bytes | bytearray | memoryview]],
    ) -> int:
        """Record a received message and the copies of it the router sent, in one call.

        One rx record of ``raw`` from ``link_id``, then one tx record per ``(link_id,
        raw)`` pair of ``copies``, all at ``now_ns`` with key ``key``; the tx records'
        cause is the rx record's seq. The same records as :meth:`message` for the rx
        followed by :meth:`messages` for the copies. Returns the rx seq, or -1 when the
        key filter drops them all.
        """
        if self._closed:
            raise UsageError("recorder is closed")
        try:
            entry = self._entries[key]
        except KeyError:
            entry = self._new_entry(key)
        if entry is None:
            return -1
        pack, rx_tail, tx_tail, fixed, _ = entry
        buf = self._buf
        idx = self._net_idx
        start = len(buf)
        cause = seq = self._seq
        try:
            buf += pack(_OP_MESSAGE, fixed + len(raw), _CH_NET, seq & _M32, now_ns, now_ns,
                        seq, -1, link_id, rx_tail)  # fmt: skip
            buf += raw
            idx += (now_ns, start)
            for link, data in copies:
                seq += 1
                idx += (now_ns, len(buf))
                buf += pack(_OP_MESSAGE, fixed + len(data), _CH_NET, seq & _M32, now_ns,
                            now_ns, seq, cause, link, tx_tail)  # fmt: skip
                buf += data
        except BaseException:
            self._undo(idx, start)
            raise
        self._seq = seq + 1
        if len(buf) >= self._chunk_limit or now_ns >= self._flush_at:
            self._flush(now_ns)
        return cause

    def routed_run(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        data: bytes,
        ends: Sequence[int] | int,
        copies: Sequence[tuple[int, bytes, Sequence[int] | int]],
        expected: list[int] | None = None,
    ) -> int:
        """Record a run of received messages routed as one unit, and their copies: the
        records :meth:`routed` writes for each message in turn (its rx record, then its
        copies), plus, with ``expected`` (the links it was routed to when a copy was
        dropped), a route record after each. ``data`` holds the messages back to back;
        ``ends`` is every message's length when they are all as long, else each one's end
        offset (and the same for each copy's). Returns the first rx seq (-1: filtered)."""
        if self._closed:
            raise UsageError("recorder is closed")
        try:
            entry = self._entries[key]
        except KeyError:
            entry = self._new_entry(key)
        if entry is None:
            return -1
        rx_ends = _plain(ends)
        sent_ends = [(link, d, _plain(e)) for link, d, e in copies]
        n = run_count(data, rx_ends)
        first = self._seq
        if expected is None and isinstance(rx_ends, int):
            _, rx_tail, tx_tail, fixed, _ = entry
            slots: list[Slot] = [(link_id, data, rx_ends, rx_tail)]
            for link, d, e in sent_ends:
                if not isinstance(e, int):
                    break
                slots.append((link, d, e, tx_tail))
        else:
            slots = []
        if len(slots) == len(copies) + 1:
            buf = self._buf
            records, index = group_records(now_ns, first, fixed, slots, n, len(buf))
            buf += records
            self._net_idx += index
            self._seq = first + n * len(slots)
            if len(buf) >= self._chunk_limit or now_ns >= self._flush_at:
                self._flush(now_ns)
            return first
        rx = run_slices(data, rx_ends)
        sent = [(link, run_slices(d, e)) for link, d, e in sent_ends]
        for i, raw in enumerate(rx):
            seq = self.routed(now_ns, link_id, key, raw, [(link, msgs[i]) for link, msgs in sent])
            if expected is not None and key is not None:
                self.route(now_ns, seq, key, expected)
        return first

    def _new_entry(self, key: str | None) -> _KeyEntry | None:
        """The packer and encoded key for a key not in the cache; None when the key
        filter drops it. Messages without a key are always kept: the pipeline needs
        them (RESPONSE_FINAL, undeclarations, D_FINAL, ...) to close queries and entities.
        """
        if key is None:
            return _NO_KEY_ENTRY
        entry: _KeyEntry | None = None
        if self._filter is None or self._accept(key):
            kb = key.encode("utf-8", "surrogateescape")
            if len(kb) > fmt.MAX_KEY_BYTES:
                raise UsageError("key expression too long to record")
            entry = _key_entry(kb, len(kb))
        entries = self._entries
        if len(entries) >= FILTER_CACHE_SIZE:
            entries.clear()
            entries[None] = _NO_KEY_ENTRY
        entries[key] = entry
        return entry

    def _append(
        self,
        now_ns: int,
        pack: Callable[..., bytes],
        tail: bytes,
        fixed: int,
        sends: Sequence[tuple[int, bytes | bytearray | memoryview]],
        cause: int,
    ) -> int:
        first = seq = self._seq
        buf = self._buf
        idx = self._net_idx
        start = len(buf)
        try:
            for link_id, raw in sends:
                idx += (now_ns, len(buf))
                buf += pack(_OP_MESSAGE, fixed + len(raw), _CH_NET, seq & _M32, now_ns,
                            now_ns, seq, cause, link_id, tail)  # fmt: skip
                buf += raw
                seq += 1
        except BaseException:
            self._undo(idx, start)
            raise
        self._seq = seq
        if len(buf) >= self._chunk_limit or now_ns >= self._flush_at:
            self._flush(now_ns)
        return first

    def _undo(self, idx: list[int], start: int) -> None:
        """Forget the records of a call that failed half-way (a bad link id, say)."""
        del self._buf[start:]
        while idx and idx[-1] >= start:
            del idx[-2:]

    def route(
        self, now_ns: int, cause: int, key: str, expected_links: list[int]
    ) -> None:
        """Record that rx record ``cause`` (key ``key``) had subscribers on ``expected_links``."""
        if self._closed:
            raise UsageError("recorder is closed")
        try:
            entry = self._entries[key]
        except KeyError:
            entry = self._new_entry(key)
        if entry is None:
            return
        kb = entry[4]
        kblen = len(kb)
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
        buf = self._buf
        self._route_idx += (now_ns, len(buf))
        buf += head
        buf += kb
        if len(buf) >= self._chunk_limit or now_ns >= self._flush_at:
            self._flush(now_ns)

    def tick(self, now_ns: int) -> None:
        """Let time pass without traffic: writes a chunk older than the flush interval and
        rotates a segment older than ``max_segment_seconds``."""
        self._check_open()
        stale_chunk = len(self._buf) > 0 and now_ns >= self._flush_at
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
        assert self._filter is not None
        return _accepts(self._filter, key)

    def _add_link(self, now_ns: int, data: bytes) -> None:
        self._append_link(now_ns, data)
        if len(self._buf) >= self._chunk_limit or now_ns >= self._flush_at:
            self._flush(now_ns)

    def _append_link(self, now_ns: int, data: bytes) -> None:
        seq = self._seq
        self._seq = seq + 1
        buf = self._buf
        self._link_idx += (now_ns, len(buf))
        length = _MSG_FIXED + len(data)
        buf += fmt.MESSAGE_HEAD.pack(
            _OP_MESSAGE, length, fmt.CH_LINK, seq & _M32, now_ns, now_ns
        )
        buf += data

    def _flush(self, now_ns: int) -> None:
        self._write_chunk()
        self._flush_at = now_ns + self._chunk_ns
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
        buf = self._buf
        if not buf:
            return
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
        self._buf = bytearray()
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
            self._flush_at = now_ns + self._chunk_ns
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


# -- the recorder in a process of its own ---------------------------------------------------

# The calls a RecorderProcess forwards, as (op, now_ns, ...) tuples.
(
    _CALL_OPEN,
    _CALL_CLOSE,
    _CALL_MESSAGE,
    _CALL_MESSAGES,
    _CALL_ROUTED,
    _CALL_ROUTE,
    _CALL_TICK,
    _CALL_DENIED,
    _CALL_ROUTED_RUN,
) = range(9)
# The router sends its queued calls when it holds this many, or on the first call at
# least this much router time after the previous batch (and on every tick).
BATCH_CALLS = 512
BATCH_NS = 50_000_000
# Seconds close() waits for the recorder process to write its last chunk and summary.
CLOSE_TIMEOUT_S = 60.0
_BATCH_HEAD = struct.Struct("<Q")  # length of the marshalled batch that follows
_MARSHAL_VERSION = 2  # no object references: the fastest to write for these tuples
_F_SETPIPE_SZ = 1031  # Linux fcntl
_PIPE_BYTES = 1 << 20
_REF_MEMO = 1 << 16

log = logging.getLogger(__name__)

_CHILD = "import sys; from pyzenoh.recording.recorder import serve; sys.exit(serve(sys.argv[1]))"


class RecorderProcess:
    """A :class:`Recorder` in a child process, fed by the router in batches.

    Same calls as :class:`Recorder`; each costs the router only its queuing (a tuple),
    plus one ``marshal`` and one pipe write per batch of :data:`BATCH_CALLS` calls:
    packing records, CRCs, indexes and file writes happen in the child, which replays
    the calls in order on a :class:`Recorder` and so writes exactly the files the router
    would have written itself.

    The child assigns seqs, so :meth:`message`, :meth:`messages`, :meth:`routed` and
    :meth:`access_denied` return a *reference* to their first record instead of its
    seq: pass it as the ``cause`` of later calls, like a seq (-1 still means "filtered
    out", "no cause").

    Durability: the child writes chunks on the router's time (the ``now_ns`` of the
    calls), like a Recorder in process. A batch waits in the router at most
    :data:`BATCH_NS` of router time while calls come, and until the next :meth:`tick`
    when they stop. If the router dies, the child writes what it received and closes the
    segment cleanly. If the child dies, recording stops (logged) and routing goes on.
    Bad calls (a key too long to record, link ids out of range) are logged and skipped
    by the child instead of raising here; an :meth:`access_denied` with bad values is
    logged and skipped here.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segment_bytes: int = 64 << 20,
        max_segment_seconds: float = 300.0,
        key_filter: str | None = None,
    ) -> None:
        _check_options(max_segment_bytes, max_segment_seconds, key_filter)
        options = {
            "directory": os.fspath(directory),
            "max_segment_bytes": max_segment_bytes,
            "max_segment_seconds": max_segment_seconds,
            "key_filter": key_filter,
        }
        # A session of its own: a Ctrl-C meant for the router does not cut the child
        # short; it ends when the router closes the pipe (or dies).
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, json.dumps(options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        status = self._proc.stdout.readline()
        self._proc.stdout.close()
        if status != b"ok\n":
            self._proc.stdin.close()
            self._proc.wait()
            detail = status.decode("utf-8", "replace").strip() or "exited"
            raise UsageError(f"recorder process: {detail}")
        self._pipe = self._proc.stdin
        self._fd = self._pipe.fileno()
        with contextlib.suppress(OSError, ImportError):  # a bigger pipe, on Linux
            import fcntl

            fcntl.fcntl(self._fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        self._filter = key_filter
        self._verdicts: dict[str, bool] = {}
        self._calls: list[tuple[object, ...]] = []
        self._base = 0  # reference of the first queued call
        self._send_at = 0
        self._run_bytes = 0  # bytes of the runs queued (routed_run)
        self._closed = False
        self._failed = False

    # -- the router's API ----------------------------------------------------------------

    def link_opened(
        self, now_ns: int, link_id: int, zid: str, whatami: str, remote: str
    ) -> None:
        self._queue(now_ns, (_CALL_OPEN, now_ns, link_id, zid, whatami, remote))

    def link_closed(self, now_ns: int, link_id: int, reason: str) -> None:
        self._queue(now_ns, (_CALL_CLOSE, now_ns, link_id, reason))

    def access_denied(
        self,
        now_ns: int,
        cause: int,
        link_id: int,
        flow: str,
        message: str,
        key: str | None,
        reason: str,
    ) -> int:
        """:meth:`Recorder.access_denied` (``cause`` a reference, as other calls'):
        returns a reference, -1 when the key filter drops it. Bad values are logged and
        the call skipped here (they never reach the batch)."""
        self._check_open()
        try:
            _check_denial(now_ns, cause, link_id, flow, message, key, reason)
        except UsageError as exc:
            log.warning("access_denied skipped: %s", exc)
            return -1
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        # The key stays whole: the child's key filter decides on it as a Recorder's does.
        call = (_CALL_DENIED, now_ns, cause, link_id, flow[: fmt.MAX_DENIED_NAME_CHARS],
                message[: fmt.MAX_DENIED_NAME_CHARS], key, reason[: fmt.MAX_DENIED_TEXT_CHARS])  # fmt: skip
        return self._queue(now_ns, call)

    def message(
        self,
        now_ns: int,
        link_id: int,
        direction: str,
        key: str | None,
        raw: bytes | bytearray | memoryview,
        cause: int = -1,
    ) -> int:
        """Record one network message; returns its reference (-1: filtered out)."""
        if self._closed:
            raise UsageError("recorder is closed")
        d = _direction(direction)
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        if type(raw) is not bytes:
            raw = bytes(raw)  # the caller may reuse its buffer before the batch goes
        return self._queue(now_ns, (_CALL_MESSAGE, now_ns, link_id, d, key, raw, cause))

    def messages(
        self,
        now_ns: int,
        direction: str,
        key: str | None,
        sends: Sequence[tuple[int, bytes | bytearray | memoryview]],
        cause: int = -1,
    ) -> int:
        """:meth:`Recorder.messages`; returns a reference to the first record."""
        if self._closed:
            raise UsageError("recorder is closed")
        d = _direction(direction)
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        if not sends:
            return -1
        return self._queue(
            now_ns, (_CALL_MESSAGES, now_ns, d, key, _frozen(sends), cause)
        )

    def routed(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        raw: bytes,
        copies: Sequence[tuple[int, bytes]],
    ) -> int:
        """:meth:`Recorder.routed`; returns a reference to the rx record.

        The router's hot path: ``raw`` and the copies' raw bytes must be ``bytes`` (they
        are kept until the batch is sent), and ``copies`` must not change afterwards.
        """
        if self._closed:
            raise UsageError("recorder is closed")
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        calls = self._calls
        ref = self._base + len(calls)
        calls.append((_CALL_ROUTED, now_ns, link_id, key, raw, copies))
        if len(calls) >= BATCH_CALLS or now_ns >= self._send_at:
            self._send(now_ns)
        return ref

    def routed_run(
        self,
        now_ns: int,
        link_id: int,
        key: str | None,
        data: bytes,
        ends: Sequence[int] | int,
        copies: Sequence[tuple[int, bytes, Sequence[int] | int]],
        expected: list[int] | None = None,
    ) -> int:
        """:meth:`Recorder.routed_run`; returns a reference to the first rx record. One
        queued call for the whole run: the child builds its records."""
        if self._closed:
            raise UsageError("recorder is closed")
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        calls = self._calls
        ref = self._base + len(calls)
        calls.append((_CALL_ROUTED_RUN, now_ns, link_id, key, data, _plain(ends),
                      [(link, d, _plain(e)) for link, d, e in copies], expected))  # fmt: skip
        # A run carries up to a batch of bytes per copy: the batch goes by its size too,
        # so one pipe write stays about the pipe's size.
        self._run_bytes += len(data) * (1 + len(copies))
        if len(calls) >= BATCH_CALLS or now_ns >= self._send_at or self._run_bytes >= _PIPE_BYTES:
            self._send(now_ns)
        return ref

    def route(
        self, now_ns: int, cause: int, key: str, expected_links: list[int]
    ) -> None:
        self._check_open()
        if self._filter is not None and not self._accept(key):
            return
        self._queue(now_ns, (_CALL_ROUTE, now_ns, cause, key, list(expected_links)))

    def tick(self, now_ns: int) -> None:
        """Send the queued calls and let the child's recorder see the time pass."""
        self._check_open()
        self._calls.append((_CALL_TICK, now_ns))
        self._send(now_ns)

    def close(self) -> None:
        """Send the queued calls and wait for the child to close its last segment."""
        if self._closed:
            return
        self._send(0)
        self._closed = True
        with contextlib.suppress(OSError):
            self._pipe.close()
        try:
            code = self._proc.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log.error(
                "recorder process did not finish in %.0f s; killing it", CLOSE_TIMEOUT_S
            )
            self._proc.kill()
            code = self._proc.wait()
        if code != 0:
            log.error("recorder process exited with status %s", code)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pid(self) -> int:
        """The recorder process's id."""
        return self._proc.pid

    # -- internals -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError("recorder is closed")

    def _accept(self, key: str) -> bool:
        verdict = self._verdicts.get(key)
        if verdict is None:
            assert self._filter is not None
            if len(self._verdicts) >= FILTER_CACHE_SIZE:
                self._verdicts.clear()
            verdict = self._verdicts[key] = _accepts(self._filter, key)
        return verdict

    def _queue(self, now_ns: int, call: tuple[object, ...]) -> int:
        self._check_open()
        calls = self._calls
        ref = self._base + len(calls)
        calls.append(call)
        if len(calls) >= BATCH_CALLS or now_ns >= self._send_at:
            self._send(now_ns)
        return ref

    def _send(self, now_ns: int) -> None:
        self._send_at = now_ns + BATCH_NS
        self._run_bytes = 0
        calls = self._calls
        if not calls:
            return
        self._calls = []
        self._base += len(calls)
        if self._failed:
            return
        body = marshal.dumps(calls, _MARSHAL_VERSION)
        try:
            _write_all(self._fd, [_BATCH_HEAD.pack(len(body)), body])
        except OSError as exc:
            self._failed = True
            log.error("recorder process gone (%s): recording stopped", exc)


def _plain(ends: Sequence[int] | int) -> RunEnds:
    """A run's message ends as the recorder takes them (and marshal carries): the
    stride of a ``range``, else a list."""
    if isinstance(ends, int):
        return ends
    if isinstance(ends, range) and ends.start == ends.step and ends.step > 0:
        return ends.step
    return list(ends)


def _frozen(
    sends: Sequence[tuple[int, bytes | bytearray | memoryview]],
) -> Sequence[tuple[int, bytes | bytearray | memoryview]]:
    """``sends`` as they are now: raw bytes that are not ``bytes`` are copied (the
    caller may reuse its buffers before the batch is sent)."""
    for _, raw in sends:
        if type(raw) is not bytes:
            return [(link, bytes(data)) for link, data in sends]
    return sends


def _write_all(fd: int, parts: list[bytes]) -> None:
    total = sum(len(p) for p in parts)
    written = os.writev(fd, parts)
    if written != total:
        rest = memoryview(b"".join(parts))[written:]
        while rest:
            rest = rest[os.write(fd, rest) :]


def serve(options_json: str) -> int:
    """The recorder process: replays the batches of calls read on stdin on a Recorder.

    Prints ``ok`` (or the error) once the Recorder is open; returns when stdin closes,
    after closing the Recorder.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="recorder process: %(message)s")
    opts = json.loads(options_json)
    try:
        rec = Recorder(
            opts["directory"],
            max_segment_bytes=opts["max_segment_bytes"],
            max_segment_seconds=opts["max_segment_seconds"],
            key_filter=opts["key_filter"],
        )
    except (UsageError, OSError, DecodeError) as exc:
        sys.stdout.write(f"{type(exc).__name__}: {exc}\n")
        return 1
    sys.stdout.write("ok\n")
    sys.stdout.close()
    src = sys.stdin.buffer
    try:
        _replay(src, rec)
    finally:
        rec.close()
    return 0


def _replay(src: BinaryIO, rec: Recorder) -> None:
    # Reference of a call -> seq of its (first) record, for the calls' causes.
    seqs: dict[int, int] = {}
    older: dict[int, int] = {}

    def seq_of(ref: int) -> int:
        if ref < 0:
            return -1
        seq = seqs.get(ref)
        return older.get(ref, -1) if seq is None else seq

    routed = rec.routed
    ref = 0
    while True:
        head = src.read(_BATCH_HEAD.size)
        if len(head) < _BATCH_HEAD.size:
            return
        (size,) = _BATCH_HEAD.unpack(head)
        body = src.read(size)
        if len(body) < size:
            return  # the router died while sending: this batch is incomplete
        for call in marshal.loads(body):
            op = call[0]
            try:
                if op == _CALL_ROUTED:
                    _, now, link, key, raw, copies = call
                    seqs[ref] = routed(now, link, key, raw, copies)
                elif op == _CALL_ROUTED_RUN:
                    seqs[ref] = rec.routed_run(*call[1:])
                elif op == _CALL_MESSAGE:
                    now, link, d, key, raw, cause = call[1:]
                    seqs[ref] = rec.message(
                        now, link, fmt.DIRECTIONS[d], key, raw, seq_of(cause)
                    )
                elif op == _CALL_MESSAGES:
                    now, d, key, sends, cause = call[1:]
                    seqs[ref] = rec.messages(
                        now, fmt.DIRECTIONS[d], key, sends, seq_of(cause)
                    )
                elif op == _CALL_ROUTE:
                    now, cause, key, links = call[1:]
                    rec.route(now, seq_of(cause), key, links)
                elif op == _CALL_OPEN:
                    rec.link_opened(*call[1:])
                elif op == _CALL_CLOSE:
                    rec.link_closed(*call[1:])
                elif op == _CALL_TICK:
                    rec.tick(call[1])
                elif op == _CALL_DENIED:
                    now, cause, link, flow, message, key, reason = call[1:]
                    seqs[ref] = rec.access_denied(
                        now, seq_of(cause), link, flow, message, key, reason
                    )
            except (
                UsageError,
                struct.error,
                OverflowError,
                TypeError,
                ValueError,
            ) as exc:
                log.warning("call %d skipped: %s", op, exc)
            ref += 1
        if len(seqs) >= _REF_MEMO:
            older, seqs = seqs, {}
