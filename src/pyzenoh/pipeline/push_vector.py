"""Common-shape PUSH(PUT/DEL) messages decoded many at a time, as Arrow columns.

Publications dominate recorded traffic, and decoding each distinct one in Python
(:func:`pyzenoh.pipeline.rows.decode_template`) was most of the source's cost. The data
plane reads their fields as numpy columns (:func:`pyzenoh.dataplane.columns.scan_push_columns`);
here they become the template's Arrow columns. Messages of another shape are left to the
per-message code, so the codec stays the one definition of the format. Tests check that
both give the same columns.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped,unused-ignore]

from pyzenoh.codec.primitives import Encoding, ZenohId
from pyzenoh.dataplane.columns import scan_push_columns
from pyzenoh.pipeline import rows as R
from pyzenoh.pipeline.gather import byte_ranges, with_nulls

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
    data = np.frombuffer(body, dtype=np.uint8) if body is not None else np.zeros(1, np.uint8)
    if len(data) == 0:
        data = np.zeros(1, np.uint8)
    start = value_offsets[:-1]
    end = value_offsets[1:]
    c = scan_push_columns(start, end, data)
    ok, h, scope, suffix_at, suffix_len, qos = c.ok, c.header, c.scope, c.suffix_at, c.suffix_len, c.qos
    is_put, has_ts, ntp, zid_at, zid_len, enc_id = c.is_put, c.has_ts, c.ntp, c.zid_at, c.zid_len, c.enc_id
    payload_at, payload_len = c.payload_at, c.payload_len

    # Timestamp ids: a handful of distinct ones, named once each. A zero id is left to
    # the codec.
    stamped = np.flatnonzero(ok & has_ts)
    zid_of = np.zeros(count, dtype=np.int32)
    zid_names = pa.nulls(0, pa.string())
    if len(stamped):
        encoded = pc.dictionary_encode(byte_ranges(data, zid_at[stamped], zid_len[stamped]))
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
    columns[R.C_ENC] = _encoding_names().take(pa.array(enc_id[rows].astype(np.int32), mask=~put))
    columns[R.C_TS] = pa.array(ts_ns.astype(np.int64), mask=~stamp)
    columns[R.C_TSID] = zid_names.take(pa.array(zid_of[rows], mask=~stamp)) if stamp.any() else pa.nulls(n, pa.string())
    columns[R.C_KEY] = with_nulls(suffix, (scope[rows] == 0) & (suffix_len[rows] > 0))
    columns[R.C_RAWSIZE] = pa.array((end - start)[rows].astype(np.int32))
    return ok, columns
