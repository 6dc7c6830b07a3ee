"""The LINKSTATE OAM body codec: golden vectors from real 1.10.2 routers, round trips, fuzz."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec.batch import BatchReader, decode_batch
from pyzenoh.codec.network import OAM_LINKSTATE, NetworkOam
from pyzenoh.codec.primitives import U16_MAX, U64_MAX, WhatAmI, ZenohId
from pyzenoh.codec.transport import Frame
from pyzenoh.errors import DecodeError, PeerError, UsageError
from pyzenoh.routing.linkstate import (
    MAX_LINKS,
    MAX_LINKSTATES,
    MAX_LOCATOR_LEN,
    MAX_LOCATORS,
    LinkState,
    LinkStateDecodeError,
    decode_linkstates,
    encode_linkstates,
)
from tests.hyp import FUZZ, ROUNDTRIP

_NAME = "zenoh-router-links.json"
#: The project's copy when it has one, else the shared reference copy.
LINKS_FILE = next(
    (
        p
        for p in (
            Path(__file__).resolve().parents[1] / "vectors" / _NAME,
            Path(__file__).resolve().parents[3] / "shared" / "reference" / "vectors" / _NAME,
        )
        if p.exists()
    ),
    Path(_NAME),
)


def captured_bodies() -> list[tuple[str, str, bytes]]:
    """(scenario, direction, body) of every LINKSTATE OAM in the router-link captures."""
    if not LINKS_FILE.exists():
        return []
    doc = json.loads(LINKS_FILE.read_text())
    out = []
    for sc in doc["scenarios"]:
        readers: dict[tuple[int, str], BatchReader] = {}
        for rec in sc["records"]:
            reader = readers.setdefault((rec["conn"], rec["dir"]), BatchReader())
            for batch in reader.feed(bytes.fromhex(rec["hex"])):
                for tm in decode_batch(batch):
                    if not isinstance(tm, Frame):
                        continue
                    for m in tm.messages:
                        if isinstance(m, NetworkOam) and m.oam_id == OAM_LINKSTATE:
                            assert isinstance(m.body, bytes)
                            out.append((sc["name"], rec["dir"], m.body))
    return out


CAPTURED = captured_bodies()
needs_captures = pytest.mark.skipif(not CAPTURED, reason="router-link captures not available")


# --- golden vectors ----------------------------------------------------------------------------


@needs_captures
def test_captures_hold_linkstates() -> None:
    # 3 scenarios: 4 + 9 + 4 LINKSTATE bodies
    assert len(CAPTURED) == 17


@needs_captures
@pytest.mark.parametrize("body", [b for _, _, b in CAPTURED], ids=lambda b: b.hex()[:16])
def test_captured_bodies_round_trip_exactly(body: bytes) -> None:
    states = decode_linkstates(body)
    assert encode_linkstates(states) == body


def test_decode_first_state_of_router_pair() -> None:
    # router A of router_pair (zid 5340ee5c...) to B at open: itself, then B (locators unknown)
    body = bytes.fromhex(
        "0207000210d384b0dd568a71717a55b1c75cee40530101137463702f3132372e302e302e313a3137303031"
        "010103010010c72261764707fe9b5cfb023fa040139d0100"
    )
    a = ZenohId.from_str("5340ee5cc7b1557a71718a56ddb084d3")
    b = ZenohId.from_str("9d1340a03f02fb5c9bfe0747766122c7")
    assert decode_linkstates(body) == [
        LinkState(0, 2, a, WhatAmI.ROUTER, ("tcp/127.0.0.1:17001",), (1,), None, False),
        LinkState(1, 0, b, WhatAmI.ROUTER, None, (), None, False),
    ]


def test_decode_update_without_zid() -> None:
    # router_line_AB, B after C joined: C by zid only, then B's own links (no zid: known index)
    body = bytes.fromhex("0203020001c301000600030101137463702f3132372e302e302e313a3137303032020201")
    c3 = ZenohId.from_str("c3")
    assert decode_linkstates(body) == [
        LinkState(2, 0, c3, WhatAmI.ROUTER, None, (), None, False),
        LinkState(0, 3, None, WhatAmI.ROUTER, ("tcp/127.0.0.1:17002",), (2, 1), None, False),
    ]


def test_peer_state_with_gateway_flag() -> None:
    # a 1.10.2 peer (d4) to its router (a1): itself, then the router marked as gateway (0x10)
    body = bytes.fromhex("0207000201d40201137463702f3132372e302e302e313a3539363037010113010001a10100")
    states = decode_linkstates(body)
    assert states[0] == LinkState(
        0, 2, ZenohId.from_str("d4"), WhatAmI.PEER, ("tcp/127.0.0.1:59607",), (1,), None, False
    )
    assert states[1] == LinkState(1, 0, ZenohId.from_str("a1"), WhatAmI.ROUTER, None, (), None, True)
    assert encode_linkstates(states) == body


def test_empty_list() -> None:
    assert decode_linkstates(b"\x00") == []
    assert encode_linkstates([]) == b"\x00"


def test_weights_follow_links_without_a_count() -> None:
    s = LinkState(3, 7, None, None, None, (1, 2), (0, 300), False)
    body = encode_linkstates([s])
    # count, options 0x08, psid, sn, nlinks 2, links 1 2, weights 0 and 300 (VLE ac 02)
    assert body == bytes.fromhex("01 08 03 07 02 01 02 00 ac02")
    assert decode_linkstates(body) == [s]


def test_encode_rejects_mismatched_weights() -> None:
    with pytest.raises(UsageError):
        encode_linkstates([LinkState(0, 0, None, None, None, (1, 2), (5,), False)])
    with pytest.raises(UsageError):
        encode_linkstates([LinkState(0, 0, None, None, None, (1,), (U16_MAX + 1,), False)])


# --- malformed input ----------------------------------------------------------------------------------

BAD = {
    "empty": "",
    "count without states": "01",
    "count over the bytes": "05 00000000",
    "count over the limit": "ffffffffffffffffff",
    "truncated vle": "01 80",
    "zid length 0": "01 01 00 00 00 00",
    "zid length 17": "01 01 00 00 11" + "01" * 17 + "00",
    "zid all zero": "01 01 00 00 02 0000 00",
    "zid truncated": "01 01 00 00 04 0102 00",
    "whatami 3": "01 02 00 00 03 00",
    "whatami 0": "01 02 00 00 00 00",
    "locator not utf-8": "01 04 00 00 01 02 ff2f 00",
    "locator without protocol": "01 04 00 00 01 04 2f616263 00",
    "locator without address": "01 04 00 00 01 04 7463702f 00",
    "locator without slash": "01 04 00 00 01 03 616263 00",
    "locators over the bytes": "01 04 00 00 09 00",
    "links over the bytes": "01 00 00 00 05 01",
    "links over the limit": "01 00 00 00 ffffffffffffffff7f",
    "weights missing": "01 08 00 00 02 01 02",
    "weight over u16": "01 08 00 00 01 01 808004",
    "trailing byte": "01 00 00 00 00 00",
    "two lists": "00 00",
}


@pytest.mark.parametrize("hexbody", list(BAD.values()), ids=list(BAD))
def test_malformed_raises_typed_error(hexbody: str) -> None:
    with pytest.raises(LinkStateDecodeError) as exc:
        decode_linkstates(bytes.fromhex(hexbody))
    assert isinstance(exc.value, DecodeError) and isinstance(exc.value, PeerError)


def test_limits() -> None:
    n = MAX_LINKSTATES + 1
    body = bytearray()
    from pyzenoh.codec.primitives import write_vle

    write_vle(body, n)
    body += b"\x00\x00\x00\x00" * n
    with pytest.raises(LinkStateDecodeError, match="limit"):
        decode_linkstates(bytes(body))
    ok = encode_linkstates([LinkState(0, 0, None, None, None, tuple(range(MAX_LINKS)), None, False)])
    assert len(decode_linkstates(ok)[0].links) == MAX_LINKS
    too_many = encode_linkstates([LinkState(0, 0, None, None, None, tuple(range(MAX_LINKS + 1)), None, False)])
    with pytest.raises(LinkStateDecodeError, match="limit"):
        decode_linkstates(too_many)
    locs = tuple(f"tcp/h:{i}" for i in range(MAX_LOCATORS + 1))
    with pytest.raises(LinkStateDecodeError, match="limit"):
        decode_linkstates(encode_linkstates([LinkState(0, 0, None, None, locs, (), None, False)]))
    long = "tcp/" + "x" * MAX_LOCATOR_LEN
    with pytest.raises(LinkStateDecodeError):
        decode_linkstates(encode_linkstates([LinkState(0, 0, None, None, (long,), (), None, False)]))


@needs_captures
def test_every_truncation_of_a_capture_raises() -> None:
    body = max((b for _, _, b in CAPTURED), key=len)
    for n in range(len(body)):
        with pytest.raises(LinkStateDecodeError):
            decode_linkstates(body[:n])


def test_unknown_option_bits_are_ignored() -> None:
    # as zenoh does: options is a VLE and only the five known bits mean anything
    assert decode_linkstates(bytes.fromhex("01 20 00 00 00")) == [LinkState(0, 0, None, None, None, (), None, False)]


# --- properties ------------------------------------------------------------------------------

zids = st.integers(1, (1 << 128) - 1).map(ZenohId)
u64s = st.integers(0, U64_MAX)
locator = st.builds(
    lambda proto, addr: f"{proto}/{addr}",
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=8).filter(lambda s: "/" not in s),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=24),
)


@st.composite
def linkstates(draw: st.DrawFn) -> LinkState:
    links = tuple(draw(st.lists(u64s, max_size=6)))
    weights = draw(st.none() | st.lists(st.integers(0, U16_MAX), min_size=len(links), max_size=len(links)).map(tuple))
    return LinkState(
        psid=draw(u64s),
        sn=draw(u64s),
        zid=draw(st.none() | zids),
        whatami=draw(st.none() | st.sampled_from(list(WhatAmI))),
        locators=draw(st.none() | st.lists(locator, max_size=3).map(tuple)),
        links=links,
        weights=weights,
        gateway=draw(st.booleans()),
    )


@pytest.mark.slow
@ROUNDTRIP
@given(st.lists(linkstates(), max_size=5))
def test_round_trip(states: list[LinkState]) -> None:
    body = encode_linkstates(states)
    assert decode_linkstates(body) == states
    assert encode_linkstates(decode_linkstates(body)) == body


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_the_typed_error(data: bytes) -> None:
    try:
        states = decode_linkstates(data)
    except LinkStateDecodeError:
        return
    assert isinstance(states, list)


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_mutated_captures_raise_only_the_typed_error(data: st.DataObject) -> None:
    bodies = [b for _, _, b in CAPTURED] or [
        encode_linkstates([LinkState(0, 1, ZenohId(5), WhatAmI.ROUTER, ("tcp/a:1",), (1,), None, False)])
    ]
    body = bytearray(data.draw(st.sampled_from(bodies)))
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        pos = data.draw(st.integers(0, len(body)))
        if op == "insert" or not body:
            body[pos:pos] = data.draw(st.binary(min_size=1, max_size=3))
        elif op == "flip":
            body[min(pos, len(body) - 1)] ^= data.draw(st.integers(1, 255))
        else:
            del body[min(pos, len(body) - 1)]
    try:
        decode_linkstates(bytes(body))
    except LinkStateDecodeError:
        pass
