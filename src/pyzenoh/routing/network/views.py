"""Read-only views of the graph: as zenohd's admin space shows it (``dot``,
``links_info``, route successors) and as callers and tests inspect it."""

from __future__ import annotations

from pyzenoh.codec.primitives import U16_MAX, WhatAmI, ZenohId
from pyzenoh.routing.network.state import NetworkState


class Views:
    """The nodes, edges and routes of ``s``, read-only."""

    def __init__(self, s: NetworkState) -> None:
        self.s = s

    def nodes(self) -> list[tuple[int, ZenohId, WhatAmI | None, tuple[str, ...] | None, bool]]:
        out = []
        for i in self.s.graph.indexes():
            n = self.s.graph.node(i)
            locs = tuple(self.s.locators()) if i == self.s.idx else n.locators
            out.append((i, n.zid, n.whatami, locs, n.gateway))
        return out

    def neighbours_locators(self) -> list[tuple[ZenohId, WhatAmI | None, tuple[str, ...]]]:
        """(zid, whatami, locators) of the neighbours that told us their locators: what
        gossip passes on to the other links."""
        out = []
        for link in self.s.neighbours.values():
            idx = self.s.index_of(link.zid)
            if idx is not None:
                n = self.s.graph.node(idx)
                if n.locators is not None:
                    out.append((n.zid, n.whatami, n.locators))
        return out

    def edge_weight(self, a: int, b: int) -> float | None:
        e = self.s.graph.find_edge(a, b)
        if e is None:
            return None
        edge = self.s.graph.edges[e]
        assert edge is not None
        return edge.weight

    def edges(self) -> list[tuple[int, int, float]]:
        """Every edge (source, target, weight), in petgraph's edge order."""
        return [(e.a, e.b, e.weight) for e in self.s.graph.edges if e is not None]

    def dot(self) -> str:
        """The graph as ``petgraph::dot::Dot`` debug-prints it (zenohd's admin space)."""
        lines = ["graph {"]
        for i in self.s.graph.indexes():
            lines.append(f'    {i} [ label = "{_escape(str(self.s.graph.node(i).zid))}" ]')
        for e in self.s.graph.edges:
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
        me = self.s.graph.node(self.s.idx)
        for e in self.s.graph.edges:
            if e is not None and self.s.idx in (e.a, e.b):
                other = self.s.graph.node(e.b if e.a == self.s.idx else e.a)
                src = me.links.get(other.zid, 0) or None
                dst = other.links.get(self.s.zid, 0) or None
                out[other.zid] = (src, dst, min(int(e.weight), U16_MAX))
        return out

    def route_successors(self) -> list[tuple[ZenohId, ZenohId, ZenohId]]:
        """(source, destination, next hop from us) for every tree and destination."""
        out = []
        for src, tree in sorted(self.s.trees.items()):
            for dst, succ in sorted(tree.directions.items()):
                zs, zd, zn = self.s.zid_of(src), self.s.zid_of(dst), self.s.zid_of(succ)
                if zs is not None and zd is not None and zn is not None:
                    out.append((zs, zd, zn))
        return out


def _escape(text: str) -> str:
    # petgraph's Dot escaper
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l")


def _rust_f64(x: float) -> str:
    """Rust's ``{:?}`` of an f64 in the range of link weights (shortest round-trip digits,
    always a fractional part): Python's repr agrees there."""
    text = repr(x)
    return text if ("." in text or "e" in text or "inf" in text or "nan" in text) else text + ".0"
