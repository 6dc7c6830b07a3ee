"""Runs: consecutive PUSHes of one FRAME that differ only in their payload (and time).

A publisher's batch holds hundreds of PUSHes on one key with one QoS and body shape. A
:class:`PushRun` stands for them all: found by checking the buffer column by column
(:func:`scan_run`), decoded message by message only when something needs the messages
(:meth:`PushRun.messages`, the per-message path's own decoding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pyzenoh.codec import Push
from pyzenoh.codec.data import FLAG_E
from pyzenoh.codec.primitives import VLE_MAX_BYTES
from pyzenoh.dataplane.scan import (
    ID_DEL,
    PushFields,
    decode_push,
    push_of,
    read_z32,
    scan_push,
)

#: Fewer same-shape PUSHes than this in a row are decoded one by one: a run's fixed cost
#: (a few slices, a route lookup per batch) pays off only over several messages.
MIN_RUN = 4


@dataclass(frozen=True, slots=True)
class PushRun:
    """Consecutive PUSHes of one FRAME that differ only in their payload and, with
    ``stamped`` scanning, their timestamp's time (same key, QoS, PUT/DEL header, timestamp
    id and encoding; no other extension): a publisher's stream, or a router's.

    ``first`` is the first message decoded (its key, QoS and body shape stand for all);
    ``data`` the messages back to back, message ``i`` ending at ``ends[i]`` (a ``range``
    when all are ``stride`` bytes long, else a list and ``stride`` 0). Every message starts
    with the same ``prefix_len`` bytes: up to the payload length without a timestamp (the
    whole message for a DEL), up to the time of the timestamp with one (``stamped``).
    ``payload_at[i]`` is where message ``i``'s payload starts in ``data`` (its length field
    is just before it).
    """

    first: Push
    data: bytes
    ends: Sequence[int]
    stride: int
    prefix_len: int
    stamped: bool
    payload_at: Sequence[int]

    @property
    def count(self) -> int:
        return len(self.ends)

    def payloads(self) -> list[bytes]:
        data = self.data
        return [data[a:b] for a, b in zip(self.payload_at, self.ends, strict=True)]

    def times(self) -> list[int]:
        """Each message's timestamp time (NTP64), for a ``stamped`` run."""
        data = self.data
        at = self.prefix_len
        if self.stride:  # the same VLE width in every message: one column per 7-bit group
            width = _z64_width(data, at)
            cols = np.frombuffer(data, np.uint8).reshape(-1, self.stride)[:, at : at + width]
            # the ninth byte of a z64 carries eight bits, not seven and a continuation bit
            mask = _Z64_MASKS[:width] if width < VLE_MAX_BYTES else _Z64_MASKS
            times = (cols & mask).astype(np.uint64) << _SHIFTS[:width]
            return np.bitwise_or.reduce(times, axis=1).tolist()  # type: ignore[no-any-return]
        out: list[int] = []
        start = 0
        for end in self.ends:
            p = start + at
            time = 0
            for shift in range(0, 56, 7):  # a z64 the scan checked
                b = data[p]
                p += 1
                time |= (b & 0x7F) << shift
                if b < 0x80:
                    break
            else:
                time |= data[p] << 56
            out.append(time)
            start = end
        return out

    def messages(self) -> list[tuple[Push, bytes]]:
        """Every message decoded, with its bytes (the per-message path, one definition)."""
        return split_pushes(self.data, self.ends)


def split_pushes(data: bytes, ends: Sequence[int]) -> list[tuple[Push, bytes]]:
    """The common-shape PUSHes ``data`` holds back to back (message ``i`` ending at
    ``ends[i]``: a run, or a routed copy of one), decoded, each with its bytes."""
    out: list[tuple[Push, bytes]] = []
    start = 0
    for end in ends:
        res = decode_push(data, start, end)
        assert res is not None and res[1] == end, "a run holds only common-shape PUSHes"
        out.append((res[0], data[start:end]))
        start = end
    return out


_SHIFTS = np.arange(0, 63, 7, dtype=np.uint64)  # the 9 groups of a z64, low first
#: What each byte of a z64 contributes: 7 bits, but all 8 of the ninth.
_Z64_MASKS = np.array([0x7F] * (VLE_MAX_BYTES - 1) + [0xFF], np.uint8)


def _z64_width(buf: bytes, p: int) -> int:
    """Bytes of the z64 at ``buf[p]`` (checked already): up to nine, the ninth whole."""
    width = 1
    while width < VLE_MAX_BYTES and buf[p + width - 1] >= 0x80:
        width += 1
    return width


#: bytes.translate deletion tables: what is left of a column tells whether every byte of it
#: has (or lacks) the VLE continuation bit.
_HIGH = bytes(range(0x80, 0x100))
_LOW = bytes(range(0x80))


def scan_run(buf: bytes, pos: int, end: int, stamped: bool = False, f: PushFields | None = None) -> PushRun | None:
    """The run of same-shape PUSHes starting at ``buf[pos]`` (at least :data:`MIN_RUN`),
    or None: decode message by message. Without ``stamped``, messages with a timestamp
    are never a run (a router stamps them itself); with it, their times may differ.
    ``f``: what :func:`scan_push` found there already, if the caller has it."""
    if f is None:
        f = scan_push(buf, pos, end)
    if f is None or (f.timestamp is not None and not stamped):
        return None
    after, body_offset, kind, payload_at = f.after, f.body_offset, f.kind, f.payload_start
    length = after - pos
    put_header = buf[pos + body_offset]
    fixed = payload_at - pos  # everything but the payload: equal in equal messages...
    ts_at = ts_width = 0
    if f.timestamp is not None:  # ...but the time, with a timestamp
        prefix_len = ts_at = body_offset + 1
        ts_width = _z64_width(buf, pos + ts_at)
    elif kind == ID_DEL:
        prefix_len = length
    else:  # PUT header, the encoding byte when E is set, then the payload length
        prefix_len = body_offset + 1 + (1 if put_header & FLAG_E else 0)
    total = end - pos
    if total % length == 0 and total >= MIN_RUN * length:
        # All the rest may be messages of this length: check byte column by column that
        # each starts like this one (a slice with a step takes one column of all of them).
        n = total // length
        for k in range(fixed):
            col = buf[pos + k : end : length]
            if ts_at <= k < ts_at + ts_width:  # the time: a z64 of the same width
                last = k == ts_at + ts_width - 1
                if last and ts_width == VLE_MAX_BYTES:
                    continue  # a ninth byte: any value
                if col.translate(None, _LOW if last else _HIGH):
                    break
            elif col.count(buf[pos + k]) != n:
                break
        else:
            po = payload_at - pos
            return _run(
                f, buf, pos, end, range(length, total + 1, length), length, prefix_len, range(po, po + total, length)
            )
    prefix = buf[pos : pos + prefix_len]
    # with a timestamp: what follows the time up to the payload length (id, encoding)
    mid = b""
    if ts_at:
        m = pos + ts_at + ts_width
        mid = buf[m : m + 1 + buf[m] + (1 if put_header & FLAG_E else 0)]
    found = [length]
    starts = [payload_at - pos]
    p = after
    while p < end and buf.startswith(prefix, p):
        q = p + prefix_len
        if ts_at:
            width = 0
            while width < VLE_MAX_BYTES and q + width < end:  # the time: z64
                width += 1
                if buf[q + width - 1] < 0x80:
                    break
            if q + width >= end or (width < VLE_MAX_BYTES and buf[q + width - 1] >= 0x80):
                break  # truncated: the codec says so when it gets there
            q += width
            if not buf.startswith(mid, q):
                break
            q += len(mid)
        if kind != ID_DEL:
            read = read_z32(buf, q, end)  # the payload length
            if read is None:
                break
            n, q = read
            starts.append(q - pos)
            q += n
            if q > end:
                break  # truncated: the codec says so when it gets there
        else:
            starts.append(q - pos)
        found.append(q - pos)
        p = q
    if len(found) < MIN_RUN:
        return None
    starts = starts[: len(found)]
    return _run(f, buf, pos, pos + found[-1], found, 0, prefix_len, starts)


def _run(
    f: PushFields,
    buf: bytes,
    pos: int,
    end: int,
    ends: Sequence[int],
    stride: int,
    prefix_len: int,
    payload_at: Sequence[int],
) -> PushRun:
    return PushRun(push_of(f, buf), buf[pos:end], ends, stride, prefix_len, f.timestamp is not None, payload_at)
