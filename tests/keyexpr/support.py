"""Shared helpers: the real zenoh library as oracle, and key-expression strategies."""

from __future__ import annotations

import random

import zenoh  # the real eclipse-zenoh 1.10.2, installed by the test extra
from hypothesis import strategies as st

from pyzenoh.keyexpr import KeyExprError, KeyExprErrorKind, autocanonize

ZK = zenoh.KeyExpr
ZError: type[Exception] = zenoh.ZError

# Phrases of zenoh's error messages, mapped to the kinds that may report them.
_PHRASES: list[tuple[str, frozenset[KeyExprErrorKind]]] = [
    (
        "empty chunks are forbidden",
        frozenset({KeyExprErrorKind.EMPTY_CHUNK, KeyExprErrorKind.LONE_DOLLAR_STAR}),
    ),
    (
        "`**/*` must be replaced",
        frozenset({KeyExprErrorKind.SINGLE_STAR_AFTER_DOUBLE_STAR}),
    ),
    (
        "`**/**` must be replaced",
        frozenset({KeyExprErrorKind.DOUBLE_STAR_AFTER_DOUBLE_STAR}),
    ),
    ("`*` may only be preceded", frozenset({KeyExprErrorKind.STAR_IN_CHUNK})),
    ("`$` is not allowed after", frozenset({KeyExprErrorKind.DOLLAR_AFTER_DOLLAR})),
    ("`#` and `?` are forbidden", frozenset({KeyExprErrorKind.SHARP_OR_QMARK})),
    ("`$` is only allowed", frozenset({KeyExprErrorKind.UNBOUND_DOLLAR})),
]


def parse_zenoh_error(msg: str) -> tuple[str, frozenset[KeyExprErrorKind]]:
    """(rejected expression, acceptable kinds) from a zenoh "Invalid Key Expr" message."""
    prefix = "Invalid Key Expr `"
    assert msg.startswith(prefix), msg
    # The expression may itself contain backticks; the last "`: " ends it.
    end = msg.rfind("`: ")
    expr = msg[len(prefix) : end]
    rest = msg[end + 3 :]
    for phrase, kinds in _PHRASES:
        if rest.startswith(phrase):
            return expr, kinds
    raise AssertionError(f"unknown zenoh error: {msg!r}")


def zenoh_valid(s: str) -> tuple[bool, str]:
    """(accepted, message) for zenoh.KeyExpr(s)."""
    try:
        return True, str(ZK(s))
    except ZError as e:
        return False, str(e)


def zenoh_autocanonize(s: str) -> tuple[str | None, str]:
    """(result or None, error message); a Rust panic in zenoh comes back as 'panic: ...'."""
    try:
        return str(ZK.autocanonize(s)), ""
    except ZError as e:
        return None, str(e)
    except BaseException as e:  # pyo3's PanicException derives from BaseException
        if type(e).__name__ != "PanicException":
            raise
        return None, f"panic: {e}"


# Chunk building blocks over a tiny alphabet so that relations are often non-trivial.
LITERALS = ["a", "b", "ab", "ba", "aa", "é", "a b"]
WILDS = ["*", "**"]
DSLS = [
    "a$*",
    "$*a",
    "a$*b",
    "$*a$*",
    "b$*a$*b",
    "$*b",
    "a$*a",
    "$*é",
    "ab$*",
    "$*ba$*a",
]
VERBATIMS = ["@a", "@", "@b", "@a$*", "@$*a"]
# '$*' chunks where '@' is not at the start (zenoh treats them as ordinary chunks), and
# non-canonical forms that autocanonize rewrites.
TRICKIES = ["$*@a", "a$*@", "$*$*a", "$*", "**", "*"]

LITERAL = st.sampled_from(LITERALS)
WILD = st.sampled_from(WILDS)
DSL = st.sampled_from(DSLS)
VERBATIM = st.sampled_from(VERBATIMS)
TRICKY = st.sampled_from(TRICKIES)

CHUNK = st.one_of(LITERAL, LITERAL, WILD, WILD, DSL, VERBATIM, TRICKY)

# Weighted vocabulary for seeded random generation (one hypothesis-drawn Random per batch
# gives far more distinct expressions per example than drawing every chunk).
_VOCAB = LITERALS * 3 + WILDS * 6 + DSLS + VERBATIMS + TRICKIES


@st.composite
def raw_keyexprs(draw: st.DrawFn, max_chunks: int = 5) -> str:
    """A '/'-joined list of chunks, possibly not canonical (e.g. '**/**', '$*$*a')."""
    chunks = draw(st.lists(CHUNK, min_size=1, max_size=max_chunks))
    return "/".join(chunks)


@st.composite
def keyexprs(draw: st.DrawFn, max_chunks: int = 5) -> str:
    """A canonical key expression (canonized by pyzenoh; the tests compare with zenoh)."""
    for _ in range(10):
        raw = draw(raw_keyexprs(max_chunks))
        try:
            return autocanonize(raw)
        except KeyExprError:  # e.g. '$*$*' at the very end; draw again
            continue
    return draw(LITERAL)


def _random_chunk(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return rng.choice(_VOCAB)
    # Built from pieces: arbitrary mixes of letters, '$*' and '@' anywhere in the chunk.
    pieces = ["a", "b", "a", "$*", "@", "é"]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(1, 5)))


def random_keyexpr(rng: random.Random, max_chunks: int = 6) -> str:
    """A canonical key expression built from the vocabulary above."""
    for _ in range(10):
        raw = "/".join(_random_chunk(rng) for _ in range(rng.randint(1, max_chunks)))
        try:
            return autocanonize(raw)
        except KeyExprError:
            continue
    return rng.choice(LITERALS)


# Character soup for validity and canonization: every special character, two letters,
# a non-ASCII one, so that every error path is reachable in a few characters.
SOUP = st.text(alphabet="ab/*$@#?é", max_size=10)
