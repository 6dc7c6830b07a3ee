"""msgq socket framing (sans-IO), identical in both directions::

    +-----------------+---------------+--------------------+--------------------+
    | total length    | header length | header             | body (optional)    |
    | uint32 BE       | uint16 BE     | Skan message       | opaque bytes       |
    | = 2 + H + B     | = H (>= 1)    | H bytes            | B bytes (B may be 0)|
    +-----------------+---------------+--------------------+--------------------+

The total length counts everything after itself. The header is a Skan message (routing: type,
from, to, group, instance, seq, reply...). The body is normally a Skan message too, but the
daemon never looks inside it; B = 0 means "no body" (:attr:`Frame.body` is ``None``).

Frame validation follows BIND 10's daemon: a total below 2, a header length of 0 or a header
length larger than the total minus 2 is a broken stream. We add a cap on the total
(``max_frame_size``, default :data:`DEFAULT_MAX_FRAME_SIZE`), checked as soon as the 6 length
bytes have arrived, so a peer cannot make us buffer more than that.

:class:`FrameReader` is a streaming reader: feed it bytes in chunks of any size (one byte at a
time works) and it returns the complete frames. After a framing error it stays failed: the
stream has lost synchronisation, so the connection must be closed.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from pyzenoh.msgq.skan import SkanEncodeError, SkanError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "MAX_HEADER_SIZE",
    "PREFIX_SIZE",
    "Frame",
    "FrameReader",
    "decode_frame",
    "encode_frame",
]

PREFIX_SIZE = 6
"""The 4-byte total length and the 2-byte header length."""
MAX_HEADER_SIZE = 0xFFFF
"""The header length field is 16 bits."""
DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
"""Default cap on the total length field (BIND 10 had none)."""
MAX_TOTAL_FIELD = 0xFFFF_FFFF

_PREFIX = struct.Struct(">IH")


@dataclass(frozen=True, slots=True)
class Frame:
    """One msgq frame: the encoded header and the body bytes (``None`` when absent)."""

    header: bytes
    body: bytes | None = None

    def encode(self) -> bytes:
        """The frame as it goes on the socket."""
        return encode_frame(self.header, self.body)

    @property
    def size(self) -> int:
        """Bytes on the wire, prefix included."""
        return PREFIX_SIZE + len(self.header) + (len(self.body) if self.body else 0)


def encode_frame(header: bytes, body: bytes | None = None) -> bytes:
    """Prefix an encoded header and optional body with the two length fields.

    Raises :class:`~pyzenoh.msgq.skan.SkanEncodeError` (a UsageError) if the header is empty
    or over 65535 bytes.
    """
    if not header:
        raise SkanEncodeError("a frame needs a non-empty header")
    if len(header) > MAX_HEADER_SIZE:
        raise SkanEncodeError(f"header of {len(header)} bytes exceeds {MAX_HEADER_SIZE} bytes")
    body = body or b""
    total = 2 + len(header) + len(body)
    if total > MAX_TOTAL_FIELD:
        raise SkanEncodeError(f"frame of {total} bytes does not fit the 32-bit length")
    return b"".join((_PREFIX.pack(total, len(header)), header, body))


def _check_prefix(total: int, hlen: int, max_frame_size: int) -> None:
    if total < 2:
        raise SkanError(f"frame total length {total} < 2", 0)
    if hlen == 0:
        raise SkanError("frame header length is 0", 4)
    if hlen > total - 2:
        raise SkanError(f"frame header length {hlen} exceeds total length {total} - 2", 4)
    if total > max_frame_size:
        raise SkanError(f"frame of {total} bytes exceeds the {max_frame_size}-byte limit", 0)


def decode_frame(data: bytes, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> Frame:
    """Split exactly one complete frame (trailing or missing bytes are an error)."""
    if len(data) < PREFIX_SIZE:
        raise SkanError("frame shorter than its 6-byte prefix", len(data))
    total, hlen = _PREFIX.unpack_from(data, 0)
    _check_prefix(total, hlen, max_frame_size)
    if len(data) != 4 + total:
        raise SkanError(f"frame says {4 + total} bytes but {len(data)} were given", len(data))
    header = bytes(data[PREFIX_SIZE : PREFIX_SIZE + hlen])
    body = bytes(data[PREFIX_SIZE + hlen :]) or None
    return Frame(header, body)


class FrameReader:
    """Streaming frame splitter: input split at any byte, bounded buffering."""

    __slots__ = ("_buf", "_failed", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 3:
            raise SkanEncodeError("max_frame_size must allow at least a 1-byte header")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._failed: SkanError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held back waiting for the rest of a frame."""
        return len(self._buf)

    @property
    def mid_frame(self) -> bool:
        """True when part of a frame has arrived but not all of it."""
        return bool(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Add bytes; return every frame now complete, in order.

        Raises :class:`SkanError` on a broken length prefix (and on every later call).
        Frames completed before the broken one in the same chunk are lost with it; the
        connection is going to be closed anyway.
        """
        if self._failed is not None:
            raise self._failed
        buf = self._buf
        buf += data
        frames: list[Frame] = []
        pos = 0
        try:
            while len(buf) - pos >= PREFIX_SIZE:
                total, hlen = _PREFIX.unpack_from(buf, pos)
                _check_prefix(total, hlen, self.max_frame_size)
                end = pos + 4 + total
                if end > len(buf):
                    break
                hstart = pos + PREFIX_SIZE
                header = bytes(buf[hstart : hstart + hlen])
                body = bytes(buf[hstart + hlen : end]) if end > hstart + hlen else None
                frames.append(Frame(header, body))
                pos = end
        except SkanError as exc:
            self._failed = exc
            buf.clear()
            raise
        del buf[:pos]
        return frames
