"""Routing a run of same-shape PUSHes as one unit.

A publisher's batch holds hundreds of PUSHes on one key with one QoS and body shape
(:class:`~pyzenoh.transport.fastpath.PushRun`). Routing them one by one repeats the same
route lookup, decisions and encodings for each; here the run takes one route lookup, one
decision per destination, and its bytes are written for each distinct key representation
with numpy, block by block: the destination's head, the PUT header with T set, the
router's HLC timestamps (consecutive, as the per-message path would issue them), then the
rest of each received message.

Runs already stamped (a router neighbour's, with their NodeId) keep their timestamps: the
clock takes note of the latest, and the bytes go on with only the head rewritten.

Anything the run path does not cover goes message by message through
:meth:`PubSub._on_push`, which stays the one definition of routing data: access control
restricting the route, an observer wanting one event per message, a dropped route, a
timestamp width changing within the run, a timestamp too far in the future.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pyzenoh.codec import Push, Put, Timestamp, WireExpr, ZenohId
from pyzenoh.codec.data import FLAG_T as PUT_FLAG_T
from pyzenoh.routing.faces import Face
from pyzenoh.routing.pubsub import PubSub
from pyzenoh.routing.types import make_send
from pyzenoh.transport.fastpath import PushRun

U8 = npt.NDArray[np.uint8]


def vle_width(value: int) -> int:
    """Bytes of the VLE encoding of ``value``."""
    return max(1, (value.bit_length() + 6) // 7)


#: VLE 7-bit group shifts for each width (numpy operands, made once).
_SHIFTS = [np.arange(0, 7 * w, 7, dtype=np.uint64) for w in range(11)]
_LOW7 = np.uint64(0x7F)


def timestamp_columns(t0: int, n: int, hlc_id: ZenohId) -> U8 | None:
    """An ``n`` x W array whose row ``i`` is the encoded timestamp ``(t0 + i, hlc_id)``
    (VLE time, then the id's length and bytes); None when the times' VLE width changes
    within the run (once in centuries: the caller goes message by message)."""
    width = vle_width(t0)
    if width > 9 or vle_width(t0 + n - 1) != width:  # 10-byte VLEs: never before 2038
        return None
    zid = hlc_id.to_wire()
    cols = np.empty((n, width + 1 + len(zid)), np.uint8)
    # Consecutive times differ only in their low 7-bit groups (two or three for a run):
    # those are computed for every row, the rest is one row of bytes for all.
    last = t0 + n - 1
    vary = 1
    while vary < width and t0 >> (7 * vary) != last >> (7 * vary):
        vary += 1
    times = np.arange(t0, t0 + n, dtype=np.uint64)
    cols[:, :vary] = (times[:, None] >> _SHIFTS[vary]) & _LOW7
    cols[:, : min(vary, width - 1)] |= 0x80  # continuation bits on all but the last group
    same = bytes(((t0 >> (7 * g)) & 0x7F) | (0x80 if g < width - 1 else 0) for g in range(vary, width))
    cols[:, vary:] = np.frombuffer(same + bytes((len(zid),)) + zid, np.uint8)
    return cols


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


class PushRuns(PubSub):
    """Routing of :class:`PushRun` units (the per-message rules live in :mod:`.pubsub`)."""

    def _on_push_run(self, f: Face, run: PushRun, reliable: bool) -> None:
        msg = run.first
        route = self._data_route(f, msg.wire_expr, msg.node_id)
        if route.key is None or route.acl is not None or self.observer is not None:
            self._push_run_one_by_one(f, run, reliable)
            return
        ts = None
        stamp = msg.body.timestamp
        if route.dests and self.config.timestamping and msg.body.__class__ is Put:
            if stamp is None:  # the router stamps them
                ts = timestamp_columns(self._hlc.reserve(self._wall, run.count), run.count, self._hlc.hlc_id)
                if ts is None:
                    self._push_run_one_by_one(f, run, reliable)
                    return
            # Stamped already (by a router neighbour): the clock takes note of the latest;
            # one too far ahead sends the run message by message (restamped or dropped).
            elif not self._hlc.update(Timestamp(max(run.times()), stamp.id), self._wall):
                self._push_run_one_by_one(f, run, reliable)
                return
        stats = self.stats
        stats.pushes_routed += run.count
        stats.push_runs_routed += 1
        stats.pushes_in_runs += run.count
        out = self._out
        # one copy per key representation, however many faces it goes to
        copies: dict[tuple[WireExpr, int | None], tuple[Push, bytes, Sequence[int]]] = {}
        for fid, we, node in route.dests:
            made = copies.get((we, node))
            if made is None:
                routed = msg.routed(we, msg.body, None, node)
                head = None if we == msg.wire_expr and node == msg.node_id else self._push_head(routed)
                made = copies[(we, node)] = (routed, *splice_run(run, head, ts))
            out.append(make_send(fid, made[0], msg.qos, made[1], reliable, made[2]))

    def _push_run_one_by_one(self, f: Face, run: PushRun, reliable: bool) -> None:
        for msg, raw in run.messages():
            self._on_push(f, msg, raw, reliable)
