"""Common-shape PUSH(PUT/DEL) messages decoded many at a time, with numpy.

Publications dominate recorded traffic, and decoding each distinct one in Python
(:func:`pyzenoh.pipeline.rows.decode_template`) was most of the source's cost. This reads
the shape :func:`pyzenoh.dataplane.scan_push` accepts, one field at a time
across all messages: each step gathers one byte per message and advances every
message's position. A message takes this path only if every check holds; any other
(another message, another shape, a 1-8 byte timestamp, anything malformed) is left to
the per-message code, so the codec stays the one definition of the format. Tests check
that both give the same columns.

Every gather is clipped to the buffer and every read is checked against the message's
end before its value counts, so no input can index outside the data.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

from pyzenoh.codec.network.header import EXT_QOS as NET_QOS_EXT
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import VLE_MAX_BYTES, ZID_MAX_LEN, Encoding, ZenohId
from pyzenoh.dataplane import ID_DEL, ID_PUSH, ID_PUT
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.gather import byte_ranges, with_nulls

_DEFAULT_QOS = QOS_DEFAULT
_TIME_BYTES = VLE_MAX_BYTES  # a current NTP64 time as z64: eight continued bytes and a ninth
_MAX_Z32_BYTES = 5
_SHIFTS = np.arange(0, 56, 7, dtype=np.uint64)
_PUT_DEL = pa.array(["del", "put"], pa.string())


@functools.cache
def _encoding_names() -> pa.Array:
    """Names of the encodings a one-byte encoding field can carry (ids 0..63)."""
    return pa.array([str(Encoding(i)) for i in range(64)], pa.string())


def push_columns(messages: pa.Array) -> tuple[np.ndarray, dict[int, pa.Array]]:
    """Which of ``messages`` (binary, no nulls) are common-shape PUSHes, and their
    template columns (by ``messages`` column position, for those rows only)."""
    count = len(messages)
    value_offsets = np.frombuffer(
        messages.buffers()[1],
        dtype=np.int64 if messages.type == pa.large_binary() else np.int32,
        count=count + 1,
        offset=messages.offset * (8 if messages.type == pa.large_binary() else 4),
    ).astype(np.int64)
    body = messages.buffers()[2]
    data = (
        np.frombuffer(body, dtype=np.uint8)
        if body is not None
        else np.zeros(1, np.uint8)
    )
    if len(data) == 0:
        data = np.zeros(1, np.uint8)
    last = len(data) - 1
    start = value_offsets[:-1]
    end = value_offsets[1:]

    def at(p: np.ndarray) -> np.ndarray:
        byte: np.ndarray = data[np.minimum(p, last)].astype(np.int64)
        return byte

    ok = end - start >= 3
    h = at(start)
    ok &= (h & 0x1F) == ID_PUSH
    p = start + 1
    scope = at(p)
    ok &= scope < 0x80
    p = p + 1
    # N: a suffix, its length a z16 of one or two bytes.
    has_suffix = (h & 0x20) != 0
    n0, n1 = at(p), at(p + 1)
    two = has_suffix & (n0 >= 0x80)
    ok &= ~two | (n1 < 0x80)
    suffix_len = np.where(has_suffix, np.where(two, (n0 & 0x7F) | (n1 << 7), n0), 0)
    ok &= ~has_suffix | (suffix_len > 0)
    suffix_at = np.where(has_suffix, p + 1 + two, p)
    p = suffix_at + suffix_len
    ok &= p <= end
    # Extensions: a lone one-byte QoS only.
    has_ext = (h & 0x80) != 0
    x0, x1 = at(p), at(p + 1)
    ok &= ~has_ext | ((x0 == NET_QOS_EXT) & (x1 < 0x80) & (p + 2 <= end))
    qos = np.where(has_ext, x1, _DEFAULT_QOS)
    p = p + np.where(has_ext, 2, 0)
    # The PUT or DEL, without extensions.
    ok &= p < end
    bh = at(p)
    p = p + 1
    kind = bh & 0x1F
    ok &= ((bh & 0x80) == 0) & ((kind == ID_PUT) | (kind == ID_DEL))
    # T: time (nine-byte z64 only here), then the id as length + bytes.
    has_ts = (bh & 0x20) != 0
    time_bytes = data[np.minimum(p[:, None] + np.arange(_TIME_BYTES), last)]
    ok &= ~has_ts | (
        np.all(time_bytes[:, :8] >= 0x80, axis=1) & (p + _TIME_BYTES < end)
    )
    low = (time_bytes[:, :8] & 0x7F).astype(np.uint64) << _SHIFTS
    ntp = np.bitwise_or.reduce(low, axis=1) | (
        time_bytes[:, 8].astype(np.uint64) << np.uint64(56)
    )
    zid_len = at(p + _TIME_BYTES)
    zid_at = p + _TIME_BYTES + 1
    ok &= ~has_ts | (
        (zid_len >= 1) & (zid_len <= ZID_MAX_LEN) & (zid_at + zid_len <= end)
    )
    p = np.where(has_ts, zid_at + zid_len, p)
    # E: a one-byte encoding without schema (never on a DEL).
    is_put = kind == ID_PUT
    has_enc = (bh & 0x40) != 0
    ok &= ~has_enc | is_put
    e = at(p)
    ok &= ~has_enc | ((p < end) & (e < 0x80) & ((e & 1) == 0))
    enc_id = np.where(has_enc, e >> 1, 0)
    p = p + has_enc
    # A PUT's payload: z32 length, then the bytes.
    payload_len = np.zeros(count, dtype=np.int64)
    more = is_put.copy()
    for i in range(_MAX_Z32_BYTES):
        b = at(p)
        ok &= ~more | (p < end)
        payload_len |= np.where(more, (b & 0x7F) << (7 * i), 0)
        p = p + more
        more &= b >= 0x80
    ok &= ~more & (payload_len <= 0xFFFF_FFFF)
    payload_at = p
    ok &= p + payload_len == end

    # Timestamp ids: a handful of distinct ones, named once each. A zero id is left to
    # the codec.
    stamped = np.flatnonzero(ok & has_ts)
    zid_of = np.zeros(count, dtype=np.int32)
    zid_names = pa.nulls(0, pa.string())
    if len(stamped):
        encoded = pc.dictionary_encode(
            byte_ranges(data, zid_at[stamped], zid_len[stamped])
        )
        names = []
        for raw in encoded.dictionary.to_pylist():
            value = int.from_bytes(raw, "little")
            names.append(str(ZenohId(value)) if value else None)
        which = encoded.indices.to_numpy()
        ok[stamped[np.array([x is None for x in names], dtype=bool)[which]]] = False
        zid_of[stamped] = which
        zid_names = pa.array(names, pa.string())

    rows = np.flatnonzero(ok)
    columns: dict[int, pa.Array] = {}
    n = len(rows)
    if n == 0:
        return ok, columns
    suffix = byte_ranges(data, suffix_at[rows], suffix_len[rows], typ=pa.string())
    try:
        suffix.validate(full=True)  # UTF-8
    except pa.ArrowInvalid:
        return np.zeros(count, dtype=bool), {}  # the codec says which ones are bad
    stamp = has_ts[rows]
    put = is_put[rows]
    plen = np.where(put, payload_len[rows], 0)
    q = qos[rows]
    t = ntp[rows]
    ts_ns = (t >> np.uint64(32)) * np.uint64(1_000_000_000) + (
        ((t & np.uint64(0xFFFF_FFFF)) * np.uint64(1_000_000_000)) >> np.uint64(32)
    )
    columns[R.C_MSG] = pa.repeat(pa.scalar("push", pa.string()), n)
    columns[R.C_BODY] = _PUT_DEL.take(pa.array(put.astype(np.int8)))
    columns[R.C_SCOPE] = pa.array(scope[rows].astype(np.int32))
    columns[R.C_SUFFIX] = suffix
    columns[R.C_MAPPING] = pa.array((h[rows] & 0x40) != 0)
    columns[R.C_PRIO] = pa.array((q & 0x07).astype(np.int32))
    columns[R.C_BLOCK] = pa.array((q & 0x08) != 0)
    columns[R.C_EXPRESS] = pa.array((q & 0x10) != 0)
    columns[R.C_PAYLOAD] = byte_ranges(data, payload_at[rows], plen, put)
    columns[R.C_PSIZE] = pa.array(plen.astype(np.int32))
    columns[R.C_ENC] = _encoding_names().take(
        pa.array(enc_id[rows].astype(np.int32), mask=~put)
    )
    columns[R.C_TS] = pa.array(ts_ns.astype(np.int64), mask=~stamp)
    columns[R.C_TSID] = (
        zid_names.take(pa.array(zid_of[rows], mask=~stamp))
        if stamp.any()
        else pa.nulls(n, pa.string())
    )
    columns[R.C_KEY] = with_nulls(suffix, (scope[rows] == 0) & (suffix_len[rows] > 0))
    columns[R.C_RAWSIZE] = pa.array((end - start)[rows].astype(np.int32))
    return ok, columns
