"""The link states we send a neighbour: in our numbering, each index's zid sent until
that neighbour has been told it, a referenced node never told added in full, and
locators only where zenohd's ``propagate_locators`` allows them."""

from __future__ import annotations

from pyzenoh.routing.linkstate import LinkState, encode_linkstates
from pyzenoh.routing.network.state import NetworkState, _Link, _Out


class Messages:
    """Encoding our view of the nodes of ``s`` for one neighbour."""

    def __init__(self, s: NetworkState) -> None:
        self.s = s

    def propagate_locators(self, idx: int, target: _Link) -> bool:
        """zenohd's ``propagate_locators``: gossip on, the target is a gossip target, and
        the node is us or a neighbour (any node with multihop gossip)."""
        if not (self.s.gossip and target.whatami in self.s.gossip_target):
            return False
        if self.s.gossip_multihop or idx == self.s.idx:
            return True
        zid = self.s.graph.node(idx).zid
        return any(lk.zid == zid for lk in self.s.neighbours.values())

    def state_of_node(self, idx: int, send_zid: bool, send_links: bool, target: _Link) -> LinkState:
        g = self.s.graph
        node = g.node(idx)
        links: list[int] = []
        weights: list[int] = []
        if send_links:
            for dest, w in node.links.items():
                j = self.s.index_of(dest)
                if j is not None:
                    links.append(j)
                    weights.append(w)
        locators: tuple[str, ...] | None = None
        if self.propagate_locators(idx, target):
            locators = tuple(self.s.locators()) if idx == self.s.idx else node.locators
        return LinkState(
            psid=idx,
            sn=node.sn,
            zid=node.zid if send_zid else None,
            whatami=node.whatami,
            locators=locators,
            links=tuple(links),
            weights=tuple(weights) if any(weights) else None,
            gateway=node.gateway,
        )

    def message(self, link_id: int, out: list[_Out]) -> bytes:
        """Encode ``out`` for ``link_id``; the zid goes with every index the neighbour has
        not been told yet, and a node referenced but never told is added in full."""
        target = self.s.neighbours[link_id]
        g = self.s.graph
        told = target.told
        queued = {i for i, _, _ in out}
        items = list(out)
        k = 0
        while k < len(items):  # items grows when a link references an untold node
            idx, send_zid, send_links = items[k]
            k += 1
            if send_links:
                for dest in g.node(idx).links:
                    j = self.s.index_of(dest)
                    if j is not None and j not in queued and told.get(j) != dest:
                        queued.add(j)
                        items.append((j, True, True))
        states = []
        for idx, send_zid, send_links in items:
            zid = g.node(idx).zid
            states.append(self.state_of_node(idx, send_zid or told.get(idx) != zid, send_links, target))
        for s in states:
            if s.zid is not None:
                told[s.psid] = s.zid
        return encode_linkstates(states)
