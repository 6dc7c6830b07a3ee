"""PUSH routing: destinations, key translation, timestamps, raw forwarding, route cache."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pyzenoh.codec import (
    Push,
    Put,
    Timestamp,
    WhatAmI,
    WireExpr,
    encode_network_message,
)
from pyzenoh.routing import (
    MAX_ROUTE_CACHE,
    PushRouted,
    RoutingConfig,
    RoutingEvent,
    ntp64,
)
from tests.routing.support import (
    CF,
    CLIENT_ZID,
    Harness,
    d_keyexpr,
    d_sub,
    delete,
    interest,
    put,
    u_sub,
    we,
)
from tests.routing.support import K as OPT_K
from tests.routing.support import S as OPT_S


def subscribed(*faces_keys: tuple[int, str], config: RoutingConfig | None = None) -> Harness:
    h = Harness(config=config or RoutingConfig())
    for face in sorted({f for f, _ in faces_keys} | {0}):
        h.open(face)
    for n, (face, key) in enumerate(faces_keys, 1):
        h.send(face, d_sub(n, key))
    return h


def test_push_reaches_each_intersecting_subscriber_once_never_the_source() -> None:
    h = subscribed((1, "a/**"), (1, "a/b"), (2, "a/*"), (3, "x/**"), (0, "a/b"))
    out = h.send(0, put("a/b"))
    assert sorted(s.face for s in out) == [1, 2]
    assert h.send(0, put("nomatch")) == []
    assert sorted(s.face for s in h.send(1, put("a/b"))) == [0, 2]


def test_push_key_written_with_the_destinations_longest_known_prefix() -> None:
    h = subscribed((1, "demo/**"))
    h.send(1, d_keyexpr(1, "demo"), d_keyexpr(2, "demo/a"), d_keyexpr(3, "de"))
    assert h.send(0, put("demo/a/b"))[0].message.wire_expr == WireExpr(2, "/b", False)  # type: ignore[union-attr]
    assert h.send(0, put("demo/x"))[0].message.wire_expr == WireExpr(1, "/x", False)  # type: ignore[union-attr]
    assert h.send(0, put("demo"))[0].message.wire_expr == WireExpr(1, "", False)  # type: ignore[union-attr]
    # The source's own ids are resolved first.
    h.send(0, d_keyexpr(7, "demo/a"))
    out = h.send(0, put(WireExpr(7, "/c", True)))
    assert out[0].message.wire_expr == WireExpr(2, "/c", False)  # type: ignore[union-attr]


def test_push_with_the_routers_own_ids() -> None:
    h = subscribed((1, "big/**"))
    h.send(1, interest(1, CF, OPT_K | OPT_S))  # a key interest on everything
    h.send(0, d_sub(9, "big/x"))  # face 1 hears of it, with an id of the router
    ids = h.core.face_state(1)["local_ids"]
    assert ids == {1: "big/x"}
    out = h.send(0, put("big/x/y"))
    assert out[0].message.wire_expr == WireExpr(1, "/y", True)  # type: ignore[union-attr]


def test_router_stamps_unstamped_puts_only() -> None:
    h = subscribed((1, "k"))
    out = h.send(0, put("k"), delete("k"))
    stamped, deleted = (s.message for s in out)
    assert isinstance(stamped, Push) and isinstance(stamped.body, Put)
    ts = stamped.body.timestamp
    assert ts is not None and ts.id == h.core.zid
    assert abs(ts.to_seconds() - h.now) < 1e-3
    assert deleted.body.timestamp is None  # type: ignore[union-attr]
    # A user timestamp is kept as is.
    own = Timestamp(ntp64(h.now - 1), CLIENT_ZID)
    out = h.send(0, put("k", timestamp=own))
    assert out[0].message.body.timestamp == own  # type: ignore[union-attr]


def test_router_timestamps_strictly_increase() -> None:
    h = subscribed((1, "k"))
    times = []
    for _ in range(50):
        (send,) = h.send(0, put("k"))
        times.append(send.message.body.timestamp.time)  # type: ignore[union-attr]
    assert times == sorted(set(times))
    h.now -= 10  # the wall clock going back does not make timestamps go back
    (send,) = h.send(0, put("k"))
    assert send.message.body.timestamp.time > times[-1]  # type: ignore[union-attr]


def test_timestamps_too_far_ahead_are_replaced_or_dropped() -> None:
    ahead = Timestamp(ntp64(1_795_264_773.0 + 60), CLIENT_ZID)
    h = subscribed((1, "k"))
    (send,) = h.send(0, put("k", timestamp=ahead))
    assert send.message.body.timestamp.id == h.core.zid  # type: ignore[union-attr]
    h = subscribed((1, "k"), config=RoutingConfig(drop_future_timestamp=True))
    assert h.send(0, put("k", timestamp=ahead)) == []
    assert h.core.stats.dropped == {"timestamp too far in the future": 1}


def test_no_timestamp_when_timestamping_is_off() -> None:
    h = subscribed((1, "k"), config=RoutingConfig(timestamping=False))
    (send,) = h.send(0, put("k"), raw=True)
    assert send.message.body.timestamp is None  # type: ignore[union-attr]
    assert send.raw == encode_network_message(put("k"))


def test_raw_bytes_are_forwarded_when_nothing_changes() -> None:
    h = subscribed((1, "k/**"), (2, "k/**"))
    h.send(2, d_keyexpr(1, "k"))
    msg = delete("k/a")
    out = {s.face: s for s in h.send(0, msg, raw=True)}
    assert out[1].raw == encode_network_message(msg) and out[1].message is msg
    assert out[2].raw is None and out[2].message.wire_expr == WireExpr(1, "/a", False)  # type: ignore[union-attr]
    # A stamped PUT is a new message.
    (send, _) = h.send(0, put("k/a"), raw=True)
    assert send.raw is None


def test_qos_and_reliability_are_carried() -> None:
    h = subscribed((1, "k"))
    msg = replace(delete("k"), qos=0x1A)  # InteractiveHigh, block, express
    (send,) = h.core.handle(0, msg, h.now, None, reliable=False)
    assert (send.priority, send.express, send.block, send.reliable) == (2, True, True, False)
    assert send.message.qos == 0x1A  # type: ignore[union-attr]


def test_network_timestamp_extension_is_dropped_when_fanning_out() -> None:
    ts = Timestamp(ntp64(1_795_264_773.0), CLIENT_ZID)
    h = subscribed((1, "k"))
    (one,) = h.send(0, replace(delete("k"), timestamp=ts))
    assert one.message.timestamp == ts  # type: ignore[union-attr]
    h = subscribed((1, "k"), (2, "k"))
    out = h.send(0, replace(delete("k"), timestamp=ts))
    assert [s.message.timestamp for s in out] == [None, None]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "key,reason",
    [("a//b", "invalid key expression"), ("", "invalid key expression"), ("a/**/**", "invalid key expression")],
)
def test_bad_push_keys_are_dropped(key: str, reason: str) -> None:
    h = subscribed((1, "**"))
    assert h.send(0, put(key)) == []
    assert h.core.stats.dropped == {reason: 1}


@pytest.mark.parametrize(
    "key,faces",
    [("a/*", [1, 2, 3, 4]), ("a/**", [1, 2, 3, 4]), ("a/b$*", [1, 2, 3, 4]), ("*/c", [2, 3, 4]), ("z/*", [4])],
)
def test_a_push_on_a_wildcard_key_goes_to_every_intersecting_subscriber(key: str, faces: list[int]) -> None:
    """As zenohd (measured: a put on demo/* and a delete on demo/** reach a subscriber on
    demo/a, with the wildcard key): storages apply such updates to every key they cover."""
    h = subscribed((1, "a/b"), (2, "a/*"), (3, "a/**"), (4, "**"))
    out = h.send(0, put(key), delete(key))
    assert sorted(s.face for s in out) == sorted(faces * 2)
    assert h.core.stats.dropped == {}


def test_unknown_key_ids_are_dropped() -> None:
    h = subscribed((1, "**"))
    assert h.send(0, put(WireExpr(5, "/x", True)), put(WireExpr(5, "/x", False))) == []
    assert h.core.stats.dropped == {"unknown key id": 2}


def test_observer_sees_every_routed_push() -> None:
    events: list[RoutingEvent] = []
    h = subscribed((1, "a/*"), (2, "a/b"))
    h.core.observer = events.append
    h.send(0, put("a/b"), put("z"))
    h.send(1, put("a/b"))
    routed = [e for e in events if isinstance(e, PushRouted)]
    assert [(e.source, e.key, e.destinations, e.stamped) for e in routed] == [
        (0, "a/b", frozenset({1, 2}), True),
        (0, "z", frozenset(), False),
        (1, "a/b", frozenset({2}), True),
    ]


def test_route_cache_matches_once_per_key_until_a_declaration_changes() -> None:
    h = subscribed((1, "a/**"))
    stats = h.core.stats
    h.send(0, put("a/b"))
    assert stats.sub_index_lookups == 1
    for _ in range(20):
        assert [s.face for s in h.send(0, put("a/b"))] == [1]
    assert stats.sub_index_lookups == 1
    assert stats.data_route_hits == 20
    # The same key written another way is another cache entry.
    h.send(0, d_keyexpr(3, "a"))
    h.send(0, put(WireExpr(3, "/b", True)))
    assert stats.sub_index_lookups == 2
    # A declaration change: matched again, and the new subscriber is served.
    h.open(2)
    h.send(2, d_sub(1, "a/b"))
    assert sorted(s.face for s in h.send(0, put("a/b"))) == [1, 2]
    assert stats.sub_index_lookups == 3
    h.send(0, put("a/b"))
    assert stats.sub_index_lookups == 3
    h.send(1, u_sub(1))
    assert [s.face for s in h.send(0, put("a/b"))] == [2]
    assert stats.sub_index_lookups == 4
    # A new key id of the destination changes how the key is written.
    h.send(2, d_keyexpr(1, "a"))
    (send,) = h.send(0, put("a/b"))
    assert send.message.wire_expr == WireExpr(1, "/b", False)  # type: ignore[union-attr]
    assert stats.sub_index_lookups == 5


def test_route_cache_is_bounded() -> None:
    cap = 64
    h = subscribed((1, "**"), config=RoutingConfig(max_route_cache=cap))
    for n in range(cap + 10):
        h.send(0, delete(f"k/{n}"))
    assert len(h.core._tables.data_routes) <= cap
    assert h.core.stats.route_cache_flushes >= 1
    assert MAX_ROUTE_CACHE >= 10_000 * 4  # 10,000 devices with a few keys each fit the default
    # A route is looked up once, then cached (wildcard keys too); bad keys are cached as
    # drops: a flood of either does no repeated work.
    before = h.core.stats.sub_index_lookups
    for _ in range(5):
        h.send(0, put("any/*"), put("bad//key"))
    assert h.core.stats.sub_index_lookups == before + 1


def test_peers_never_exchange_data_through_the_router() -> None:
    # Like zenohd: two peers meet directly (gossip); a client still reaches a peer.
    h = Harness()
    h.open(1, whatami=WhatAmI.PEER)
    h.open(2, whatami=WhatAmI.PEER)
    h.open(3)
    h.send(2, d_sub(1, "k"))
    assert [s.face for s in h.send(1, put("k"))] == []
    assert [s.face for s in h.send(3, put("k"))] == [2]


def test_verbatim_chunks_are_only_matched_verbatim() -> None:
    h = subscribed((1, "**"), (2, "@admin/**"))
    assert [s.face for s in h.send(0, put("@admin/x"))] == [2]
    assert [s.face for s in h.send(0, put("a/x"))] == [1]
    assert we("x") == WireExpr(0, "x", True)


def test_key_of_names_the_full_key_of_messages_in_both_directions() -> None:
    from pyzenoh.codec import (
        Declare,
        DeclareKeyExpr,
        Response,
        ResponseFinal,
        UndeclareToken,
    )

    h = subscribed((1, "k/**"))
    h.send(1, d_keyexpr(2, "k"))
    core = h.core
    assert core.key_of(1, put(WireExpr(2, "/a", True)), incoming=True) == "k/a"
    assert core.key_of(1, put(WireExpr(2, "/a", False)), incoming=False) == "k/a"
    assert core.key_of(1, put(WireExpr(2, "/a", False)), incoming=True) is None
    assert core.key_of(1, d_sub(5, "x/y"), incoming=True) == "x/y"
    # A D_KEYEXPR scope names an id of its receiver.
    assert core.key_of(1, Declare(DeclareKeyExpr(3, WireExpr(2, "/b", True))), incoming=False) == "k/b"
    assert core.key_of(1, Declare(UndeclareToken(0, we("t"))), incoming=False) == "t"
    assert core.key_of(1, Declare(UndeclareToken(4)), incoming=True) is None
    assert core.key_of(1, Response(1, WireExpr(0, "", True), Put()), incoming=False) is None  # type: ignore[arg-type]
    assert core.key_of(1, ResponseFinal(1), incoming=True) is None
    assert core.key_of(9, put("k/a"), incoming=True) is None


def test_one_message_object_per_key_representation() -> None:
    h = subscribed((1, "k/**"), (2, "k/**"), (3, "k/**"))
    h.send(3, d_keyexpr(1, "k"))
    out = {s.face: s.message for s in h.send(0, put("k/a"))}
    assert out[1] is out[2] and out[3] is not out[1]
    assert out[3].wire_expr == WireExpr(1, "/a", False)  # type: ignore[union-attr]
