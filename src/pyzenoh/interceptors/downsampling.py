"""``downsampling``: at most ``freq`` messages per second per rule, per transport and flow.

Measured on zenohd 1.10.2 (docs/interceptors.md): one rule's state is shared by every key
it matches on a transport (200 Hz alternating on two keys under a 10 Hz rule: 20 in 2 s,
12 + 8); a message passes when at least 1/freq has passed since the last one that passed
(gaps 0.100-0.105 s); a burst of 50 at once gives 1 and nothing is sent late.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyzenoh.interceptors.subjects import Drop, FaceAttrs, Flow, Kind, Message, Subjects
from pyzenoh.keyexpr.relations import includes, intersects


@dataclass(frozen=True, slots=True)
class Rule:
    key_expr: str
    freq: float

    @property
    def interval(self) -> float:
        # freq <= 0 opens on zenohd too; it lets nothing through after the first message
        return 1.0 / self.freq if self.freq > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class DownsamplingItem:
    id: str
    subjects: Subjects
    messages: frozenset[Kind]
    rules: tuple[Rule, ...]


@dataclass(slots=True)
class Downsampler:
    """One item on one transport and flow: the last time each rule let a message through."""

    item: DownsamplingItem
    last: dict[int, float] = field(default_factory=dict)
    drops: int = 0

    def restricts(self, key: str) -> bool:
        return any(intersects(r.key_expr, key) for r in self.item.rules)

    def rule_of(self, key: str) -> int | None:
        for i, r in enumerate(self.item.rules):
            if includes(r.key_expr, key):
                return i
        return None

    def apply(self, msg: Message, now: float) -> Drop | None:
        if msg.kind not in self.item.messages:
            return None
        i = self.rule_of(msg.key)
        if i is None:
            return None
        return self.check(i, now)

    def check(self, i: int, now: float) -> Drop | None:
        """Rule ``i`` (the one the message's key falls under) lets a message of a listed
        kind through at ``now``, or drops it."""
        last = self.last.get(i)
        if last is not None and now - last < self.item.rules[i].interval:
            self.drops += 1
            return Drop("downsampling", self.item.id)
        self.last[i] = now
        return None


def downsamplers(items: tuple[DownsamplingItem, ...], face: FaceAttrs, flow: Flow) -> list[Downsampler]:
    return [Downsampler(it) for it in items if it.subjects.applies(face, flow)]
