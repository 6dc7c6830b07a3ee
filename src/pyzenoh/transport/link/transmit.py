"""Transmitting: network messages queued per channel (priority, reliability) in send
order, then packed into batches when the caller asks for bytes: several messages per
FRAME, one FRAME per batch, FRAGMENTs (one per batch) for a message too big for one.

This is the path every routed message takes: keep it free of extra calls.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np

from pyzenoh.codec import Fragment, NetworkMessage, encode_network_message
from pyzenoh.codec.batch import LENGTH_PREFIX
from pyzenoh.codec.compression import compress_stream
from pyzenoh.codec.primitives import vle_bytes
from pyzenoh.codec.transport import PRIORITY_DATA, frame_header_parts
from pyzenoh.dataplane.splice import vle_rows
from pyzenoh.errors import UsageError
from pyzenoh.transport.link.config import (
    NUM_PRIORITIES,
)
from pyzenoh.transport.link.state import LinkState, State, _channel, close_batch

#: The longest FRAME header: header byte, a five-byte SN, a two-byte priority extension.
MAX_FRAME_HEADER = 8
#: Fewest messages framed at once by :meth:`Transmitter._batch_each` (below, numpy's
#: fixed cost is more than a loop's).
BATCH_EACH_MIN = 8


class Transmitter:
    """Messages to the peer, queued and then framed into batches."""

    __slots__ = ("s",)

    def __init__(self, s: LinkState) -> None:
        self.s = s

    @property
    def pending_bytes(self) -> int:
        """Bytes queued by :meth:`send` and not yet returned by :meth:`data_to_send`."""
        s = self.s
        return s.pending_bytes + len(s.out)

    @property
    def has_output(self) -> bool:
        """Whether :meth:`data_to_send` has anything to return."""
        s = self.s
        return bool(s.pending_bytes or s.out)

    def send(
        self,
        message: NetworkMessage | bytes,
        *,
        reliable: bool = True,
        priority: int | None = None,
    ) -> None:
        """Queue a network message (an object, or its already-encoded bytes).

        ``priority`` defaults to the message's own QoS priority (Data for raw bytes).
        Without negotiated QoS every message travels in a Data-priority frame.
        """
        s = self.s
        if s.state is State.CLOSED:
            return
        if isinstance(message, bytes | bytearray | memoryview):
            raw = bytes(message)
            prio = PRIORITY_DATA if priority is None else priority
        else:
            raw = encode_network_message(message)
            prio = (message.qos & 0x07) if priority is None else priority
        if not raw:
            raise UsageError("empty network message")
        self._queue(prio, reliable, [raw], len(raw))

    def send_run(
        self, data: bytes, ends: Sequence[int], *, reliable: bool = True, priority: int = PRIORITY_DATA
    ) -> None:
        """Queue several encoded network messages at once: ``data`` holds them back to back,
        message ``i`` ending at ``ends[i]`` (increasing; a ``range`` for equal lengths).

        They travel as consecutive messages of one channel, cut into pieces that each fit
        one FRAME, so no message is ever fragmented or split between batches.
        """
        s = self.s
        if s.state is State.CLOSED or not ends:
            return
        if ends[-1] != len(data):
            raise UsageError("a run's last message must end where its data ends")
        room = s.max_payload - MAX_FRAME_HEADER
        total = len(data)
        if total <= room:
            pieces = [data]
        elif type(ends) is range and ends.start == ends.step:
            # messages of one length (most runs): pieces of as many as fit, by arithmetic
            if self._batch_each(data, ends.step, len(ends), reliable, priority):
                return
            chunk = max(room // ends.step, 1) * ends.step
            pieces = [data[i : i + chunk] for i in range(0, total, chunk)]
        else:
            pieces = []
            start = 0
            first = 0  # index of the first message of the piece
            n = len(ends)
            while first < n:
                # the most messages from ``first`` on that fit ``room`` (at least one)
                last = bisect.bisect_right(ends, start + room, first, n) - 1
                last = max(last, first)  # one message larger than a FRAME: _pack fragments it
                end = ends[last]
                pieces.append(data[start:end])
                start = end
                first = last + 1
        self._queue(priority, reliable, pieces, total)

    def _batch_each(self, data: bytes, stride: int, n: int, reliable: bool, priority: int) -> bool:
        """``n`` messages of ``stride`` bytes each, when no two fit one batch (1 KiB PUTs
        to zenoh-pico's 2 KiB batches): framed all at once into the output, one batch
        each, the bytes :meth:`pack` would write one by one, after what was queued before
        them. False (nothing done) otherwise."""
        s = self.s
        if s.state is not State.ESTABLISHED or n < BATCH_EACH_MIN:
            return False
        if not s.qos:
            priority = PRIORITY_DATA
        elif not 0 <= priority < NUM_PRIORITIES:
            return False  # _queue() says what is wrong
        if 2 * stride + 2 <= s.max_payload:
            return False  # two fit one batch (2: the shortest FRAME header)
        if s.pending_bytes:
            self.pack()  # (what data_to_send does first): these go after it, with the SNs after its
        ch = priority * 2 + reliable
        sn = s.tx_sn[ch]
        if sn + n - 1 > s.mask:
            return False  # the SNs wrap within the run
        header, ext = frame_header_parts(reliable, priority)
        sns = vle_rows(sn, n, ext)
        if sns is None:
            return False  # the SN's width changes within the run
        head = 1 + sns.shape[1]  # header byte, SN, priority extension
        size = head + stride
        if size > s.max_payload or size + stride <= s.max_payload:
            return False  # a message alone does not fit (fragments), or two would
        rows = np.empty((n, LENGTH_PREFIX + size), np.uint8)
        rows[:, 0] = size & 0xFF  # the length prefix, u16 little-endian
        rows[:, 1] = size >> 8
        rows[:, 2] = header
        rows[:, 3 : LENGTH_PREFIX + head] = sns
        rows[:, LENGTH_PREFIX + head :] = np.frombuffer(data, np.uint8).reshape(n, stride)
        s.out += rows.data
        s.tx_sn[ch] = (sn + n) & s.mask
        return True

    def _queue(self, prio: int, reliable: bool, pieces: list[bytes], nbytes: int) -> None:
        """Queue ``pieces`` (each one message, or several that fit one FRAME) on the run
        of their channel, joining the last run when it is the same channel."""
        s = self.s
        if not 0 <= prio < NUM_PRIORITIES:
            raise UsageError(f"priority {prio} out of range 0..7")
        pending = s.pending
        if pending and pending[-1][0] == prio and pending[-1][1] is reliable:
            pending[-1][2].extend(pieces)
        else:
            pending.append((prio, reliable, pieces))
        s.pending_bytes += nbytes

    def batch_now(self, raw: bytes, *, reliable: bool, priority: int) -> bytes | None:
        """``raw`` (one encoded network message) framed in a batch of its own, to be
        written at once: an express message when nothing waits before it. None when it
        must be queued (:meth:`send`): output pending, not established, or too big for
        one FRAME. Same bytes as :meth:`send` then :meth:`data_to_send`, without the queue."""
        s = self.s
        if s.pending_bytes or s.out or s.state is not State.ESTABLISHED or not raw:
            return None
        if not s.qos:
            priority = PRIORITY_DATA
        elif not 0 <= priority < NUM_PRIORITIES:
            return None  # send() says what is wrong
        ch = priority * 2 + reliable  # _channel(), inlined: every express message comes here
        sn = s.tx_sn[ch]
        header, ext = frame_header_parts(reliable, priority)
        out = bytearray((0, 0, header))
        out += vle_bytes(sn)
        out += ext
        n = len(out) - LENGTH_PREFIX + len(raw)
        if n > s.max_payload:
            return None
        out += raw
        out[0] = n & 0xFF  # the length prefix, u16 little-endian
        out[1] = n >> 8
        s.tx_sn[ch] = (sn + 1) & s.mask
        s.sent_since_keepalive = True
        if s.tx_compress:
            return compress_stream(out, 0)
        return bytes(out)

    def data_to_send(self) -> bytes:
        """Every byte that should now be written to the connection, batches framed."""
        s = self.s
        if s.pending_bytes and s.state is State.ESTABLISHED:
            self.pack()
        if not s.out:
            return b""
        if s.tx_compress:
            data = compress_stream(s.out, s.raw_until)
            s.raw_until = 0
        else:
            data = bytes(s.out)
        s.out.clear()
        s.sent_since_keepalive = True
        return data

    def pack(self) -> None:
        """Turn every queued message into framed batches appended to the output.

        Batches are written straight into the output: a batch opens with room for its
        length prefix, which is filled in when it closes (no copy of a batch buffer)."""
        s = self.s
        pending = s.pending
        s.pending = []
        s.pending_bytes = 0
        maxp = s.max_payload
        out = s.out
        start = -1  # where the open batch's length prefix sits in out (-1: none open)
        mask = s.mask
        tx_sn = s.tx_sn
        qos = s.qos
        if qos:
            pending.sort(key=_run_priority)  # stable: send order within each priority
        open_ch = -1  # the channel of the FRAME the open batch holds
        for prio, reliable, raws in pending:
            if not qos:
                prio = PRIORITY_DATA
            ch = _channel(prio, reliable)
            frame_open = ch == open_ch and start >= 0
            header, ext = frame_header_parts(reliable, prio)
            sn = tx_sn[ch]
            for raw in raws:
                n = len(raw)
                if frame_open and len(out) - start - LENGTH_PREFIX + n <= maxp:
                    out += raw
                    continue
                # A new FRAME opens a new batch: one FRAME per batch, and what did not fit
                # the open FRAME would not fit another one after it either.
                if start >= 0:
                    used = len(out) - start - LENGTH_PREFIX  # close_batch(), inlined
                    out[start] = used & 0xFF
                    out[start + 1] = used >> 8
                    start = -1
                sn_bytes = vle_bytes(sn)
                if 1 + len(sn_bytes) + len(ext) + n > maxp:
                    tx_sn[ch] = sn
                    self._fragment(raw, prio, reliable, ch)
                    sn = tx_sn[ch]
                    frame_open = False
                    continue
                start = len(out)
                out += b"\0\0"
                out.append(header)
                out += sn_bytes
                if ext:
                    out += ext
                out += raw
                sn = (sn + 1) & mask
                frame_open = True
            tx_sn[ch] = sn
            open_ch = ch
        if start >= 0:
            close_batch(out, start)

    def _fragment(self, raw: bytes, prio: int, reliable: bool, ch: int) -> None:
        """Cut one message that does not fit a batch into FRAGMENTs, one batch each."""
        s = self.s
        maxp = s.max_payload
        out = s.out
        mask = s.mask
        pos = 0
        total = len(raw)
        first = s.patch >= 1
        view = memoryview(raw)
        while pos < total:
            sn = s.tx_sn[ch]
            s.tx_sn[ch] = (sn + 1) & mask
            start = len(out)
            out += b"\0\0"
            Fragment(reliable, sn, b"", True, prio, first).write(out)
            head = start + LENGTH_PREFIX  # the FRAGMENT header byte
            chunk = view[pos : pos + maxp - (len(out) - head)]
            pos += len(chunk)
            if pos >= total:
                out[head] &= ~0x40  # clear M on the last fragment
            out += chunk
            close_batch(out, start)
            first = False


def _run_priority(run: tuple[int, bool, list[bytes]]) -> int:
    return run[0]
