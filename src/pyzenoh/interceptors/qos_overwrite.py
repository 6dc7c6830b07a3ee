"""``qos/network``: the QoS of matching messages rewritten (priority, congestion control,
express), by kind, key, flow and payload size (an inclusive ``"a..b"`` range, either end
open). Measured on zenohd 1.10.2: a put sent data_low/drop/not express under an overwrite
{real_time, block, express} reaches the subscriber as REAL_TIME, BLOCK, express."""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.interceptors.subjects import Kind, Message, Rewrite, Subjects
from pyzenoh.keyexpr.relations import includes, intersects

#: zenohd's priority names, to the wire's 1..7 (control, 0, cannot be written).
PRIORITIES = {
    "real_time": 1,
    "interactive_high": 2,
    "interactive_low": 3,
    "data_high": 4,
    "data": 5,
    "data_low": 6,
    "background": 7,
}
#: zenohd's congestion control names, to the wire's values.
CONGESTION = {"drop": 0, "block": 1, "block_first": 2}
#: qos/network lists no reply (zenohd 1.10.2 refuses it).
QOS_KINDS = frozenset({Kind.PUT, Kind.DELETE, Kind.QUERY})


@dataclass(frozen=True, slots=True)
class QosItem:
    id: str
    subjects: Subjects
    messages: frozenset[Kind]
    key_exprs: tuple[str, ...] | None
    payload_min: int | None
    payload_max: int | None
    rewrite: Rewrite
    #: ``zids`` and ``qos`` filters: parsed (zenohd accepts them), not matched yet.
    zids: tuple[str, ...] | None = None
    qos_filter: bool = False

    def restricts(self, key: str) -> bool:
        return self.key_exprs is None or any(intersects(k, key) for k in self.key_exprs)

    def covers(self, key: str) -> bool:
        """Whether a message on ``key`` is under the item's key expressions (all: none given)."""
        return self.key_exprs is None or any(includes(k, key) for k in self.key_exprs)

    def rewrites(self, msg: Message) -> Rewrite | None:
        """The rewrite of a message whose key is known covered: by kind and payload size."""
        if msg.kind not in self.messages:
            return None
        if self.payload_min is not None and msg.payload_size < self.payload_min:
            return None
        if self.payload_max is not None and msg.payload_size > self.payload_max:
            return None
        return self.rewrite

    def apply(self, msg: Message) -> Rewrite | None:
        return self.rewrites(msg) if self.covers(msg.key) else None
