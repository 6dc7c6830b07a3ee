"""Bad input affects only the face that sent it: dropped, or the face must be closed."""

from __future__ import annotations

import pytest

from pyzenoh.codec import (
    Declare,
    DeclareFinal,
    DeclareKeyExpr,
    WhatAmI,
    WireExpr,
)
from pyzenoh.errors import CloseReason, PeerError, UsageError
from pyzenoh.routing import RoutingConfig, UnsupportedFace
from tests.routing.support import (
    CF,
    CURRENT,
    FINAL,
    Harness,
    K,
    S,
    T,
    d_keyexpr,
    d_qabl,
    d_sub,
    d_token,
    interest,
    put,
    u_qabl,
    u_sub,
    u_token,
)


def test_api_misuse_is_a_usage_error() -> None:
    h = Harness()
    h.open(1)
    with pytest.raises(UsageError):
        h.open(1)
    with pytest.raises(UsageError):
        h.core.handle(2, put("k"), h.now)
    with pytest.raises(UsageError):
        h.core.remove_face(2, h.now)
    with pytest.raises(UsageError):
        h.core.handle(1, "not a message", h.now)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        RoutingConfig(max_declarations_per_face=0)


def test_a_router_with_our_own_zid_is_refused() -> None:
    h = Harness()
    with pytest.raises(UnsupportedFace) as info:
        h.core.add_face(1, h.core.zid, WhatAmI.ROUTER, h.now)
    assert isinstance(info.value, PeerError)
    assert info.value.close_reason == CloseReason.UNSUPPORTED
    assert h.core.is_empty()


@pytest.mark.parametrize(
    "msg,reason",
    [
        (d_sub(1, WireExpr(4, "/x", True)), "unknown key id"),
        (d_sub(1, WireExpr(4, "/x", False)), "unknown key id"),
        (d_qabl(1, "a/*b"), "invalid key expression"),
        (d_token(1, "a/"), "invalid key expression"),
        (d_sub(1, "x" * 70_000), "invalid key expression"),
        (u_sub(8), "unknown subscriber id"),
        (u_qabl(8), "unknown queryable id"),
        (u_token(8), "unknown token id"),
        (d_token(1, "k", interest_id=3), "token with interest id"),
        (Declare(DeclareFinal(), 0, 0x08), "unexpected declare final"),
        (Declare(DeclareFinal(), None, 0x08), "unexpected declare final"),
        (interest(1, FINAL), "unknown interest id"),
        (interest(1, CF, S, WireExpr(3, "", True)), "unknown key id"),
        (interest(1, CF, S, "bad//key"), "invalid key expression"),
        (d_keyexpr(1, "y" * 70_000), "invalid key expression"),
    ],
)
def test_bad_declarations_are_dropped(msg: Declare, reason: str) -> None:
    h = Harness()
    h.open(1)
    h.open(2)
    h.send(2, interest(1, CF, S | T))
    assert h.send(1, msg) == []
    assert h.core.stats.dropped == {reason: 1}
    state = h.core.face_state(1)
    assert state["subscribers"] == state["queryables"] == state["tokens"] == {}
    assert state["interests"] == []


def test_key_ids_resolve_in_the_right_table() -> None:
    h = Harness()
    h.open(1)
    h.send(1, d_keyexpr(1, "own"))
    # M = 0 names an id the *router* declared to the face: there is none.
    assert h.send(1, d_sub(1, WireExpr(1, "/x", False))) == []
    assert h.core.stats.dropped == {"unknown key id": 1}
    h.send(1, d_sub(1, WireExpr(1, "/x", True)))
    assert h.core.face_state(1)["subscribers"] == {1: "own/x"}
    # D_KEYEXPR scopes name the router's ids (zenoh reads them with the receiver mapping).
    assert h.send(1, Declare(DeclareKeyExpr(2, WireExpr(1, "/z", True)), qos=8)) == []
    assert h.core.stats.dropped == {"unknown key id": 2}


def test_duplicate_ids() -> None:
    h = Harness()
    h.open(1)
    h.open(2)
    h.send(2, interest(1, CF, S))
    assert len(h.send(1, d_sub(1, "a"))) == 1
    assert h.send(1, d_sub(1, "a")) == []  # same again: harmless
    assert h.send(1, d_sub(1, "b")) == []  # same id, another key: dropped
    assert h.send(1, d_token(1, "t"), d_token(1, "u")) == []
    assert h.send(1, d_qabl(1, "q"), d_qabl(1, "r")) == []
    assert h.send(1, d_keyexpr(1, "e"), d_keyexpr(1, "e"), d_keyexpr(1, "f")) == []
    assert h.send(2, interest(1, CF, S)) == []  # interest id in use
    assert h.core.stats.dropped == {
        "duplicate subscriber id": 1,
        "duplicate token id": 1,
        "duplicate queryable id": 1,
        "key id remapped": 1,
        "interest id in use": 1,
    }
    state = h.core.face_state(1)
    assert state["subscribers"] == {1: "a"} and state["remote_ids"] == {1: "e"}


def test_declarations_over_the_cap_are_refused_alone() -> None:
    h = Harness(config=RoutingConfig(max_declarations_per_face=3))
    h.open(1)
    h.open(2)
    h.send(2, d_sub(1, "k"))
    h.send(1, d_sub(1, "a"), d_token(2, "b"), interest(3, CF, S, "k"))
    for msg in (d_sub(9, "c"), d_qabl(9, "c"), d_token(9, "c"), interest(9, CF, T)):
        assert h.core.handle(1, msg, h.now) == []
    assert h.core.stats.limits == {"max_declarations_per_face": 4}
    assert h.core.stats.dropped["max_declarations_per_face"] == 4
    state = h.core.face_state(1)
    assert len(state["subscribers"]) + len(state["tokens"]) + len(state["interests"]) == 3
    # The face lives on: what it declared before still works, and an undeclaration
    # makes room for the next declaration.
    assert [s.face for s in h.send(2, put("a"))] == [1]
    assert len(h.send(1, interest(10, CURRENT, T))) == 2  # its own token b, then D_FINAL
    h.send(1, u_sub(1))
    h.send(1, d_sub(9, "k"))
    assert [s.face for s in h.send(2, put("k"))] == [1]


def test_declarations_over_the_router_total_are_refused() -> None:
    h = Harness(config=RoutingConfig(max_declarations_total=4))
    for fid in (1, 2, 3):
        h.open(fid)
    h.send(1, d_sub(1, "a"), d_sub(2, "b"))
    h.send(2, d_sub(1, "c"), d_sub(2, "d"))
    h.send(3, d_sub(1, "e"))
    assert h.core.stats.limits == {"max_declarations_total": 1}
    assert h.core.face_state(3)["subscribers"] == {}
    h.close(1)  # room again
    h.send(3, d_sub(1, "e"))
    assert h.core.face_state(3)["subscribers"] == {1: "e"}


def test_key_ids_over_the_cap_are_refused_alone() -> None:
    h = Harness(config=RoutingConfig(max_keyexpr_ids_per_face=2))
    h.open(1)
    h.send(1, d_keyexpr(1, "a"), d_keyexpr(2, "b"))
    assert h.core.handle(1, d_keyexpr(3, "c"), h.now) == []
    assert h.core.face_state(1)["remote_ids"] == {1: "a", 2: "b"}
    assert h.core.stats.limits == {"max_keyexpr_ids_per_face": 1}


def test_router_ids_stop_at_the_cap() -> None:
    h = Harness(config=RoutingConfig(max_keyexpr_ids_per_face=1))
    h.open(1)
    h.open(2)
    h.send(2, interest(1, CF, S | K))
    h.send(1, d_sub(1, "a"), d_sub(2, "b"))
    assert h.core.face_state(2)["local_ids"] == {1: "a"}


def test_garbage_interest_modes_of_peers_do_not_crash() -> None:
    h = Harness()
    h.open(1, whatami=WhatAmI.PEER)
    assert h.send(1, interest(0, CF, S, aggregate=True)) != []
    assert h.send(1, u_token(0, WireExpr(0, "k", True))) == []


def test_compact_after_a_flood_keeps_every_route() -> None:
    h = Harness()
    for fid in (1, 2, 3):
        h.open(fid)
    h.send(1, *(d_sub(i, f"fl/{i}") for i in range(1, 500)))
    h.send(3, d_sub(1, "keep/**"))
    h.close(1)
    h.core.compact()
    h.core.check_invariants()
    assert [s.face for s in h.send(2, put("keep/a"))] == [3]
    assert h.send(2, put("fl/7")) == []
