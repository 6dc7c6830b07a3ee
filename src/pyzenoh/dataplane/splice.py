"""Writing routed PUSH bytes from received ones: heads swapped, timestamps spliced in.

A router forwards a publication's bytes, not a re-encoding: the head (key, QoS, NodeId)
is replaced when the destination knows the key otherwise, and the router's HLC timestamp
goes in right after the PUT header, with its T flag set. Timestamps are encoded here as
:meth:`~pyzenoh.codec.Timestamp.write` does (the tests check it), fast for the times every
current clock gives; for a run, a whole column of consecutive times is written with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pyzenoh.codec import Timestamp, ZenohId
from pyzenoh.codec.data import FLAG_T as PUT_FLAG_T
from pyzenoh.codec.primitives import VLE_MAX_BYTES, vle_bytes, vle_len, write_vle
from pyzenoh.dataplane.runs import PushRun

U8 = npt.NDArray[np.uint8]

#: An id's encoding (length and bytes), per HLC id's value (an int hashes without a call).
_ZID_PARTS: dict[int, bytes] = {}
#: Ids whose encoding is kept (normally a handful of routers).
MAX_CACHED_IDS = 64


def id_parts(zid: ZenohId) -> bytes:
    """The id as a timestamp carries it: its length, then its bytes (cached per id)."""
    parts = _ZID_PARTS.get(zid.value)
    if parts is None:
        out = bytearray()
        Timestamp(0, zid).write(out)
        if len(_ZID_PARTS) >= MAX_CACHED_IDS:
            _ZID_PARTS.clear()
        parts = _ZID_PARTS[zid.value] = bytes(out[vle_len(0) :])
    return parts


def encode_timestamp(ts: Timestamp) -> bytes:
    """``ts`` encoded as :meth:`Timestamp.write` does (VLE time, then the id)."""
    return encode_time(ts.time) + id_parts(ts.id)


def encode_time(t: int) -> bytes:
    """The VLE encoding of an NTP64 time, faster for the times every current clock gives
    (2**56 <= time < 2**63: nine bytes): the low 28 bits are spread into four 7-bit groups
    with a few integer operations, the rest is cached."""
    if not (1 << 56) <= t < (1 << 63):
        out = bytearray()
        write_vle(out, t)
        return bytes(out)
    # The five groups from bit 28 on change every 1/16 s: made once per value of t >> 28.
    tail = _TIME_TAILS.get(t >> 28)
    if tail is None:
        if len(_TIME_TAILS) >= MAX_TIME_TAILS:
            _TIME_TAILS.clear()
        tail = _TIME_TAILS[t >> 28] = _spread(t)[4:]
    lo = t & 0x0FFF_FFFF
    lo = (lo & 0x7F) | ((lo & 0x3F80) << 1) | ((lo & 0x1F_C000) << 2) | ((lo & 0x0FE0_0000) << 3)
    return (lo | 0x8080_8080).to_bytes(4, "little") + tail


#: Encodings of a time's groups from bit 28 on, by ``t >> 28`` (a few clocks' worth).
_TIME_TAILS: dict[int, bytes] = {}
MAX_TIME_TAILS = 16


def _spread(t: int) -> bytes:
    """The nine-byte VLE of ``t`` (2**56 <= t < 2**63) with a few integer operations."""
    x = t & 0x00FF_FFFF_FFFF_FFFF
    x = (x & 0x0FFF_FFFF) | ((x & 0x00FF_FFFF_F000_0000) << 4)
    x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x0FFF_C000_0FFF_C000) << 2)
    x = (x & 0x007F_007F_007F_007F) | ((x & 0x3F80_3F80_3F80_3F80) << 1)
    return (x | 0x8080_8080_8080_8080).to_bytes(8, "little") + bytes((t >> 56,))


def stamp_body(body: bytes, stamp: bytes) -> bytes:
    """A PUT body (from its header on) without a timestamp, with the encoded ``stamp``
    inserted right after the header, where its T flag says it sits."""
    return b"".join((_ONE_BYTE[body[0] | PUT_FLAG_T], stamp, body[1:]))


_ONE_BYTE = [bytes((b,)) for b in range(256)]


#: VLE group shifts for each width, and what each group of a z64 keeps: 7 bits, but all
#: 8 of the ninth (which has no continuation bit).
_SHIFTS = [np.arange(0, 7 * w, 7, dtype=np.uint64) for w in range(VLE_MAX_BYTES + 1)]
_GROUP_MASKS = np.array([0x7F] * (VLE_MAX_BYTES - 1) + [0xFF], np.uint64)
_LOW7 = np.uint64(0x7F)


def vle_rows(first: int, n: int, tail: bytes = b"") -> U8 | None:
    """An ``n`` x W array whose row ``i`` is the VLE encoding of ``first + i`` (as
    :func:`~pyzenoh.codec.primitives.write_vle` writes it) followed by ``tail``; None when
    the VLE's width changes within the rows (the caller then goes one by one). The
    timestamps of a run, and the SNs of batches framed at once."""
    width = vle_len(first)
    last = first + n - 1
    if vle_len(last) != width:
        return None
    # Consecutive integers differ only in their low 7-bit groups (one to three for a run):
    # those are computed for every row, the rest is one row of bytes for all (the
    # encoding of ``first`` from that group on, then ``tail``).
    vary = 1
    while vary < width and first >> (7 * vary) != last >> (7 * vary):
        vary += 1
    rows = np.empty((n, width + len(tail)), np.uint8)
    values = np.arange(first, first + n, dtype=np.uint64)
    mask = _LOW7 if vary < VLE_MAX_BYTES else _GROUP_MASKS
    rows[:, :vary] = (values[:, None] >> _SHIFTS[vary]) & mask
    rows[:, : min(vary, width - 1)] |= 0x80  # continuation bits on all but the last group
    if vary < rows.shape[1]:
        rows[:, vary:] = np.frombuffer(_vle(first)[vary:] + tail, np.uint8)
    return rows


def _vle(value: int) -> bytes:
    if (1 << 56) <= value < (1 << 63):
        return encode_time(value)  # (a current time: faster)
    return vle_bytes(value)


def timestamp_columns(t0: int, n: int, hlc_id: ZenohId) -> U8 | None:
    """An ``n`` x W array whose row ``i`` is the encoded timestamp ``(t0 + i, hlc_id)``
    (VLE time, then the id's length and bytes), as :func:`encode_timestamp` writes it;
    None when the times' VLE width changes within the run (the caller goes message by
    message)."""
    return vle_rows(t0, n, id_parts(hlc_id))


def splice_run(run: PushRun, head: bytes | None, ts: U8 | None) -> tuple[bytes, Sequence[int]]:
    """The run's messages rewritten for one destination: ``head`` in place of each received
    head (None: keep it), ``ts`` rows inserted after the PUT header with T set (None: the
    body unchanged). Returns the bytes and each message's end offset."""
    data = run.data
    if head is None and ts is None:
        return data, run.ends
    off = run.first.body_offset  # where the PUT/DEL header sits in each message
    new_head = data[:off] if head is None else head
    width = 0 if ts is None else ts.shape[1]
    grow = len(new_head) - off + width  # every message grows by this much
    n = run.count
    if run.stride:
        stride = run.stride
        src = np.frombuffer(data, np.uint8).reshape(n, stride)
        h = len(new_head)
        out = np.empty((n, stride + grow), np.uint8)
        out[:, :h] = np.frombuffer(new_head, np.uint8)
        if ts is None:
            out[:, h:] = src[:, off:]
        else:
            out[:, h] = src[0, off] | PUT_FLAG_T
            out[:, h + 1 : h + 1 + width] = ts
            out[:, h + 1 + width :] = src[:, off + 1 :]
        new_stride = stride + grow
        return out.tobytes(), range(new_stride, n * new_stride + 1, new_stride)
    parts: list[bytes] = []
    if ts is None:
        start = 0
        for end in run.ends:
            parts.append(new_head)
            parts.append(data[start + off : end])
            start = end
    else:
        lead = new_head + bytes((data[off] | PUT_FLAG_T,))
        stamps = ts.tobytes()
        start = 0
        i = 0
        for end in run.ends:
            parts.append(lead)
            parts.append(stamps[i : i + width])
            parts.append(data[start + off + 1 : end])
            i += width
            start = end
    ends = [end + grow * (i + 1) for i, end in enumerate(run.ends)]
    return b"".join(parts), ends
