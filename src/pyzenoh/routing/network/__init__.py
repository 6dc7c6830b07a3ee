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
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pyzenoh.codec.primitives import U16_MAX, WhatAmI, ZenohId
from pyzenoh.errors import CloseReason, DecodeError, PeerError, UsageError
from pyzenoh.routing.linkstate import LinkState, decode_linkstates, encode_linkstates

# --- Limits and constants -------------------------------------------------------------------

#: Nodes one graph may hold (ourselves included). A neighbour whose states would take
#: the graph over this is misbehaving (or the mesh is too big for us): we close its link.
MAX_NODES = 4096
#: A sender's psids are slots of its own graph, bounded by the most nodes it ever held at
#: once; that stays under our cap unless it sends us a graph too big anyway. The factor
#: leaves room for its transient nodes (added and dropped within one update).
PSID_SLOTS_PER_NODE = 2

#: zenohd's default link weight (``LinkEdgeWeight::DEFAULT_LINK_WEIGHT``).
DEFAULT_LINK_WEIGHT = 100
_U32_MAX = 0xFFFF_FFFF
_U64_MASK = 0xFFFF_FFFF_FFFF_FFFF
#: Our own sequence number at start (zenohd starts at 1).
_INITIAL_SN = 1
_INF = float("inf")


class LinkStateError(PeerError):
    """A neighbour sent a link state we refuse; nothing changed. Close that link."""

    close_reason = CloseReason.INVALID

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


# --- SipHash-1-3 (Rust's DefaultHasher) -----------------------------------------------------


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _U64_MASK


def _sipround(v0: int, v1: int, v2: int, v3: int) -> tuple[int, int, int, int]:
    v0 = (v0 + v1) & _U64_MASK
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3) & _U64_MASK
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & _U64_MASK
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & _U64_MASK
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def siphash(data: bytes, key: bytes = bytes(16), c_rounds: int = 1, d_rounds: int = 3) -> int:
    """SipHash-c-d of ``data`` as a u64; the defaults are Rust's ``DefaultHasher::default()``
    (SipHash-1-3, key 0). ``Hasher::write`` calls just concatenate their bytes."""
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:16], "little")
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573
    n = len(data)
    end = n - n % 8
    for i in range(0, end, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v3 ^= m
        for _ in range(c_rounds):
            v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
        v0 ^= m
    m = ((n & 0xFF) << 56) | int.from_bytes(data[end:], "little")
    v3 ^= m
    for _ in range(c_rounds):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    v0 ^= m
    v2 ^= 0xFF
    for _ in range(d_rounds):
        v0, v1, v2, v3 = _sipround(v0, v1, v2, v3)
    return v0 ^ v1 ^ v2 ^ v3


def edge_weight_of(zid1: ZenohId, zid2: ZenohId, w1: int = 0, w2: int = 0) -> float:
    """zenohd's weight of the edge between two nodes (``Network::update_edge``).

    ``w1``/``w2`` are the weights each end announces for the link (0: not set). The
    nominal weight (max of the set ones, else 100) is scaled by up to 1 % with a hash of
    the two zids so that equal-cost paths practically never tie: every router then picks
    the same shortest path whatever algorithm it runs.
    """
    lo, hi = sorted((zid1.value, zid2.value))
    h = siphash(lo.to_bytes(16, "little") + hi.to_bytes(16, "little"))
    set_weights = [w for w in (w1, w2) if w]
    w = max(set_weights) if set_weights else DEFAULT_LINK_WEIGHT
    return float(w) * (1.0 + 0.01 * (float(h & _U32_MAX) / float(_U32_MAX)))


# --- The graph (a model of petgraph's StableUnGraph, for its index and edge orders) ------------


@dataclass(slots=True)
class _Node:
    zid: ZenohId
    whatami: WhatAmI | None
    locators: tuple[str, ...] | None
    sn: int
    #: Neighbour zid -> announced raw weight (0 = not set), in announcement order.
    links: dict[ZenohId, int]
    gateway: bool


@dataclass(slots=True)
class _Edge:
    a: int
    b: int
    weight: float


class _Graph:
    """Nodes and undirected edges in slots; freed slots are reused last-freed-first.

    Each node keeps its edges as source (``out``) and as target (``inc``), most recent
    first, which is the order petgraph walks and removes them in.
    """

    __slots__ = ("by_zid", "edges", "free_edges", "free_nodes", "inc", "nodes", "out", "pair")

    def __init__(self) -> None:
        self.nodes: list[_Node | None] = []
        self.free_nodes: list[int] = []
        self.edges: list[_Edge | None] = []
        self.free_edges: list[int] = []
        self.out: list[list[int]] = []
        self.inc: list[list[int]] = []
        self.by_zid: dict[ZenohId, int] = {}
        self.pair: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self.by_zid)

    def indexes(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if n is not None]

    def node(self, idx: int) -> _Node:
        n = self.nodes[idx]
        assert n is not None
        return n

    def get(self, idx: int) -> _Node | None:
        return self.nodes[idx] if 0 <= idx < len(self.nodes) else None

    def add_node(self, node: _Node) -> int:
        if self.free_nodes:
            idx = self.free_nodes.pop()
            self.nodes[idx] = node
        else:
            idx = len(self.nodes)
            self.nodes.append(node)
            self.out.append([])
            self.inc.append([])
        self.by_zid[node.zid] = idx
        return idx

    def remove_node(self, idx: int) -> _Node:
        node = self.node(idx)
        for e in list(self.out[idx]):
            self.remove_edge(e)
        for e in list(self.inc[idx]):
            self.remove_edge(e)
        self.nodes[idx] = None
        self.free_nodes.append(idx)
        del self.by_zid[node.zid]
        return node

    def find_edge(self, a: int, b: int) -> int | None:
        return self.pair.get((a, b) if a < b else (b, a))

    def update_edge(self, a: int, b: int, weight: float) -> None:
        e = self.find_edge(a, b)
        if e is not None:
            edge = self.edges[e]
            assert edge is not None
            edge.weight = weight
            return
        if self.free_edges:
            e = self.free_edges.pop()
            self.edges[e] = _Edge(a, b, weight)
        else:
            e = len(self.edges)
            self.edges.append(_Edge(a, b, weight))
        self.out[a].insert(0, e)
        self.inc[b].insert(0, e)
        self.pair[(a, b) if a < b else (b, a)] = e

    def remove_edge(self, e: int) -> None:
        edge = self.edges[e]
        assert edge is not None
        self.out[edge.a].remove(e)
        self.inc[edge.b].remove(e)
        del self.pair[(edge.a, edge.b) if edge.a < edge.b else (edge.b, edge.a)]
        self.edges[e] = None
        self.free_edges.append(e)

    def neighbour_edges(self, idx: int) -> list[tuple[int, int]]:
        """(edge, other end) in petgraph's ``neighbors_undirected`` order."""
        result: list[tuple[int, int]] = []
        for e in self.out[idx]:
            edge = self.edges[e]
            assert edge is not None
            result.append((e, edge.b))
        for e in self.inc[idx]:
            edge = self.edges[e]
            assert edge is not None
            result.append((e, edge.a))
        return result


# --- Public types ----------------------------------------------------------------------------


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


class Network:
    """The link-state graph of one region (see the module docstring)."""

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
        self._locators = locators
        self._link_weights: dict[ZenohId, int] = dict(link_weights or {})
        #: The graph is flooded (zenohd: ``full_linkstate || gossip_multihop``).
        self._flood = full_linkstate or gossip_multihop
        self._g = _Graph()
        self.idx = self._g.add_node(_Node(zid, whatami, None, _INITIAL_SN, {}, gateway))
        self._links: dict[int, _Link] = {}
        self.trees: dict[int, Tree] = {self.idx: Tree(None)}
        self._distances: dict[int, float] = {self.idx: 0.0}
        self._tree_children: dict[ZenohId, set[ZenohId]] = {}

    # -- queries --------------------------------------------------------------------------

    @property
    def sn(self) -> int:
        """Our own sequence number."""
        return self._g.node(self.idx).sn

    def index_of(self, zid: ZenohId) -> int | None:
        return self._g.by_zid.get(zid)

    def zid_of(self, index: int) -> ZenohId | None:
        node = self._g.get(index)
        return None if node is None else node.zid

    def whatami_of(self, index: int) -> WhatAmI | None:
        node = self._g.get(index)
        return None if node is None else node.whatami

    def sn_of(self, index: int) -> int | None:
        node = self._g.get(index)
        return None if node is None else node.sn

    def links_of(self, index: int) -> dict[ZenohId, int]:
        """The links a node announced: neighbour zid -> its weight for it (0: not set)."""
        node = self._g.get(index)
        return {} if node is None else dict(node.links)

    def link_of(self, zid: ZenohId) -> int | None:
        for link_id, link in self._links.items():
            if link.zid == zid:
                return link_id
        return None

    def links(self) -> dict[int, ZenohId]:
        """Our open links: link id -> neighbour zid."""
        return {link_id: link.zid for link_id, link in self._links.items()}

    def node_of_psid(self, link: int, psid: int) -> ZenohId | None:
        lk = self._links.get(link)
        return None if lk is None else lk.mappings.get(psid)

    def local_index_of_psid(self, link: int, psid: int) -> int | None:
        zid = self.node_of_psid(link, psid)
        return None if zid is None else self.index_of(zid)

    def direction(self, root: int, dest: int) -> int | None:
        tree = self.trees.get(root)
        return None if tree is None else tree.directions.get(dest)

    def distance(self, index: int) -> float:
        """Our shortest-path distance to ``index`` at the last :meth:`compute_trees`."""
        return self._distances.get(index, float("inf"))

    def nodes(self) -> list[tuple[int, ZenohId, WhatAmI | None, tuple[str, ...] | None, bool]]:
        out = []
        for i in self._g.indexes():
            n = self._g.node(i)
            locs = tuple(self._locators()) if i == self.idx else n.locators
            out.append((i, n.zid, n.whatami, locs, n.gateway))
        return out

    def neighbours_locators(self) -> list[tuple[ZenohId, WhatAmI | None, tuple[str, ...]]]:
        """(zid, whatami, locators) of the neighbours that told us their locators: what
        gossip passes on to the other links."""
        out = []
        for link in self._links.values():
            idx = self.index_of(link.zid)
            if idx is not None:
                n = self._g.node(idx)
                if n.locators is not None:
                    out.append((n.zid, n.whatami, n.locators))
        return out

    def edge_weight(self, a: int, b: int) -> float | None:
        e = self._g.find_edge(a, b)
        if e is None:
            return None
        edge = self._g.edges[e]
        assert edge is not None
        return edge.weight

    def edges(self) -> list[tuple[int, int, float]]:
        """Every edge (source, target, weight), in petgraph's edge order."""
        return [(e.a, e.b, e.weight) for e in self._g.edges if e is not None]

    def dot(self) -> str:
        """The graph as ``petgraph::dot::Dot`` debug-prints it (zenohd's admin space)."""
        lines = ["graph {"]
        for i in self._g.indexes():
            lines.append(f'    {i} [ label = "{_escape(str(self._g.node(i).zid))}" ]')
        for e in self._g.edges:
            if e is not None:
                lines.append(f'    {e.a} -- {e.b} [ label = "{_rust_f64(e.weight)}" ]')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def links_info(self) -> dict[ZenohId, tuple[int | None, int | None, int]]:
        """zenohd's ``links_info``, the ``weight`` object of each router session in
        ``@/<zid>/router``: neighbour zid -> (``src_weight``: the weight we announce for
        the link, ``dst_weight``: the one it announces, None when not set;
        ``actual_weight``: the edge weight cast to u16, i.e. truncated)."""
        out: dict[ZenohId, tuple[int | None, int | None, int]] = {}
        me = self._g.node(self.idx)
        for e in self._g.edges:
            if e is not None and self.idx in (e.a, e.b):
                other = self._g.node(e.b if e.a == self.idx else e.a)
                src = me.links.get(other.zid, 0) or None
                dst = other.links.get(self.zid, 0) or None
                out[other.zid] = (src, dst, min(int(e.weight), U16_MAX))
        return out

    def route_successors(self) -> list[tuple[ZenohId, ZenohId, ZenohId]]:
        """(source, destination, next hop from us) for every tree and destination."""
        out = []
        for src, tree in sorted(self.trees.items()):
            for dst, succ in sorted(tree.directions.items()):
                zs, zd, zn = self.zid_of(src), self.zid_of(dst), self.zid_of(succ)
                if zs is not None and zd is not None and zn is not None:
                    out.append((zs, zd, zn))
        return out

    # -- links ----------------------------------------------------------------------------

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

    # -- received link states ---------------------------------------------------------------

    def link_states(self, link: int, body: bytes) -> tuple[list[ZenohId], list[tuple[int, bytes]]]:
        """A LINKSTATE body received on ``link``: (zids dropped as unreachable, sends)."""
        lk = self._link(link)
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
        if not self._flood:
            return [], self._process_singlehop(local)
        return self._process_full(lk, local)

    def _link(self, link: int) -> _Link:
        lk = self._links.get(link)
        if lk is None:
            raise UsageError(f"unknown link {link}")
        return lk

    def _check(self, lk: _Link, states: list[LinkState]) -> tuple[list[_Local], dict[int, ZenohId]]:
        """Validate ``states`` from ``lk`` and translate them to zids; raise before any change."""
        max_psid = self.max_nodes * PSID_SLOTS_PER_NODE
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
        me = self._g.node(self.idx)
        for s in states:
            zid = resolve(s.psid)
            links: dict[ZenohId, int] = {}
            for i, psid in enumerate(s.links):
                dest = resolve(psid)
                if dest == zid:
                    raise LinkStateError(f"{zid} announced a link to itself")
                links[dest] = s.weights[i] if s.weights is not None else 0
            if zid == self.zid:
                if s.whatami is not None and s.whatami != self.whatami:
                    raise LinkStateError(f"{lk.zid} announced us as a {s.whatami}")
                if self._flood and s.sn == me.sn and not links.keys() <= me.links.keys():
                    raise LinkStateError(f"{lk.zid} announced us with links we don't have")
            elif self.index_of(zid) is None:
                new_zids.add(zid)
            if self._flood:
                new_zids.update(d for d in links if d != self.zid and self.index_of(d) is None)
            local.append(_Local(s.sn, zid, s.whatami, s.locators, links, s.gateway))
        if len(self._g) + len(new_zids) > self.max_nodes:
            raise LinkStateError(f"the states of {lk.zid} take the graph over {self.max_nodes} nodes")
        return local, mappings

    def _process_full(self, src: _Link, states: list[_Local]) -> tuple[list[ZenohId], list[tuple[int, bytes]]]:
        g = self._g
        new_nodes: list[int] = []
        updated: dict[int, None] = {}  # (an ordered set)
        bumped = False
        for ls in states:
            if ls.zid == self.zid:
                me = g.node(self.idx)
                if ls.sn > me.sn:
                    # our state from a previous run of ours: supersede it
                    me.sn = ls.sn + 1
                    bumped = True
                continue
            idx1 = self.index_of(ls.zid)
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
                idx2 = self.index_of(dest)
                if idx2 is not None:
                    if ls.zid in g.node(idx2).links:
                        self._update_edge(idx1, idx2)
                else:
                    # mentioned but unknown: known by zid only until its own state comes
                    new_nodes.append(g.add_node(_Node(dest, None, None, 0, {}, False)))
            for e, idx2 in g.neighbour_edges(idx1):
                if g.node(idx2).zid not in ls.links:
                    g.remove_edge(e)
        removed_idx = self._unreachable()
        removed = [g.node(i).zid for i in removed_idx]
        for i in removed_idx:
            g.remove_node(i)
        gone = set(removed_idx)
        new_nodes = [i for i in new_nodes if i not in gone]
        changed = [i for i in updated if i not in gone]
        # flood: new nodes to everyone (send all at once, so nothing looks detached on
        # the other side), updates to all but the sender and the node itself
        sends = []
        for link_id in sorted(self._links):
            lk = self._links[link_id]
            out: list[_Out] = [(i, True, True) for i in new_nodes]
            if lk is not src:
                out += [(i, False, True) for i in changed if g.node(i).zid != lk.zid]
            if bumped:
                out.append((self.idx, False, True))
            if out:
                sends.append((link_id, self._message(link_id, out)))
        return removed, sends

    def _process_singlehop(self, states: list[_Local]) -> list[tuple[int, bytes]]:
        g = self._g
        sends: list[tuple[int, bytes]] = []
        neighbours = {lk.zid for lk in self._links.values()}
        for ls in states:
            if ls.zid == self.zid:
                continue  # a peer's view of its gateway (us): nothing to learn
            idx = self.index_of(ls.zid)
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
            if self.gossip and (self.gossip_multihop or ls.zid in neighbours):
                for link_id in sorted(self._links):
                    if self._links[link_id].zid != ls.zid:
                        sends.append((link_id, self._message(link_id, [(idx, True, False)])))
        return sends

    # -- graph maintenance ------------------------------------------------------------------

    def _update_edge(self, i1: int, i2: int) -> None:
        n1, n2 = self._g.node(i1), self._g.node(i2)
        weight = edge_weight_of(n1.zid, n2.zid, n1.links.get(n2.zid, 0), n2.links.get(n1.zid, 0))
        self._g.update_edge(i1, i2, weight)

    def _unreachable(self, skip: ZenohId | None = None) -> list[int]:
        """Nodes not reachable from us following *announced* links (as zenohd does, not
        confirmed edges); ``skip``: ignore our own link to that neighbour."""
        g = self._g
        seen: set[int] = set()
        stack = [self.idx]
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            for z in g.node(i).links:
                if i == self.idx and z == skip:
                    continue
                j = self.index_of(z)
                if j is not None and j not in seen:
                    stack.append(j)
        return [i for i in g.indexes() if i not in seen]

    def _remove_detached(self) -> list[ZenohId]:
        idxs = self._unreachable()
        removed = [self._g.node(i).zid for i in idxs]
        for i in idxs:
            self._g.remove_node(i)
        return removed

    def _prune_gossip(self) -> None:
        # single-hop gossip learns nodes a peer mentions; forget those no neighbour mentions
        g = self._g
        neighbours = {lk.zid for lk in self._links.values()}
        mentioned = set(neighbours)
        for z in neighbours:
            i = self.index_of(z)
            if i is not None:
                mentioned.update(g.node(i).links)
        for i in g.indexes():
            if i != self.idx and g.node(i).zid not in mentioned:
                g.remove_node(i)

    # -- trees --------------------------------------------------------------------------------

    def compute_trees(self) -> dict[int, list[int]]:
        """Recompute the tree rooted at every node (zenohd's ``compute_trees``).

        zenohd runs Bellman-Ford; we run Dijkstra. Both relax strictly (``<``) and sum a
        path's weights in the same order, and the hash term in the weights makes two
        different paths of equal length practically impossible, so both find the same
        unique shortest paths and hence the same trees.

        Returns, per root index, the children that are new since the previous
        computation (all of them when the root is new); the caller re-sends that root's
        declarations to them.
        """
        g = self._g
        indexes = g.indexes()
        adj: dict[int, list[tuple[int, float]]] = {i: [] for i in indexes}
        for e in g.edges:
            if e is not None:
                adj[e.a].append((e.b, e.weight))
                adj[e.b].append((e.a, e.weight))
        me = self.idx
        ours = _shortest_paths(adj, me)
        self._distances = ours[0]
        component = ours[2]  # where we have a path to (zenohd: has_path_connecting)
        trees: dict[int, Tree] = {}
        for root in indexes:
            _, pred, order = ours if root == me else _shortest_paths(adj, root)
            tree = Tree(pred.get(me))
            # branch[v]: our child above v in this tree, for the v below us
            branch: dict[int, int] = {}
            for v in order:
                p = pred.get(v)
                if p == me:
                    branch[v] = v
                    tree.children.append(v)
                elif p is not None and p in branch:
                    branch[v] = branch[p]
            tree.children.sort()
            for dest in component:
                if dest != me:
                    hop = branch.get(dest, tree.parent)  # below us: down; else up
                    if hop is not None:
                        tree.directions[dest] = hop
            trees[root] = tree
        self.trees = trees
        new_children: dict[int, list[int]] = {}
        old = self._tree_children
        current: dict[ZenohId, set[ZenohId]] = {}
        for root, tree in trees.items():
            rz = g.node(root).zid
            kids = {g.node(c).zid for c in tree.children}
            before = old.get(rz, set())
            new_children[root] = [c for c in tree.children if g.node(c).zid not in before]
            current[rz] = kids
        self._tree_children = current
        return new_children

    # -- messages -----------------------------------------------------------------------------

    def _propagate_locators(self, idx: int, target: _Link) -> bool:
        """zenohd's ``propagate_locators``: gossip on, the target is a gossip target, and
        the node is us or a neighbour (any node with multihop gossip)."""
        if not (self.gossip and target.whatami in self.gossip_target):
            return False
        if self.gossip_multihop or idx == self.idx:
            return True
        zid = self._g.node(idx).zid
        return any(lk.zid == zid for lk in self._links.values())

    def _state(self, idx: int, send_zid: bool, send_links: bool, target: _Link) -> LinkState:
        g = self._g
        node = g.node(idx)
        links: list[int] = []
        weights: list[int] = []
        if send_links:
            for dest, w in node.links.items():
                j = self.index_of(dest)
                if j is not None:
                    links.append(j)
                    weights.append(w)
        locators: tuple[str, ...] | None = None
        if self._propagate_locators(idx, target):
            locators = tuple(self._locators()) if idx == self.idx else node.locators
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

    def _message(self, link_id: int, out: list[_Out]) -> bytes:
        """Encode ``out`` for ``link_id``; the zid goes with every index the neighbour has
        not been told yet, and a node referenced but never told is added in full."""
        target = self._links[link_id]
        g = self._g
        told = target.told
        queued = {i for i, _, _ in out}
        items = list(out)
        k = 0
        while k < len(items):  # items grows when a link references an untold node
            idx, send_zid, send_links = items[k]
            k += 1
            if send_links:
                for dest in g.node(idx).links:
                    j = self.index_of(dest)
                    if j is not None and j not in queued and told.get(j) != dest:
                        queued.add(j)
                        items.append((j, True, True))
        states = []
        for idx, send_zid, send_links in items:
            zid = g.node(idx).zid
            states.append(self._state(idx, send_zid or told.get(idx) != zid, send_links, target))
        for s in states:
            if s.zid is not None:
                told[s.psid] = s.zid
        return encode_linkstates(states)


def _shortest_paths(adj: dict[int, list[tuple[int, float]]], root: int) -> tuple[dict[int, float], dict[int, int], list[int]]:
    """Dijkstra from ``root``: distances, predecessors (strict ``<`` relaxation, like
    petgraph's Bellman-Ford) and the nodes in the order they were settled."""
    dist: dict[int, float] = {root: 0.0}
    pred: dict[int, int] = {}
    order: list[int] = []
    done: set[int] = set()
    heap = [(0.0, root)]
    while heap:
        d, i = heapq.heappop(heap)
        if i in done:
            continue
        done.add(i)
        order.append(i)
        for j, w in adj[i]:
            nd = d + w
            if j not in done and nd < dist.get(j, _INF):
                dist[j] = nd
                pred[j] = i
                heapq.heappush(heap, (nd, j))
    return dist, pred, order


def _escape(text: str) -> str:
    # petgraph's Dot escaper
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l")


def _rust_f64(x: float) -> str:
    """Rust's ``{:?}`` of an f64 in the range of link weights (shortest round-trip digits,
    always a fractional part): Python's repr agrees there."""
    text = repr(x)
    return text if ("." in text or "e" in text or "inf" in text or "nan" in text) else text + ".0"
