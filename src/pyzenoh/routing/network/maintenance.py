"""Keeping the graph consistent: an edge's weight from what both ends announce, and
dropping nodes we can no longer reach following announced links (zenohd's rule) or,
with single-hop gossip, that no neighbour mentions any more."""

from __future__ import annotations

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.routing.network.state import NetworkState
from pyzenoh.routing.network.weights import edge_weight_of


class GraphMaintenance:
    """Edges and node removal after a change, in the graph of ``s``."""

    def __init__(self, s: NetworkState) -> None:
        self.s = s

    def update_edge(self, i1: int, i2: int) -> None:
        n1, n2 = self.s.graph.node(i1), self.s.graph.node(i2)
        weight = edge_weight_of(n1.zid, n2.zid, n1.links.get(n2.zid, 0), n2.links.get(n1.zid, 0))
        self.s.graph.update_edge(i1, i2, weight)

    def unreachable(self, skip: ZenohId | None = None) -> list[int]:
        """Nodes not reachable from us following *announced* links (as zenohd does, not
        confirmed edges); ``skip``: ignore our own link to that neighbour."""
        g = self.s.graph
        seen: set[int] = set()
        stack = [self.s.idx]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            for z in g.node(i).links:
                if i == self.s.idx and z == skip:
                    continue
                j = self.s.index_of(z)
                if j is not None and j not in seen:
                    stack.append(j)
        return [i for i in g.indexes() if i not in seen]

    def remove_detached(self) -> list[ZenohId]:
        idxs = self.unreachable()
        removed = [self.s.graph.node(i).zid for i in idxs]
        for i in idxs:
            self.s.graph.remove_node(i)
        return removed

    def prune_gossip(self) -> None:
        # single-hop gossip learns nodes a peer mentions; forget those no neighbour mentions
        g = self.s.graph
        neighbours = {lk.zid for lk in self.s.neighbours.values()}
        mentioned = set(neighbours)
        for z in neighbours:
            i = self.s.index_of(z)
            if i is not None:
                mentioned.update(g.node(i).links)
        for i in g.indexes():
            if i != self.s.idx and g.node(i).zid not in mentioned:
                g.remove_node(i)
