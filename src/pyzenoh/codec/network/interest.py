"""INTEREST: a node asking for the declarations (key expressions, subscribers,
queryables, tokens) it cares about, current, future or both, and ending that interest.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, IntFlag

from pyzenoh.codec.extensions import Extension, add_optional, write_extensions
from pyzenoh.codec.network.header import (
    _NODE_EXTS,
    EXT_NODE_ID,
    ID_INTEREST,
    _common_exts,
    _finish,
    _NetExts,
)
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import (
    U32_MAX,
    Reader,
    Timestamp,
    WireExpr,
    check_bound,
    write_vle,
)


class InterestMode(IntEnum):
    FINAL = 0
    CURRENT = 1
    FUTURE = 2
    CURRENT_FUTURE = 3


class InterestOptions(IntFlag):
    KEYEXPRS = 0x01
    SUBSCRIBERS = 0x02
    QUERYABLES = 0x04
    TOKENS = 0x08


NO_OPTIONS = InterestOptions(0)
OPT_RESTRICTED = 0x10
OPT_NAMED = 0x20
OPT_MAPPING = 0x40
OPT_AGGREGATE = 0x80


@dataclass(frozen=True, slots=True)
class Interest:
    interest_id: int
    mode: InterestMode
    options: InterestOptions = NO_OPTIONS
    wire_expr: WireExpr | None = None  # None: not restricted (all keys)
    aggregate: bool = False
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    node_id: int | None = None
    extensions: tuple[Extension, ...] = ()

    def write(self, out: bytearray) -> None:
        check_bound(self.interest_id, U32_MAX, "interest id")
        exts = _common_exts(self.qos, self.timestamp)
        add_optional(exts, EXT_NODE_ID, self.node_id)
        exts.extend(self.extensions)
        _finish(out, ID_INTEREST | (int(self.mode) << 5), exts)
        write_vle(out, self.interest_id)
        if self.mode != InterestMode.FINAL:
            options = int(self.options) & 0x0F
            if self.wire_expr is not None:
                options |= OPT_RESTRICTED
                if self.wire_expr.suffix:
                    options |= OPT_NAMED
                if self.wire_expr.mapping_sender:
                    options |= OPT_MAPPING
            if self.aggregate:
                options |= OPT_AGGREGATE
            out.append(options)
            if self.wire_expr is not None:
                self.wire_expr.write(out)
        if exts:
            write_extensions(out, exts)

    @classmethod
    def read(cls, r: Reader, header: int) -> Interest:
        mode = InterestMode((header >> 5) & 0x03)
        interest_id = r.vle(U32_MAX)
        options = InterestOptions(0)
        wire_expr = None
        aggregate = False
        if mode != InterestMode.FINAL:
            raw = r.u8()
            options = InterestOptions(raw & 0x0F)
            aggregate = bool(raw & OPT_AGGREGATE)
            if raw & OPT_RESTRICTED:
                wire_expr = WireExpr.read(r, bool(raw & OPT_NAMED), bool(raw & OPT_MAPPING))
        e = _NetExts(r, header, _NODE_EXTS)
        return cls(
            interest_id, mode, options, wire_expr, aggregate, e.qos, e.timestamp, e.z64(EXT_NODE_ID), tuple(e.others)
        )
