"""A group member's key-expression ids: its own, resolved in full, bounded."""

from __future__ import annotations

from pyzenoh.codec import DeclareKeyExpr, UndeclareKeyExpr, WireExpr
from pyzenoh.transport.multicast.members import MemberKeys


def test_ids_name_keys_in_full_until_undeclared() -> None:
    keys = MemberKeys(limit=2)
    assert keys.full(WireExpr(0, "a/b")) == "a/b"
    assert keys.full(WireExpr(7, "/c")) is None  # no such id of this member's
    assert keys.learn(DeclareKeyExpr(7, WireExpr(0, "a")))
    assert keys.learn(DeclareKeyExpr(8, WireExpr(7, "/b")))  # an id on an id
    assert keys.full(WireExpr(8, "/c")) == "a/b/c"
    assert not keys.learn(DeclareKeyExpr(9, WireExpr(0, "x")))  # over the limit: refused
    assert keys.learn(UndeclareKeyExpr(7))
    assert keys.full(WireExpr(7, "")) is None and len(keys) == 1
    assert not keys.learn(DeclareKeyExpr(10, WireExpr(99, "/x")))  # an unknown scope
