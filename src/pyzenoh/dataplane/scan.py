"""Reading PUSH and FRAME bytes without building codec objects.

Publications dominate real traffic, and most of them have one shape: a FRAME (no
extension, or only its priority) holding PUSHes with at most a QoS and a NodeId
extension, whose PUT or DEL has no extension of its own and a one-byte encoding.
:func:`scan_push` reads such a PUSH into :class:`PushFields` (offsets into the buffer, a
few cached values) and answers None for anything else: "let the codec do it". The codec
stays the one definition of the format and the only place errors are raised; every
constant here is the codec's.
"""

from __future__ import annotations

from typing import NamedTuple

from pyzenoh.codec import Del, Encoding, Push, Put, Timestamp, WireExpr, ZenohId
from pyzenoh.codec.data import FLAG_E, FLAG_T, ID_DEL, ID_PUT
from pyzenoh.codec.network.header import (
    EXT_NODE_ID,
    EXT_QOS,
    FLAG_M,
    FLAG_N,
    FLAG_Z,
    ID_PUSH,
)
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import ZID_MAX_LEN
from pyzenoh.codec.transport import EXT_FRAME_QOS, ID_FRAME, PRIORITY_DATA
from pyzenoh.codec.transport import FLAG_Z as FRAME_FLAG_Z

__all__ = [
    "ID_DEL",
    "ID_FRAME",
    "ID_PUSH",
    "ID_PUT",
    "PushFields",
    "decode_push",
    "frame_head",
    "push_of",
    "read_z32",
    "scan_lone",
    "scan_push",
]

#: The lowest message id of the network layer: a FRAME's messages start at or above it.
FIRST_NETWORK_ID = 0x19
#: A one-byte QoS extension as it follows a PUSH header, and a NodeId one.
_QOS_EXT = EXT_QOS
_NODE_ID_EXT = EXT_NODE_ID
#: Timestamp ids seen (normally a handful of routers); the cache is reset past this.
MAX_CACHED_IDS = 256
#: Key representations (scope, suffix, M flag) whose WireExpr is kept, and the longest
#: suffix kept: the cache holds at most MAX_CACHED_KEYS * MAX_CACHED_SUFFIX characters.
MAX_CACHED_KEYS = 1024
MAX_CACHED_SUFFIX = 256

_zids: dict[bytes, ZenohId] = {}
_wire_exprs: dict[tuple[int, str, bool], WireExpr] = {}
_encodings: dict[int, Encoding] = {0: Encoding.DEFAULT}
_new = tuple.__new__


class PushFields(NamedTuple):
    """What :func:`scan_push` finds in a common-shape PUSH; offsets are into its buffer."""

    after: int  # the offset after the PUSH
    scope: int  # the key's scope id
    suffix: str  # the key's suffix ("" for none)
    mapping: bool  # M: the scope was declared by the sender
    qos: int  # the QoS extension's value (QOS_DEFAULT without one)
    body_offset: int  # where the PUT/DEL header sits, from the PUSH's start
    kind: int  # ID_PUT or ID_DEL
    timestamp: Timestamp | None
    encoding: Encoding
    payload_start: int
    payload_end: int  # == payload_start for a DEL
    node_id: int | None  # a router neighbour's NodeId extension


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
    if h & FLAG_N:  # a suffix follows
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
    qos = QOS_DEFAULT
    node_id = None
    if h & FLAG_Z:  # extensions: a one-byte QoS, a one-byte NodeId, or QoS then NodeId
        if p + 2 > end or buf[p + 1] >= 0x80:
            return None
        e = buf[p]
        if e & 0x7F == _QOS_EXT:
            qos = buf[p + 1]
            p += 2
            if e & FLAG_Z:  # another follows, a NodeId from a router neighbour
                if p + 2 > end or buf[p] != _NODE_ID_EXT or buf[p + 1] >= 0x80:
                    return None
                node_id = buf[p + 1]
                p += 2
        elif e == _NODE_ID_EXT:
            node_id = buf[p + 1]
            p += 2
        else:
            return None
    if p >= end:
        return None
    body_offset = p - pos
    bh = buf[p]
    p += 1
    kind = bh & 0x1F
    if bh & FLAG_Z or (kind != ID_PUT and kind != ID_DEL):
        return None
    ts = None
    if bh & FLAG_T:  # timestamp = z64 NTP64 time, then the id as length + bytes
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
        if bh & FLAG_E:
            return None
        return _new(PushFields, (p, scope, suffix, bool(h & FLAG_M), qos, body_offset, kind, ts, enc, p, p, node_id))
    if bh & FLAG_E:  # a one-byte encoding without schema
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
    read = read_z32(buf, p, end)  # the payload length
    if read is None:
        return None
    n, p = read
    if p + n > end:
        return None
    return _new(
        PushFields, (p + n, scope, suffix, bool(h & FLAG_M), qos, body_offset, kind, ts, enc, p, p + n, node_id)
    )


def read_z32(buf: bytes, p: int, end: int) -> tuple[int, int] | None:
    """The z32 VLE at ``buf[p]`` and the offset after it; None when it is truncated, longer
    than five bytes or over 32 bits (the codec then says what is wrong)."""
    if p + 4 < end:  # five bytes there: unrolled, no bound check per byte (multi-byte SNs)
        b = buf[p]
        if b < 0x80:  # one byte: lengths, ids, small SNs (most of them)
            return b, p + 1
        n = b & 0x7F
        b = buf[p + 1]
        if b < 0x80:
            return n | b << 7, p + 2
        n |= (b & 0x7F) << 7
        b = buf[p + 2]
        if b < 0x80:
            return n | b << 14, p + 3
        n |= (b & 0x7F) << 14
        b = buf[p + 3]
        if b < 0x80:
            return n | b << 21, p + 4
        n |= (b & 0x7F) << 21
        b = buf[p + 4]
        if b < 0x80 and (n := n | b << 28) <= 0xFFFF_FFFF:
            return n, p + 5
        return None
    n = 0
    shift = 0
    for _ in range(5):
        if p >= end:
            return None
        b = buf[p]
        p += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n, p) if n <= 0xFFFF_FFFF else None
        shift += 7
    return None


def push_of(f: PushFields, buf: bytes) -> Push:
    """The codec's message for the fields :func:`scan_push` found."""
    _, scope, suffix, mapping, qos, body_offset, kind, ts, enc, a, b, node_id = f
    body = Del(ts) if kind == ID_DEL else Put(buf[a:b], enc, ts)
    # A publisher repeats its key: its WireExpr (immutable) is made once.
    wkey = (scope, suffix, mapping)
    we = _wire_exprs.get(wkey)
    if we is None:
        we = WireExpr(scope, suffix, mapping)
        if len(suffix) <= MAX_CACHED_SUFFIX:
            if len(_wire_exprs) >= MAX_CACHED_KEYS:
                _wire_exprs.clear()
            _wire_exprs[wkey] = we
    return Push(we, body, qos, None, node_id, body_offset=body_offset)


def decode_push(buf: bytes, pos: int, end: int) -> tuple[Push, int] | None:
    """The PUSH at ``buf[pos]`` and the offset after it, or None: "let the codec do it"."""
    f = scan_push(buf, pos, end)
    if f is None:
        return None
    return push_of(f, buf), f.after


def frame_head(buf: bytes, pos: int, end: int) -> tuple[int, int, int] | None:
    """(SN, priority, offset of the first message) of the FRAME header at ``buf[pos]``
    when its only extension may be its priority; None otherwise (or truncated)."""
    read = read_z32(buf, pos + 1, end)
    if read is None:
        return None
    sn, p = read
    if not buf[pos] & FRAME_FLAG_Z:
        return sn, PRIORITY_DATA, p
    if p + 2 > end or buf[p] != EXT_FRAME_QOS or buf[p + 1] > 7:
        return None
    return sn, buf[p + 1], p + 2


def scan_lone(buf: bytes) -> tuple[PushFields, int, int, int] | None:
    """A batch that is one FRAME holding one common-shape PUSH (a ping, a publisher that
    writes each put at once): (the PUSH's fields as :func:`scan_push` finds them, the
    FRAME's SN, its priority, the PUSH's offset); the FRAME's R flag is
    ``buf[0] & FLAG_R``. None for anything else. The same FRAME as :func:`decode_batch`
    gives, without building anything."""
    end = len(buf)
    if not end or buf[0] & 0x1F != ID_FRAME:
        return None
    head = frame_head(buf, 0, end)
    if head is None:
        return None
    sn, priority, p = head
    if p >= end or buf[p] & 0x1F != ID_PUSH:
        return None
    f = scan_push(buf, p, end)
    if f is None or f.after != end:
        return None
    return f, sn, priority, p
