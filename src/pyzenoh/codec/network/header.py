"""What every network message shares: its id in the header byte, the header flags, and
the extensions any of them may carry (QoS, Timestamp, NodeId, timestamp stack), read
(:class:`_NetExts`) and written (:func:`_common_exts`, :func:`_finish`).
"""

from __future__ import annotations

from pyzenoh.codec.extensions import Extension, KnownExtensions, expect_end, ext_reader
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import Reader, Timestamp, WireExpr

ID_INTEREST = 0x19
ID_RESPONSE_FINAL = 0x1A
ID_RESPONSE = 0x1B
ID_REQUEST = 0x1C
ID_PUSH = 0x1D
ID_DECLARE = 0x1E
ID_OAM = 0x1F
#: Network ids are >= this; transport ids are below. This is how a FRAME ends.
FIRST_NETWORK_ID = ID_INTEREST

FLAG_Z = 0x80
FLAG_M = 0x40  # mapping: the scope id was declared by the sender
FLAG_N = 0x20  # the WireExpr has a suffix
FLAG_I = 0x20  # DECLARE: interest id present

EXT_QOS = 0x21
EXT_TIMESTAMP = 0x42
EXT_NODE_ID = 0x33
EXT_TS_STACK = 0x47


def _timestamp_ext(ext: Extension) -> Timestamp:
    r = ext_reader(ext)
    ts = Timestamp.read(r)
    expect_end(r, "Timestamp extension")
    return ts


def _timestamp_bytes(ts: Timestamp) -> bytes:
    out = bytearray()
    ts.write(out)
    return bytes(out)


def _common_exts(qos: int, timestamp: Timestamp | None) -> list[Extension]:
    exts: list[Extension] = []
    if qos != QOS_DEFAULT:
        exts.append(Extension(EXT_QOS, qos))
    if timestamp is not None:
        exts.append(Extension(EXT_TIMESTAMP, _timestamp_bytes(timestamp)))
    return exts


def _read_wire_expr(r: Reader, header: int) -> WireExpr:
    return WireExpr.read(r, bool(header & FLAG_N), bool(header & FLAG_M))


def _wire_expr_flags(wire_expr: WireExpr) -> int:
    flags = 0
    if wire_expr.suffix:
        flags |= FLAG_N
    if wire_expr.mapping_sender:
        flags |= FLAG_M
    return flags


def _finish(out: bytearray, header: int, exts: list[Extension]) -> int:
    """Append the header (with Z when there are extensions); return its index."""
    if exts:
        header |= FLAG_Z
    out.append(header)
    return len(out) - 1


class _NetExts(KnownExtensions):
    """A network message's extensions: QoS and Timestamp (every network message may carry
    them) decoded, plus the ids in ``known``."""

    __slots__ = ("qos", "timestamp")

    def __init__(self, r: Reader, header: int, known: frozenset[int]) -> None:
        super().__init__(r, header, known | _COMMON_EXTS)
        qos = self.z64(EXT_QOS)
        self.qos = QOS_DEFAULT if qos is None else qos
        ts = self.known.get(EXT_TIMESTAMP)
        self.timestamp: Timestamp | None = None if ts is None else _timestamp_ext(ts)


_COMMON_EXTS = frozenset({EXT_QOS, EXT_TIMESTAMP})
_NO_EXTS: frozenset[int] = frozenset()
_NODE_EXTS = frozenset({EXT_NODE_ID})
