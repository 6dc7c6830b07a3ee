"""Decoding a chunk's network records straight into Arrow columns (the source's hot path).

Per-row Python is what limits a Python data source (the project's Spark notes), so
``messages`` rows are built column by column:

* the chunk group's own MessageIndex gives the offset of every record, so numpy gathers
  the fixed fields of all records at once, and the key and raw byte ranges in one pass
  (:func:`chunk_rows`, one chunk);
* the raw messages of several chunks (:func:`rows_batch`, about a batch of rows) are
  dictionary-encoded: a router sends the very same bytes to every subscriber of a PUSH,
  so each distinct message is decoded once (common-shape PUSHes all together by
  :mod:`.push_vector`, the others by :func:`pyzenoh.pipeline.rows.decode_template`, the
  one definition of the columns) and its columns are spread to the rows with ``take``;
* link details (zid, whatami, remote) come from the link events of the chunk, applied in
  record order, and are spread the same way.

Anything unexpected (an index that disagrees with the records, a bad header, a key that
is not UTF-8) returns None and the caller decodes that chunk record by record, which
turns each bad record into an ``invalid`` row. Offsets and lengths are all checked
against the chunk before anything is gathered.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

from pyzenoh.errors import DecodeError
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.gather import byte_ranges
from pyzenoh.pipeline.push_vector import push_columns
from pyzenoh.recording import format as fmt

LinkInfo = tuple[str | None, str | None, str | None]

# A net record's Message header and the fixed part of its data, as numpy reads them.
NET_HEAD = np.dtype(
    [
        ("op", "u1"),
        ("length", "<u8"),
        ("channel", "<u2"),
        ("seq32", "<u4"),
        ("log_time", "<u8"),
        ("publish_time", "<u8"),
        ("seq", "<u8"),
        ("cause", "<i8"),
        ("link", "<u4"),
        ("direction", "u1"),
        ("key_len", "<u4"),
    ]
)
_HEAD_LEN = NET_HEAD.itemsize
assert _HEAD_LEN == fmt.MESSAGE_HEAD.size + fmt.NET_DATA.size
# Smallest Message length field of a net record: Message fields + net data, no key or raw.
_MIN_NET_LENGTH = _HEAD_LEN - fmt.RECORD_HEAD.size
_INDEX_FIELDS = struct.Struct("<HI")  # MessageIndex: channel, entries length
_INDEX_HEAD_LEN = fmt.RECORD_HEAD.size + _INDEX_FIELDS.size
_DIRECTIONS = pa.array(list(fmt.DIRECTIONS), pa.string())
# Template columns spread with take: everything the decoded message determines.
_TEMPLATE_COLUMNS = [c for c in range(R.C_MSG, R.N_COLUMNS) if c != R.C_KEY]


def index_offsets(tail: bytes | memoryview) -> dict[int, np.ndarray] | None:
    """Record offsets per channel from a chunk group's MessageIndex records (the bytes
    after the chunk's records); None when they are not exactly what the recorder writes."""
    out: dict[int, np.ndarray] = {}
    at, end = 0, len(tail)
    for _ in range(fmt.CHANNEL_COUNT):
        if at + _INDEX_HEAD_LEN > end:
            return None
        op, length = fmt.RECORD_HEAD.unpack_from(tail, at)
        channel, entries = _INDEX_FIELDS.unpack_from(tail, at + fmt.RECORD_HEAD.size)
        body = at + _INDEX_HEAD_LEN
        if op != fmt.OP_MESSAGE_INDEX or length != 6 + entries or entries % 16:
            return None
        if body + entries > end or channel in out:
            return None
        pairs = np.frombuffer(tail, dtype="<u8", count=entries // 8, offset=body)
        out[channel] = pairs[1::2].astype(np.int64)
        at = body + entries
    return out


def _index_tiles(buf: np.ndarray, offsets: dict[int, np.ndarray]) -> bool:
    """Whether the indexed records, in offset order, exactly tile the chunk: then every
    record is where the index says and each channel's ordinals are the records' order."""
    starts = np.sort(np.concatenate(list(offsets.values())))
    size = len(buf)
    if len(starts) == 0:
        return size == 0
    if starts[0] != 0 or starts[-1] + fmt.RECORD_HEAD.size > size:
        return False
    head = buf[starts[:, None] + np.arange(fmt.RECORD_HEAD.size)]
    op = head[:, 0]
    length = head[:, 1:].copy().view("<u8").reshape(len(starts))
    if np.any(op != fmt.OP_MESSAGE) or np.any(length > size) or np.any(length < fmt.MESSAGE_FIXED_LEN):
        return False
    ends = starts + fmt.RECORD_HEAD.size + length.astype(np.int64)
    if np.any(ends[:-1] != starts[1:]) or ends[-1] != size:
        return False
    for channel, where in offsets.items():  # sorted within their channel, as written
        if len(where) > 1 and np.any(np.diff(where) <= 0):
            return False
        if len(where) and np.any(buf[where[:, None] + np.arange(9, 11)].copy().view("<u2") != channel):
            return False
    return True


def _link_columns(
    records: memoryview,
    link_offsets: np.ndarray,
    row_offsets: np.ndarray,
    row_links: np.ndarray,
    links: dict[int, LinkInfo],
) -> list[pa.Array]:
    """zid, whatami and remote of every row, applying the chunk's link events in order
    (``links`` is updated to the state after the whole chunk)."""
    states = [dict(links)]  # states[i]: after the first i link events
    for at in link_offsets.tolist():
        _, length = fmt.RECORD_HEAD.unpack_from(records, at)  # checked by _index_tiles
        data = records[at + fmt.MESSAGE_HEAD.size : at + fmt.RECORD_HEAD.size + length]
        try:
            rec = fmt.parse_link(data, 0)
        except DecodeError:
            rec = None  # as the per-record path does: a bad link event changes nothing
        if rec is not None and rec.event == "open":
            links[rec.link] = (rec.zid, rec.whatami, rec.remote)
        elif rec is not None and rec.event == "close":  # a denial changes no link
            links.pop(rec.link, None)
        states.append(dict(links))
    epoch = np.searchsorted(link_offsets, row_offsets) if len(states) > 1 else 0
    combined = (np.asarray(epoch, dtype=np.int64) << 32) | row_links.astype(np.int64)
    uniq, inverse = np.unique(combined, return_inverse=True)
    infos = [states[int(u) >> 32].get(int(u) & 0xFFFF_FFFF) for u in uniq.tolist()]
    take = pa.array(inverse.astype(np.int32))
    out = []
    for i in range(3):
        values = pa.array([None if x is None else x[i] for x in infos], pa.string())
        out.append(values.take(take))
    return out


def _template_columns(raw: pa.Array, types: list[pa.DataType]) -> tuple[dict[int, pa.Array], pa.Array | None]:
    """The decoded columns of every row (by column position), and the template's key.

    Each distinct message is decoded once: common-shape PUSHes all together
    (:func:`.push_vector.push_columns`), the others one by one
    (:func:`pyzenoh.pipeline.rows.decode_template`)."""
    encoded = pc.dictionary_encode(raw)
    distinct = encoded.dictionary
    fast, fast_columns = push_columns(distinct)
    slow = np.flatnonzero(~fast)
    n_fast = len(distinct) - len(slow)
    templates = [R.decode_template(m) for m in distinct.take(pa.array(slow)).to_pylist()]
    by_column = list(zip(*templates, strict=True)) if templates else []
    # Where each distinct message's values sit once fast and slow ones are concatenated.
    position = np.empty(len(distinct), dtype=np.int32)
    position[fast] = np.arange(n_fast, dtype=np.int32)
    position[slow] = np.arange(n_fast, len(distinct), dtype=np.int32)
    wanted = [*_TEMPLATE_COLUMNS, R.C_KEY]
    present, arrays = [], []
    for c in wanted:
        slow_has = bool(by_column) and by_column[c].count(None) < len(templates)
        if c not in fast_columns and not slow_has:
            continue
        part = fast_columns.get(c)
        if part is None:
            part = pa.nulls(n_fast, types[c])
        elif part.type != types[c]:
            part = part.cast(types[c])
        rest = pa.array(by_column[c] if slow_has else [None] * len(slow), types[c])
        present.append(c)
        arrays.append(pa.concat_arrays([part, rest]))
    n = len(raw)
    out: dict[int, pa.Array] = {}
    key = None
    if present:
        # One take spreads every column's distinct values to all of their rows.
        spread = pa.RecordBatch.from_arrays(arrays, names=[str(c) for c in present]).take(
            pa.array(position[encoded.indices.to_numpy()])
        )
        for c, column in zip(present, spread.columns, strict=True):
            if c == R.C_KEY:
                key = column
            else:
                out[c] = column
    for c in _TEMPLATE_COLUMNS:  # what no message of the batch has
        if c not in out:
            out[c] = pa.nulls(n, types[c])
    return out, key


@dataclass(frozen=True, slots=True)
class ChunkRows:
    """One chunk's ``messages`` rows before their messages are decoded: the columns the
    record itself gives (``seg`` .. ``cause``), the record's key and the raw messages."""

    columns: tuple[pa.Array, ...]
    key: pa.Array
    raw: pa.Array

    def __len__(self) -> int:
        return len(self.raw)


def chunk_rows(
    records: bytes | memoryview,
    offsets: dict[int, np.ndarray],
    k0: int,
    k1: int,
    seg: int,
    rec0: int,
    run: int,
    links: dict[int, LinkInfo],
    schema: pa.Schema,
) -> ChunkRows | None:
    """Net records ``k0 .. k1-1`` of one chunk (``rec0`` is the ordinal of record
    ``k0``); None when the chunk needs the per-record path.

    ``links`` (link id -> details at the chunk's start) is advanced past the whole chunk,
    but only when rows are returned.
    """
    net = offsets.get(fmt.CH_NET)
    link_offsets = offsets.get(fmt.CH_LINK)
    if net is None or link_offsets is None or len(offsets) != fmt.CHANNEL_COUNT:
        return None
    buf = np.frombuffer(records, dtype=np.uint8)
    if not _index_tiles(buf, offsets):
        return None
    size = len(records)
    rows = net[k0:k1]
    n = len(rows)
    if n and rows[-1] + _HEAD_LEN > size:
        return None  # a last record shorter than a net record's fixed part
    head = buf[rows[:, None] + np.arange(_HEAD_LEN)].view(NET_HEAD).reshape(n)
    length = head["length"].astype(np.int64)
    record_end = rows + fmt.RECORD_HEAD.size + length
    key_len = head["key_len"].astype(np.int64)
    has_key = key_len != fmt.NO_KEY
    key_len = np.where(has_key, key_len, 0)
    if n and (
        np.any(head["op"] != fmt.OP_MESSAGE)
        or np.any(head["channel"] != fmt.CH_NET)
        or np.any(length < _MIN_NET_LENGTH)
        or np.any(head["direction"] > fmt.DIR_TX)
        or np.any(key_len > np.minimum(length - _MIN_NET_LENGTH, fmt.MAX_KEY_BYTES))
        or np.any(head["link"] > fmt.MAX_LINK_ID)
        or np.any(head["seq"] > fmt.MAX_SEQ)
        or np.any(head["log_time"] > fmt.MAX_TIME_NS)
    ):
        return None
    key_at = rows + _HEAD_LEN
    raw_at = key_at + key_len
    key = byte_ranges(buf, key_at, key_len, has_key, pa.string())
    try:
        key.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return None
    raw = byte_ranges(buf, raw_at, record_end - raw_at)
    if raw.type != pa.binary() or key.type != pa.string():
        return None  # over 2 GiB in one chunk: not the recorder's, leave it to the slow path

    types = [f.type for f in schema]
    new_links = dict(links)
    zid, whatami, remote = _link_columns(memoryview(records), link_offsets, rows, head["link"], new_links)
    time_ns = head["log_time"].astype(np.int64)
    columns = (
        pa.array(np.full(n, seg, dtype=np.int32)),
        pa.array(np.arange(rec0, rec0 + n, dtype=np.int64)),
        pa.array(np.full(n, run, dtype=np.int32)),
        pa.array(head["seq"].astype(np.int64)),
        pa.array(time_ns),
        pa.array(time_ns // 1000, pa.int64()).cast(types[5]),
        pa.array(head["link"].astype(np.int32)),
        zid,
        whatami,
        remote,
        _DIRECTIONS.take(pa.array(head["direction"].astype(np.int32))),
        pa.array(head["cause"].astype(np.int64)),
    )
    links.clear()
    links.update(new_links)
    return ChunkRows(columns, key, raw)


def rows_batch(parts: list[ChunkRows], schema: pa.Schema) -> pa.RecordBatch:
    """One batch of the rows of several chunks: their messages are decoded together, so
    each distinct message once, and the fixed cost of a decoding pass is paid once."""
    types = [f.type for f in schema]
    if len(parts) == 1:
        (one,) = parts
        fixed = list(one.columns)
        key, raw = one.key, one.raw
    else:
        fixed = [pa.concat_arrays([p.columns[i] for p in parts]) for i in range(len(parts[0].columns))]
        key = pa.concat_arrays([p.key for p in parts])
        raw = pa.concat_arrays([p.raw for p in parts])
    decoded, template_key = _template_columns(raw, types)
    if template_key is not None:
        key = pc.coalesce(key, template_key)  # the record's key wins
    # The record gives the columns before msg_type; the message gives the rest but key.
    columns = [
        *fixed,
        *(key if c == R.C_KEY else decoded[c] for c in range(R.C_MSG, R.N_COLUMNS)),
    ]
    arrays = [a if a.type == t else a.cast(t) for a, t in zip(columns, types, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
