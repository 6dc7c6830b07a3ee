"""Receiving: bytes in, batches to transport messages (handshake ones go to
:mod:`.handshake`), SN checks per channel (priority, reliability), FRAMEs to events, and
FRAGMENTs reassembled within ``max_message_size`` and the shared
:class:`~.state.ReassemblyBudget`.

This is the path every routed message takes: keep it free of extra calls.
"""

from __future__ import annotations

import logging

from pyzenoh.codec import (
    Close,
    Fragment,
    Frame,
    InitAck,
    InitSyn,
    KeepAlive,
    NetworkMessage,
    OpenAck,
    OpenSyn,
    decode_network_message,
)
from pyzenoh.codec.compression import decompress_batch
from pyzenoh.codec.transport import FLAG_R, PRIORITY_DATA
from pyzenoh.dataplane import PushRun, push_of, scan_lone
from pyzenoh.dataplane.batch import decode_batch as fast_decode_batch
from pyzenoh.dataplane.joining import MIN_JOIN, Joined, aligned, join
from pyzenoh.errors import CloseReason, DecodeError, PeerError
from pyzenoh.security.usrpwd import AuthError
from pyzenoh.transport.link.events import Event, Received, ReceivedPush, ReceivedRun
from pyzenoh.transport.link.handshake import Handshake
from pyzenoh.transport.link.state import LinkState, State, _channel

log = logging.getLogger(__name__)


class Receiver:
    """Bytes from the peer to events; handshake messages go to the handshake."""

    __slots__ = ("handshake", "s")

    def __init__(self, s: LinkState, handshake: Handshake) -> None:
        self.s = s
        self.handshake = handshake

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Bytes read from the connection (any split). Returns what they caused."""
        s = self.s
        if s.state is State.CLOSED:
            return []
        s.last_rx = now
        events: list[Event] = []
        try:
            batches = s.reader.feed(data)
            n = len(batches)
            i = 0
            one_by_one = 0  # batches before this index are not joined again
            plain = 0  # batches before this index are decompressed (or precede compression)
            while i < n:
                if s.rx_compress and i >= plain:
                    # everything after the handshake is compressed: no lane sees a header byte
                    limit = s.reader.max_payload
                    batches[i:] = [decompress_batch(b, limit) for b in batches[i:]]
                    plain = n
                if n - i >= MIN_JOIN and i >= one_by_one and s.config.push_runs and s.state is State.ESTABLISHED:
                    joined = join(batches, i, s.mask)
                    if joined is not None:
                        if self._on_joined(joined, events):
                            i = joined.stop
                            continue
                        # Not joinable after all: these go one by one, and are not
                        # scanned again from each of them (that would be quadratic).
                        one_by_one = joined.stop
                self._on_batch(batches[i], now, events)
                i += 1
                if s.is_closed:  # a CLOSE from the peer ends the stream
                    break
        except AuthError as exc:
            s.fail(exc.close_reason, f"usrpwd authentication failed: {exc}", events, auth_failed=True)
        except PeerError as exc:
            s.fail(exc.close_reason, f"bad input from peer: {exc}", events)
        return events

    def _on_batch(self, payload: bytes, now: float, events: list[Event]) -> None:
        s = self.s
        if s.state is State.ESTABLISHED and (lone := scan_lone(payload)) is not None:
            # One FRAME, one PUSH (every message of a ping-pong): no Frame is built.
            fields, sn, priority, at = lone
            reliable = bool(payload[0] & FLAG_R)
            if self._rx_channel(priority, reliable, sn) >= 0:
                if s.config.lone_pushes:
                    events.append(ReceivedPush(payload, at, fields, reliable, priority))
                else:
                    raw = payload[at:] if s.keep_raw else b""
                    events.append(Received(push_of(fields, payload), raw, reliable, priority))
            else:
                log.debug("dropping frame with stale SN %d", sn)
            return
        messages = fast_decode_batch(
            payload, keep_raw=s.keep_raw, runs=s.config.push_runs, stamped=s.config.stamped_runs
        )
        for msg in messages:
            if s.state is State.CLOSED:
                return
            if isinstance(msg, Frame):
                if s.state is not State.ESTABLISHED:
                    raise DecodeError("FRAME before the handshake finished")
                self._on_frame(msg, events)
            elif isinstance(msg, KeepAlive):
                if s.state is not State.ESTABLISHED:
                    raise DecodeError("KEEPALIVE before the handshake finished")
            elif isinstance(msg, Fragment):
                if s.state is not State.ESTABLISHED:
                    raise DecodeError("FRAGMENT before the handshake finished")
                self._on_fragment(msg, now, events)
            elif isinstance(msg, Close):
                events.append(self.handshake.peer_close(msg.reason))
                return
            elif isinstance(msg, InitAck):  # before InitSyn: InitAck subclasses it
                self.handshake.on_init_ack(msg, events)
            elif isinstance(msg, InitSyn):
                self.handshake.on_init_syn(msg, events)
            elif isinstance(msg, OpenAck):
                self.handshake.on_open_ack(msg, now, events)
            elif isinstance(msg, OpenSyn):
                self.handshake.on_open_syn(msg, now, events)
            # JOIN and transport OAM mean nothing on a unicast link: ignored.

    def _on_joined(self, joined: Joined, events: list[Event]) -> bool:
        """Handle batches joined into one FRAME (see :mod:`pyzenoh.dataplane.joining`) when that means the
        same as handling them one by one: their first SN is the next one expected, and the
        joined FRAME decodes into exactly their messages. False: nothing was done."""
        s = self.s
        if not s.qos and joined.priority != PRIORITY_DATA:
            return False  # the batches themselves close the link (no QoS negotiated)
        ch = _channel(joined.priority, joined.reliable)
        if joined.first_sn != (s.rx_last[ch] + 1) & s.mask:
            return False  # a gap or a replay: each batch's SN is checked on its own
        try:
            decoded = fast_decode_batch(joined.payload, keep_raw=True, runs=True, stamped=s.config.stamped_runs)
        except DecodeError:
            return False
        if len(decoded) != 1 or not isinstance(frame := decoded[0], Frame) or not aligned(frame, joined.cuts):
            return False
        if not s.keep_raw:
            frame.raw = ()
        self._on_frame(frame, events)
        s.rx_last[ch] = joined.last_sn
        return True

    def _rx_channel(self, priority: int, reliable: bool, sn: int) -> int:
        """The channel index of an incoming frame, or -1 to drop it (duplicate/old SN)."""
        s = self.s
        if not s.qos and priority != PRIORITY_DATA:
            raise DecodeError(f"priority {priority} frame without negotiated QoS")
        if sn > s.mask:
            raise DecodeError(f"SN {sn} exceeds the SN resolution")
        ch = priority * 2 + reliable  # _channel(), inlined: every message comes here
        gap = (sn - s.rx_last[ch]) & s.mask
        if gap == 0 or gap > s.mask // 2:
            return -1
        s.rx_last[ch] = sn
        return ch

    def _on_frame(self, frame: Frame, events: list[Event]) -> None:
        if self._rx_channel(frame.priority, frame.reliable, frame.sn) < 0:
            log.debug("dropping frame with stale SN %d", frame.sn)
            return
        raws = frame.raw
        rel = frame.reliable
        prio = frame.priority
        # With push_runs a FRAME's messages include PushRun items (see pyzenoh.dataplane.runs).
        messages: tuple[NetworkMessage | PushRun, ...] = frame.messages
        for i, msg in enumerate(messages):
            if isinstance(msg, PushRun):
                events.append(ReceivedRun(msg, rel, prio))
            else:
                events.append(Received(msg, raws[i] if raws else b"", rel, prio))

    def _on_fragment(self, frag: Fragment, now: float, events: list[Event]) -> None:
        s = self.s
        ch = self._rx_channel(frag.priority, frag.reliable, frag.sn)
        if ch < 0:
            return
        d = s.defrag[ch]
        patched = s.patch >= 1
        if frag.drop:
            s.defrag_reset(d)
            return
        if d.active and frag.sn != d.next_sn:
            log.debug("fragment SN gap (%d, expected %d): message dropped", frag.sn, d.next_sn)
            s.defrag_reset(d)
        if patched and frag.first:
            s.defrag_reset(d)
        if not d.active:
            if patched and not frag.first:
                return  # the tail of a message whose start we never saw
            d.active = True
        d.next_sn = (frag.sn + 1) & s.mask
        d.since = now
        if not d.discarding:
            n = len(frag.payload)
            budget = s.budget
            if len(d.buf) + n > s.config.max_message_size:
                # zenohd drops a message over max_message_size and keeps the link
                log.warning("fragmented message over %d bytes discarded", s.config.max_message_size)
                s.defrag_reset(d)
                d.active = True
                d.discarding = True
            elif budget is not None and budget.used + n > budget.limit:
                s.fail(
                    CloseReason.GENERIC,
                    f"unfinished fragmented messages over the router's reassembly budget ({budget.limit} bytes)",
                    events,
                )
                return
            else:
                d.buf += frag.payload
                s.defrag_bytes += n
                if budget is not None:
                    budget.used += n
        if frag.more:
            return
        data = bytes(d.buf)
        discard = d.discarding
        s.defrag_reset(d)
        if discard or not data:
            return
        msg = decode_network_message(data)
        events.append(Received(msg, data, frag.reliable, frag.priority))
