"""Forwarding a lone PUSH from its received bytes.

A batch holding one FRAME of one PUSH is what every ping-pong message is, and what a
publisher writing each put at once sends. Its route is cached per (face, key
representation, QoS) as the head each destination gets (None: the received one); the
router's HLC timestamp is spliced in after the PUT header, and nothing is decoded or
built: the bytes come in, the routed bytes go out (:meth:`LonePushes.forward_lone`).

The lane covers the plain case only and answers None for anything else, which then goes
through :meth:`PubSub._on_push`, the one definition of routing data: a dropped route
(reported), access control restricting the route, an observer wanting its event, a
NodeId from a router neighbour or towards one, a timestamp too far in the future.
"""

from __future__ import annotations

from pyzenoh.codec import Push, Put, WireExpr
from pyzenoh.codec.data import FLAG_T as PUT_FLAG_T
from pyzenoh.routing.faces import MAX_ROUTE_CACHE, NORTH
from pyzenoh.routing.runs import PushRuns
from pyzenoh.transport.fastpath import ID_PUT, PushFields

#: Where a lone PUSH goes: each destination face and the head written for it (None:
#: the received head, when the destination knows the key as the source wrote it).
LoneDests = tuple[tuple[int, bytes | None], ...]


class LonePushes(PushRuns):
    """The lone-PUSH lane (the per-message rules live in :mod:`.pubsub`)."""

    # (face, scope, suffix, mapping sender, QoS) -> destinations; None: not covered
    _lone_routes: dict[tuple[int, int, str, bool, int], LoneDests | None]

    def forward_lone(self, face: int, batch: bytes, at: int, fields: PushFields,
                     wall: float) -> list[tuple[int, bytes]] | None:  # fmt: skip
        """Route the PUSH at ``batch[at:]`` (its fields as ``scan_push`` found them, the
        batch ending with it) received on ``face``: each destination face and the bytes
        of its copy, stamped with the HLC at ``wall``. None: the lane does not cover it,
        nothing was done; route it with :meth:`handle`."""
        if fields[11] is not None or self.observer is not None:  # a NodeId; an observer
            return None
        key = (face, fields[1], fields[2], fields[3], fields[4])
        try:
            dests = self._lone_routes[key]
        except KeyError:
            dests = self._lone_route(*key)
        if dests is None:
            return None
        stats = self.stats
        if not dests:
            stats.pushes_routed += 1
            stats.lone_pushes_routed += 1
            return []
        off = at + fields[5]  # the PUT/DEL header
        if fields[6] == ID_PUT and self.config.timestamping:
            ts = fields[7]
            if ts is None:
                stamp = self._hlc.new_encoded(wall)
                body = b"".join((bytes((batch[off] | PUT_FLAG_T,)), stamp, batch[off + 1 :]))
            elif self._hlc.update(ts, wall):
                body = batch[off:]
            else:
                return None  # too far ahead: re-stamped or dropped by the full path
        else:
            body = batch[off:]
        stats.pushes_routed += 1
        stats.lone_pushes_routed += 1
        if len(dests) == 1:
            fid, head = dests[0]
            return [(fid, (batch[at:off] if head is None else head) + body)]
        received = batch[at:off]
        return [(fid, (received if head is None else head) + body) for fid, head in dests]

    def _lone_route(self, face: int, scope: int, suffix: str, mapping: bool, qos: int) -> LoneDests | None:
        """The lane's destinations for a key representation, from the data route (cached
        as long as it is)."""
        f = self._faces.get(face)
        if f is None or face == NORTH:
            return None  # handle() says what is wrong
        route = self._data_route(f, WireExpr(scope, suffix, mapping), None)
        dests: LoneDests | None = None
        if route.key is not None and route.acl is None and all(node is None for _, _, node in route.dests):
            heads: list[tuple[int, bytes | None]] = []
            for fid, we, _ in route.dests:
                same = we.scope == scope and we.suffix == suffix and we.mapping_sender == mapping
                heads.append((fid, None if same else self._push_head(Push(we, Put(b""), qos))))
            dests = tuple(heads)
        routes = self._lone_routes
        if len(routes) >= MAX_ROUTE_CACHE:
            routes.clear()
        routes[(face, scope, suffix, mapping, qos)] = dests
        return dests
