"""The shortest-path tree rooted at every node (zenohd's ``compute_trees``): our parent
and children in each, the next hop towards every destination, and which children are
new (they must be sent that root's declarations)."""

from __future__ import annotations

import heapq

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.routing.network.state import NetworkState, Tree

_INF = float("inf")


class Trees:
    """Computing the trees from the graph of ``s`` (stored back in ``s``)."""

    def __init__(self, s: NetworkState) -> None:
        self.s = s

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
        g = self.s.graph
        indexes = g.indexes()
        adj: dict[int, list[tuple[int, float]]] = {i: [] for i in indexes}
        for e in g.edges:
            if e is not None:
                adj[e.a].append((e.b, e.weight))
                adj[e.b].append((e.a, e.weight))
        me = self.s.idx
        ours = _shortest_paths(adj, me)
        self.s.distances = ours[0]
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
        self.s.trees = trees
        new_children: dict[int, list[int]] = {}
        old = self.s.tree_children
        current: dict[ZenohId, set[ZenohId]] = {}
        for root, tree in trees.items():
            rz = g.node(root).zid
            kids = {g.node(c).zid for c in tree.children}
            before = old.get(rz, set())
            new_children[root] = [c for c in tree.children if g.node(c).zid not in before]
            current[rz] = kids
        self.s.tree_children = current
        return new_children


def _shortest_paths(
    adj: dict[int, list[tuple[int, float]]], root: int
) -> tuple[dict[int, float], dict[int, int], list[int]]:
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
