"""Key-expression intersection for the recorder's filter and the pipeline's audit.

``pyzenoh.keyexpr.intersects`` is the project's implementation and is used whenever it
can be imported; the small matcher below is only a stand-in with the same semantics
(zenoh-wire.md section 5) for when that module is absent. It assumes canonical,
valid key expressions, which is what the router hands the recorder.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

Intersects = Callable[[str, str], bool]

_WILD = None  # stands for `$*` inside a chunk pattern


def _chunk_pattern(chunk: str) -> tuple[str | None, ...]:
    out: list[str | None] = []
    i = 0
    while i < len(chunk):
        if chunk.startswith("$*", i):
            out.append(_WILD)
            i += 2
        else:
            out.append(chunk[i])
            i += 1
    return tuple(out)


def _patterns_meet(p: tuple[str | None, ...], q: tuple[str | None, ...]) -> bool:
    # Two glob patterns ($* = any run of characters) share a string: a small DP.
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(p) and j == len(q):
            return True
        if i < len(p) and p[i] is _WILD:
            stack.append((i + 1, j))
            if j < len(q):
                stack.append((i, j + 1))
        elif j < len(q) and q[j] is _WILD:
            stack.append((i, j + 1))
            if i < len(p):
                stack.append((i + 1, j))
        elif i < len(p) and j < len(q) and p[i] == q[j]:
            stack.append((i + 1, j + 1))
    return False


def _chunks_meet(a: str, b: str) -> bool:
    if a.startswith("@") or b.startswith("@"):
        return a == b  # verbatim chunks match only themselves
    if a == "*" or b == "*" or a == b:
        return True
    if "$*" not in a and "$*" not in b:
        return False
    return _patterns_meet(_chunk_pattern(a), _chunk_pattern(b))


def _fallback_intersects(a: str, b: str) -> bool:
    ca, cb = a.split("/"), b.split("/")
    seen: set[tuple[int, int]] = set()
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(ca) and j == len(cb):
            return True
        if i < len(ca) and ca[i] == "**":
            stack.append((i + 1, j))  # `**` matches nothing more
            if j < len(cb) and not cb[j].startswith("@"):
                # `**` swallows b's chunk (never a verbatim one)
                stack.append((i, j + 1))
        elif j < len(cb) and cb[j] == "**":
            stack.append((i, j + 1))
            if i < len(ca) and not ca[i].startswith("@"):
                stack.append((i + 1, j))
        elif i < len(ca) and j < len(cb) and _chunks_meet(ca[i], cb[j]):
            stack.append((i + 1, j + 1))
    return False


def check_key_expr(expr: str) -> None:
    """Raise ValueError when ``expr`` is not a valid canonical key expression.

    Uses ``pyzenoh.keyexpr.validate`` when importable; otherwise only the basic shape
    (non-empty chunks, no ``#`` or ``?``) is checked.
    """
    try:
        from pyzenoh.keyexpr import validate  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        if (
            not expr
            or any(not c for c in expr.split("/"))
            or "#" in expr
            or "?" in expr
        ):
            raise ValueError(f"invalid key expression {expr!r}") from None
        return
    validate(expr)


@lru_cache(maxsize=1)
def get_intersects() -> Intersects:
    """``pyzenoh.keyexpr.intersects`` when importable, else the local stand-in."""
    try:
        from pyzenoh.keyexpr import intersects  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return _fallback_intersects
    return intersects  # type: ignore[no-any-return,unused-ignore]
