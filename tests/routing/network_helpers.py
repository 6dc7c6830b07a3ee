"""Helpers of the link-state graph tests (``test_network_*``): networks wired in memory
(:class:`Mesh`), a reference for the trees (petgraph's Bellman-Ford), and the edge
weights real 1.10.2 routers printed."""

from __future__ import annotations

from collections import deque
from typing import Any

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.routing.linkstate import LinkState, decode_linkstates
from pyzenoh.routing.network import Network

R = WhatAmI.ROUTER
P = WhatAmI.PEER


def Z(name: str) -> ZenohId:
    return ZenohId.from_str(name)


def loc(name: str) -> tuple[str, ...]:
    return (f"tcp/127.0.0.1:{int(name, 16) + 17000}",)


def states(body: bytes) -> list[LinkState]:
    return decode_linkstates(body)


def norm(body: bytes) -> list[tuple[Any, ...]]:
    """A body's states with each one's links sorted (zenohd sends them in HashMap order)."""
    out = []
    for s in decode_linkstates(body):
        pairs = sorted(zip(s.links, s.weights or [0] * len(s.links), strict=True))
        out.append((s.psid, s.sn, s.zid, s.whatami, s.locators, tuple(pairs), s.weights is not None, s.gateway))
    return out


class Mesh:
    """Networks wired together in memory; bodies are delivered in FIFO order."""

    def __init__(self) -> None:
        self.nets: dict[str, Network] = {}
        self.ends: dict[tuple[str, int], tuple[str, int]] = {}
        self.link_ids: dict[tuple[str, str], int] = {}
        self.queue: deque[tuple[str, int, bytes]] = deque()
        self.log: list[tuple[str, str, bytes]] = []
        self.removed: dict[str, list[ZenohId]] = {}
        self._next = 100

    def add(self, name: str, whatami: WhatAmI = R, **kw: Any) -> Network:
        kw.setdefault("locators", lambda: loc(name))
        self.nets[name] = Network(Z(name), whatami, **kw)
        self.removed[name] = []
        return self.nets[name]

    def connect(self, a: str, b: str, run: bool = True) -> None:
        la, lb = self._next, self._next + 1
        self._next += 2
        self.ends[(a, la)] = (b, lb)
        self.ends[(b, lb)] = (a, la)
        self.link_ids[(a, b)] = la
        self.link_ids[(b, a)] = lb
        for x, lx, y in ((a, la, b), (b, lb, a)):
            self._queue(x, self.nets[x].add_link(lx, Z(y), self.nets[y].whatami))
        if run:
            self.run()

    def disconnect(self, a: str, b: str) -> None:
        la, lb = self.link_ids.pop((a, b)), self.link_ids.pop((b, a))
        del self.ends[(a, la)], self.ends[(b, lb)]
        for x, lx in ((a, la), (b, lb)):
            removed, sends = self.nets[x].remove_link(lx)
            self.removed[x] += removed
            self._queue(x, sends)
        self.run()

    def link(self, a: str, b: str) -> int:
        return self.link_ids[(a, b)]

    def _queue(self, x: str, sends: list[tuple[int, bytes]]) -> None:
        for link, body in sends:
            self.queue.append((x, link, body))

    def run(self, trees: bool = True) -> None:
        while self.queue:
            x, link, body = self.queue.popleft()
            if (x, link) not in self.ends:
                continue  # that link closed meanwhile
            y, ly = self.ends[(x, link)]
            self.log.append((x, y, body))
            removed, sends = self.nets[y].link_states(ly, body)
            self.removed[y] += removed
            self._queue(y, sends)
        if trees:
            for net in self.nets.values():
                net.compute_trees()

    def sent(self, x: str, y: str) -> list[bytes]:
        return [body for a, b, body in self.log if (a, b) == (x, y)]


def weights_by_pair(net: Network) -> dict[frozenset[ZenohId], float]:
    out = {}
    for a, b, w in net.edges():
        za, zb = net.zid_of(a), net.zid_of(b)
        assert za is not None and zb is not None
        out[frozenset((za, zb))] = w
    return out


def reference_trees(net: Network) -> dict[ZenohId, dict[ZenohId, ZenohId]]:
    """Per root zid, each node's predecessor, by petgraph's Bellman-Ford (a plain copy of
    its relaxation loop: node order, edges both ways, strict ``<``)."""
    idxs = [i for i, *_ in net.nodes()]
    adj: dict[int, list[tuple[int, float]]] = {i: [] for i in idxs}
    for a, b, w in net.edges():
        adj[a].append((b, w))
        adj[b].append((a, w))
    out = {}
    for root in idxs:
        dist = {i: float("inf") for i in idxs}
        pred: dict[int, int] = {}
        dist[root] = 0.0
        for _ in range(len(idxs) - 1):
            changed = False
            for i in idxs:
                for j, w in adj[i]:
                    if dist[i] + w < dist[j]:
                        dist[j] = dist[i] + w
                        pred[j] = i
                        changed = True
            if not changed:
                break
        zid = {i: net.zid_of(i) for i in idxs}
        out[zid[root]] = {zid[j]: zid[i] for j, i in pred.items()}
    return out  # type: ignore[return-value]


def check_trees(net: Network) -> None:
    """Our trees are the Bellman-Ford trees, and their directions walk to each destination."""
    ref = reference_trees(net)
    for root, tree in net.trees.items():
        rz = net.zid_of(root)
        assert rz is not None
        preds = ref[rz]
        parent = preds.get(net.zid)
        assert (net.zid_of(tree.parent) if tree.parent is not None else None) == parent
        assert sorted(net.zid_of(c).value for c in tree.children) == sorted(  # type: ignore[union-attr]
            z.value for z, p in preds.items() if p == net.zid
        )
        for dest, hop in tree.directions.items():
            # the hop is a neighbour of ours, and the path to dest via the tree goes through it
            assert net.edge_weight(net.idx, hop) is not None
            dz = net.zid_of(dest)
            chain = [dz]
            while chain[-1] in preds:
                chain.append(preds[chain[-1]])
            if net.zid in chain:  # dest below us: the hop is our child towards it
                assert chain[chain.index(net.zid) - 1] == net.zid_of(hop)
            else:  # elsewhere: up to our parent
                assert hop == tree.parent


#: Edge weights a real 1.10.2 triangle a1-b2-c3 printed at @/<zid>/router/linkstate/north.
MEASURED_WEIGHTS = {
    ("a1", "b2"): "100.52192227251872",
    ("b2", "c3"): "100.22397104702516",
    ("a1", "c3"): "100.0761500708936",
}
