"""The link-state graph of a router: zenohd 1.10.2's ``net/protocol/network.rs``, sans-IO.

One :class:`Network` holds the graph of the nodes a router knows in one region, fed by
the LINKSTATE OAM bodies (:mod:`pyzenoh.routing.linkstate`) its neighbours send. The
caller opens and closes *links* (its face ids) and hands over received bodies; every call
returns the ``(link, body)`` pairs to send, in order. Nothing here does I/O or reads a
clock.

Two modes, as zenohd uses them:

* **full link state** (``full_linkstate=True``, the router region): every router floods
  its own state (its links, optionally their weights) and re-floods what it learns; each
  router knows the whole graph and computes one shortest-path tree rooted at every node
  (:meth:`Network.compute_trees`), exactly as zenohd does so that mixed meshes agree.
* **single-hop gossip** (``full_linkstate=False, gossip_multihop=False``, the peer region
  south of a router, ``gateway=True``): the router tells each peer the locators of its
  other peers so that they connect directly. It first sends a new peer its known
  neighbours (nothing yet: the empty list ``00``), and forwards a peer's state (zid,
  whatami, locators, no links) to the other peers once the peer has sent it.

Numbering. Our node index is 0; other nodes get indexes like petgraph's ``StableGraph``
(a freed index is reused last-freed-first) and the graph keeps petgraph's edge order too,
so :meth:`Network.dot` prints what zenohd prints. A LinkState's ``psid`` is the *sender's*
index of that node; per link we keep the sender's ``psid -> zid`` map (the zid comes with
the first mention of an index) and we send our own indexes, with the zid whenever the
receiver has not been told that index's zid yet.

Deliberate differences from zenohd (it logs and carries on; a Python router closes the
link instead, and never grows without bound): malformed states are refused as a whole
(:class:`LinkStateError`) before any state changes; a state about ourselves is never
adopted (a newer one, left over from our previous run, makes us jump our sequence number
past it and re-flood); peers' gossip nodes no neighbour mentions any more are dropped.

:class:`Network` is its state (:class:`.state.NetworkState`) and one object per concern,
each in a module named for it and built with that state and the parts it calls:

* :mod:`.weights` -- SipHash-1-3 and zenohd's edge weights;
* :mod:`.graph` -- nodes and edges, indexed and ordered as petgraph's ``StableGraph``;
* :mod:`.state` -- limits, :class:`LinkStateError`, :class:`Tree` and the per-link
  records, the network's state and lookups;
* :mod:`.maintenance` -- edge weights set, unreachable or unmentioned nodes dropped;
* :mod:`.messages` -- the link states we send a neighbour, in its terms;
* :mod:`.links` -- links opened and closed;
* :mod:`.received` -- received link states checked, then applied (full or single-hop);
* :mod:`.trees` -- the shortest-path tree rooted at every node;
* :mod:`.views` -- the graph as zenohd's admin space prints it, and other read-only views.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.routing.network.links import LinkChanges
from pyzenoh.routing.network.maintenance import GraphMaintenance
from pyzenoh.routing.network.messages import Messages
from pyzenoh.routing.network.received import ReceivedStates
from pyzenoh.routing.network.state import (
    MAX_NODES,
    PSID_SLOTS_PER_NODE,
    LinkStateError,
    NetworkState,
    Tree,
)
from pyzenoh.routing.network.trees import Trees
from pyzenoh.routing.network.views import Views
from pyzenoh.routing.network.weights import DEFAULT_LINK_WEIGHT, edge_weight_of, siphash

__all__ = [
    "DEFAULT_LINK_WEIGHT",
    "MAX_NODES",
    "PSID_SLOTS_PER_NODE",
    "LinkStateError",
    "Network",
    "Tree",
    "edge_weight_of",
    "siphash",
]


class Network(NetworkState):
    """The link-state graph of one region (see the module docstring): its state, with
    the lookups of :class:`.state.NetworkState`, and the parts that change and read it."""

    def __init__(
        self,
        zid: ZenohId,
        whatami: WhatAmI,
        *,
        full_linkstate: bool = True,
        gossip: bool = True,
        gossip_multihop: bool = False,
        gossip_target: frozenset[WhatAmI] = frozenset({WhatAmI.ROUTER, WhatAmI.PEER}),
        locators: Callable[[], Sequence[str]] = lambda: (),
        gateway: bool = False,
        link_weights: Mapping[ZenohId, int] | None = None,
        max_nodes: int = MAX_NODES,
    ) -> None:
        super().__init__(
            zid,
            whatami,
            full_linkstate=full_linkstate,
            gossip=gossip,
            gossip_multihop=gossip_multihop,
            gossip_target=gossip_target,
            locators=locators,
            gateway=gateway,
            link_weights=link_weights,
            max_nodes=max_nodes,
        )
        messages = Messages(self)
        maintenance = GraphMaintenance(self)
        self._changes = LinkChanges(self, messages, maintenance)
        self._received = ReceivedStates(self, messages, maintenance)
        self._trees = Trees(self)
        self.views = Views(self)
        # What callers do with a network, each done by the part named for it.
        self.add_link = self._changes.add_link
        self.remove_link = self._changes.remove_link
        self.disconnected_if_removed = self._changes.disconnected_if_removed
        self.link_states = self._received.link_states
        self.compute_trees = self._trees.compute_trees
        self.nodes = self.views.nodes
        self.neighbours_locators = self.views.neighbours_locators
        self.edge_weight = self.views.edge_weight
        self.edges = self.views.edges
        self.dot = self.views.dot
        self.links_info = self.views.links_info
        self.route_successors = self.views.route_successors
