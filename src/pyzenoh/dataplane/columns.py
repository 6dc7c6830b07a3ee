"""Common-shape PUSH(PUT/DEL) messages read many at a time, as numpy columns.

The shape :func:`~pyzenoh.dataplane.scan.scan_push` accepts (but a NodeId, and with a
nine-byte z64 time only), one field at a time across all messages: each step gathers one
byte per message and advances every message's position. A message is in the columns only
if every check holds (``ok``); any other (another message, another shape, anything
malformed) is left to the per-message code, so the codec stays the one definition of the
format. Every gather is clipped to the buffer and every read is checked against the
message's end before its value counts, so no input can index outside the data.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from pyzenoh.codec.data import FLAG_E, FLAG_T
from pyzenoh.codec.network.header import EXT_QOS, FLAG_N, FLAG_Z
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import VLE_MAX_BYTES, ZID_MAX_LEN
from pyzenoh.dataplane.scan import ID_DEL, ID_PUSH, ID_PUT

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
Bools = npt.NDArray[np.bool_]

_TIME_BYTES = VLE_MAX_BYTES  # a current NTP64 time as z64: eight continued bytes and a ninth
_MAX_Z32_BYTES = 5
_SHIFTS = np.arange(0, 56, 7, dtype=np.uint64)


class PushColumns(NamedTuple):
    """Per message (row): whether it is a common-shape PUSH (``ok``; the other columns
    mean something only there) and its fields, as offsets into the data and values."""

    ok: Bools
    header: I64  # the PUSH header (its M flag: the mapping)
    scope: I64
    suffix_at: I64
    suffix_len: I64
    qos: I64
    is_put: Bools  # else a DEL
    has_ts: Bools
    ntp: U64  # the timestamp's NTP64 time (where has_ts)
    zid_at: I64
    zid_len: I64
    enc_id: I64  # the one-byte encoding's id (0: none)
    payload_at: I64
    payload_len: I64


def scan_push_columns(start: I64, end: I64, data: npt.NDArray[np.uint8]) -> PushColumns:
    """The columns of the messages ``data[start[i]:end[i]]`` (``data`` not empty)."""
    count = len(start)
    last = len(data) - 1

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
    has_suffix = (h & FLAG_N) != 0
    n0, n1 = at(p), at(p + 1)
    two = has_suffix & (n0 >= 0x80)
    ok &= ~two | (n1 < 0x80)
    suffix_len = np.where(has_suffix, np.where(two, (n0 & 0x7F) | (n1 << 7), n0), 0)
    ok &= ~has_suffix | (suffix_len > 0)
    suffix_at = np.where(has_suffix, p + 1 + two, p)
    p = suffix_at + suffix_len
    ok &= p <= end
    # Extensions: a lone one-byte QoS only.
    has_ext = (h & FLAG_Z) != 0
    x0, x1 = at(p), at(p + 1)
    ok &= ~has_ext | ((x0 == EXT_QOS) & (x1 < 0x80) & (p + 2 <= end))
    qos = np.where(has_ext, x1, QOS_DEFAULT)
    p = p + np.where(has_ext, 2, 0)
    # The PUT or DEL, without extensions.
    ok &= p < end
    bh = at(p)
    p = p + 1
    kind = bh & 0x1F
    ok &= ((bh & FLAG_Z) == 0) & ((kind == ID_PUT) | (kind == ID_DEL))
    # T: time (nine-byte z64 only here), then the id as length + bytes.
    has_ts = (bh & FLAG_T) != 0
    time_bytes = data[np.minimum(p[:, None] + np.arange(_TIME_BYTES), last)]
    ok &= ~has_ts | (np.all(time_bytes[:, :8] >= 0x80, axis=1) & (p + _TIME_BYTES < end))
    low = (time_bytes[:, :8] & 0x7F).astype(np.uint64) << _SHIFTS
    ntp = np.bitwise_or.reduce(low, axis=1) | (time_bytes[:, 8].astype(np.uint64) << np.uint64(56))
    zid_len = at(p + _TIME_BYTES)
    zid_at = p + _TIME_BYTES + 1
    ok &= ~has_ts | ((zid_len >= 1) & (zid_len <= ZID_MAX_LEN) & (zid_at + zid_len <= end))
    p = np.where(has_ts, zid_at + zid_len, p)
    # E: a one-byte encoding without schema (never on a DEL).
    is_put = kind == ID_PUT
    has_enc = (bh & FLAG_E) != 0
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

    return PushColumns(
        ok, h, scope, suffix_at, suffix_len, qos, is_put, has_ts, ntp, zid_at, zid_len, enc_id, payload_at, payload_len
    )
