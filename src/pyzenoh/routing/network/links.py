"""Links to neighbours opened and closed: what each tells the others (with full link
state our new state is flooded; a new neighbour gets everything we know, or, with
single-hop gossip, our other neighbours), and which nodes a closed link takes away."""

from __future__ import annotations

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.routing.network.graph import _Node
from pyzenoh.routing.network.maintenance import GraphMaintenance
from pyzenoh.routing.network.messages import Messages
from pyzenoh.routing.network.state import LinkStateError, NetworkState, _Link, _Out


class LinkChanges:
    """Opening and closing links: what changes in ``s``, and what ``messages`` tell."""

    def __init__(self, s: NetworkState, messages: Messages, maintenance: GraphMaintenance) -> None:
        self.s = s
        self.messages = messages
        self.maintenance = maintenance

    def add_link(self, link: int, zid: ZenohId, whatami: WhatAmI) -> list[tuple[int, bytes]]:
        """A session to a neighbour opened on ``link``: the link states to send."""
        if link in self.s.neighbours:
            raise UsageError(f"link {link} is already open")
        if zid == self.s.zid:
            raise UsageError("a link to ourselves")
        if self.s.link_of(zid) is not None:
            raise UsageError(f"a second link to {zid}")
        g = self.s.graph
        new = False
        idx = self.s.index_of(zid)
        if self.s.flood and idx is None and len(g) >= self.s.max_nodes:
            raise LinkStateError(f"{zid} would take the graph over {self.s.max_nodes} nodes")
        # psid 0 is always the sender itself (its own node index)
        self.s.neighbours[link] = _Link(zid, whatami, {0: zid}, {zid: 0})
        sends: list[tuple[int, bytes]] = []
        if self.s.flood:
            if idx is None:
                idx = g.add_node(_Node(zid, whatami, None, 0, {}, False))
                new = True
            me = g.node(self.s.idx)
            me.links[zid] = self.s.link_weights.get(zid, 0)
            me.sn += 1
            if self.s.zid in g.node(idx).links:
                self.maintenance.update_edge(self.s.idx, idx)
            # our new state to the other neighbours (with the new node's zid if new to us)
            for other_id in sorted(self.s.neighbours):
                other = self.s.neighbours[other_id]
                if other.zid == zid:
                    continue
                out: list[_Out] = [(self.s.idx, False, True)]
                if new:
                    out.insert(0, (idx, True, False))
                sends.append((other_id, self.messages.message(other_id, out)))
        # the new neighbour gets everything we know (single-hop: our other neighbours only)
        if self.s.flood:
            everything = [(i, True, True) for i in g.indexes()]
        else:
            neighbours = {lk.zid for lk in self.s.neighbours.values()}
            everything = [(i, True, False) for i in g.indexes() if g.node(i).zid in neighbours]
        sends.append((link, self.messages.message(link, everything)))
        return sends

    def disconnected_if_removed(self, link: int) -> list[ZenohId]:
        """The nodes that :meth:`remove_link` would drop (zenohd's
        ``find_disconnected_nodes_after_removing_link``)."""
        lk = self.s.link_record(link)
        if not self.s.flood:
            return []
        return [self.s.graph.node(i).zid for i in self.maintenance.unreachable(skip=lk.zid)]

    def remove_link(self, link: int) -> tuple[list[ZenohId], list[tuple[int, bytes]]]:
        """The link closed: (zids of the nodes dropped as unreachable, sends)."""
        lk = self.s.link_record(link)
        del self.s.neighbours[link]
        g = self.s.graph
        me = g.node(self.s.idx)
        me.links.pop(lk.zid, None)
        idx = self.s.index_of(lk.zid)
        if not self.s.flood:
            if idx is not None:
                g.remove_node(idx)
            self.maintenance.prune_gossip()
            return [], []
        if idx is not None:
            e = g.find_edge(self.s.idx, idx)
            if e is not None:
                g.remove_edge(e)
        removed = self.maintenance.remove_detached()
        me.sn += 1
        sends = [
            (other, self.messages.message(other, [(self.s.idx, False, True)])) for other in sorted(self.s.neighbours)
        ]
        return removed, sends
