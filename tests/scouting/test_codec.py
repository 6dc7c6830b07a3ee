"""SCOUT/HELLO codec: golden bytes seen from eclipse-zenoh 1.10.2, round trips, fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import Extension, WhatAmI, ZenohId
from pyzenoh.codec.scouting import (
    MAX_DATAGRAM,
    Hello,
    Scout,
    ScoutingDecodeError,
    WhatAmIMatcher,
    decode_scouting_message,
    encode_scouting_message,
    is_valid_locator,
)
from pyzenoh.errors import DecodeError, UsageError
from tests.hyp import FUZZ, ROUNDTRIP

R, P, C = WhatAmIMatcher.ROUTER, WhatAmIMatcher.PEER, WhatAmIMatcher.CLIENT

# zenoh-mesh.md 3 and the measurements behind it (real 1.10.2 routers and scouters)
GOLDEN: list[tuple[str, bytes, Scout | Hello]] = [
    ("scout router|peer (zenoh.scout)", bytes.fromhex("010903"), Scout(R | P)),
    ("scout router (zenoh.scout what=router)", bytes.fromhex("010901"), Scout(R)),
    ("scout all (client open, default scout)", bytes.fromhex("010907"), Scout(R | P | C)),
    (
        "hello router one locator",
        bytes.fromhex("220910cdab0113") + b"tcp/127.0.0.1:17001",
        Hello(WhatAmI.ROUTER, ZenohId(0xABCD), ("tcp/127.0.0.1:17001",)),
    ),
    (
        "hello router two locators",
        bytes.fromhex("220910cdab0213") + b"tcp/127.0.0.1:17002" + b"\x13tcp/192.0.2.2:17002",
        Hello(WhatAmI.ROUTER, ZenohId(0xABCD), ("tcp/127.0.0.1:17002", "tcp/192.0.2.2:17002")),
    ),
]


@pytest.mark.parametrize(("name", "wire", "msg"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden(name: str, wire: bytes, msg: Scout | Hello) -> None:
    assert decode_scouting_message(wire) == msg
    assert encode_scouting_message(msg) == wire


def test_hello_without_locators_and_with_scout_zid() -> None:
    hello = Hello(WhatAmI.PEER, ZenohId(0x0102))
    wire = encode_scouting_message(hello)
    assert wire == bytes.fromhex("0209110201")  # no L flag, peer code 1, zid length 2
    scout = Scout(R, ZenohId(0xA1A2A3))
    wire = encode_scouting_message(scout)
    assert wire == bytes.fromhex("010929a3a2a1")  # I flag 0x08, zid length 3 in the nibble
    assert decode_scouting_message(wire) == scout


def test_extensions_are_skipped_like_zenoh_even_mandatory() -> None:
    # 0x81 = Z + SCOUT; extension 0x11: unit, mandatory, last
    msg = decode_scouting_message(bytes.fromhex("81090311"))
    assert msg == Scout(R | P, extensions=(Extension(0x11),))
    assert encode_scouting_message(msg) == bytes.fromhex("81090311")


@pytest.mark.parametrize(
    ("wire", "why"),
    [
        (b"", "empty"),
        (bytes.fromhex("0309"), "not a scouting id"),
        (bytes.fromhex("0109"), "truncated flags"),
        (bytes.fromhex("010908"), "I flag without zid"),
        (bytes.fromhex("01090800"), "zero zid"),
        (bytes.fromhex("020913cdab"), "whatami code 3"),
        (bytes.fromhex("220910cdab01"), "locator count missing"),
        (bytes.fromhex("220910cdab0105") + b"tcp/", "truncated locator"),
        (bytes.fromhex("220910cdab0103") + b"abc", "locator without protocol"),
        (bytes.fromhex("220910cdab0105") + b"a/b#c", "config part"),
        (bytes.fromhex("220910cdab01") + b"\xff" * 8 + b"\x7f", "huge locator count"),
        (bytes.fromhex("220910cdab01") + bytes([0x80, 0x02]) + b"x" * 20, "count over the bound"),
        (bytes.fromhex("220910cdab0102ffff"), "not UTF-8"),
        (bytes.fromhex("81090300"[:-2] + "61"), "reserved extension encoding"),
    ],
)
def test_malformed(wire: bytes, why: str) -> None:
    with pytest.raises(ScoutingDecodeError):
        decode_scouting_message(wire)


def test_the_error_is_a_decode_error_and_oversize_datagrams_are_refused() -> None:
    assert issubclass(ScoutingDecodeError, DecodeError)
    with pytest.raises(ScoutingDecodeError):
        decode_scouting_message(b"\x01\x09\x03" + bytes(MAX_DATAGRAM))


def test_encode_refuses_what_cannot_be_sent() -> None:
    with pytest.raises(UsageError):
        encode_scouting_message(Hello(WhatAmI.ROUTER, ZenohId(1), ("tcp/" + "x" * 300,)))
    with pytest.raises(UsageError):
        encode_scouting_message(Scout(R, version=256))


def test_matcher_parsing() -> None:
    assert WhatAmIMatcher.parse("router|peer") == R | P
    assert WhatAmIMatcher.parse(["client", "router"]) == R | C
    assert WhatAmIMatcher.parse(WhatAmI.PEER) == P
    assert WhatAmIMatcher.parse("") == WhatAmIMatcher.empty()
    assert str(R | P | C) == "router|peer|client"
    assert (R | P).matches(WhatAmI.ROUTER) and not (R | P).matches(WhatAmI.CLIENT)
    with pytest.raises(UsageError):
        WhatAmIMatcher.parse("routr")


def test_locator_validation() -> None:
    good = ["tcp/127.0.0.1:7447", "tcp/[::1]:7447", "udp/224.0.0.1:1?iface=lo", "ws/x"]
    bad = ["tcp", "/x", "tcp/", "tcp/a#b", "tcp/a?", "t?cp/a"]
    assert all(is_valid_locator(g) for g in good)
    assert not any(is_valid_locator(b) for b in bad)


# --- properties ----------------------------------------------------------------------------

zids = st.integers(1, (1 << 128) - 1).map(ZenohId)
locators = st.builds(
    lambda proto, host, port: f"{proto}/{host}:{port}",
    st.sampled_from(["tcp", "udp", "tls", "quic"]),
    st.one_of(st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(lambda a: f"[{a}]")),
    st.integers(0, 65535),
)
exts = st.lists(
    st.one_of(
        st.integers(0, 0x1F).map(Extension),
        st.tuples(st.integers(0, 0x1F), st.integers(0, (1 << 64) - 1)).map(lambda t: Extension(0x20 | t[0], t[1])),
        st.tuples(st.integers(0, 0x1F), st.binary(max_size=20)).map(lambda t: Extension(0x40 | t[0], t[1])),
    ),
    max_size=3,
).map(tuple)
scouts = st.builds(Scout, st.integers(0, 7).map(WhatAmIMatcher), st.none() | zids, st.integers(0, 255), exts)
hellos = st.builds(
    Hello, st.sampled_from(list(WhatAmI)), zids, st.lists(locators, max_size=6).map(tuple), st.integers(0, 255), exts
)


@ROUNDTRIP
@given(st.one_of(scouts, hellos))
def test_roundtrip(msg: Scout | Hello) -> None:
    wire = encode_scouting_message(msg)
    assert decode_scouting_message(wire) == msg
    assert encode_scouting_message(decode_scouting_message(wire)) == wire


@FUZZ
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_the_typed_error(data: bytes) -> None:
    try:
        msg = decode_scouting_message(data)
    except ScoutingDecodeError:
        return
    assert isinstance(msg, Scout | Hello)


@pytest.mark.slow
@FUZZ
@given(
    st.sampled_from([g[1] for g in GOLDEN]),
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1 << 16), st.integers(0, 255)), max_size=6),
)
def test_mutated_golden_bytes_raise_only_the_typed_error(wire: bytes, ops: list[tuple[int, int, int]]) -> None:
    buf = bytearray(wire)
    for kind, pos, value in ops:
        pos %= max(len(buf), 1)
        if kind == 0 and buf:
            buf[pos] = value
        elif kind == 1:
            buf.insert(pos, value)
        elif kind == 2 and buf:
            del buf[pos]
        else:
            del buf[pos:]
    try:
        msg = decode_scouting_message(bytes(buf))
    except ScoutingDecodeError:
        return
    # whatever decodes re-encodes to something that decodes to the same message
    assert decode_scouting_message(encode_scouting_message(msg)) == msg
