"""The batch header of a link that negotiated compression (zenoh 1.10 ``common/batch.rs``).

When both InitSyn and InitAck carry the Compression extension, every batch after the
handshake starts with one header byte; bit 0 says the rest is an lz4 *block* (lz4_flex's
format: no size prefix, no frame). On stream links the u16 length prefix covers the
header and the (compressed) payload. The sender keeps the raw payload, flag cleared,
when compressing does not make the batch smaller.
"""

from __future__ import annotations

import lz4.block  # type: ignore[import-untyped]  # lz4 ships no stubs

from pyzenoh.errors import DecodeError

#: The header byte's compression flag.
BATCH_HEADER_COMPRESSION = 0x01
#: Bytes the header adds in front of a batch payload.
BATCH_HEADER_LEN = 1


def compress_batch(payload: bytes | bytearray | memoryview) -> bytes:
    """Header byte + lz4 block of ``payload``, or header 0 + ``payload`` when that is not smaller."""
    raw = bytes(payload)
    packed: bytes = lz4.block.compress(raw, store_size=False)
    if len(packed) < len(raw):
        return bytes((BATCH_HEADER_COMPRESSION,)) + packed
    return b"\x00" + raw


def decompress_batch(data: bytes | bytearray | memoryview, max_payload: int) -> bytes:
    """The batch payload behind a header byte; a peer's bad input raises DecodeError.

    ``max_payload`` bounds the decompressed size (the negotiated batch size, as zenoh
    decompresses into a buffer of that size): a batch that would grow past it is refused.
    """
    if len(data) < BATCH_HEADER_LEN:
        raise DecodeError("batch without its header byte", 0)
    header = data[0]  # other bits are zenoh's to define later: only bit 0 is read, as zenoh does
    body = bytes(data[BATCH_HEADER_LEN:])
    if not header & BATCH_HEADER_COMPRESSION:
        return body
    try:
        out: bytes = lz4.block.decompress(body, uncompressed_size=max_payload)
    except lz4.block.LZ4BlockError as e:
        raise DecodeError(f"compressed batch does not decompress within {max_payload} bytes: {e}", 1) from e
    if not out:
        raise DecodeError("compressed batch decompresses to nothing", 1)
    return out


def compress_stream(stream: bytes | bytearray, start: int) -> bytes:
    """``stream`` (u16-length-prefixed batches) with every batch from offset ``start`` on
    given its header byte and compressed; the bytes before ``start`` are kept as they are
    (the handshake's last message precedes compression). The length prefixes cover the
    header and the compressed payload, as zenoh's stream links write them."""
    out = bytearray(stream[:start])
    pos = start
    n = len(stream)
    with memoryview(stream) as view:
        while pos < n:
            length = view[pos] | (view[pos + 1] << 8)
            body = compress_batch(view[pos + 2 : pos + 2 + length])
            out += len(body).to_bytes(2, "little")
            out += body
            pos += 2 + length
    return bytes(out)
