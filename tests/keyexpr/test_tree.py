"""KeyExprTree against brute force over the pairwise relations (and over zenoh itself)."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyzenoh.keyexpr import KeyExpr, KeyExprError, KeyExprTree, includes, intersects
from tests.hyp import examples
from tests.keyexpr.support import ZK, keyexprs, random_keyexpr

Entry = tuple[str, int]


def brute(entries: list[Entry], kind: str, q: str) -> list[Entry]:
    if kind == "intersecting":
        return sorted(e for e in entries if intersects(e[0], q))
    if kind == "including":
        return sorted(e for e in entries if includes(e[0], q))
    return sorted(e for e in entries if includes(q, e[0]))


def check_queries(tree: KeyExprTree[int], entries: list[Entry], queries: list[str]) -> None:
    assert len(tree) == len(entries)
    assert sorted(tree.items()) == sorted(entries)
    for q in queries:
        for kind in ("intersecting", "including", "included_by"):
            got = sorted(getattr(tree, kind)(q))
            assert got == brute(entries, kind, q), (kind, q)


def run_sequence(rng: random.Random, n_ops: int, max_chunks: int) -> None:
    tree: KeyExprTree[int] = KeyExprTree()
    entries: list[Entry] = []
    for step in range(n_ops):
        r = rng.random()
        if r < 0.6 or not entries:
            k = random_keyexpr(rng, max_chunks)
            v = rng.randrange(3)
            tree.insert(k, v)
            entries.append((k, v))
        elif r < 0.85:
            k, v = rng.choice(entries)
            assert tree.remove(k, v)
            entries.remove((k, v))
        else:
            k = random_keyexpr(rng, max_chunks)
            v = rng.randrange(3)
            assert tree.remove(k, v) == ((k, v) in entries)
            if (k, v) in entries:
                entries.remove((k, v))
        if step % 10 == 9:
            queries = [random_keyexpr(rng, max_chunks) for _ in range(8)]
            queries += [k for k, _ in rng.sample(entries, min(2, len(entries)))]
            check_queries(tree, entries, queries)
    check_queries(tree, entries, [random_keyexpr(rng, max_chunks) for _ in range(8)])
    # Emptying the tree leaves no nodes behind.
    for k, v in entries:
        assert tree.remove(k, v)
    assert len(tree) == 0 and list(tree.items()) == []
    assert tree._root.is_empty()


@pytest.mark.slow
@examples(ci=200, local=50)
@given(st.randoms(use_true_random=False), st.sampled_from([3, 5, 8]))
def test_random_sequences_match_brute_force(rng: random.Random, max_chunks: int) -> None:
    run_sequence(rng, n_ops=60, max_chunks=max_chunks)


@examples(ci=200, local=40)
@given(
    st.lists(st.tuples(keyexprs(), st.integers(0, 2)), max_size=40),
    st.lists(keyexprs(), min_size=1, max_size=10),
)
def test_sets_match_brute_force(entries: list[Entry], queries: list[str]) -> None:
    tree = KeyExprTree(entries)
    check_queries(tree, list(entries), queries + [k for k, _ in entries[:5]])


@examples(ci=100, local=20)
@given(st.randoms(use_true_random=False))
def test_queries_match_zenoh(rng: random.Random) -> None:
    keys = list({random_keyexpr(rng, 6) for _ in range(40)})
    tree: KeyExprTree[int] = KeyExprTree((k, 0) for k in keys)
    zk = {k: ZK(k) for k in keys}
    for _ in range(5):
        q = random_keyexpr(rng, 6)
        zq = ZK(q)
        assert sorted(k for k, _ in tree.intersecting(q)) == sorted(k for k in keys if zk[k].intersects(zq))
        assert sorted(k for k, _ in tree.including(q)) == sorted(k for k in keys if zk[k].includes(zq))
        assert sorted(k for k, _ in tree.included_by(q)) == sorted(k for k in keys if zq.includes(zk[k]))


class TreeMachine(RuleBasedStateMachine):
    """Insert/remove/query interleavings, shrinkable by hypothesis."""

    def __init__(self) -> None:
        super().__init__()
        self.tree: KeyExprTree[int] = KeyExprTree()
        self.entries: list[Entry] = []

    @rule(k=keyexprs(4), v=st.integers(0, 2))
    def insert(self, k: str, v: int) -> None:
        self.tree.insert(k, v)
        self.entries.append((k, v))

    @rule(data=st.data())
    def remove_existing(self, data: st.DataObject) -> None:
        if self.entries:
            k, v = data.draw(st.sampled_from(self.entries))
            assert self.tree.remove(k, v)
            self.entries.remove((k, v))

    @rule(k=keyexprs(4), v=st.integers(0, 2))
    def remove_any(self, k: str, v: int) -> None:
        present = (k, v) in self.entries
        assert self.tree.remove(k, v) is present
        if present:
            self.entries.remove((k, v))

    @rule(q=keyexprs(4))
    def query(self, q: str) -> None:
        check_queries(self.tree, self.entries, [q])

    @invariant()
    def size(self) -> None:
        assert len(self.tree) == len(self.entries)


TestTreeMachine = TreeMachine.TestCase
TestTreeMachine.settings = examples(ci=200, local=30)


def test_several_values_per_key_and_snapshot() -> None:
    tree: KeyExprTree[str] = KeyExprTree()
    tree.insert("a/*", "x")
    tree.insert(KeyExpr("a/*"), "y")
    tree.insert("a/*", "x")
    assert len(tree) == 3
    assert Counter(tree.intersecting("a/b")) == Counter({("a/*", "x"): 2, ("a/*", "y"): 1})
    assert tree.values_at("a/*") == ["x", "y", "x"]
    assert "a/*" in tree and "a/b" not in tree and 3 not in tree
    it = tree.intersecting("a/b")
    tree.remove("a/*", "x")  # a result is a snapshot: changing the tree is fine
    assert len(list(it)) == 3
    assert tree.remove("a/*", "x") and tree.remove("a/*", "y")
    assert not tree.remove("a/*", "y")
    assert not tree and tree._root.is_empty()
    assert list(tree.keys()) == []


def test_verbatim_and_dsl_examples() -> None:
    tree: KeyExprTree[int] = KeyExprTree(
        [("a/**", 1), ("a/@x", 2), ("@/**", 3), ("a/b$*", 4), ("**", 5), ("*/@x/**", 6)]
    )
    assert sorted(k for k, _ in tree.intersecting("a/@x")) == ["*/@x/**", "a/@x"]
    assert sorted(k for k, _ in tree.intersecting("@/x")) == ["@/**"]
    assert sorted(k for k, _ in tree.intersecting("a/bcd")) == ["**", "a/**", "a/b$*"]
    assert sorted(k for k, _ in tree.including("a/b$*")) == ["**", "a/**", "a/b$*"]
    assert sorted(k for k, _ in tree.included_by("a/**")) == ["a/**", "a/b$*"]
    assert sorted(k for k, _ in tree.included_by("**")) == ["**", "a/**", "a/b$*"]


def test_rejects_invalid_keys() -> None:
    tree: KeyExprTree[int] = KeyExprTree()
    for bad in ("a//b", "**/**", "a/$*", "", "a#"):
        with pytest.raises(KeyExprError):
            tree.insert(bad, 1)
        with pytest.raises(KeyExprError):
            list(tree.intersecting(bad))
    with pytest.raises(KeyExprError):
        tree.insert(42, 1)  # type: ignore[arg-type]


def test_deep_keys_do_not_recurse() -> None:
    deep = "/".join(["a"] * 5_000)
    tree: KeyExprTree[int] = KeyExprTree([(deep, 1), ("a/**", 2), ("**/a", 3)])
    assert sorted(v for _, v in tree.intersecting(deep)) == [1, 2, 3]
    assert sorted(v for _, v in tree.included_by("**")) == [1, 2, 3]
    assert tree.remove(deep, 1)


def test_lookup_does_not_visit_unrelated_subtrees() -> None:
    # Structural check of the cost claim: a literal lookup only reads the nodes on its
    # path (the large sibling dicts are looked up, never iterated).
    tree: KeyExprTree[int] = KeyExprTree()
    for i in range(2_000):
        tree.insert(f"site{i}/dev/temp", i)
        tree.insert(f"site{i}/*/hum", i)
    tree.insert("site7/**", -1)

    class Exploding(dict[str, object]):
        def items(self):  # type: ignore[no-untyped-def]
            raise AssertionError("iterated a literal dict")

    root = tree._root
    root.lit = Exploding(root.lit)  # type: ignore[assignment]
    assert sorted(v for _, v in tree.intersecting("site7/dev/temp")) == [-1, 7]


TestTreeMachine.pytestmark = [pytest.mark.slow]
