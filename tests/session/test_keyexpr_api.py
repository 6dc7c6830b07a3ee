"""Key expressions behave as zenoh-python's where programs depend on it, side by side
with the real eclipse-zenoh 1.10.2 ``KeyExpr`` (no network)."""

from __future__ import annotations

import pytest
import zenoh

import pyzenoh
from pyzenoh.keyexpr import (
    KeyExpr,
    KeyExprError,
    SetIntersectionLevel,
    includes,
    intersects,
)
from pyzenoh.keyexpr import relations as unchecked

PAIRS = [("a/b", "a/b"), ("a/*", "a/b"), ("a/b", "a/*"), ("a/*", "*/b"), ("a/**", "b/c"), ("a/$*b", "a/xb")]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_relations_as_zenoh(a: str, b: str) -> None:
    za, zb = zenoh.KeyExpr(a), zenoh.KeyExpr(b)
    ours = KeyExpr(a)
    assert ours.intersects(b) == za.intersects(zb) == intersects(ours, KeyExpr(b)) == intersects(a, b)
    assert ours.includes(b) == za.includes(zb) == includes(ours, b) == includes(a, KeyExpr(b))
    assert ours.relation_to(b).name == str(za.relation_to(zb)).rsplit(".", 1)[1]


def test_equality_with_str() -> None:
    assert (zenoh.KeyExpr("a/b") == "a/b") and (KeyExpr("a/b") == "a/b")
    assert KeyExpr("a/b") != "a/c" and KeyExpr("a/b") == KeyExpr("a/b")
    assert hash(KeyExpr("a/b")) == hash("a/b")
    assert "a/b" in {KeyExpr("a/b")}


def test_keyword_names() -> None:
    assert KeyExpr(key_expr="a/b") == "a/b"
    assert KeyExpr.autocanonize(key_expr="a/**/**") == "a/**"
    assert KeyExpr("a").concat(other="/b") == "a/b"
    assert KeyExpr("a").join(other="b") == "a/b"
    assert KeyExpr("a/*").intersects(other="a/b") and KeyExpr("a/*").includes(other="a/b")


def test_levels_are_ordered() -> None:
    assert SetIntersectionLevel.EQUALS >= SetIntersectionLevel.INCLUDES >= SetIntersectionLevel.INTERSECTS
    assert KeyExpr("a/**").relation_to("a/b") >= SetIntersectionLevel.INTERSECTS
    assert pyzenoh.SetIntersectionLevel is SetIntersectionLevel


@pytest.mark.parametrize("bad", ["a//b", "a/**/**", "", "a/b?c", 3])
def test_invalid_key_expressions_rejected(bad: object) -> None:
    if isinstance(bad, str):  # (zenoh raises TypeError for a non-str; pyzenoh a KeyExprError)
        with pytest.raises(zenoh.ZError):
            zenoh.KeyExpr("a/b").intersects(bad)
    for fn in (intersects, includes):
        with pytest.raises(KeyExprError):
            fn("a/b", bad)  # type: ignore[arg-type]
        with pytest.raises(KeyExprError):
            fn(bad, KeyExpr("a/b"))  # type: ignore[arg-type]
    with pytest.raises(pyzenoh.ZError):
        KeyExpr("a/b").intersects(bad)  # type: ignore[arg-type]


def test_unchecked_functions_keep_the_fast_behaviour() -> None:
    # what the router and the routing core use on canonical strings: no validation
    assert unchecked.intersects("a//b", "a//b") is True
    assert unchecked.includes("a/**", "a/b") is True
