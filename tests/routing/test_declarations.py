"""Declarations and interests: who gets told what, with which ids, and when."""

from __future__ import annotations

from pyzenoh.codec import (
    Declare,
    DeclareKeyExpr,
    DeclareQueryable,
    DeclareSubscriber,
    DeclareToken,
    UndeclareSubscriber,
    UndeclareToken,
    WhatAmI,
    WireExpr,
)
from tests.routing.support import (
    CF,
    CURRENT,
    FINAL,
    FUTURE,
    Harness,
    K,
    Q,
    S,
    T,
    d_final,
    d_keyexpr,
    d_qabl,
    d_sub,
    d_token,
    interest,
    msgs,
    u_qabl,
    u_sub,
    u_token,
    we,
)


def decl(body: object, interest_id: int | None = None) -> Declare:
    return Declare(body, interest_id, 0x08)  # type: ignore[arg-type]


def two_clients() -> Harness:
    h = Harness()
    h.open(1)
    h.open(2)
    return h


# --- subscribers -----------------------------------------------------------------------------


def test_declarations_reach_clients_only_through_interests() -> None:
    h = two_clients()
    assert h.send(1, d_sub(1, "demo/**"), d_qabl(2, "demo/q"), d_token(3, "demo/t")) == []
    assert 2 not in h.sent


def test_publisher_interest_current_then_future_then_final() -> None:
    h = two_clients()
    h.send(1, d_sub(1, "pub/**"), d_sub(2, "other/**"))
    out = h.send(2, interest(7, CF, K | S, "pub/x"))
    assert msgs(out) == [decl(DeclareSubscriber(1, we("pub/**")), 7), d_final(7)]
    # Later changes, without interest id.
    out = h.send(1, d_sub(3, "pub/*"))
    assert msgs(out) == [decl(DeclareSubscriber(2, we("pub/*")))]
    assert msgs(h.send(1, d_sub(4, "nothing/here"))) == []
    assert msgs(h.send(1, u_sub(1))) == [decl(UndeclareSubscriber(1))]
    # After the Final: nothing new, but what was declared is still undeclared.
    assert h.send(2, interest(7, FINAL)) == []
    assert h.send(1, d_sub(5, "pub/x")) == []
    assert msgs(h.send(1, u_sub(3))) == [decl(UndeclareSubscriber(2))]
    assert h.send(1, u_sub(5)) == []


def test_own_subscribers_are_never_declared_back() -> None:
    h = two_clients()
    h.send(2, d_sub(1, "pub/**"))
    assert msgs(h.send(2, interest(1, CF, K | S, "pub/x"))) == [d_final(1)]
    assert h.send(2, d_sub(2, "pub/*")) == []


def test_one_declaration_per_key_whatever_the_number_of_holders() -> None:
    h = Harness()
    for face in (1, 2, 3):
        h.open(face)
    h.send(3, interest(1, CF, S))  # unrestricted
    assert msgs(h.send(1, d_sub(1, "a/b"))) == [decl(DeclareSubscriber(1, we("a/b")))]
    assert h.send(2, d_sub(9, "a/b")) == []
    assert h.send(1, d_sub(2, "a/b")) == []  # same face, same key: nothing new
    assert h.send(1, u_sub(1)) == []
    assert h.send(1, u_sub(2)) == []  # face 2 still holds a/b
    assert msgs(h.send(2, u_sub(9))) == [decl(UndeclareSubscriber(1))]


def test_last_remaining_holder_is_told_the_others_left() -> None:
    h = two_clients()
    h.send(2, d_sub(1, "k"), interest(1, CF, S, "k"))
    assert msgs(h.send(1, d_sub(1, "k")), 2) == [decl(DeclareSubscriber(1, we("k")))]
    # Face 1 goes: face 2 still subscribes to k, but nobody *else* does.
    assert msgs(h.send(1, u_sub(1)), 2) == [decl(UndeclareSubscriber(1))]


def test_future_only_interest_has_no_current_part() -> None:
    h = two_clients()
    h.send(1, d_sub(1, "f/a"))
    assert msgs(h.send(2, interest(3, FUTURE, S, "f/**"))) == [d_final(3)]
    assert msgs(h.send(1, d_sub(2, "f/b"))) == [decl(DeclareSubscriber(1, we("f/b")))]
    # f/a was never declared to face 2, so its removal says nothing.
    assert h.send(1, u_sub(1)) == []


def test_current_interests_that_are_not_tokens_only_are_ignored() -> None:
    h = two_clients()
    h.send(1, d_sub(1, "x"), d_token(2, "x"))
    for options in (S, Q, K | S, S | T, K):
        assert h.send(2, interest(4, CURRENT, options, "x")) == []
    assert h.core.stats.dropped["current interest not for tokens only"] == 5


def test_unrestricted_interest_sees_everything() -> None:
    h = two_clients()
    h.send(1, d_sub(1, "a"), d_sub(2, "b/**"), d_qabl(3, "c"), d_token(4, "d"))
    out = msgs(h.send(2, interest(1, CF, S | Q | T)))
    assert out == [
        decl(DeclareSubscriber(1, we("a")), 1),
        decl(DeclareSubscriber(2, we("b/**")), 1),
        decl(DeclareQueryable(3, we("c")), 1),
        decl(DeclareToken(4, we("d")), 1),
        d_final(1),
    ]


def test_client_and_peer_interest_finals_differ() -> None:
    """A client is told when a declaration it got goes, even after its interest ended;
    a peer's Final makes the router forget those declarations."""
    h = Harness()
    h.open(1)
    h.open(2, whatami=WhatAmI.CLIENT)
    h.open(3, whatami=WhatAmI.PEER)
    h.send(1, d_sub(1, "s"))
    h.send(2, interest(1, CF, S, "s"))
    h.send(3, interest(1, CF, S, "s"))
    h.send(2, interest(1, FINAL))
    h.send(3, interest(1, FINAL))
    out = h.send(1, u_sub(1))
    assert [s.face for s in out] == [2]


# --- key expressions in declarations ----------------------------------------------------------


def test_declarations_use_the_faces_own_ids_else_full_strings() -> None:
    h = two_clients()
    h.send(2, d_keyexpr(1, "demo"))
    h.send(1, d_sub(1, "demo/**"), d_sub(2, "zzz/**"))
    out = msgs(h.send(2, interest(1, CF, S)))
    assert out == [
        decl(DeclareSubscriber(1, WireExpr(1, "/**", False)), 1),
        decl(DeclareSubscriber(2, we("zzz/**")), 1),
        d_final(1),
    ]


def test_key_interest_makes_the_router_declare_its_own_ids() -> None:
    h = two_clients()
    h.send(2, d_keyexpr(1, "demo"), d_keyexpr(2, "x"), d_keyexpr(3, "y"))
    h.send(1, d_token(1, "demo/tok"))
    out = msgs(h.send(2, interest(4, CF, K | T, WireExpr(1, "/**", True))))
    # Id 4 is the first one free in both directions.
    assert out == [
        decl(DeclareKeyExpr(4, we("demo/tok"))),
        decl(DeclareToken(1, WireExpr(4, "", True)), 4),
        d_final(4),
    ]
    # The id is reused for later declarations and for data.
    h.send(1, u_token(1))
    out = msgs(h.send(1, d_token(2, "demo/tok")))
    assert out == [decl(DeclareToken(2, WireExpr(4, "", True)))]
    assert h.core.face_state(2)["local_ids"] == {4: "demo/tok"}


def test_no_router_id_without_a_key_interest_or_for_unknown_prefixes() -> None:
    h = two_clients()
    h.send(1, d_token(1, "demo/tok"), d_sub(2, "big/**"))
    # Current interests are not key interests: full strings.
    out = msgs(h.send(2, interest(1, CURRENT, K | T, "demo/**")))
    assert out == [decl(DeclareToken(0, we("demo/tok")), 1), d_final(1)]
    # The non-wild prefix "big" of big/** is no known key: no D_KEYEXPR (like zenoh).
    out = msgs(h.send(2, interest(2, CF, K | S, "big/**")))
    assert out == [decl(DeclareSubscriber(1, we("big/**")), 2), d_final(2)]
    # An unrestricted key interest covers every prefix.
    out = msgs(h.send(2, interest(3, CF, K | S)))
    assert out == [
        decl(DeclareKeyExpr(1, we("big"))),
        decl(DeclareSubscriber(1, WireExpr(1, "/**", True)), 3),
        d_final(3),
    ]


# --- queryables ------------------------------------------------------------------------------


def test_querier_interest_with_infos_and_updates() -> None:
    h = Harness()
    for face in (1, 2, 3):
        h.open(face)
    h.send(1, d_qabl(1, "q/**", distance=3))
    out = msgs(h.send(3, interest(5, CF, K | Q, "q/a")))
    assert out == [decl(DeclareQueryable(1, we("q/**"), False, 3), 5), d_final(5)]
    # A complete queryable on the same key elsewhere: same id, merged info.
    out = msgs(h.send(2, d_qabl(1, "q/**", complete=True, distance=7)))
    assert out == [decl(DeclareQueryable(1, we("q/**"), True, 7))]
    # It goes: back to the remaining info.
    out = msgs(h.send(2, u_qabl(1)))
    assert out == [decl(DeclareQueryable(1, we("q/**"), False, 3))]
    out = msgs(h.send(1, u_qabl(1)))
    assert [type(m.body).__name__ for m in out] == ["UndeclareQueryable"]  # type: ignore[union-attr]
    assert h.send(1, d_qabl(2, "other")) == []


def test_redeclaring_a_queryable_changes_its_info() -> None:
    h = two_clients()
    h.send(2, interest(1, CF, Q))
    h.send(1, d_qabl(1, "q"))
    out = msgs(h.send(1, d_qabl(1, "q", complete=True)))
    assert out == [decl(DeclareQueryable(1, we("q"), True, 0))]
    assert h.send(1, d_qabl(1, "q", complete=True)) == []


# --- tokens / liveliness -----------------------------------------------------------------------


def test_liveliness_subscriber_with_history_echoes_the_clients_own_token() -> None:
    h = two_clients()
    h.send(1, d_token(1, "l/a"))
    h.send(2, d_token(1, "l/b"))
    out = msgs(h.send(2, interest(3, CF, T, "l/**")))
    assert out == [decl(DeclareToken(1, we("l/a")), 3), decl(DeclareToken(2, we("l/b")), 3), d_final(3)]
    assert msgs(h.send(1, d_token(2, "l/c")), 2) == [decl(DeclareToken(3, we("l/c")))]
    assert msgs(h.send(2, d_token(2, "l/d")), 2) == [decl(DeclareToken(4, we("l/d")))]
    assert msgs(h.send(2, u_token(1)), 2) == [decl(UndeclareToken(2))]


def test_peers_do_not_get_their_own_tokens() -> None:
    h = Harness()
    h.open(1)
    h.open(2, whatami=WhatAmI.PEER)
    h.send(1, d_token(1, "l/a"))
    h.send(2, d_token(1, "l/b"))
    assert msgs(h.send(2, interest(3, CF, T, "l/**"))) == [decl(DeclareToken(1, we("l/a")), 3), d_final(3)]
    assert h.send(2, d_token(2, "l/c")) == []
    assert msgs(h.send(2, interest(4, CURRENT, T, "l/**"))) == [decl(DeclareToken(0, we("l/a")), 4), d_final(4)]
    # A token a peer shares with another face: the peer sees it through the other face.
    h.send(1, d_token(2, "l/c"))
    assert msgs(h.send(2, u_token(2))) == []
    assert msgs(h.send(1, u_token(2)), 2) == [decl(UndeclareToken(2))]


def test_liveliness_subscriber_without_history() -> None:
    h = two_clients()
    h.send(1, d_token(1, "l/old"))
    assert msgs(h.send(2, interest(3, FUTURE, T, "l/**"))) == [d_final(3)]
    assert msgs(h.send(1, d_token(2, "l/new"))) == [decl(DeclareToken(1, we("l/new")))]
    assert msgs(h.send(1, u_token(2))) == [decl(UndeclareToken(1))]
    # A token the face never heard of: undeclared with id 0 and its key in the extension.
    assert msgs(h.send(1, u_token(1))) == [decl(UndeclareToken(0, we("l/old")))]


def test_liveliness_get_answers_from_the_token_table() -> None:
    h = two_clients()
    h.send(1, d_token(1, "l/a"), d_token(2, "m/a"))
    out = msgs(h.send(2, interest(9, CURRENT, K | T, "l/**")))
    assert out == [decl(DeclareToken(0, we("l/a")), 9), d_final(9)]
    assert msgs(h.send(2, interest(10, CURRENT, K | T, "none/**"))) == [d_final(10)]
    # A Current interest registers nothing.
    assert h.send(1, d_token(3, "l/b")) == []


def test_tokens_declared_through_a_future_interest_are_undeclared_after_its_final() -> None:
    h = two_clients()
    h.send(2, d_token(1, "l/own"))
    h.send(2, interest(1, CF, T, "l/**"))
    h.send(1, d_token(1, "l/x"))
    h.send(2, interest(1, FINAL))
    assert h.send(1, d_token(2, "l/y")) == []
    assert msgs(h.send(1, u_token(1))) == [decl(UndeclareToken(2))]
    assert msgs(h.send(2, u_token(1))) == [decl(UndeclareToken(1))]


def test_current_future_token_ids_are_reused_for_known_tokens() -> None:
    h = two_clients()
    h.send(1, d_token(1, "l/a"))
    h.send(2, interest(1, CF, T, "l/**"))
    out = msgs(h.send(2, interest(2, CF, T, "l/a")))
    assert out == [decl(DeclareToken(1, we("l/a")), 2), d_final(2)]


# --- face removal ------------------------------------------------------------------------------


def test_removing_a_face_undeclares_everything_it_held() -> None:
    h = two_clients()
    h.send(2, interest(1, CF, S | Q | T))
    h.send(1, d_sub(1, "s"), d_qabl(2, "q"), d_token(3, "t"), d_keyexpr(1, "s"))
    out = msgs(h.close(1))
    assert [type(m.body).__name__ for m in out] == [  # type: ignore[union-attr]
        "UndeclareSubscriber",
        "UndeclareQueryable",
        "UndeclareToken",
    ]
    assert h.core.face_state(2)["declared_subscribers"] == {}
    assert h.core.face_state(2)["declared_tokens"] == {}
    h.close(2)
    assert h.core.is_empty()


# --- aggregation -------------------------------------------------------------------------------


def test_aggregate_interest_declares_the_interest_key_once() -> None:
    h = two_clients()
    h.send(1, d_sub(1, "agg/a"))
    out = msgs(h.send(2, interest(4, CF, K | S, "agg/**", aggregate=True)))
    # Like zenoh, the members are numbered first (1), then the aggregate (2).
    assert out == [decl(DeclareSubscriber(2, we("agg/**")), 4), d_final(4)]
    assert h.send(1, d_sub(2, "agg/b")) == []  # already covered by the aggregate
    assert h.send(1, u_sub(1)) == []
    assert msgs(h.send(1, u_sub(2))) == [decl(UndeclareSubscriber(2))]
    assert msgs(h.send(1, d_sub(3, "agg/c"))) == [decl(DeclareSubscriber(2, we("agg/**")))]


def test_aggregate_interest_with_nothing_current() -> None:
    h = two_clients()
    assert msgs(h.send(2, interest(4, CF, S, "agg/**", aggregate=True))) == [d_final(4)]
    assert msgs(h.send(1, d_sub(3, "agg/c"))) == [decl(DeclareSubscriber(1, we("agg/**")))]


def test_aggregate_is_ignored_for_peers_and_tokens() -> None:
    h = Harness()
    h.open(1)
    h.open(2, whatami=WhatAmI.PEER)
    h.send(1, d_sub(1, "agg/a"), d_sub(2, "agg/b"))
    out = msgs(h.send(2, interest(4, CF, S, "agg/**", aggregate=True)))
    assert out == [decl(DeclareSubscriber(1, we("agg/a")), 4), decl(DeclareSubscriber(2, we("agg/b")), 4), d_final(4)]
    h.open(3)
    h.send(1, d_token(3, "agg/t"))
    out = msgs(h.send(3, interest(1, CF, T, "agg/**", aggregate=True)))
    assert out == [decl(DeclareToken(1, we("agg/t")), 1), d_final(1)]


def test_aggregate_queryable_interest_completeness() -> None:
    h = two_clients()
    h.send(1, d_qabl(1, "agg/a", complete=True), d_qabl(2, "agg/**", complete=True))
    out = msgs(h.send(2, interest(1, CF, Q, "agg/*", aggregate=True)))
    # agg/** includes agg/*: the aggregate is complete.
    assert out == [decl(DeclareQueryable(3, we("agg/*"), True, 0), 1), d_final(1)]
    out = msgs(h.send(1, u_qabl(2)))
    # Only agg/a remains, which does not include agg/*: no longer complete.
    assert out == [decl(DeclareQueryable(3, we("agg/*"), False, 0))]


# --- what real routers leave out (checked on the wire against 1.10.2) ---------------------


def test_last_queryable_holder_keeps_the_declaration_of_the_others() -> None:
    h = two_clients()
    h.send(2, interest(1, CF, Q, "q"))
    h.send(1, d_qabl(1, "q", complete=True))
    h.send(2, d_qabl(1, "q"))
    # Face 1 goes: face 2 alone holds q, and is not told (zenoh leaves it declared).
    assert h.close(1) == []
    # Nor when it undeclares its own: the undeclaring face is never told.
    assert h.send(2, u_qabl(1)) == []
    assert h.core.face_state(2)["declared_queryables"] == {"q": 1}


def test_queryable_info_changes_invisible_in_the_total_are_not_announced() -> None:
    h = Harness()
    for face in (1, 2, 3):
        h.open(face)
    h.send(3, interest(1, CF, Q, "q"))
    h.send(1, d_qabl(1, "q", complete=True))
    h.send(2, d_qabl(1, "q"))
    # Face 2 leaves: all holders together are still complete, so nothing is said, even
    # to face 1, which only ever saw face 2's (incomplete) queryable.
    h.open(4)
    h.send(4, interest(1, CF, Q, "q"))
    assert h.send(2, u_qabl(1)) == []


def test_peer_last_holder_is_told_across_regions() -> None:
    h = Harness()
    h.open(1)
    h.open(2, whatami=WhatAmI.PEER)
    h.send(2, interest(1, CF, Q, "q"))
    h.send(1, d_qabl(1, "q", complete=True))
    h.send(2, d_qabl(1, "q"))
    # The client leaves by undeclaring: the peer (other region) is told.
    out = msgs(h.send(1, u_qabl(1)))
    assert [type(m.body).__name__ for m in out] == ["UndeclareQueryable"]  # type: ignore[union-attr]


def test_client_holding_a_token_hears_it_went_when_the_other_holder_closes() -> None:
    h = two_clients()
    h.send(1, d_token(1, "t"))
    h.send(2, d_token(1, "t"), interest(1, CF, T, "t"))
    # An undeclaration in the same region says nothing: face 2 still holds t.
    assert h.send(1, u_token(1)) == []
    h.send(1, d_token(1, "t"))
    # A close does: zenoh unpropagates to the last holder even though it holds t itself.
    assert msgs(h.close(1)) == [decl(UndeclareToken(1))]


def test_client_holding_a_token_hears_it_went_when_a_peer_holder_undeclares() -> None:
    h = two_clients()
    h.open(3, whatami=WhatAmI.PEER)
    h.send(2, d_token(1, "t"), interest(1, CF, T, "t"))
    h.send(3, d_token(1, "t"))
    assert msgs(h.send(3, u_token(1))) == [decl(UndeclareToken(1))]


def test_a_token_said_gone_is_declared_again_by_its_next_holder() -> None:
    h = Harness()
    for face in (1, 2, 3):
        h.open(face)
    h.send(2, d_token(1, "t"), interest(1, CF, T, "t"))
    h.send(1, d_token(1, "t"))
    assert msgs(h.close(1)) == [decl(UndeclareToken(1))]
    assert msgs(h.send(3, d_token(1, "t")), 2) == [decl(DeclareToken(2, we("t")))]
