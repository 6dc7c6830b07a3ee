"""Received LINKSTATE bodies: checked as a whole and translated to zids before anything
changes (:class:`~.state.LinkStateError` otherwise), then applied: with full link state
newer states update the graph and are re-flooded, unreachable nodes are dropped and a
state of ours from a previous run is superseded; with single-hop gossip a peer's
locators are passed on to the other peers."""

from __future__ import annotations

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.errors import DecodeError
from pyzenoh.routing.linkstate import LinkState, decode_linkstates
from pyzenoh.routing.network.graph import _Node
from pyzenoh.routing.network.maintenance import GraphMaintenance
from pyzenoh.routing.network.messages import Messages
from pyzenoh.routing.network.state import (
    PSID_SLOTS_PER_NODE,
    LinkStateError,
    NetworkState,
    _Link,
    _Local,
    _Out,
)


class ReceivedStates:
    """What a neighbour's link states change in ``s``, and what we send on because of them."""

    def __init__(self, s: NetworkState, messages: Messages, maintenance: GraphMaintenance) -> None:
        self.s = s
        self.messages = messages
        self.maintenance = maintenance

    def link_states(self, link: int, body: bytes) -> tuple[list[ZenohId], list[tuple[int, bytes]]]:
        """A LINKSTATE body received on ``link``: (zids dropped as unreachable, sends)."""
        lk = self.s.link_record(link)
        try:
            states = decode_linkstates(body)
        except DecodeError as exc:
            raise LinkStateError(f"undecodable link states from {lk.zid}: {exc}") from exc
        local, mappings = self._check(lk, states)
        # -- nothing changed up to here; commit
        for psid, zid in mappings.items():
            old_psid = lk.psids.get(zid)
            if old_psid is not None and old_psid != psid:
                del lk.mappings[old_psid]  # the sender renumbered that node: forget the old one
            old_zid = lk.mappings.get(psid)
            if old_zid is not None and old_zid != zid:
                del lk.psids[old_zid]  # the sender reused that index
            lk.mappings[psid] = zid
            lk.psids[zid] = psid
        if not self.s.flood:
            return [], self._process_singlehop(local)
        return self._process_full(lk, local)

    def _check(self, lk: _Link, states: list[LinkState]) -> tuple[list[_Local], dict[int, ZenohId]]:
        """Validate ``states`` from ``lk`` and translate them to zids; raise before any change."""
        max_psid = self.s.max_nodes * PSID_SLOTS_PER_NODE
        # this message's psid <-> zid mappings, which apply to the whole message
        mappings: dict[int, ZenohId] = {}
        claimed: dict[ZenohId, int] = {}
        for s in states:
            if s.psid >= max_psid:
                raise LinkStateError(f"psid {s.psid} from {lk.zid} out of range")
            if s.zid is None:
                continue
            if mappings.get(s.psid, s.zid) != s.zid:
                raise LinkStateError(f"psid {s.psid} given two zids by {lk.zid}")
            if claimed.get(s.zid, s.psid) != s.psid:
                raise LinkStateError(f"{s.zid} claimed by two psids of {lk.zid}")
            if (s.psid == 0) != (s.zid == lk.zid):
                raise LinkStateError(f"{lk.zid} announced itself other than as psid 0")
            mappings[s.psid] = s.zid
            claimed[s.zid] = s.psid

        def resolve(psid: int) -> ZenohId:
            if psid >= max_psid:
                raise LinkStateError(f"link index {psid} from {lk.zid} out of range")
            zid = mappings.get(psid)
            if zid is None:
                zid = lk.mappings.get(psid)
                if zid is None or zid in claimed:  # never mapped, or remapped by this message
                    raise LinkStateError(f"psid {psid} was never mapped on the link to {lk.zid}")
            return zid

        local: list[_Local] = []
        new_zids: set[ZenohId] = set()
        me = self.s.graph.node(self.s.idx)
        for s in states:
            zid = resolve(s.psid)
            links: dict[ZenohId, int] = {}
            for i, psid in enumerate(s.links):
                dest = resolve(psid)
                if dest == zid:
                    raise LinkStateError(f"{zid} announced a link to itself")
                links[dest] = s.weights[i] if s.weights is not None else 0
            if zid == self.s.zid:
                if s.whatami is not None and s.whatami != self.s.whatami:
                    raise LinkStateError(f"{lk.zid} announced us as a {s.whatami}")
                if self.s.flood and s.sn == me.sn and not links.keys() <= me.links.keys():
                    raise LinkStateError(f"{lk.zid} announced us with links we don't have")
            elif self.s.index_of(zid) is None:
                new_zids.add(zid)
            if self.s.flood:
                new_zids.update(d for d in links if d != self.s.zid and self.s.index_of(d) is None)
            local.append(_Local(s.sn, zid, s.whatami, s.locators, links, s.gateway))
        if len(self.s.graph) + len(new_zids) > self.s.max_nodes:
            raise LinkStateError(f"the states of {lk.zid} take the graph over {self.s.max_nodes} nodes")
        return local, mappings

    def _process_full(self, src: _Link, states: list[_Local]) -> tuple[list[ZenohId], list[tuple[int, bytes]]]:
        g = self.s.graph
        new_nodes: list[int] = []
        updated: dict[int, None] = {}  # (an ordered set)
        bumped = False
        for ls in states:
            if ls.zid == self.s.zid:
                me = g.node(self.s.idx)
                if ls.sn > me.sn:
                    # our state from a previous run of ours: supersede it
                    me.sn = ls.sn + 1
                    bumped = True
                continue
            idx1 = self.s.index_of(ls.zid)
            if idx1 is not None:
                node = g.node(idx1)
                if node.sn >= ls.sn:
                    continue  # outdated
                old_sn = node.sn
                node.sn = ls.sn
                if node.whatami is None:
                    # known by mention so far: 1.10.2 routers take the whatami from the
                    # node's own state (seen on the wire)
                    node.whatami = ls.whatami or WhatAmI.ROUTER
                node.links = dict(ls.links)
                if ls.locators is not None:
                    node.locators = ls.locators
                if old_sn == 0:
                    # (also when just added by mention: then zenohd lists it twice, so do we)
                    new_nodes.append(idx1)
                else:
                    updated[idx1] = None
                node.gateway = ls.gateway
            else:
                whatami = ls.whatami or WhatAmI.ROUTER
                idx1 = g.add_node(_Node(ls.zid, whatami, ls.locators, ls.sn, dict(ls.links), ls.gateway))
                new_nodes.append(idx1)
            for dest in ls.links:
                idx2 = self.s.index_of(dest)
                if idx2 is not None:
                    if ls.zid in g.node(idx2).links:
                        self.maintenance.update_edge(idx1, idx2)
                else:
                    # mentioned but unknown: known by zid only until its own state comes
                    new_nodes.append(g.add_node(_Node(dest, None, None, 0, {}, False)))
            for e, idx2 in g.neighbour_edges(idx1):
                if g.node(idx2).zid not in ls.links:
                    g.remove_edge(e)
        removed_idx = self.maintenance.unreachable()
        removed = [g.node(i).zid for i in removed_idx]
        for i in removed_idx:
            g.remove_node(i)
        gone = set(removed_idx)
        new_nodes = [i for i in new_nodes if i not in gone]
        changed = [i for i in updated if i not in gone]
        # flood: new nodes to everyone (send all at once, so nothing looks detached on
        # the other side), updates to all but the sender and the node itself
        sends = []
        for link_id in sorted(self.s.neighbours):
            lk = self.s.neighbours[link_id]
            out: list[_Out] = [(i, True, True) for i in new_nodes]
            if lk is not src:
                out += [(i, False, True) for i in changed if g.node(i).zid != lk.zid]
            if bumped:
                out.append((self.s.idx, False, True))
            if out:
                sends.append((link_id, self.messages.message(link_id, out)))
        return removed, sends

    def _process_singlehop(self, states: list[_Local]) -> list[tuple[int, bytes]]:
        g = self.s.graph
        sends: list[tuple[int, bytes]] = []
        neighbours = {lk.zid for lk in self.s.neighbours.values()}
        for ls in states:
            if ls.zid == self.s.zid:
                continue  # a peer's view of its gateway (us): nothing to learn
            idx = self.s.index_of(ls.zid)
            if idx is None:
                whatami = ls.whatami or WhatAmI.ROUTER
                idx = g.add_node(_Node(ls.zid, whatami, ls.locators, ls.sn, dict(ls.links), ls.gateway))
                if ls.locators is None:
                    continue
            else:
                node = g.node(idx)
                if node.sn >= ls.sn:
                    continue
                node.sn = ls.sn
                if ls.links:  # a peer's state of another node carries no links: keep ours
                    node.links = dict(ls.links)
                if ls.locators is None or node.locators == ls.locators:
                    continue
                node.locators = ls.locators
            if self.s.gossip and (self.s.gossip_multihop or ls.zid in neighbours):
                for link_id in sorted(self.s.neighbours):
                    if self.s.neighbours[link_id].zid != ls.zid:
                        sends.append((link_id, self.messages.message(link_id, [(idx, True, False)])))
        return sends
