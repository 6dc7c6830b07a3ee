"""Shortest-path trees (:mod:`pyzenoh.routing.network.trees`): real routers' route
successors, rerouting after a link loss, the children a computation reports as new, and
random meshes against Bellman-Ford."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.primitives import ZenohId
from pyzenoh.routing.network import Network
from tests.hyp import examples
from tests.routing.network_helpers import (
    MEASURED_WEIGHTS,
    Mesh,
    Z,
    check_trees,
    weights_by_pair,
)


def test_triangle_matches_real_successors() -> None:
    m = Mesh()
    nets = {n: m.add(n) for n in ("a1", "b2", "c3")}
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("c3", "b2")
    for net in nets.values():
        assert len(net.edges()) == 3
        assert {frozenset(map(str, k)): repr(w) for k, w in weights_by_pair(net).items()} == {
            frozenset(k): v for k, v in MEASURED_WEIGHTS.items()
        }
        check_trees(net)
    # what the real a1 of such a triangle listed at @/a1/router/route/successor/**
    real_a1 = {
        ("c3", "c3", "c3"),
        ("a1", "c3", "c3"),
        ("c3", "b2", "c3"),
        ("b2", "b2", "b2"),
        ("a1", "b2", "b2"),
        ("b2", "c3", "b2"),
    }
    assert {tuple(map(str, t)) for t in nets["a1"].route_successors()} == real_a1


def test_triangle_link_loss_reroutes() -> None:
    m = Mesh()
    nets = {n: m.add(n) for n in ("a1", "b2", "c3")}
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("c3", "b2")
    a = nets["a1"]
    ib, ic = a.index_of(Z("b2")), a.index_of(Z("c3"))
    assert a.direction(0, ib) == ib  # type: ignore[arg-type]
    assert a.disconnected_if_removed(m.link("a1", "b2")) == []
    m.disconnect("a1", "b2")
    assert all(r == [] for r in m.removed.values())
    assert a.direction(0, ib) == ic  # type: ignore[arg-type]
    for net in nets.values():
        assert len(net.nodes()) == 3 and len(net.edges()) == 2
        check_trees(net)


def test_compute_trees_reports_new_children() -> None:
    m = Mesh()
    a, b = m.add("a1"), m.add("b2")
    m.connect("b2", "a1")
    assert a.compute_trees() == {0: [], 1: []}  # nothing new since the mesh's own run
    m.add("c3")
    m.connect("c3", "b2", run=False)
    m.run(trees=False)
    new = b.compute_trees()
    assert (b.index_of(Z("a1")), b.index_of(Z("c3"))) == (1, 2)
    assert new == {0: [2], 1: [2], 2: [1]}
    assert b.compute_trees() == {0: [], 1: [], 2: []}
    # at A, C's tree is new but A is a leaf of it; A's own tree did not change
    assert a.compute_trees() == {0: [], 1: [], 2: []}


# --- random meshes ---------------------------------------------------------------------------------------


@st.composite
def meshes(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]], tuple[int, int] | None]:
    n = draw(st.integers(2, 6))
    edges = [(i, draw(st.integers(0, i - 1))) for i in range(1, n)]  # a spanning tree
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
    for x, y in extra:
        if x != y and (x, y) not in edges and (y, x) not in edges:
            edges.append((x, y))
    order = draw(st.permutations(edges))
    cut = draw(st.none() | st.sampled_from(order))
    return n, list(order), cut


NAMES = ["a1", "b2", "c3", "d4", "e5", "f6"]


@examples(200, 40)
@given(meshes())
def test_random_meshes_agree(spec: tuple[int, list[tuple[int, int]], tuple[int, int] | None]) -> None:
    n, edges, cut = spec
    m = Mesh()
    for i in range(n):
        m.add(NAMES[i], link_weights={Z(NAMES[(i + 1) % n]): 150} if i == 0 else None)
    for x, y in edges:
        m.connect(NAMES[x], NAMES[y])
    if cut is not None:
        m.disconnect(NAMES[cut[0]], NAMES[cut[1]])
    # each connected component agrees on its graph, and every tree is Bellman-Ford's
    groups: dict[frozenset[ZenohId], list[Network]] = {}
    for net in m.nets.values():
        groups.setdefault(frozenset(z for _, z, *_ in net.nodes()), []).append(net)
    for members, nets in groups.items():
        assert {net.zid for net in nets} == members
        assert all(weights_by_pair(net) == weights_by_pair(nets[0]) for net in nets)
        for net in nets:
            check_trees(net)
            for other in nets:  # paths between any two routers: following directions arrives
                root = net.index_of(other.zid)
                for dest_net in nets:
                    if dest_net is net:
                        continue
                    hops, cur = 0, net
                    while cur is not dest_net and hops < n:
                        r = cur.index_of(other.zid)
                        d = cur.index_of(dest_net.zid)
                        assert r is not None and d is not None
                        hop = cur.direction(r, d)
                        assert hop is not None
                        cur = m.nets[str(cur.zid_of(hop))]
                        hops += 1
                    assert cur is dest_net
                assert root is not None
