"""A faster decoder for the most common batch shape: FRAMEs of PUSH(PUT/DEL).

Publications dominate real traffic, and most of them have one shape: a FRAME (no
extension, or only its priority) holding PUSHes with at most a QoS extension, whose PUT or
DEL has no extension of its own and a simple encoding. :func:`decode_batch` decodes those
messages inline and hands *anything else* (other messages, other shapes, anything
malformed) to the codec at the same offset, so the codec remains the one definition of
the format and the only place errors are raised. The results are the codec's own
message objects, equal to what :func:`pyzenoh.codec.decode_batch` returns (the tests check
this differentially on generated batches).
"""

from __future__ import annotations

from pyzenoh.codec import (
    Del,
    Encoding,
    Frame,
    Push,
    Put,
    Timestamp,
    TransportMessage,
    WireExpr,
    ZenohId,
)
from pyzenoh.codec.network import read_network_message
from pyzenoh.codec.primitives import Reader
from pyzenoh.codec.transport import read_transport_message
from pyzenoh.errors import DecodeError

ID_FRAME = 0x05
ID_PUSH = 0x1D
ID_PUT = 0x01
ID_DEL = 0x02
FIRST_NETWORK_ID = 0x19
FRAME_QOS_EXT = 0x31
NET_QOS_EXT = 0x21
ZID_MAX_LEN = 16
#: Timestamp ids seen (normally a handful of routers); the cache is reset past this.
MAX_CACHED_IDS = 256

_zids: dict[bytes, ZenohId] = {}
_encodings: dict[int, Encoding] = {0: Encoding.DEFAULT}


def _zid(raw: bytes) -> ZenohId | None:
    zid = _zids.get(raw)
    if zid is None:
        value = int.from_bytes(raw, "little")
        if value == 0:
            return None
        if len(_zids) >= MAX_CACHED_IDS:
            _zids.clear()
        zid = _zids[raw] = ZenohId(value)
    return zid


#: What :func:`scan_push` finds: (offset after the PUSH, scope, suffix, mapping sender,
#: qos, body offset, body id (PUT or DEL), timestamp, encoding, payload start, payload end).
PushFields = tuple[
    int, int, str, bool, int, int, int, "Timestamp | None", Encoding, int, int
]


_CONTINUATION_BITS = 0x8080_8080_8080_8080


def _pack_7bit_groups(word: int) -> int:
    """The low 7 bits of each of the eight bytes of ``word``, packed into 56 bits."""
    x = word & 0x7F7F_7F7F_7F7F_7F7F
    x = (x & 0x007F_007F_007F_007F) | ((x & 0x7F00_7F00_7F00_7F00) >> 1)
    x = (x & 0x0000_3FFF_0000_3FFF) | ((x & 0x3FFF_0000_3FFF_0000) >> 2)
    return (x & 0x0FFF_FFFF) | ((x & 0x0FFF_FFFF_0000_0000) >> 4)


def scan_push(buf: bytes, pos: int, end: int) -> PushFields | None:
    """The fields of the common-shape PUSH at ``buf[pos]``, or None: "let the codec do it".

    Nothing is built but the timestamp and encoding (both cached): the router wraps the
    fields into codec objects (:func:`decode_push`), the Spark source into table columns.
    """
    h = buf[pos]
    p = pos + 1
    if p >= end:
        return None
    scope = buf[p]
    if scope >= 0x80:
        return None
    p += 1
    suffix = ""
    if h & 0x20:  # N: a suffix follows
        if p >= end:
            return None
        n = buf[p]
        p += 1
        if n >= 0x80:
            if p >= end or buf[p] >= 0x80:
                return None
            n = (n & 0x7F) | (buf[p] << 7)
            p += 1
        if n == 0 or p + n > end:
            return None
        try:
            suffix = buf[p : p + n].decode("utf-8")
        except UnicodeDecodeError:
            return None
        p += n
    qos = 5
    if h & 0x80:  # extensions: only a lone one-byte QoS is handled here
        if p + 2 > end or buf[p] != NET_QOS_EXT or buf[p + 1] >= 0x80:
            return None
        qos = buf[p + 1]
        p += 2
    if p >= end:
        return None
    body_offset = p - pos
    bh = buf[p]
    p += 1
    kind = bh & 0x1F
    if bh & 0x80 or (kind != ID_PUT and kind != ID_DEL):
        return None
    ts = None
    if bh & 0x20:  # T: timestamp = z64 NTP64 time, then the id as length + bytes
        time = 0
        shift = 0
        # Any current NTP64 time is >= 2**56: nine bytes, the first eight with their
        # continuation bit set. Those are unpacked in one go, the rest byte by byte.
        word = int.from_bytes(buf[p : p + 8], "little") if p + 9 <= end else 0
        if word & _CONTINUATION_BITS == _CONTINUATION_BITS:
            time = _pack_7bit_groups(word) | buf[p + 8] << 56
            p += 9
        else:
            for _ in range(8):
                if p >= end:
                    return None
                b = buf[p]
                p += 1
                time |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
            else:  # eight continued bytes and no ninth: truncated, the codec says so
                return None
        if p >= end:
            return None
        n = buf[p]
        p += 1
        if not 0 < n <= ZID_MAX_LEN or p + n > end:
            return None
        zid = _zid(buf[p : p + n])
        if zid is None:
            return None
        p += n
        ts = Timestamp(time, zid)
    enc = Encoding.DEFAULT
    if kind == ID_DEL:
        if bh & 0x40:
            return None
        return p, scope, suffix, bool(h & 0x40), qos, body_offset, kind, ts, enc, p, p
    if bh & 0x40:  # E: a one-byte encoding without schema
        if p >= end:
            return None
        e = buf[p]
        if e >= 0x80 or e & 1:
            return None
        p += 1
        cached = _encodings.get(e >> 1)
        if cached is None:
            cached = _encodings[e >> 1] = Encoding(e >> 1)
        enc = cached
    n = 0
    shift = 0
    for _ in range(5):  # payload length: z32
        if p >= end:
            return None
        b = buf[p]
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    else:
        return None
    if n > 0xFFFF_FFFF or p + n > end:
        return None
    return (
        p + n,
        scope,
        suffix,
        bool(h & 0x40),
        qos,
        body_offset,
        kind,
        ts,
        enc,
        p,
        p + n,
    )


def decode_push(buf: bytes, pos: int, end: int) -> tuple[Push, int] | None:
    """The PUSH at ``buf[pos]`` and the offset after it, or None: "let the codec do it"."""
    f = scan_push(buf, pos, end)
    if f is None:
        return None
    after, scope, suffix, mapping, qos, body_offset, kind, ts, enc, a, b = f
    body = Del(ts) if kind == ID_DEL else Put(buf[a:b], enc, ts)
    return Push(
        WireExpr(scope, suffix, mapping), body, qos, body_offset=body_offset
    ), after


def _frame(
    buf: bytes, pos: int, end: int, r: Reader, keep_raw: bool
) -> tuple[Frame, int] | None:
    """A FRAME with no extension other than its priority, decoded message by message."""
    h = buf[pos]
    p = pos + 1
    sn = 0
    shift = 0
    for _ in range(5):  # z32
        if p >= end:
            return None
        b = buf[p]
        p += 1
        sn |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    else:
        return None
    if sn > 0xFFFF_FFFF:
        return None
    priority = 5
    if h & 0x80:
        if p + 2 > end or buf[p] != FRAME_QOS_EXT or buf[p + 1] > 7:
            return None
        priority = buf[p + 1]
        p += 2
    messages: list[object] = []
    raws: list[bytes] = []
    while p < end and buf[p] & 0x1F >= FIRST_NETWORK_ID:
        start = p
        res = decode_push(buf, p, end) if buf[p] & 0x1F == ID_PUSH else None
        if res is None:
            r.pos = p
            messages.append(read_network_message(r))
            p = r.pos
        else:
            messages.append(res[0])
            p = res[1]
        if keep_raw:
            raws.append(buf[start:p])
    frame = Frame(bool(h & 0x20), sn, tuple(messages), priority, (), tuple(raws))  # type: ignore[arg-type]
    return frame, p


def decode_batch(payload: bytes, keep_raw: bool = False) -> list[TransportMessage]:
    """Same result as :func:`pyzenoh.codec.decode_batch`, faster on publication traffic."""
    end = len(payload)
    if end == 0:
        raise DecodeError("empty batch", 0)
    r = Reader(payload)
    out: list[TransportMessage] = []
    pos = 0
    while pos < end:
        res = (
            _frame(payload, pos, end, r, keep_raw)
            if payload[pos] & 0x1F == ID_FRAME
            else None
        )
        if res is None:
            r.pos = pos
            out.append(read_transport_message(r, keep_raw))
            pos = r.pos
        else:
            out.append(res[0])
            pos = res[1]
    return out
