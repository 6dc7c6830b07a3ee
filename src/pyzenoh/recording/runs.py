"""The records of a routed run of PUSHes, built block by block with numpy.

When the router routes a run of same-shape PUSHes as one unit (:mod:`pyzenoh.routing.runs`),
the recorder gets the run in one call and writes exactly the records it would have written
for each message in turn: the rx record of message ``i``, then its copies' tx records
(caused by that rx record), then message ``i + 1``. When every message of the run and of
each copy has one length, all those records have the same layout row by row, so the
whole group is one 2-D array: headers (an unaligned structured array: only the seqs
differ from row to row), the key tails, and the messages' bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pyzenoh.recording import format as fmt
from pyzenoh.recording.index import I64

#: A net record up to its link id: op, length, channel, sequence, log time, publish
#: time, seq, cause, link (recorder._NET_HEAD, packed).
HEADER = np.dtype(
    [
        ("op", "u1"),
        ("len", "<u8"),
        ("ch", "<u2"),
        ("sq", "<u4"),
        ("lt", "<u8"),
        ("pt", "<u8"),
        ("seq", "<u8"),
        ("cause", "<i8"),
        ("link", "<u4"),
    ]
)
assert HEADER.itemsize == fmt.NET_RECORD.size - 5  # the tail: direction and key length

_M32 = 0xFFFFFFFF

#: Where a run's messages end in its bytes: every message's length when all are as long,
#: else each one's end offset.
RunEnds = int | list[int]


def plain_ends(ends: Sequence[int] | int) -> RunEnds:
    """A run's message ends as the recorder takes them (and marshal carries): the
    stride of a ``range``, else a list."""
    if isinstance(ends, int):
        return ends
    if isinstance(ends, range) and ends.start == ends.step and ends.step > 0:
        return ends.step
    return list(ends)


def run_count(data: bytes, ends: RunEnds) -> int:
    if isinstance(ends, int):
        if ends <= 0 or len(data) % ends:
            raise ValueError("a run's bytes are not a whole number of messages")
        return len(data) // ends
    if not ends or ends[-1] != len(data):
        raise ValueError("a run's last message must end where its bytes end")
    return len(ends)


def run_slices(data: bytes, ends: RunEnds) -> list[bytes]:
    """The messages of a run."""
    if isinstance(ends, int):
        run_count(data, ends)
        return [data[i : i + ends] for i in range(0, len(data), ends)]
    run_count(data, ends)
    out = []
    start = 0
    for end in ends:
        out.append(data[start:end])
        start = end
    return out


#: One slot of a record group: link id, the run's bytes for that link, every message's
#: length in them, and the tail (direction, key) of its records.
Slot = tuple[int, bytes, int, bytes]


def group_records(now_ns: int, seq0: int, fixed: int, slots: list[Slot], n: int, start: int) -> tuple[bytes, I64]:
    """The records of ``n`` messages, each recorded in every slot (the first: the rx
    record, cause -1; the others: tx records caused by it), message by message from seq
    ``seq0``; with the MessageIndex entries (time, offset, flat) for a buffer where they
    start at ``start``. ``fixed``: a record's length without its message bytes."""
    for _, data, size, _ in slots:
        if size <= 0 or len(data) != n * size:
            raise ValueError("every slot holds n messages of its length")
    per = len(slots)
    width = sum(HEADER.itemsize + len(tail) + size for _, _, size, tail in slots)
    out = np.empty((n, width), np.uint8)
    rx_seqs = np.arange(n, dtype=np.int64) * per + seq0
    head = np.empty(n, HEADER)
    head["op"] = fmt.OP_MESSAGE
    head["ch"] = fmt.CH_NET
    head["lt"] = now_ns
    head["pt"] = now_ns
    col = 0
    record_at: list[int] = []
    for j, (link, data, size, tail) in enumerate(slots):
        if not 0 <= link <= fmt.MAX_LINK_ID:
            raise ValueError(f"link id {link} out of range")
        seqs = rx_seqs + j
        head["len"] = fixed + size
        head["sq"] = seqs & _M32
        head["seq"] = seqs
        head["cause"] = -1 if j == 0 else rx_seqs
        head["link"] = link
        record_at.append(col)
        out[:, col : col + HEADER.itemsize] = head.view(np.uint8).reshape(n, HEADER.itemsize)
        col += HEADER.itemsize
        out[:, col : col + len(tail)] = np.frombuffer(tail, np.uint8)
        col += len(tail)
        out[:, col : col + size] = np.frombuffer(data, np.uint8).reshape(n, size)
        col += size
    offsets = (np.arange(n, dtype=np.int64)[:, None] * width + np.array(record_at, np.int64) + start).ravel()
    index = np.empty(2 * offsets.size, np.int64)
    index[0::2] = now_ns
    index[1::2] = offsets
    return out.tobytes(), index
