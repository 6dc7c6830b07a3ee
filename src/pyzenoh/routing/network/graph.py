"""The graph: a model of petgraph's ``StableUnGraph``, kept for its index and edge
orders (zenohd numbers nodes and prints edges in those orders)."""

from __future__ import annotations

from dataclasses import dataclass

from pyzenoh.codec.primitives import WhatAmI, ZenohId


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
