"""Joining a read's small batches back into one FRAME.

A publisher whose writes never wait sends each PUT in a batch of its own: one FRAME, one
PUSH. A router then reads them by the thousand per read, but decoding and routing them
batch by batch costs it several microseconds per message, so it falls behind exactly when
its publisher is quickest. Consecutive batches that each hold one FRAME of the same
channel (same header and priority, SNs following each other) say nothing more than one
FRAME holding all their messages would: joined, they decode into runs of same-shape
PUSHes (:mod:`.runs`) and are routed as such.

Joining must never change what a stream means, bad input included: the joined FRAME is
used only when it decodes into one FRAME whose messages end exactly where each batch
ended (:func:`aligned`); otherwise the batches are decoded one by one as they came. Sans-IO.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from pyzenoh.codec import Frame
from pyzenoh.codec.batch import MAX_BATCH_PAYLOAD
from pyzenoh.codec.transport import FLAG_R
from pyzenoh.dataplane.runs import PushRun
from pyzenoh.dataplane.scan import ID_FRAME, frame_head

#: Fewest consecutive batches worth joining: below, they are decoded one by one.
MIN_JOIN = 4
#: Most bytes one joined FRAME holds: a whole read of the TCP glue (256 KiB), so its
#: batches become one run, routed and stamped once (64 KiB, four runs a read, cost 0.5 us
#: more per 1 KiB batch). Not the link's negotiated batch size: the joined FRAME never goes
#: on the wire, and a small-batch peer (zenoh-pico's 2 KiB) would then never have two
#: 1 KiB PUTs joined.
MAX_JOINED = 4 * MAX_BATCH_PAYLOAD


@dataclass(slots=True)
class Joined:
    """``payload``: batches ``start``..``stop - 1`` as one batch (the first one's FRAME
    header and SN, then every batch's messages); ``cuts``: where each batch's messages end
    in the joined FRAME's messages (offsets from its first message); ``first_sn`` and
    ``last_sn``: the SNs of the first and the last batch joined."""

    payload: bytes
    start: int
    stop: int
    cuts: list[int]
    reliable: bool
    priority: int
    first_sn: int
    last_sn: int


def join(batches: Sequence[bytes], start: int, mask: int, limit: int = MAX_JOINED) -> Joined | None:
    """Batches from ``start`` on that one FRAME can hold (at least :data:`MIN_JOIN`, all
    together at most ``limit`` bytes), or None."""
    n = len(batches)
    if n - start < MIN_JOIN:
        return None
    first = batches[start]
    h = first[0]
    if h & 0x1F != ID_FRAME:
        return None
    head = frame_head(first, 0, len(first))
    if head is None or head[2] >= len(first):
        return None
    first_sn, priority, body = head
    parts = [first]
    size = len(first)
    cuts = [size - body]
    sn = first_sn
    i = start + 1
    while i < n:
        b = batches[i]
        if b[0] != h:
            break
        head = frame_head(b, 0, len(b))
        if head is None:
            break
        s, prio, p = head
        if s != (sn + 1) & mask or prio != priority or p >= len(b):
            break
        size += len(b) - p
        if size > limit:
            break
        parts.append(b[p:])
        cuts.append(size - body)
        sn = s
        i += 1
    if i - start < MIN_JOIN:
        return None
    return Joined(b"".join(parts), start, i, cuts, bool(h & FLAG_R), priority, first_sn, sn)


def aligned(frame: Frame, cuts: Sequence[int]) -> bool:
    """Whether ``frame`` (decoded with its messages' raw bytes) has a message ending at
    every offset of ``cuts`` and its last message ending at the last cut: then it holds
    exactly the messages of the batches joined, none astride two of them."""
    k = 0
    end = 0
    ncuts = len(cuts)
    for item, raw in zip(frame.messages, frame.raw, strict=True):
        begin = end
        end += len(raw)
        # a cut inside this item: only between two messages of a run
        while k < ncuts and cuts[k] < end:
            if not isinstance(item, PushRun) or not _ends_at(item, cuts[k] - begin):
                return False
            k += 1
        if k < ncuts and cuts[k] == end:
            k += 1
    return k == ncuts and end == cuts[-1]


def _ends_at(run: PushRun, offset: int) -> bool:
    if run.stride:
        return offset % run.stride == 0
    ends = run.ends
    i = bisect.bisect_left(ends, offset)
    return i < len(ends) and ends[i] == offset
