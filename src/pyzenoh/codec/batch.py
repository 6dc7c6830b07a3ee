"""Batches on a TCP stream: ``u16 little-endian length`` + payload (zenoh-wire.md 2.1).

:class:`BatchReader` is a sans-IO stream reassembler: feed it whatever a socket read
returned (any split, any size) and it hands back complete batch payloads, refusing a
declared length above the negotiated batch size before buffering it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyzenoh.codec.primitives import U16_MAX, Reader
from pyzenoh.codec.transport import TransportMessage, read_transport_message
from pyzenoh.errors import DecodeError, UsageError

LENGTH_PREFIX = 2
#: The largest batch a TCP link can carry (length prefix excluded).
MAX_BATCH_PAYLOAD = U16_MAX


def decode_batch(payload: bytes | bytearray | memoryview, keep_raw: bool = False) -> list[TransportMessage]:
    """Decode every transport message of one batch payload (no length prefix)."""
    r = Reader(bytes(payload))
    if r.at_end():
        raise DecodeError("empty batch", 0)
    messages: list[TransportMessage] = []
    while not r.at_end():
        messages.append(read_transport_message(r, keep_raw))
    return messages


def encode_batch(messages: Iterable[TransportMessage]) -> bytes:
    """The payload of one batch holding ``messages`` (no length prefix)."""
    out = bytearray()
    for msg in messages:
        msg.write(out)
    return bytes(out)


def frame_batch(payload: bytes | bytearray) -> bytes:
    """Prefix a batch payload with its u16 little-endian length."""
    n = len(payload)
    if n > MAX_BATCH_PAYLOAD:
        raise UsageError(f"batch of {n} bytes exceeds {MAX_BATCH_PAYLOAD}")
    return n.to_bytes(2, "little") + bytes(payload)


class BatchReader:
    """Reassemble batch payloads from arbitrary TCP reads.

    ``max_batch_size`` is the negotiated batch size, which includes the 2-byte prefix;
    a longer declared batch raises DecodeError (the link must close).
    """

    __slots__ = ("_buf", "consumed", "max_payload")

    def __init__(self, max_batch_size: int = MAX_BATCH_PAYLOAD + LENGTH_PREFIX) -> None:
        self._buf = bytearray()
        self.max_payload = min(max_batch_size - LENGTH_PREFIX, MAX_BATCH_PAYLOAD)
        #: Stream offset of the first buffered byte, for error messages.
        self.consumed = 0

    def set_max_batch_size(self, max_batch_size: int) -> None:
        self.max_payload = min(max_batch_size - LENGTH_PREFIX, MAX_BATCH_PAYLOAD)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        buf = self._buf
        if buf:
            buf += data  # the unfinished batch of the last read comes first
            src: bytes | bytearray | memoryview = buf
        else:
            src = data  # nothing left over: batches are cut out of ``data`` itself
        n = len(src)
        if n >= LENGTH_PREFIX:
            length = src[0] | (src[1] << 8)
            if 0 < length <= self.max_payload:
                if n - LENGTH_PREFIX < length:  # a batch arriving in pieces: nothing to cut yet
                    if src is data:
                        buf += data
                    return []
                if length == n - LENGTH_PREFIX and src is data:
                    self.consumed += n  # exactly one batch: a ping, a small publisher
                    return [bytes(data[LENGTH_PREFIX:])]
        out: list[bytes] = []
        pos = 0
        # One copy of the read, then one object per batch: a slice of bytes is made in one
        # step, where a view's slice and its copy are two.
        whole = bytes(src)
        while n - pos >= LENGTH_PREFIX:
            length = whole[pos] | (whole[pos + 1] << 8)
            if length > self.max_payload:
                raise DecodeError(
                    f"batch of {length} bytes exceeds the negotiated {self.max_payload}",
                    self.consumed + pos,
                )
            if length == 0:
                raise DecodeError("empty batch", self.consumed + pos)
            start = pos + LENGTH_PREFIX
            if n - start < length:
                break
            pos = start + length
            out.append(whole[start:pos])
        if src is buf:
            if pos:
                del buf[:pos]
        elif pos < n:
            buf += whole[pos:]  # the unfinished tail is kept: ``data`` is not ours
        self.consumed += pos
        return out

    @property
    def buffered(self) -> int:
        return len(self._buf)
