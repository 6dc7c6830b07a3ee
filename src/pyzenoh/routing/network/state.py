"""The fields of a :class:`~pyzenoh.routing.network.Network`, its records, and the
lookups every part uses.

Records: :class:`Tree` (our place in the tree rooted at one node), ``_Link`` (what we
know of and told one neighbour, including its psid numbering), ``_Local`` (a received
state translated to zids) and ``_Out`` (a node to send). The limits bound what a
neighbour can make us hold; :class:`LinkStateError` refuses what it sends otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyzenoh.codec.primitives import U16_MAX, WhatAmI, ZenohId
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.routing.network.graph import _Graph, _Node

#: Nodes one graph may hold (ourselves included). A neighbour whose states would take
#: the graph over this is misbehaving (or the mesh is too big for us): we close its link.
MAX_NODES = 4096
#: A sender's psids are slots of its own graph, bounded by the most nodes it ever held at
#: once; that stays under our cap unless it sends us a graph too big anyway. The factor
#: leaves room for its transient nodes (added and dropped within one update).
PSID_SLOTS_PER_NODE = 2
#: Our own sequence number at start (zenohd starts at 1).
_INITIAL_SN = 1


class LinkStateError(PeerError):
    """A neighbour sent a link state we refuse; nothing changed. Close that link."""

    close_reason = CloseReason.INVALID

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(slots=True)
class Tree:
    """Our place in the shortest-path tree rooted at one node."""

    #: Node index of our parent in the tree (None: we are the root, or not connected).
    parent: int | None
    #: Node indexes whose parent is us, in index order.
    children: list[int] = field(default_factory=list)
    #: Destination node index -> next hop (a neighbour's node index) from us along the
    #: tree: down towards a destination below us, else up to our parent.
    directions: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Link:
    zid: ZenohId
    whatami: WhatAmI
    #: The neighbour's psid -> zid (zenoh's ``Link::mappings``) and back.
    mappings: dict[int, ZenohId]
    psids: dict[ZenohId, int] = field(default_factory=dict)
    #: Our index -> zid we told this neighbour.
    told: dict[int, ZenohId] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Local:
    """A received state in zids (zenoh's ``LocalLinkState``)."""

    sn: int
    zid: ZenohId
    whatami: WhatAmI | None
    locators: tuple[str, ...] | None
    links: dict[ZenohId, int]
    gateway: bool


# (node index, send its zid, send its links)
_Out = tuple[int, bool, bool]


class NetworkState:
    """The state of a network, and the lookups its parts share: each part
    (:mod:`.links`, :mod:`.received`, :mod:`.trees`, :mod:`.views`, ...) is built with it."""

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
        if max_nodes < 1:
            raise UsageError("max_nodes must be at least 1")
        for dst, w in (link_weights or {}).items():
            if not 1 <= w <= U16_MAX:
                raise UsageError(f"link weight {w} to {dst} out of range 1..{U16_MAX}")
        self.zid = zid
        self.whatami = whatami
        self.full_linkstate = full_linkstate
        self.gossip = gossip
        self.gossip_multihop = gossip_multihop
        self.gossip_target = gossip_target
        self.gateway = gateway
        self.max_nodes = max_nodes
        self.locators = locators
        self.link_weights: dict[ZenohId, int] = dict(link_weights or {})
        #: The graph is flooded (zenohd: ``full_linkstate || gossip_multihop``).
        self.flood = full_linkstate or gossip_multihop
        self.graph = _Graph()
        self.idx = self.graph.add_node(_Node(zid, whatami, None, _INITIAL_SN, {}, gateway))
        self.neighbours: dict[int, _Link] = {}
        self.trees: dict[int, Tree] = {self.idx: Tree(None)}
        self.distances: dict[int, float] = {self.idx: 0.0}
        self.tree_children: dict[ZenohId, set[ZenohId]] = {}

    @property
    def sn(self) -> int:
        """Our own sequence number."""
        return self.graph.node(self.idx).sn

    def index_of(self, zid: ZenohId) -> int | None:
        return self.graph.by_zid.get(zid)

    def zid_of(self, index: int) -> ZenohId | None:
        node = self.graph.get(index)
        return None if node is None else node.zid

    def whatami_of(self, index: int) -> WhatAmI | None:
        node = self.graph.get(index)
        return None if node is None else node.whatami

    def sn_of(self, index: int) -> int | None:
        node = self.graph.get(index)
        return None if node is None else node.sn

    def links_of(self, index: int) -> dict[ZenohId, int]:
        """The links a node announced: neighbour zid -> its weight for it (0: not set)."""
        node = self.graph.get(index)
        return {} if node is None else dict(node.links)

    def link_of(self, zid: ZenohId) -> int | None:
        for link_id, link in self.neighbours.items():
            if link.zid == zid:
                return link_id
        return None

    def links(self) -> dict[int, ZenohId]:
        """Our open links: link id -> neighbour zid."""
        return {link_id: link.zid for link_id, link in self.neighbours.items()}

    def node_of_psid(self, link: int, psid: int) -> ZenohId | None:
        lk = self.neighbours.get(link)
        return None if lk is None else lk.mappings.get(psid)

    def local_index_of_psid(self, link: int, psid: int) -> int | None:
        zid = self.node_of_psid(link, psid)
        return None if zid is None else self.index_of(zid)

    def direction(self, root: int, dest: int) -> int | None:
        tree = self.trees.get(root)
        return None if tree is None else tree.directions.get(dest)

    def distance(self, index: int) -> float:
        """Our shortest-path distance to ``index`` at the last :meth:`compute_trees`."""
        return self.distances.get(index, float("inf"))

    def link_record(self, link: int) -> _Link:
        """What we know of the neighbour on ``link`` (a UsageError if none is open)."""
        lk = self.neighbours.get(link)
        if lk is None:
            raise UsageError(f"unknown link {link}")
        return lk
