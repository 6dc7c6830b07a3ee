"""Set relations between canonical key expressions: intersects and includes.

Semantics follow eclipse-zenoh 1.10.2 (zenoh-wire.md section 5): ``*`` is one chunk,
``**`` zero or more chunks, ``$*`` any run of characters inside a chunk, and a chunk that
starts with ``@`` (verbatim) is matched only by an identical chunk, never by a wildcard.

The functions take canonical strings and do not validate them (callers hold validated
keys; :class:`pyzenoh.keyexpr.KeyExpr` validates on construction). Both are iterative
(no recursion, so no depth limit) and memoised: routing asks the same questions again
and again. Worst-case cost is O(len(a) * len(b)) chunk comparisons.
"""

from __future__ import annotations

from functools import lru_cache

# Bounded memo sizes: entries are small tuples / bools keyed by strings, about 0.5 KiB
# each with their keys. A router whose clients use ever new keys (a query per key) keeps
# these full: 8,192 entries hold the hot keys of a busy router for about 5 MB (65,536
# held 36 MB for good, measured in bench/bench_soak.py).
CHUNKS_CACHE_SIZE = 1 << 13
RELATION_CACHE_SIZE = 1 << 13

DOUBLE_WILD = "**"
SINGLE_WILD = "*"
STAR_DSL = "$*"
VERBATIM = "@"


class KeInfo:
    """Pre-split view of one key expression, cached per string."""

    __slots__ = ("chunks", "has_double_wild", "last_verbatim", "next_verbatim")

    def __init__(self, s: str) -> None:
        chunks = tuple(s.split("/"))
        self.chunks = chunks
        n = len(chunks)
        # next_verbatim[i]: index of the first chunk >= i that starts with '@' (n if none).
        nv = [n] * (n + 1)
        for i in range(n - 1, -1, -1):
            nv[i] = i if chunks[i][:1] == VERBATIM else nv[i + 1]
        self.next_verbatim = tuple(nv)
        last = -1
        for i, c in enumerate(chunks):
            if c[:1] == VERBATIM:
                last = i
        self.last_verbatim = last
        self.has_double_wild = DOUBLE_WILD in chunks


@lru_cache(maxsize=CHUNKS_CACHE_SIZE)
def key_info(s: str) -> KeInfo:
    """Split (and cache) a canonical key expression."""
    return KeInfo(s)


@lru_cache(maxsize=CHUNKS_CACHE_SIZE)
def _segments(chunk: str) -> tuple[str, ...]:
    return tuple(chunk.split(STAR_DSL))


def _glob_match(literal: str, segs: tuple[str, ...]) -> bool:
    """Does the ``$*``-free chunk ``literal`` match the pattern split into ``segs``?"""
    first = segs[0]
    last = segs[-1]
    if len(literal) < len(first) + len(last):
        return False
    if not literal.startswith(first) or not literal.endswith(last):
        return False
    pos = len(first)
    end = len(literal) - len(last)
    for needle in segs[1:-1]:
        k = literal.find(needle, pos, end)
        if k < 0:
            return False
        pos = k + len(needle)
    return True


def _dsl_intersect(c1: str, c2: str) -> bool:
    """Do two chunks (at least one with ``$*``, neither ``*``/``**``) share a string?

    With wildcards on both sides a common string exists iff the literal heads are
    prefix-compatible and the literal tails suffix-compatible; otherwise it is a plain
    glob match. (UTF-8 is self-synchronising, so this equals zenoh's byte-wise search.)
    """
    s1 = _segments(c1)
    s2 = _segments(c2)
    if len(s1) > 1 and len(s2) > 1:
        h1, h2, t1, t2 = s1[0], s2[0], s1[-1], s2[-1]
        return (h1.startswith(h2) or h2.startswith(h1)) and (t1.endswith(t2) or t2.endswith(t1))
    if len(s1) > 1:
        return _glob_match(c2, s1)
    return _glob_match(c1, s2)


def chunk_intersects(c1: str, c2: str) -> bool:
    """Chunk-level intersection (neither chunk is ``**``)."""
    if c1 == c2:
        return True
    if c1[:1] == VERBATIM or c2[:1] == VERBATIM:
        return False
    if c1 == SINGLE_WILD or c2 == SINGLE_WILD:
        return True
    if "$" in c1 or "$" in c2:
        return _dsl_intersect(c1, c2)
    return False


def chunk_includes(left: str, right: str) -> bool:
    """Chunk-level inclusion, ``left`` includes ``right`` (neither is ``**``).

    Same steps as zenoh's includer: head, then tail, then each middle piece leftmost.
    """
    if left == right:
        return True
    if left[:1] == VERBATIM or right[:1] == VERBATIM:
        return False
    if left == SINGLE_WILD:
        return True
    if "$" not in left:
        return False
    segs = _segments(left)
    head = segs[0]
    tail = segs[-1]
    if not right.startswith(head):
        return False
    rest = right[len(head) :]
    if not rest.endswith(tail):
        return False
    end = len(rest) - len(tail)
    pos = 0
    for needle in segs[1:-1]:
        k = rest.find(needle, pos, end)
        if k < 0:
            return False
        pos = k + len(needle)
    return True


def intersects(a: str, b: str) -> bool:
    """True if some concrete key matches both canonical key expressions ``a`` and ``b``."""
    if a == b:
        return True
    if "*" not in a and "*" not in b:
        return False
    return _intersects(a, b)


def includes(a: str, b: str) -> bool:
    """True if every key matched by canonical ``b`` is matched by canonical ``a``."""
    if a == b:
        return True
    if "*" not in a:
        return False  # a literal key includes only itself
    return _includes(a, b)


@lru_cache(maxsize=RELATION_CACHE_SIZE)
def _intersects(a: str, b: str) -> bool:
    ia = key_info(a)
    ib = key_info(b)
    ca = ia.chunks
    cb = ib.chunks
    n = len(ca)
    m = len(cb)
    if not ia.has_double_wild and not ib.has_double_wild:
        if n != m:
            return False
        for x, y in zip(ca, cb):
            if x != y and not chunk_intersects(x, y):
                return False
        return True
    # Search over (i, j) positions: ca[i:] against cb[j:]. Each state is expanded once.
    lva = ia.last_verbatim
    lvb = ib.last_verbatim
    w = m + 1
    seen = {0}
    stack = [0]
    while stack:
        st = stack.pop()
        i, j = divmod(st, w)
        if i == n or j == m:
            if (i == n or (i == n - 1 and ca[i] == DOUBLE_WILD)) and (j == m or (j == m - 1 and cb[j] == DOUBLE_WILD)):
                return True
            continue
        x = ca[i]
        y = cb[j]
        if x == DOUBLE_WILD:
            if i == n - 1:
                if lvb < j:  # '**' takes the rest of b unless a verbatim chunk is in it
                    return True
                continue
            nxt = [st + w]  # '**' matches nothing
            if y[:1] != VERBATIM:
                nxt.append(st + 1)  # '**' swallows y
        elif y == DOUBLE_WILD:
            if j == m - 1:
                if lva < i:
                    return True
                continue
            nxt = [st + 1]
            if x[:1] != VERBATIM:
                nxt.append(st + w)
        elif x == y or chunk_intersects(x, y):
            nxt = [st + w + 1]
        else:
            continue
        for s2 in nxt:
            if s2 not in seen:
                seen.add(s2)
                stack.append(s2)
    return False


@lru_cache(maxsize=RELATION_CACHE_SIZE)
def _includes(a: str, b: str) -> bool:
    ia = key_info(a)
    ib = key_info(b)
    ca = ia.chunks
    cb = ib.chunks
    n = len(ca)
    m = len(cb)
    if not ia.has_double_wild:
        if n != m or ib.has_double_wild:
            return False
        for x, y in zip(ca, cb):
            if x != y and not chunk_includes(x, y):
                return False
        return True
    lvb = ib.last_verbatim
    w = m + 1
    seen = {0}
    stack = [0]
    while stack:
        st = stack.pop()
        i, j = divmod(st, w)
        x = ca[i]
        if x == DOUBLE_WILD:
            nxt = []
            if i == n - 1:
                if lvb < j:
                    return True
            else:
                nxt.append(st + w)  # '**' matches nothing
            if j < m and cb[j][:1] != VERBATIM and j + 1 < m:
                nxt.append(st + 1)  # '**' swallows one more chunk of b
        else:
            if j >= m:
                continue
            y = cb[j]
            if y == DOUBLE_WILD or not (x == y or chunk_includes(x, y)):
                continue
            if i == n - 1:
                if j == m - 1:
                    return True
                continue
            nxt = [st + w + 1]
        for s2 in nxt:
            if s2 not in seen:
                seen.add(s2)
                stack.append(s2)
    return False


def clear_caches() -> None:
    """Empty the memo caches of this module (bounded; emptied to give memory back)."""
    for cached in (key_info, _segments, _intersects, _includes):
        cached.cache_clear()
