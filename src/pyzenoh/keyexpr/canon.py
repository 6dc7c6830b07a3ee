"""Key-expression validation and canonization, as eclipse-zenoh 1.10.2 does them.

A key expression is a ``/``-separated list of non-empty chunks. Besides literal chunks it
may contain the wildcard chunks ``*`` (one chunk) and ``**`` (zero or more chunks), and
``$*`` (any run of characters) inside a chunk that has other characters too. ``#`` and
``?`` are forbidden; ``$`` is only allowed as part of ``$*``. Valid means canonical: the
strings ``**/**``, ``**/*``, a lone ``$*`` chunk and ``$*$*`` must be rewritten first,
which :func:`autocanonize` does (zenoh-wire.md section 5).

Which error is reported for an invalid string follows zenoh's left-to-right scan, so
callers see the same kind of error the real library gives.
"""

from __future__ import annotations

from enum import Enum
from functools import lru_cache

from pyzenoh.errors import UsageError

# Cache sizes: keys seen on the wire repeat a lot; the caches are bounded so a peer that
# sends many distinct keys only costs this many entries.
VALIDATION_CACHE_SIZE = 1 << 13  # see relations.CHUNKS_CACHE_SIZE


class KeyExprErrorKind(Enum):
    """Why a string is not a (canonical) key expression."""

    EMPTY_CHUNK = "empty chunks are forbidden, as well as leading and trailing slashes"
    LONE_DOLLAR_STAR = "empty chunks are forbidden, as well as leading and trailing slashes (a lone `$*` chunk)"
    SINGLE_STAR_AFTER_DOUBLE_STAR = "`**/*` must be replaced by `*/**` to reach canon-form"
    DOUBLE_STAR_AFTER_DOUBLE_STAR = "`**/**` must be replaced by `**` to reach canon-form"
    STAR_IN_CHUNK = "`*` may only be preceded by `/` or `$`"
    DOLLAR_AFTER_DOLLAR = "`$` is not allowed after `$*`"
    SHARP_OR_QMARK = "`#` and `?` are forbidden characters"
    UNBOUND_DOLLAR = "`$` is only allowed in `$*`"
    INVALID_UTF8 = "key expressions must be valid UTF-8 (lone surrogate)"
    # zenoh 1.10.2 panics while canonizing these (a `$*$*` run within two bytes of the end).
    UNCANONIZABLE = "cannot be canonized (zenoh 1.10.2 fails on `$*$*` this close to the end)"
    NOT_A_STRING = "a key expression must be a str"


class KeyExprError(UsageError):
    """A string is not a valid key expression.

    ``expr`` is the rejected string (after canonization, for :func:`autocanonize`),
    ``kind`` says why, and ``chunk`` / ``chunk_index`` name the offending chunk.
    """

    def __init__(self, expr: str, kind: KeyExprErrorKind, position: int = 0) -> None:
        self.expr = expr
        self.kind = kind
        position = max(0, min(position, len(expr)))
        self.chunk_index = expr.count("/", 0, position)
        start = expr.rfind("/", 0, position) + 1
        end = expr.find("/", position)
        self.chunk = expr[start : len(expr) if end < 0 else end]
        super().__init__(f"Invalid key expression `{expr}`: {kind.value} (chunk {self.chunk_index}: `{self.chunk}`)")


def _scan(s: str) -> tuple[KeyExprErrorKind, int] | None:
    """Return the first error zenoh's validator reports for ``s`` and its position.

    Mirrors the library's left-to-right scan so the reported kind is the same. All the
    characters it looks at are ASCII, so scanning code points equals scanning bytes.
    """
    k = KeyExprErrorKind
    n = len(s)
    if n == 0 or s[-1] == "/":
        return k.EMPTY_CHUNK, max(n - 1, 0)
    chunk_start = 0
    i = 0
    while i < n:
        c = s[i]
        if c == "/":
            if i == chunk_start:
                return k.EMPTY_CHUNK, i
            i += 1
            chunk_start = i
        elif c == "*":
            if i != chunk_start:
                return k.STAR_IN_CHUNK, i
            nxt = s[i + 1] if i + 1 < n else ""
            if nxt == "":
                break
            if nxt == "/":
                i += 2
                chunk_start = i
            elif nxt == "*":
                n2 = s[i + 2] if i + 2 < n else ""
                if n2 == "":
                    break
                if n2 != "/":
                    return k.STAR_IN_CHUNK, i
                if i + 3 < n and s[i + 3] == "*":
                    a = s[i + 4] if i + 4 < n else ""
                    b = s[i + 5] if i + 5 < n else ""
                    if a in ("", "/"):
                        return k.SINGLE_STAR_AFTER_DOUBLE_STAR, i + 3
                    if a == "*" and b in ("", "/"):
                        return k.DOUBLE_STAR_AFTER_DOUBLE_STAR, i + 3
                    return k.STAR_IN_CHUNK, i + 3
                i += 3
                chunk_start = i
            else:
                return k.STAR_IN_CHUNK, i
        elif c == "$":
            if i + 1 >= n or s[i + 1] != "*":
                return k.UNBOUND_DOLLAR, i
            n2 = s[i + 2] if i + 2 < n else ""
            if n2 == "$":
                return k.DOLLAR_AFTER_DOLLAR, i
            if n2 in ("", "/") and i == chunk_start:
                return k.LONE_DOLLAR_STAR, i
            if n2 == "":
                break
            i += 2
        elif c == "#" or c == "?":
            return k.SHARP_OR_QMARK, i
        else:
            i += 1
    return None


def _fast_valid(s: str) -> bool:
    """Chunk-wise validity check; agrees with :func:`_scan` (checked by the tests)."""
    if not s or "#" in s or "?" in s:
        return False
    if "*" not in s and "$" not in s:
        return s[0] != "/" and s[-1] != "/" and "//" not in s
    prev = ""
    for ch in s.split("/"):
        if not ch:
            return False
        if ch == "**" or ch == "*":
            if prev == "**":
                return False
        elif "*" in ch or "$" in ch:
            if ch == "$*" or "$*$" in ch:
                return False
            rest = ch.replace("$*", "")
            if "$" in rest or "*" in rest:
                return False
        prev = ch
    return True


def _utf8_ok(s: str) -> bool:
    if s.isascii():
        return True
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@lru_cache(maxsize=VALIDATION_CACHE_SIZE)
def _check(s: str) -> KeyExprError | None:
    if _fast_valid(s):
        if _utf8_ok(s):
            return None
        return KeyExprError(s, KeyExprErrorKind.INVALID_UTF8, 0)
    err = _scan(s)
    if err is None:  # pragma: no cover - _fast_valid and _scan are tested to agree
        return None if _utf8_ok(s) else KeyExprError(s, KeyExprErrorKind.INVALID_UTF8, 0)
    return KeyExprError(s, err[0], err[1])


def _require_str(s: object) -> str:
    if not isinstance(s, str):
        raise KeyExprError(repr(s), KeyExprErrorKind.NOT_A_STRING)
    return s


def is_canonical(s: str) -> bool:
    """True if ``s`` is a valid key expression in canon form (what ``zenoh.KeyExpr(s)`` accepts)."""
    return isinstance(s, str) and _check(s) is None


def validate(s: str) -> str:
    """Return ``s`` if it is a valid canonical key expression, else raise :class:`KeyExprError`."""
    err = _check(_require_str(s))
    if err is not None:
        raise KeyExprError(err.expr, err.kind, _position_of(err))
    return s


def _position_of(err: KeyExprError) -> int:
    # Re-raising a fresh exception (cached ones must not accumulate tracebacks) needs a
    # position inside the offending chunk; its start is one.
    start = 0
    for _ in range(err.chunk_index):
        start = err.expr.index("/", start) + 1
    return start


def _canonize_bytes(b: bytes) -> bytes | None:
    """zenoh's in-place canonizer, on UTF-8 bytes; None where zenoh 1.10.2 panics.

    It is byte-based in the library, and some of its quirks depend on byte offsets (a run
    ``$*$*`` followed by ``$*`` two bytes later drops those two bytes), so it is redone on
    bytes here rather than on code points.
    """
    n = len(b)
    out = bytearray()
    index = 0
    double_wild = False
    while True:
        if n - index == 2 and b.startswith(b"**", index):
            out += b"**"
            return bytes(out)
        if b.startswith(b"**/", index):
            double_wild = True
            index += 3
            continue
        r = -1
        if b.startswith(b"*", index):
            r = index + 1
        elif b.startswith(b"$*", index):
            r = index + 2
        if r >= 0 and (r == n or b[r] == 0x2F):  # '/'
            out += b"*"
            if r == n:
                if double_wild:
                    out += b"/**"
                return bytes(out)
            out += b"/"
            index = r + 1
            continue
        if b.startswith(b"$*$*", index):
            index += 2
            continue
        if double_wild:
            out += b"**/"
            double_wild = False
        write_start = index
        while True:
            if index >= n:
                out += b[write_start:index]
                return bytes(out)
            c = b[index]
            if c == 0x2F:  # '/'
                index += 1
                out += b[write_start:index]
                break
            if c == 0x24 and b.startswith(b"*$*", index + 1):  # '$'
                index += 2
                out += b[write_start:index]
                if index + 4 > n:
                    return None  # zenoh slices past the end here and panics
                skip = 1 if b.startswith(b"$*", index + 4) else 0
                index += (1 + skip) * 2
                write_start = index
            else:
                index += 1


@lru_cache(maxsize=VALIDATION_CACHE_SIZE)
def _autocanonize(s: str) -> str | KeyExprError:
    if _check(s) is None:
        return s  # canonical strings are fixed points of the canonizer
    if not _utf8_ok(s):
        return KeyExprError(s, KeyExprErrorKind.INVALID_UTF8, 0)
    out = _canonize_bytes(s.encode("utf-8"))
    if out is None:
        return KeyExprError(s, KeyExprErrorKind.UNCANONIZABLE, 0)
    # The canonizer only drops whole ASCII runs or whole characters, so this decodes.
    t = out.decode("utf-8", errors="replace")
    err = _check(t)
    return t if err is None else err


def autocanonize(s: str) -> str:
    """Canonize ``s`` like ``zenoh.KeyExpr.autocanonize`` and return it, or raise :class:`KeyExprError`.

    Rewrites ``**/**`` to ``**``, ``**/*`` to ``*/**``, a lone ``$*`` chunk to ``*`` and
    ``$*$*`` to ``$*`` (with the library's exact quirks), then validates the result.
    """
    res = _autocanonize(_require_str(s))
    if isinstance(res, KeyExprError):
        raise KeyExprError(res.expr, res.kind, _position_of(res))
    return res


def clear_caches() -> None:
    """Empty the validation memo caches (bounded; emptied to give memory back)."""
    _check.cache_clear()
    _autocanonize.cache_clear()
