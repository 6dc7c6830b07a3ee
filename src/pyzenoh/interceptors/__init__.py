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
    "Kind",
    "Message",
    "Rewrite",
]


@dataclass(slots=True)
class FacePolicy:
    """The interceptors of one transport and flow, with their state."""

    downsamplers: list[Downsampler]
    low_pass: list[LowPassItem]
    qos: list[QosItem]
    counts: Counter[str]
    drops: int = 0
    rewrites: int = 0

    @property
    def empty(self) -> bool:
        return not (self.downsamplers or self.low_pass or self.qos)

    def or_none(self) -> FacePolicy | None:
        """This policy, or None when no item applies to its transport and flow."""
        return None if self.empty else self

    def restricts(self, key: str) -> bool:
        return (
            any(d.restricts(key) for d in self.downsamplers)
            or any(lp.restricts(key) for lp in self.low_pass)
            or any(q.restricts(key) for q in self.qos)
        )

    def apply(self, msg: Message, now: float) -> Decision:
        # size first, so a dropped message uses no downsampling slot (zenohd's order not yet measured)
        for lp in self.low_pass:
            drop = lp.apply(msg)
            if drop is not None:
                return self._drop(drop)
        for d in self.downsamplers:
            drop = d.apply(msg, now)
            if drop is not None:
                return self._drop(drop)
        out: Rewrite | None = None
        for q in self.qos:
            r = q.apply(msg)
            if r is not None:
                out = r if out is None else _merge(out, r)
        if out is None:
            return KEEP
        self.rewrites += 1
        self.counts[f"qos/network/{out.item}"] += 1
        return out

    def _drop(self, drop: Drop) -> Drop:
        self.drops += 1
        self.counts[f"{drop.interceptor}/{drop.item}"] += 1
        return drop


def _merge(a: Rewrite, b: Rewrite) -> Rewrite:
    """Items apply in order: a later one's fields write over an earlier one's."""
    return Rewrite(
        b.item,
        b.priority if b.priority is not None else a.priority,
        b.congestion_control if b.congestion_control is not None else a.congestion_control,
        b.express if b.express is not None else a.express,
    )


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
