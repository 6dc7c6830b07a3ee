"""Links to neighbours opened and closed: what each tells the others (with full link
state our new state is flooded; a new neighbour gets everything we know, or, with
single-hop gossip, our other neighbours), and which nodes a closed link takes away."""

from __future__ import annotations

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.routing.network.graph import _Node
from pyzenoh.routing.network.maintenance import GraphMaintenance
from pyzenoh.routing.network.messages import Messages
from pyzenoh.routing.network.state import LinkStateError, _Link, _Out


class Links(Messages, GraphMaintenance):
    """Opening and closing links."""

    def add_link(self, link: int, zid: ZenohId, whatami: WhatAmI) -> list[tuple[int, bytes]]:
        """A session to a neighbour opened on ``link``: the link states to send."""
        if link in self._links:
            raise UsageError(f"link {link} is already open")
        if zid == self.zid:
            raise UsageError("a link to ourselves")
        if self.link_of(zid) is not None:
            raise UsageError(f"a second link to {zid}")
        g = self._g
        new = False
        idx = self.index_of(zid)
        if self._flood and idx is None and len(g) >= self.max_nodes:
            raise LinkStateError(f"{zid} would take the graph over {self.max_nodes} nodes")
        # psid 0 is always the sender itself (its own node index)
        self._links[link] = _Link(zid, whatami, {0: zid}, {zid: 0})
        sends: list[tuple[int, bytes]] = []
        if self._flood:
            if idx is None:
                idx = g.add_node(_Node(zid, whatami, None, 0, {}, False))
                new = True
            me = g.node(self.idx)
            me.links[zid] = self._link_weights.get(zid, 0)
            me.sn += 1
            if self.zid in g.node(idx).links:
                self._update_edge(self.idx, idx)
            # our new state to the other neighbours (with the new node's zid if new to us)
            for other_id in sorted(self._links):
                other = self._links[other_id]
                if other.zid == zid:
                    continue
                out: list[_Out] = [(self.idx, False, True)]
                if new:
                    out.insert(0, (idx, True, False))
                sends.append((other_id, self._message(other_id, out)))
        # the new neighbour gets everything we know (single-hop: our other neighbours only)
        if self._flood:
            everything = [(i, True, True) for i in g.indexes()]
        else:
            neighbours = {lk.zid for lk in self._links.values()}
            everything = [(i, True, False) for i in g.indexes() if g.node(i).zid in neighbours]
        sends.append((link, self._message(link, everything)))
        return sends

    def disconnected_if_removed(self, link: int) -> list[ZenohId]:
        """The nodes that :meth:`remove_link` would drop (zenohd's
        ``find_disconnected_nodes_after_removing_link``)."""
        lk = self._link(link)
        if not self._flood:
            return []
        return [self._g.node(i).zid for i in self._unreachable(skip=lk.zid)]

    def remove_link(self, link: int) -> tuple[list[ZenohId], list[tuple[int, bytes]]]:
        """The link closed: (zids of the nodes dropped as unreachable, sends)."""
        lk = self._link(link)
        del self._links[link]
        g = self._g
        me = g.node(self.idx)
        me.links.pop(lk.zid, None)
        idx = self.index_of(lk.zid)
        if not self._flood:
            if idx is not None:
                g.remove_node(idx)
            self._prune_gossip()
            return [], []
        if idx is not None:
            e = g.find_edge(self.idx, idx)
            if e is not None:
                g.remove_edge(e)
        removed = self._remove_detached()
        me.sn += 1
        sends = [(other, self._message(other, [(self.idx, False, True)])) for other in sorted(self._links)]
        return removed, sends
