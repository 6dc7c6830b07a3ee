"""The traffic recorder the router calls for every network message it receives or sends.

File layout: see :mod:`pyzenoh.recording.format`. The recorder never reads a clock: every
call carries ``now_ns`` from the router, and time-based chunk flushes and segment rotation
are decided from those values. It is not thread-safe; the router calls it from its event
loop (or, in practice, :mod:`pyzenoh.recording.process` runs it in a child process).

Cost model: a record is one precompiled ``struct`` call packing the record header and the
key, appended with the raw bytes to the chunk's ``bytearray`` (so the raw object is not
kept, and a chunk is never joined from parts), plus its (time, offset) for the message
index (:mod:`.index`); everything else (CRC, the index records, the write itself) happens
once per chunk. :meth:`Recorder.routed` writes a received message and its forwarded copies
in one call, which is what the router does for every PUSH it routes;
:meth:`Recorder.routed_run` a whole routed run (:mod:`.runs`). :meth:`Recorder.access_denied`
writes what access control denied (a ``"denied"`` link event naming its rx record).

Durability: a chunk is written (one ``writev``) when it reaches its size, or on the first
call at least a second of router time after the previous one. A router going idle should
call :meth:`Recorder.tick` now and then so the last records do not wait in memory.
Segments (their header, channels and summary) are laid out by :mod:`.segment`.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Self

from mcap.records import Channel, ChunkIndex, MetadataIndex

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import validate
from pyzenoh.keyexpr.relations import intersects
from pyzenoh.recording import format as fmt
from pyzenoh.recording import segment
from pyzenoh.recording.index import MessageIndex
from pyzenoh.recording.reader import resume_point
from pyzenoh.recording.runs import (
    Slot,
    group_records,
    plain_ends,
    run_count,
    run_slices,
)

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
_ROUTE_PACKERS = [struct.Struct(fmt.ROUTE_RECORD.format + "I" * n).pack for n in range(17)]


def check_options(max_segment_bytes: int, max_segment_seconds: float, key_filter: str | None) -> None:
    if max_segment_bytes <= 0:
        raise UsageError("max_segment_bytes must be positive")
    if not max_segment_seconds > 0:
        raise UsageError("max_segment_seconds must be positive")
    if key_filter is not None:
        try:
            validate(key_filter)
        except ValueError as exc:
            raise UsageError(f"key_filter: {exc}") from None


def accepts(key_filter: str, key: str) -> bool:
    try:
        return bool(intersects(key_filter, key))
    except ValueError:
        return False  # an invalid key cannot intersect anything


def direction_code(direction: str) -> int:
    if direction == "rx":
        return 0
    if direction == "tx":
        return 1
    raise UsageError(f"direction must be 'rx' or 'tx', not {direction!r}")


def check_denial(
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


class Recorder:
    """Writes a recording directory of rotating, chunked MCAP segments."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        max_segment_bytes: int = 64 << 20,
        max_segment_seconds: float = 300.0,
        key_filter: str | None = None,
        zid: str | None = None,
    ) -> None:
        check_options(max_segment_bytes, max_segment_seconds, key_filter)
        #: The recording router's zid, in every segment's metadata (a mesh's recordings
        #: are told apart and joined by it).
        self.zid = zid
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._max_bytes = max_segment_bytes
        self._max_ns = int(max_segment_seconds * 1e9)
        self._chunk_limit = max(MIN_CHUNK_BYTES, min(CHUNK_BYTES, max_segment_bytes // 4))
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
        # Per channel, the chunk's MessageIndex entries
        self._net = MessageIndex()
        self._link = MessageIndex()
        self._route = MessageIndex()
        # Router time at which a call writes the chunk, whatever its size.
        self._flush_at = self._chunk_ns
        self._pos = 0
        self._counts: dict[int, int] = {}
        self._chunk_indexes: list[ChunkIndex] = []
        self._channels: list[Channel] = []
        self._meta_index: MetadataIndex | None = None
        self._seg_t0: int | None = None
        self._seg_start = 0
        self._seg_end = 0
        self._open_segment(None)

    # -- the router's API ----------------------------------------------------------------

    def link_opened(self, now_ns: int, link_id: int, zid: str, whatami: str, remote: str) -> None:
        self._check_open()
        self._links[link_id] = (zid, whatami, remote)
        self._add_link(
            now_ns,
            fmt.link_json(self._seq, "open", link_id, zid=zid, whatami=whatami, remote=remote),
        )

    def link_closed(self, now_ns: int, link_id: int, reason: str) -> None:
        self._check_open()
        self._links.pop(link_id, None)
        self._add_link(now_ns, fmt.link_json(self._seq, "close", link_id, reason=reason))

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
        return self._stopped(fmt.DENIED, now_ns, cause, link_id, flow, message, key, reason)

    def intercepted(
        self,
        now_ns: int,
        cause: int,
        link_id: int,
        flow: str,
        message: str,
        key: str | None,
        reason: str,
    ) -> int:
        """Record that an interceptor dropped ``message`` (``put``, ``delete``, ``query``,
        ``reply``): an ``"intercepted"`` link event, otherwise as :meth:`access_denied`."""
        return self._stopped(fmt.INTERCEPTED, now_ns, cause, link_id, flow, message, key, reason)

    def _stopped(
        self, event: str, now_ns: int, cause: int, link_id: int, flow: str, message: str, key: str | None, reason: str
    ) -> int:
        self._check_open()
        check_denial(now_ns, cause, link_id, flow, message, key, reason)
        if key is not None and self._filter is not None and not self._accept(key):
            return -1
        seq = self._seq
        self._add_link(
            now_ns,
            fmt.link_json(seq, event, link_id, cause=cause, reason=reason, flow=flow, message=message, key=key),
        )
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
        d = direction_code(direction)
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
        d = direction_code(direction)
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
        idx = self._net.pairs
        start = len(buf)
        cause = seq = self._seq
        try:
            buf += pack(_OP_MESSAGE, fixed + len(raw), _CH_NET, seq & _M32, now_ns, now_ns, seq, -1, link_id, rx_tail)
            buf += raw
            idx += (now_ns, start)
            for link, data in copies:
                seq += 1
                idx += (now_ns, len(buf))
                buf += pack(
                    _OP_MESSAGE, fixed + len(data), _CH_NET, seq & _M32, now_ns, now_ns, seq, cause, link, tx_tail
                )
                buf += data
        except BaseException:
            self._undo(start)
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
        rx_ends = plain_ends(ends)
        sent_ends = [(link, d, plain_ends(e)) for link, d, e in copies]
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
            self._net.add_block(index)
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
        idx = self._net.pairs
        start = len(buf)
        try:
            for link_id, raw in sends:
                idx += (now_ns, len(buf))
                buf += pack(
                    _OP_MESSAGE, fixed + len(raw), _CH_NET, seq & _M32, now_ns, now_ns, seq, cause, link_id, tail
                )
                buf += raw
                seq += 1
        except BaseException:
            self._undo(start)
            raise
        self._seq = seq
        if len(buf) >= self._chunk_limit or now_ns >= self._flush_at:
            self._flush(now_ns)
        return first

    def _undo(self, start: int) -> None:
        """Forget the records of a call that failed half-way (a bad link id, say)."""
        del self._buf[start:]
        self._net.undo(start)

    def route(self, now_ns: int, cause: int, key: str, expected_links: list[int]) -> None:
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
                    *expected_links,
                )
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
        self._route.pairs += (now_ns, len(buf))
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
        return accepts(self._filter, key)

    def _add_link(self, now_ns: int, data: bytes) -> None:
        self._append_link(now_ns, data)
        if len(self._buf) >= self._chunk_limit or now_ns >= self._flush_at:
            self._flush(now_ns)

    def _append_link(self, now_ns: int, data: bytes) -> None:
        seq = self._seq
        self._seq = seq + 1
        buf = self._buf
        self._link.pairs += (now_ns, len(buf))
        length = _MSG_FIXED + len(data)
        buf += fmt.MESSAGE_HEAD.pack(_OP_MESSAGE, length, fmt.CH_LINK, seq & _M32, now_ns, now_ns)
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

    def _write_all(self, parts: Sequence[bytes | bytearray]) -> None:
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
        parts, entry = segment.chunk(
            self._pos,
            buf,
            [(fmt.CH_NET, self._net), (fmt.CH_LINK, self._link), (fmt.CH_ROUTE, self._route)],
            self._counts,
        )
        self._write_all(parts)
        self._chunk_indexes.append(entry)
        start, end = entry.message_start_time, entry.message_end_time
        if self._seg_t0 is None:
            self._seg_t0 = start
            self._seg_start = start
        self._seg_start = min(self._seg_start, start)
        self._seg_end = max(self._seg_end, end)
        self._buf = bytearray()
        self._net.clear()
        self._link.clear()
        self._route.clear()

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
        self._channels = segment.channels()
        parts, self._meta_index = segment.opening(self._segment, self._run, self._seq, self._channels, self.zid)
        self._write_all(parts)
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
        assert self._meta_index is not None
        self._write_all(
            segment.closing(
                self._pos,
                self._channels,
                self._counts,
                self._chunk_indexes,
                self._seg_start,
                self._seg_end,
                self._meta_index,
            )
        )
