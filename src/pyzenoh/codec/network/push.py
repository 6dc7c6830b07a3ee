"""PUSH: a PUT or DEL on its way to subscribers, the message a router forwards most.

Built and written for every message routed: :meth:`Push.routed` and
:meth:`Push.write_head` are on the per-message path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyzenoh.codec.data import Del, Put, read_push_body
from pyzenoh.codec.extensions import Extension, add_optional, write_extensions
from pyzenoh.codec.network.header import (
    EXT_NODE_ID,
    EXT_TS_STACK,
    ID_PUSH,
    _common_exts,
    _finish,
    _NetExts,
    _read_wire_expr,
    _wire_expr_flags,
)
from pyzenoh.codec.network.qos import QOS_DEFAULT
from pyzenoh.codec.primitives import Reader, Timestamp, WireExpr


# Not frozen: built for every message routed, and a frozen dataclass's __init__ costs
# three times as much. Treat it as immutable all the same.
@dataclass(slots=True)
class Push:
    wire_expr: WireExpr
    body: Put | Del
    qos: int = QOS_DEFAULT
    timestamp: Timestamp | None = None
    node_id: int | None = None
    ts_stack: bytes | None = None
    extensions: tuple[Extension, ...] = ()
    #: Where the body (PUT/DEL header) starts in the bytes this PUSH was decoded from
    #: (-1 when built locally): lets a router edit the body without re-encoding it all.
    body_offset: int = field(default=-1, compare=False, repr=False)

    def routed(
        self,
        wire_expr: WireExpr,
        body: Put | Del,
        timestamp: Timestamp | None,
        node_id: int | None = None,
        qos: int | None = None,
    ) -> Push:
        """This PUSH as a router forwards it: another key representation, body, network
        timestamp and NodeId (set only towards a router neighbour), and QoS when an
        interceptor rewrote it."""
        return Push(
            wire_expr, body, self.qos if qos is None else qos, timestamp, node_id, self.ts_stack, self.extensions
        )

    def write_head(self, out: bytearray) -> None:
        """Everything but the body: header, key and extensions."""
        exts = _common_exts(self.qos, self.timestamp)
        add_optional(exts, EXT_NODE_ID, self.node_id)
        add_optional(exts, EXT_TS_STACK, self.ts_stack)
        exts.extend(self.extensions)
        _finish(out, ID_PUSH | _wire_expr_flags(self.wire_expr), exts)
        self.wire_expr.write(out)
        if exts:
            write_extensions(out, exts)

    def write(self, out: bytearray) -> None:
        self.write_head(out)
        self.body.write(out)

    @classmethod
    def read(cls, r: Reader, header: int) -> Push:
        start = r.pos - 1  # the header byte was read by the dispatcher
        wire_expr = _read_wire_expr(r, header)
        e = _NetExts(r, header, _PUSH_EXTS)
        body_offset = r.pos - start
        body = read_push_body(r)
        return cls(
            wire_expr, body, e.qos, e.timestamp, e.z64(EXT_NODE_ID), e.zbuf(EXT_TS_STACK), tuple(e.others), body_offset
        )


_PUSH_EXTS = frozenset({EXT_NODE_ID, EXT_TS_STACK})
