"""KeyExpr value type, error reporting and robustness of the pairwise relations."""

from __future__ import annotations

import pickle

import pytest

from pyzenoh.errors import UsageError
from pyzenoh.keyexpr import (
    KeyExpr,
    KeyExprError,
    KeyExprErrorKind,
    SetIntersectionLevel,
    SetRelation,
    autocanonize,
    includes,
    intersects,
    is_canonical,
    relation,
    validate,
)
from pyzenoh.keyexpr.canon import _fast_valid, _scan


def test_keyexpr_value_semantics() -> None:
    k = KeyExpr("a/*/c")
    assert str(k) == "a/*/c" and repr(k) == "KeyExpr('a/*/c')"
    assert k == KeyExpr("a/*/c") and k != KeyExpr("a/b/c") and k == "a/*/c" and k != "a/b/c"
    assert hash(k) == hash(KeyExpr("a/*/c"))
    assert {k, KeyExpr("a/*/c")} == {k}
    assert KeyExpr(k) == k
    assert sorted([KeyExpr("b"), KeyExpr("a")]) == [KeyExpr("a"), KeyExpr("b")]
    assert pickle.loads(pickle.dumps(k)) == k
    with pytest.raises(AttributeError):
        k._s = "x"
    with pytest.raises(AttributeError):
        k.other = 1
    assert k.is_wild() and KeyExpr("a/b$*").is_wild() and not KeyExpr("a/b").is_wild()


def test_keyexpr_validates_and_autocanonizes() -> None:
    with pytest.raises(KeyExprError):
        KeyExpr("a/**/**")
    assert KeyExpr.autocanonize("a/**/**") == KeyExpr("a/**")
    assert KeyExpr.autocanonize("a/**/*") == KeyExpr("a/*/**")
    assert str(KeyExpr("a").join("b/**/**")) == "a/b/**"
    assert str(KeyExpr("a/**").join("*")) == "a/*/**"
    assert str(KeyExpr("a").concat("b/c")) == "ab/c"
    with pytest.raises(KeyExprError):
        KeyExpr("a/*").concat("*")
    with pytest.raises(KeyExprError):
        KeyExpr("a").concat("/")


def test_relation_to() -> None:
    r = KeyExpr("a/*").relation_to  # zenoh's levels: "contained" is INTERSECTS
    assert r(KeyExpr("a/b")) is SetIntersectionLevel.INCLUDES
    assert r("a/*") is SetIntersectionLevel.EQUALS
    assert r("a/**") is SetIntersectionLevel.INTERSECTS
    assert r("*/b") is SetIntersectionLevel.INTERSECTS
    assert r("b/*") is SetIntersectionLevel.DISJOINT
    assert relation("a/*", "a/**") is SetRelation.CONTAINED
    assert KeyExpr("a/**").intersects("a") and KeyExpr("a/**").includes("a")
    with pytest.raises(KeyExprError):
        KeyExpr("a").intersects("a//b")


def test_error_names_offending_chunk() -> None:
    with pytest.raises(KeyExprError) as ei:
        validate("demo/x?y/z")
    e = ei.value
    assert isinstance(e, UsageError) and isinstance(e, ValueError)
    assert e.kind is KeyExprErrorKind.SHARP_OR_QMARK
    assert (e.chunk, e.chunk_index, e.expr) == ("x?y", 1, "demo/x?y/z")
    assert "`x?y`" in str(e)
    with pytest.raises(KeyExprError) as ei:
        validate("a//b")
    assert (ei.value.kind, ei.value.chunk, ei.value.chunk_index) == (
        KeyExprErrorKind.EMPTY_CHUNK,
        "",
        1,
    )
    with pytest.raises(KeyExprError) as ei:
        autocanonize("x/$*$*/a$*$*$*b")  # zenoh canonizes this to x/*/a$*$*b, invalid
    assert ei.value.expr == "x/*/a$*$*b"
    assert ei.value.kind is KeyExprErrorKind.DOLLAR_AFTER_DOLLAR
    assert (ei.value.chunk, ei.value.chunk_index) == ("a$*$*b", 2)


@pytest.mark.parametrize("bad", [None, 1, b"a/b", ["a"]])
def test_non_strings_raise_usage_errors(bad: object) -> None:
    assert not is_canonical(bad)  # type: ignore[arg-type]
    with pytest.raises(KeyExprError) as ei:
        validate(bad)  # type: ignore[arg-type]
    assert ei.value.kind is KeyExprErrorKind.NOT_A_STRING
    with pytest.raises(KeyExprError):
        autocanonize(bad)  # type: ignore[arg-type]
    with pytest.raises(KeyExprError):
        KeyExpr(bad)  # type: ignore[arg-type]


def test_lone_surrogate_is_rejected() -> None:
    s = "a/\udcff"
    assert not is_canonical(s)
    with pytest.raises(KeyExprError) as ei:
        validate(s)
    assert ei.value.kind is KeyExprErrorKind.INVALID_UTF8
    with pytest.raises(KeyExprError):
        autocanonize("a/**/**/\udcff")


def test_fast_check_agrees_with_scan() -> None:
    # Exhaustive over short strings of the special characters.
    import itertools

    alphabet = "a/*$#@"
    count = 0
    for n in range(7):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t)
            assert _fast_valid(s) is (_scan(s) is None), s
            count += 1
    assert count == sum(len(alphabet) ** n for n in range(7))


def test_long_expressions_are_iterative() -> None:
    n = 20_000
    lit = "/".join(["a"] * n)
    assert intersects("**", lit) and includes("**", lit)
    assert intersects("a/**/a", lit) and includes("a/**/a", lit)
    assert not intersects("**/b", lit)
    wild = "/".join(["*"] * n)
    assert intersects(wild, lit) and includes(wild, lit) and not includes(lit, wild)
    # Many '**' against many chunks: a bounded search, not an exponential one.
    many = "/".join(["**", "a"] * 60)
    assert intersects(many, "/".join(["a"] * 200))
    assert not intersects(many + "/b", "/".join(["a"] * 200))
    assert not includes(many + "/b", "/".join(["a"] * 200))
    long_chunk = "a" + "$*a" * 5_000
    assert validate(long_chunk) == long_chunk
    assert intersects(long_chunk, "a" * 10_001) and not intersects(long_chunk, "a" * 5_000)
    assert autocanonize("/".join(["**"] * 10_000)) == "**"
