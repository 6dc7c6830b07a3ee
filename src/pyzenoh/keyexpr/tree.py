"""KeyExprTree: an index of key expressions (with values) queried by set relation.

A trie over chunks, in the spirit of zenoh's KeTree. Each node has its literal children
in a dict (looked up directly for a literal query chunk) and its wildcard children kept
apart: the ``*`` child, the ``**`` child, and the chunks containing ``$*``. A query walks
the trie and the query's chunks together, so its cost grows with the depth of the query
and the number of nodes that can still match, not with the size of the index. Only
``**`` in the *query* makes it visit whole subtrees (every key below matches then).

Matching rules are exactly those of :mod:`pyzenoh.keyexpr.relations`; the tests check
every query against brute force over the pairwise functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from pyzenoh.keyexpr.canon import validate
from pyzenoh.keyexpr.expr import KeyExpr
from pyzenoh.keyexpr.relations import (
    DOUBLE_WILD,
    SINGLE_WILD,
    VERBATIM,
    chunk_includes,
    chunk_intersects,
    key_info,
)

V = TypeVar("V")


class _Node(Generic[V]):
    __slots__ = ("chunk", "dsl", "dstar", "key", "lit", "parent", "star", "values")

    def __init__(self, chunk: str, parent: _Node[V] | None) -> None:
        self.chunk = chunk
        self.parent = parent
        self.key: str | None = None  # the full key when values are stored here
        self.values: list[V] = []
        self.lit: dict[str, _Node[V]] = {}  # chunks without '*' (incl. verbatim '@...')
        self.dsl: dict[str, _Node[V]] = {}  # chunks containing '$*'
        self.star: _Node[V] | None = None
        self.dstar: _Node[V] | None = None

    def children(self) -> Iterator[_Node[V]]:
        yield from self.lit.values()
        yield from self.dsl.values()
        if self.star is not None:
            yield self.star
        if self.dstar is not None:
            yield self.dstar

    def non_verbatim_children(self) -> Iterator[_Node[V]]:
        for c, n in self.lit.items():
            if c[:1] != VERBATIM:
                yield n
        for c, n in self.dsl.items():
            if c[:1] != VERBATIM:
                yield n
        if self.star is not None:
            yield self.star
        if self.dstar is not None:
            yield self.dstar

    def is_empty(self) -> bool:
        return not self.values and not self.lit and not self.dsl and self.star is None and self.dstar is None


def _key(ke: str | KeyExpr) -> str:
    return str(ke) if isinstance(ke, KeyExpr) else validate(ke)


class KeyExprTree(Generic[V]):
    """A multimap from canonical key expressions to values, queried by set relation.

    A key may hold several values (also equal ones). Queries return ``(key, value)``
    pairs as a snapshot: the tree may be changed while iterating over a result.
    """

    __slots__ = ("_len", "_root")

    def __init__(self, items: Iterable[tuple[str | KeyExpr, V]] = ()) -> None:
        self._root: _Node[V] = _Node("", None)
        self._len = 0
        for k, v in items:
            self.insert(k, v)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    # -- mutation ---------------------------------------------------------------------

    def _find(self, key: str) -> _Node[V] | None:
        node: _Node[V] | None = self._root
        for c in key_info(key).chunks:
            assert node is not None
            if c == SINGLE_WILD:
                node = node.star
            elif c == DOUBLE_WILD:
                node = node.dstar
            elif "*" in c:
                node = node.dsl.get(c)
            else:
                node = node.lit.get(c)
            if node is None:
                return None
        return node

    def insert(self, ke: str | KeyExpr, value: V) -> None:
        """Attach ``value`` to ``ke`` (which must be canonical)."""
        key = _key(ke)
        node = self._root
        for c in key_info(key).chunks:
            if c == SINGLE_WILD:
                nxt = node.star
                if nxt is None:
                    nxt = node.star = _Node(c, node)
            elif c == DOUBLE_WILD:
                nxt = node.dstar
                if nxt is None:
                    nxt = node.dstar = _Node(c, node)
            else:
                d = node.dsl if "*" in c else node.lit
                nxt = d.get(c)
                if nxt is None:
                    nxt = d[c] = _Node(c, node)
            node = nxt
        node.key = key
        node.values.append(value)
        self._len += 1

    def remove(self, ke: str | KeyExpr, value: V) -> bool:
        """Detach one occurrence of ``value`` (compared with ``==``) from ``ke``; False if absent."""
        node = self._find(_key(ke))
        if node is None:
            return False
        try:
            node.values.remove(value)
        except ValueError:
            return False
        self._len -= 1
        if not node.values:
            node.key = None
        # Drop nodes that no longer lead to any value.
        while node.parent is not None and node.is_empty():
            parent = node.parent
            c = node.chunk
            if c == SINGLE_WILD:
                parent.star = None
            elif c == DOUBLE_WILD:
                parent.dstar = None
            elif "*" in c:
                del parent.dsl[c]
            else:
                del parent.lit[c]
            node = parent
        return True

    def values_at(self, ke: str | KeyExpr) -> list[V]:
        """The values stored under exactly ``ke`` (a copy)."""
        node = self._find(_key(ke))
        return [] if node is None else list(node.values)

    def __contains__(self, ke: object) -> bool:
        if not isinstance(ke, (str, KeyExpr)):
            return False
        node = self._find(_key(ke))
        return node is not None and bool(node.values)

    def items(self) -> Iterator[tuple[str, V]]:
        """Every ``(key, value)`` pair, keys in no particular order."""
        out: list[tuple[str, V]] = []
        stack = [self._root]
        while stack:
            node = stack.pop()
            if node.key is not None:
                key = node.key
                out.extend((key, v) for v in node.values)
            stack.extend(node.children())
        return iter(out)

    def keys(self) -> Iterator[str]:
        """Every key holding at least one value."""
        return iter(dict.fromkeys(k for k, _ in self.items()))

    # -- queries ----------------------------------------------------------------------

    @staticmethod
    def _emit(nodes: Iterable[_Node[V]]) -> Iterator[tuple[str, V]]:
        out: list[tuple[str, V]] = []
        for node in nodes:
            key = node.key
            if key is not None:
                out.extend((key, v) for v in node.values)
        return iter(out)

    @staticmethod
    def _subtree_no_verbatim(start: _Node[V], found: dict[_Node[V], None], explored: set[_Node[V]]) -> None:
        """Add ``start`` and every node below it reachable without a verbatim chunk.

        ``explored`` (shared by one query) keeps overlapping subtrees from being walked
        twice; ``found`` alone cannot, a node may be in it without its subtree.
        """
        stack = [start]
        while stack:
            node = stack.pop()
            if node in explored:
                continue
            explored.add(node)
            found[node] = None
            stack.extend(node.non_verbatim_children())

    def _literal_matches(self, q: tuple[str, ...], nv: tuple[int, ...]) -> list[_Node[V]]:
        """Nodes whose key matches the concrete key ``q`` (the routing hot path).

        For a key without wildcards, intersecting and including are the same set. Only
        the tree's ``**`` nodes can be reached twice (from different ancestors' states),
        so only they are deduplicated.
        """
        n = len(q)
        found: list[_Node[V]] = []
        seen: set[tuple[_Node[V], int]] = set()
        stack: list[tuple[_Node[V], int]] = [(self._root, 0)]
        while stack:
            node, i = stack.pop()
            ds = node.dstar
            if ds is not None:
                for j in range(i, nv[i] + 1):
                    st = (ds, j)
                    if st not in seen:
                        seen.add(st)
                        stack.append(st)
            if i == n:
                if node.key is not None:
                    found.append(node)
                continue
            c = q[i]
            i1 = i + 1
            ch = node.lit.get(c)
            if ch is not None:
                stack.append((ch, i1))
            if c[:1] == VERBATIM:
                continue  # only the identical chunk matches a verbatim one
            if node.star is not None:
                stack.append((node.star, i1))
            if node.dsl:
                for dc, ch in node.dsl.items():
                    if chunk_intersects(dc, c):
                        stack.append((ch, i1))
        return found

    def intersecting(self, ke: str | KeyExpr) -> Iterator[tuple[str, V]]:
        """Entries whose key intersects ``ke``."""
        key = _key(ke)
        info = key_info(key)
        if "*" not in key:
            return self._emit(self._literal_matches(info.chunks, info.next_verbatim))
        q = info.chunks
        n = len(q)
        nv = info.next_verbatim
        found: dict[_Node[V], None] = {}  # ordered set of result nodes
        explored: set[_Node[V]] = set()
        seen: set[tuple[_Node[V], int]] = set()
        stack: list[tuple[_Node[V], int]] = [(self._root, 0)]
        while stack:
            st = stack.pop()
            if st in seen:
                continue
            seen.add(st)
            node, i = st
            ds = node.dstar
            if ds is not None:
                # The tree's '**' swallows q[i:j] for any j up to the next verbatim chunk.
                stack.extend([(ds, j) for j in range(i, nv[i] + 1)])
            if i == n:
                if node.key is not None:
                    found[node] = None
                continue
            c = q[i]
            if c == DOUBLE_WILD:
                if i == n - 1:
                    # Trailing '**' in the query: everything below without a verbatim chunk.
                    self._subtree_no_verbatim(node, found, explored)
                    continue
                stack.append((node, i + 1))
                stack.extend([(ch, i) for ch in node.non_verbatim_children()])
                continue
            i1 = i + 1
            if c[:1] == VERBATIM:
                ch = node.lit.get(c) if "*" not in c else node.dsl.get(c)
                if ch is not None:
                    stack.append((ch, i1))
                continue
            if "*" not in c:
                ch = node.lit.get(c)
                if ch is not None:
                    stack.append((ch, i1))
            elif c == SINGLE_WILD:
                for lc, ch in node.lit.items():
                    if lc[:1] != VERBATIM:
                        stack.append((ch, i1))
            else:
                for lc, ch in node.lit.items():
                    if chunk_intersects(lc, c):
                        stack.append((ch, i1))
            if node.star is not None:
                stack.append((node.star, i1))
            for dc, ch in node.dsl.items():
                if chunk_intersects(dc, c):
                    stack.append((ch, i1))
        return self._emit(found)

    def including(self, ke: str | KeyExpr) -> Iterator[tuple[str, V]]:
        """Entries whose key includes ``ke`` (every key matched by ``ke`` matches them)."""
        key = _key(ke)
        info = key_info(key)
        if "*" not in key:
            return self._emit(self._literal_matches(info.chunks, info.next_verbatim))
        q = info.chunks
        n = len(q)
        nv = info.next_verbatim
        found: dict[_Node[V], None] = {}
        seen: set[tuple[_Node[V], int]] = set()
        stack: list[tuple[_Node[V], int]] = [(self._root, 0)]
        while stack:
            st = stack.pop()
            if st in seen:
                continue
            seen.add(st)
            node, i = st
            ds = node.dstar
            if ds is not None:
                stack.extend([(ds, j) for j in range(i, nv[i] + 1)])
            if i == n:
                if node.key is not None:
                    found[node] = None
                continue
            c = q[i]
            if c == DOUBLE_WILD:
                continue  # only a '**' in the tree includes '**'
            i1 = i + 1
            if "*" not in c:
                ch = node.lit.get(c)
                if ch is not None:
                    stack.append((ch, i1))
            if node.star is not None and c[:1] != VERBATIM:
                stack.append((node.star, i1))
            for dc, ch in node.dsl.items():
                if chunk_includes(dc, c):
                    stack.append((ch, i1))
        return self._emit(found)

    def included_by(self, ke: str | KeyExpr) -> Iterator[tuple[str, V]]:
        """Entries whose key is included by ``ke`` (every key they match, ``ke`` matches)."""
        info = key_info(_key(ke))
        q = info.chunks
        n = len(q)
        found: dict[_Node[V], None] = {}
        explored: set[_Node[V]] = set()
        seen: set[tuple[_Node[V], int]] = set()
        stack: list[tuple[_Node[V], int]] = [(self._root, 0)]
        while stack:
            st = stack.pop()
            if st in seen:
                continue
            seen.add(st)
            node, i = st
            if i == n:
                if node.key is not None:
                    found[node] = None
                continue
            c = q[i]
            if c == DOUBLE_WILD:
                if i == n - 1:
                    self._subtree_no_verbatim(node, found, explored)
                    continue
                stack.append((node, i + 1))
                stack.extend([(ch, i) for ch in node.non_verbatim_children()])
                continue
            i1 = i + 1
            if "*" not in c:
                ch = node.lit.get(c)
                if ch is not None:
                    stack.append((ch, i1))
                continue
            if c[:1] == VERBATIM:
                ch = node.dsl.get(c)
                if ch is not None:
                    stack.append((ch, i1))
                continue
            if c == SINGLE_WILD:
                for lc, ch in node.lit.items():
                    if lc[:1] != VERBATIM:
                        stack.append((ch, i1))
            else:
                for lc, ch in node.lit.items():
                    if chunk_includes(c, lc):
                        stack.append((ch, i1))
            if node.star is not None and chunk_includes(c, SINGLE_WILD):
                stack.append((node.star, i1))
            for dc, ch in node.dsl.items():
                if chunk_includes(c, dc):
                    stack.append((ch, i1))
        return self._emit(found)
