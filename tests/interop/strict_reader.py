"""A scripted Zenoh client that checks every batch a router sends it, on the raw bytes.

:class:`StrictReader` connects over TCP, runs the handshake with the sans-IO
:class:`~pyzenoh.transport.link.Link` (QoS offered or not), declares one subscriber, and
from then on splits the byte stream itself with :class:`~pyzenoh.codec.BatchReader`,
decodes each batch with :func:`~pyzenoh.codec.decode_batch` and checks it. Every breach
is recorded in :attr:`StrictReader.violations` with the decoded batch as evidence; the
data it carried (FRAGMENTs reassembled here, not by the Link) lands in
:attr:`StrictReader.delivered` in arrival order.

The rules are what a reader as strict as zenoh-pico may rely on, and (but for the two
noted below) what the real eclipse-zenoh 1.10.2 router always sends:

* every batch decodes, and one holding a FRAME or FRAGMENT holds nothing else
  (zenoh-pico reads everything after a FRAME header as that frame's messages, and a
  FRAGMENT runs to the end of its batch by definition);
* a FRAME carries at least one network message;
* without negotiated QoS no FRAME or FRAGMENT has a priority extension (one lane);
* with QoS every PUSH travels in the FRAME of its own priority;
* SNs are consecutive per (priority, reliability) channel, from the router's initial SN
  (the real router skips one after each fragmented message: see ``StrictReader``);
* a fragmented message starts with a First fragment (patch 1) and its fragments are not
  interleaved with another FRAME/FRAGMENT of the same channel, nor, without QoS, with any
  other FRAME/FRAGMENT (one lane: a message is sent whole before the next one starts).

Checked against the real router, two of these rules are too strict for it, and
``StrictReader`` has a switch for each (``allow_reliability_switch``,
``allow_sn_gap_after_fragments``): see its docstring. pyzenoh is held to the strict form.
"""

from __future__ import annotations

import itertools
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pyzenoh.codec import (
    BatchReader,
    Close,
    Declare,
    DeclareSubscriber,
    DecodeError,
    Fragment,
    Frame,
    KeepAlive,
    NetworkMessage,
    Push,
    Put,
    TransportMessage,
    WhatAmI,
    WireExpr,
    ZenohId,
    decode_batch,
    decode_network_message,
)
from pyzenoh.codec.pretty import render
from pyzenoh.codec.primitives import Reader
from pyzenoh.transport.link import Link, LinkClosed, LinkConfig, Role, sn_mask

PRIORITY_DATA = 5
#: Extension id (low 4 bits of an extension header) of the FRAME / FRAGMENT priority.
EXT_ID_QOS = 0x1


@dataclass(frozen=True, slots=True)
class Delivered:
    """One network message the router sent, as the reader got it."""

    message: NetworkMessage
    priority: int  # of the FRAME / FRAGMENT it travelled in
    reliable: bool
    batch: int  # index in StrictReader.batches of the (last) batch that carried it
    fragmented: bool


def header_extension_ids(payload: bytes) -> list[int]:
    """The extension ids (``header & 0x0F``) of the FRAME/FRAGMENT at the start of ``payload``."""
    r = Reader(payload)
    header = r.u8()
    r.vle()  # SN
    ids: list[int] = []
    more = bool(header & 0x80)
    while more:
        h = r.u8()
        ids.append(h & 0x0F)
        enc = (h >> 5) & 0x03
        if enc == 1:
            r.vle()
        elif enc == 2:
            n = r.vle()
            r.pos += n
        more = bool(h & 0x80)
    return ids


def _channel(priority: int, reliable: bool) -> tuple[int, bool]:
    return (priority, reliable)


@dataclass
class _Chain:
    """A fragmented message being reassembled on one channel."""

    buf: bytearray = field(default_factory=bytearray)


class StrictReader:
    """A client that subscribes and checks every batch it is sent (see the module doc)."""

    def __init__(
        self,
        port: int,
        zid: int,
        *,
        qos: bool,
        allow_reliability_switch: bool = False,
        allow_sn_gap_after_fragments: bool = False,
        timeout: float = 10.0,
    ) -> None:
        """Two latitudes the real 1.10.2 router needs (pyzenoh is held to the strict rule):

        ``allow_reliability_switch``: accept a batch of several FRAMEs when each FRAME
        differs in reliability from the one before it, all in one priority (and no
        FRAGMENT among them). The real router sends exactly that for a burst that
        alternates reliable and best-effort PUSHes on one lane (its batch codec starts a
        new FRAME in the current batch when the reliability changes). zenoh-pico cannot
        read such a batch either (seen here: a pico z_sub behind the real router got 1 to
        4 of 40 puts alternating reliable / best-effort, and all 40 behind pyzenoh), so
        this is the real router's latitude, not one pyzenoh may take.

        ``allow_sn_gap_after_fragments``: after the last FRAGMENT of a message, the next
        SN of that channel may be one further than consecutive. The real router's
        pipeline takes a fresh SN after every fragment it writes, the last one included,
        and never sends that SN (receivers accept gaps; they drop only old SNs)."""
        self.allow_reliability_switch = allow_reliability_switch
        self.allow_sn_gap_after_fragments = allow_sn_gap_after_fragments
        self._after_fragmented: set[tuple[int, bool]] = set()
        self.batches: list[bytes] = []
        self.violations: list[str] = []
        self.delivered: list[Delivered] = []
        self.closed: str | None = None
        self.qos = False  # negotiated: set when the handshake finishes
        self._splitter = BatchReader()
        self._next_sn: dict[tuple[int, bool], int] = {}
        self._chains: dict[tuple[int, bool], _Chain] = {}
        self._mask = 0
        self._isn = 0
        self._patched = False
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        try:
            self.link = Link(LinkConfig(ZenohId(zid), WhatAmI.CLIENT, qos=qos), Role.OPENER, time.monotonic())
            self.sock.sendall(self.link.data_to_send())
            deadline = time.monotonic() + timeout
            while not self.link.is_established:
                if time.monotonic() > deadline:
                    raise TimeoutError("handshake did not finish")
                data = self.sock.recv(1 << 16)
                if not data:
                    raise ConnectionError("the router closed the connection during the handshake")
                # The Link only runs the handshake; the checker sees the same bytes, and every
                # byte after OpenAck goes to the checker alone.
                self._handshake_bytes(data)
                self.sock.sendall(self.link.data_to_send())
            peer = self.link.peer
            assert peer is not None
            self._splitter.set_max_batch_size(peer.batch_size)
        except BaseException:
            self.sock.close()
            raise

    # --- input ---------------------------------------------------------------------------

    def _handshake_bytes(self, data: bytes) -> None:
        """Feed bytes read during the handshake to the Link batch by batch, stopping at OpenAck."""
        for payload in self._splitter.feed(data):
            if self.link.is_established:
                self._check(payload)
                continue
            self.batches.append(payload)
            framed = len(payload).to_bytes(2, "little") + payload
            for ev in self.link.receive_data(framed, time.monotonic()):
                if isinstance(ev, LinkClosed):
                    raise ConnectionError(f"handshake failed: {ev}")
            if self.link.is_established:  # the rest of the stream is the checker's
                peer = self.link.peer
                assert peer is not None
                self._mask = sn_mask(peer.resolution)
                self._isn = peer.initial_sn
                self._patched = peer.patch >= 1
                self.qos = peer.qos

    def pump(self, timeout: float) -> bool:
        """Read once (up to ``timeout`` seconds), check what came; keep our side alive.

        Returns False once the connection is over."""
        if self.closed is not None:
            return False
        now = time.monotonic()
        self.link.handle_timer(now)  # our KEEPALIVEs; the router's liveness is ours to judge
        out = self.link.data_to_send()
        if out:
            self.sock.sendall(out)
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except TimeoutError:
            return True
        except OSError as exc:
            self.closed = f"socket error: {exc}"
            return False
        if not data:
            self.closed = "EOF"
            return False
        self.link.refresh_lease(time.monotonic())
        try:
            payloads = self._splitter.feed(data)
        except DecodeError as exc:
            self._violation(f"bad batch framing: {exc}")
            self.closed = "bad framing"
            return False
        for payload in payloads:
            self._check(payload)
        return self.closed is None

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Pump until ``done()`` or ``timeout`` seconds pass; returns ``done()``."""
        deadline = time.monotonic() + timeout
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(min(0.2, left)):
                break
        return done()

    def pushes(self) -> list[Delivered]:
        return [d for d in self.delivered if isinstance(d.message, Push)]

    # --- output --------------------------------------------------------------------------

    def subscribe(self, key: str, sub_id: int = 1) -> None:
        self.link.send(Declare(DeclareSubscriber(sub_id, WireExpr(0, key, True))))
        self.sock.sendall(self.link.data_to_send())

    def close(self) -> None:
        try:
            self.link.close()
            self.sock.sendall(self.link.data_to_send())
        except OSError:
            pass
        finally:
            self.sock.close()

    # --- the checks ----------------------------------------------------------------------

    def describe(self, index: int) -> str:
        """Batch ``index`` decoded, for evidence in a failure message."""
        payload = self.batches[index]
        try:
            body = "; ".join(render(m) for m in decode_batch(payload))
        except DecodeError as exc:
            body = f"undecodable ({exc}): {payload[:64].hex()}"
        return f"batch #{index} ({len(payload)} B): {body}"

    def _violation(self, what: str, index: int | None = None) -> None:
        if index is not None:
            what = f"{what}\n    {self.describe(index)}"
        if len(self.violations) < 50:
            self.violations.append(what)

    def _check(self, payload: bytes) -> None:
        index = len(self.batches)
        self.batches.append(payload)
        try:
            messages = decode_batch(payload)
        except DecodeError as exc:
            self._violation(f"batch does not decode: {exc}", index)
            return
        data = [m for m in messages if isinstance(m, Frame | Fragment)]
        if len(messages) > 1 and not self._allowed_multi(messages):
            self._violation(f"{len(messages)} transport messages in one batch", index)
        for m in messages:
            if isinstance(m, Close):
                self.closed = f"router sent {render(m)}"
            elif not isinstance(m, Frame | Fragment | KeepAlive):
                self._violation(f"unexpected transport message after the handshake: {render(m)}", index)
        # Only the first message's header is at the start of the payload; a second FRAME
        # of an allowed multi-frame batch is checked through its decoded priority.
        if data and not self.qos and EXT_ID_QOS in header_extension_ids(payload):
            self._violation("priority extension on a link without QoS", index)
        for m in data:
            if not self.qos and m.priority != PRIORITY_DATA:
                self._violation(f"priority {m.priority} on a link without QoS", index)
            self._check_sn(m, index)
            if isinstance(m, Frame):
                self._on_frame(m, index)
            else:
                self._on_fragment(m, index)

    def _allowed_multi(self, messages: list[TransportMessage]) -> bool:
        if not self.allow_reliability_switch:
            return False
        frames = [m for m in messages if isinstance(m, Frame)]
        if len(frames) != len(messages):
            return False
        if len({f.priority for f in frames}) != 1:
            return False
        return all(a.reliable != b.reliable for a, b in itertools.pairwise(frames))

    def _check_sn(self, m: Frame | Fragment, index: int) -> None:
        ch = _channel(m.priority, m.reliable)
        expected = self._next_sn.get(ch, self._isn)
        gap_ok = self.allow_sn_gap_after_fragments and ch in self._after_fragmented
        self._after_fragmented.discard(ch)
        if isinstance(m, Fragment) and not m.more:
            self._after_fragmented.add(ch)
        if m.sn != expected and not (gap_ok and m.sn == (expected + 1) & self._mask):
            kind = "FRAME" if isinstance(m, Frame) else "FRAGMENT"
            rel = "reliable" if m.reliable else "best-effort"
            self._violation(f"{kind} SN {m.sn} on channel (priority {m.priority}, {rel}), expected {expected}", index)
        self._next_sn[ch] = (m.sn + 1) & self._mask

    def _on_frame(self, frame: Frame, index: int) -> None:
        ch = _channel(frame.priority, frame.reliable)
        if not frame.messages:
            self._violation("empty FRAME", index)
        if ch in self._chains or (not self.qos and self._chains):
            self._violation("FRAME in the middle of a fragmented message", index)
            self._chains.pop(ch, None)
        for msg in frame.messages:
            if self.qos and isinstance(msg, Push) and (msg.qos & 0x07) != frame.priority:
                self._violation(f"PUSH of priority {msg.qos & 0x07} in a priority {frame.priority} FRAME", index)
            self.delivered.append(Delivered(msg, frame.priority, frame.reliable, index, False))

    def _on_fragment(self, frag: Fragment, index: int) -> None:
        ch = _channel(frag.priority, frag.reliable)
        if not self.qos and any(c != ch for c in self._chains):
            self._violation("FRAGMENT interleaved with another channel's fragmented message", index)
            self._chains = {c: v for c, v in self._chains.items() if c == ch}
        if frag.drop:
            self._violation("DROP fragment (a message was abandoned)", index)
            self._chains.pop(ch, None)
            return
        chain = self._chains.get(ch)
        if chain is None:
            if self._patched and not frag.first:
                self._violation("fragment chain without a First fragment", index)
            chain = self._chains[ch] = _Chain()
        elif frag.first:
            self._violation("First fragment in the middle of a chain", index)
            chain.buf.clear()
        chain.buf += frag.payload
        if frag.more:
            return
        del self._chains[ch]
        try:
            msg = decode_network_message(bytes(chain.buf))
        except DecodeError as exc:
            self._violation(f"reassembled message does not decode: {exc}", index)
            return
        if self.qos and isinstance(msg, Push) and (msg.qos & 0x07) != frag.priority:
            self._violation(f"PUSH of priority {msg.qos & 0x07} in priority {frag.priority} FRAGMENTs", index)
        self.delivered.append(Delivered(msg, frag.priority, frag.reliable, index, True))


def put_payload(d: Delivered) -> bytes:
    """The payload of a delivered PUSH(PUT)."""
    assert isinstance(d.message, Push) and isinstance(d.message.body, Put), d.message
    return d.message.body.payload
