"""zenohd's interceptors as a policy (sans-IO): ``downsampling``, ``low_pass_filter`` and
``qos/network`` overwrite, per transport and flow.

The router builds :class:`Interceptors` from its config, asks :meth:`Interceptors.for_face`
once per transport and flow, and then, per route, :meth:`FacePolicy.restricts` (cheap,
cacheable with the route: False means no interceptor can touch that key there) and, per
message on a restricted route, :meth:`FacePolicy.apply`: Keep, Drop or Rewrite. Drops and
rewrites are counted on the policy and in :attr:`Interceptors.counts`. The routing core
asks it through :mod:`pyzenoh.routing.intercepted`, for PUT, DELETE, queries and replies.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pyzenoh.interceptors.config import parse_downsampling, parse_low_pass, parse_qos_network
from pyzenoh.interceptors.downsampling import Downsampler, DownsamplingItem, downsamplers
from pyzenoh.interceptors.low_pass import LowPassItem
from pyzenoh.interceptors.qos_overwrite import QosItem
from pyzenoh.interceptors.subjects import KEEP, Decision, Drop, FaceAttrs, Flow, Keep, Kind, Message, Rewrite, bad

__all__ = [
    "KEEP",
    "Decision",
    "Drop",
    "FaceAttrs",
    "FacePolicy",
    "Flow",
    "Interceptors",
    "Keep",
    "KeyPolicy",
    "Kind",
    "Message",
    "Rewrite",
]


#: Keys whose decisions a policy keeps (queries and replies are not cached with a route).
MAX_KEY_POLICIES = 4096


@dataclass(slots=True)
class FacePolicy:
    """The interceptors of one transport and flow, with their state."""

    downsamplers: list[Downsampler]
    low_pass: list[LowPassItem]
    qos: list[QosItem]
    counts: Counter[str]
    drops: int = 0
    rewrites: int = 0
    _by_key: dict[str, KeyPolicy | None] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.downsamplers or self.low_pass or self.qos)

    def or_none(self) -> FacePolicy | None:
        """This policy, or None when no item applies to its transport and flow."""
        return None if self.empty else self

    def for_key(self, key: str) -> KeyPolicy | None:
        """The items a message on ``key`` falls under, decided once per key (None: no item
        can touch it, and its messages pay nothing). A router caches it with the route."""
        if key in self._by_key:
            return self._by_key[key]
        rules = []
        for d in self.downsamplers:
            i = d.rule_of(key)
            if i is not None:
                rules.append((d, i))
        low_pass = tuple(lp for lp in self.low_pass if lp.covers(key))
        qos = tuple(q for q in self.qos if q.covers(key))
        out = KeyPolicy(self, low_pass, tuple(rules), qos) if rules or low_pass or qos else None
        if len(self._by_key) >= MAX_KEY_POLICIES:
            self._by_key.clear()
        self._by_key[key] = out
        return out

    def restricts(self, key: str) -> bool:
        return self.for_key(key) is not None

    def apply(self, msg: Message, now: float) -> Decision:
        kp = self.for_key(msg.key)
        return KEEP if kp is None else kp.apply(msg, now)

    def _drop(self, drop: Drop) -> Drop:
        self.drops += 1
        self.counts[f"{drop.interceptor}/{drop.item}"] += 1
        return drop


@dataclass(frozen=True, slots=True)
class KeyPolicy:
    """A face's interceptors that a key falls under: per message, only kinds, sizes and
    the clock are left to look at."""

    policy: FacePolicy
    low_pass: tuple[LowPassItem, ...]
    downsampling: tuple[tuple[Downsampler, int], ...]  # (downsampler, its rule for the key)
    qos: tuple[QosItem, ...]

    def apply(self, msg: Message, now: float) -> Decision:
        # size first, so a dropped message uses no downsampling slot (zenohd's order not yet measured)
        for lp in self.low_pass:
            if lp.too_large(msg):
                return self.policy._drop(Drop("low_pass_filter", lp.id))
        for d, rule in self.downsampling:
            if msg.kind in d.item.messages:
                drop = d.check(rule, now)
                if drop is not None:
                    return self.policy._drop(drop)
        out: Rewrite | None = None
        for q in self.qos:
            r = q.rewrites(msg)
            if r is not None:
                out = r if out is None else out.then(r)
        if out is None:
            return KEEP
        self.policy.rewrites += 1
        self.policy.counts[f"qos/network/{out.item}"] += 1
        return out


@dataclass(slots=True)
class Interceptors:
    downsampling: tuple[DownsamplingItem, ...] = ()
    low_pass: tuple[LowPassItem, ...] = ()
    qos: tuple[QosItem, ...] = ()
    #: Drops and rewrites per "interceptor/item", over every face.
    counts: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_config(cls, tree: dict[str, Any]) -> Interceptors:
        qos = tree.get("qos") or {}
        return cls(
            parse_downsampling(tree.get("downsampling")),
            parse_low_pass(tree.get("low_pass_filter")),
            parse_qos_network(qos.get("network") if isinstance(qos, dict) else None),
        )

    @property
    def empty(self) -> bool:
        return not (self.downsampling or self.low_pass or self.qos)

    def check_supported(self) -> None:
        """Refuse what the router would otherwise silently not apply: ``qos/network``
        items filtered by ``zids`` or ``qos`` (parsed, not matched yet)."""
        for q in self.qos:
            if q.zids is not None or q.qos_filter:
                raise bad(f"qos/network/{q.id}", "pyzenoh does not filter by zids or qos yet")

    def for_face(self, face: FaceAttrs, flow: Flow) -> FacePolicy:
        """A fresh policy (fresh downsampling state) for one transport and flow."""
        return FacePolicy(
            downsamplers(self.downsampling, face, flow),
            [lp for lp in self.low_pass if lp.subjects.applies(face, flow)],
            [q for q in self.qos if q.subjects.applies(face, flow)],
            self.counts,
        )
