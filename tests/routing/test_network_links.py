"""Links opened and closed (:mod:`pyzenoh.routing.network.links`): what each end sends,
the nodes a lost link takes away, index reuse, usage errors and the node cap."""

from __future__ import annotations

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.routing.linkstate import LinkState
from pyzenoh.routing.network import MAX_NODES, LinkStateError, Network, edge_weight_of
from tests.routing.network_helpers import Mesh, R, Z, check_trees, loc, states


def test_pair() -> None:
    m = Mesh()
    a, b = m.add("a1"), m.add("b2")
    m.connect("b2", "a1")
    for net, other in ((a, "b2"), (b, "a1")):
        assert [z for _, z, *_ in net.nodes()] == [net.zid, Z(other)]
        assert net.link_of(Z(other)) == m.link(str(net.zid), other)
        assert net.node_of_psid(m.link(str(net.zid), other), 0) == Z(other)
        assert net.local_index_of_psid(m.link(str(net.zid), other), 0) == 1
        assert net.edge_weight(0, 1) == edge_weight_of(Z("a1"), Z("b2"))
        assert net.trees[0].children == [1] and net.trees[0].parent is None
        assert net.trees[1].parent == 1 and net.trees[1].children == []
        assert net.direction(0, 1) == 1 and net.direction(1, 1) == 1
        assert net.distance(1) == edge_weight_of(Z("a1"), Z("b2")) and net.distance(0) == 0.0
        assert net.sn == 2
        check_trees(net)
    # the first message on a link lists the sender (locators, links) and the neighbour
    first = states(m.sent("b2", "a1")[0])
    assert first == [
        LinkState(0, 2, Z("b2"), R, loc("b2"), (1,), None, False),
        LinkState(1, 0, Z("a1"), R, None, (), None, False),
    ]


def test_link_removal_drops_unreachable_nodes() -> None:
    m = Mesh()
    a, b, c = m.add("a1"), m.add("b2"), m.add("c3")
    m.connect("b2", "a1")
    m.connect("c3", "b2")
    lbc = m.link("b2", "c3")
    assert b.disconnected_if_removed(lbc) == [Z("c3")]
    assert b.disconnected_if_removed(m.link("b2", "a1")) == [Z("a1")]
    assert len(b.nodes()) == 3  # only predicted
    sn = b.sn
    removed, sends = b.remove_link(lbc)
    assert removed == [Z("c3")] and b.sn == sn + 1
    # B tells A (not C: that link is gone) its new state, links to A only
    la = m.link("b2", "a1")
    assert [link for link, _ in sends] == [la]
    assert states(sends[0][1]) == [LinkState(0, sn + 1, None, R, loc("b2"), (1,), None, False)]
    # deliver it (and let C notice too)
    m.ends.pop(("b2", lbc))
    m.ends.pop(("c3", m.link("c3", "b2")))
    m._queue("b2", sends)
    m.removed["c3"] += c.remove_link(m.link("c3", "b2"))[0]
    m.run()
    assert m.removed["a1"] == [Z("c3")]
    assert m.removed["c3"] == [Z("b2"), Z("a1")]
    assert [z for _, z, *_ in a.nodes()] == [Z("a1"), Z("b2")] and set(a.trees) == {0, 1}
    assert [z for _, z, *_ in c.nodes()] == [Z("c3")] and c.trees[0].directions == {}


def test_index_reuse_resends_the_zid() -> None:
    m = Mesh()
    for n in ("a1", "b2", "c3", "d4", "e5", "f6"):
        m.add(n)
    a, b = m.nets["a1"], m.nets["b2"]
    m.connect("b2", "a1")
    m.connect("c3", "a1")
    m.connect("d4", "a1")
    assert [a.index_of(Z(n)) for n in ("b2", "c3", "d4")] == [1, 2, 3]
    m.disconnect("a1", "c3")
    m.disconnect("a1", "d4")
    assert m.removed["a1"] == [Z("c3"), Z("d4")]
    assert b.node_of_psid(m.link("b2", "a1"), 3) == Z("d4")  # stale until reused
    # freed indexes are reused last-freed-first, like petgraph's StableGraph
    m.connect("e5", "a1")
    assert a.index_of(Z("e5")) == 3
    m.connect("f6", "a1")
    assert a.index_of(Z("f6")) == 2
    lba = m.link("b2", "a1")
    assert b.node_of_psid(lba, 3) == Z("e5") and b.node_of_psid(lba, 2) == Z("f6")
    for net in (a, b):
        assert {str(z) for _, z, *_ in net.nodes()} == {"a1", "b2", "e5", "f6"}
        check_trees(net)


def test_usage_errors() -> None:
    net = Network(Z("a1"), R)
    with pytest.raises(UsageError):
        net.link_states(1, b"\x00")
    with pytest.raises(UsageError):
        net.remove_link(1)
    net.add_link(1, Z("b2"), R)
    with pytest.raises(UsageError):
        net.add_link(1, Z("c3"), R)
    with pytest.raises(UsageError):
        net.add_link(2, Z("b2"), R)
    with pytest.raises(UsageError):
        net.add_link(3, Z("a1"), R)
    with pytest.raises(UsageError):
        Network(Z("a1"), R, link_weights={Z("b2"): 0})


def test_max_nodes_on_add_link() -> None:
    net = Network(Z("a1"), R, max_nodes=2)
    net.add_link(1, Z("b2"), R)
    with pytest.raises(LinkStateError):
        net.add_link(2, Z("c3"), R)
    assert net.links() == {1: Z("b2")} and len(net.nodes()) == 2
    assert MAX_NODES >= 1024
