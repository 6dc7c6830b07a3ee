"""``low_pass_filter``: a message of a listed kind on a listed key is dropped when its
payload plus attachment exceed ``size_limit`` (measured on zenohd 1.10.2 with limit 100:
100+0, 50+50, 0+100 kept; 101+0, 50+51, 0+101 dropped; kinds not listed pass)."""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.interceptors.subjects import Drop, Kind, Message, Subjects
from pyzenoh.keyexpr.relations import includes, intersects


@dataclass(frozen=True, slots=True)
class LowPassItem:
    id: str
    subjects: Subjects
    messages: frozenset[Kind]
    key_exprs: tuple[str, ...]
    size_limit: int

    def restricts(self, key: str) -> bool:
        return any(intersects(k, key) for k in self.key_exprs)

    def covers(self, key: str) -> bool:
        """Whether a message on ``key`` is under one of the item's key expressions."""
        return any(includes(k, key) for k in self.key_exprs)

    def too_large(self, msg: Message) -> bool:
        """A message of a listed kind over the limit (its key already known covered)."""
        return msg.kind in self.messages and msg.payload_size + msg.attachment_size > self.size_limit

    def apply(self, msg: Message) -> Drop | None:
        if self.too_large(msg) and self.covers(msg.key):
            return Drop("low_pass_filter", self.id)
        return None
