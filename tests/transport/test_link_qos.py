"""transport/link/qos.py: the QoS and QoSLink extensions (zenoh's ext/qos.rs layout and
negotiation), an endpoint's prio/rel metadata, and a handshake carrying them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.errors import DecodeError, UsageError
from pyzenoh.transport.endpoint import Endpoint, config_for_kind
from pyzenoh.transport.link import Established, LinkConfig
from pyzenoh.transport.link.qos import LinkQos, from_exts, from_metadata, negotiate
from tests.transport.test_link import pair

ranges = st.tuples(st.integers(0, 7), st.integers(0, 7)).map(lambda r: (min(r), max(r)))
qoses = st.builds(LinkQos, st.none() | ranges, st.none() | st.booleans())


@given(qoses)
def test_extensions_round_trip(q: LinkQos) -> None:
    assert from_exts(*q.exts()) == q


def test_zenoh_layout() -> None:
    # prio=1-3;rel=1: tag 0b110, start << 3, end << 11, reliable bit 19
    assert LinkQos((1, 3), True).to_u64() == 0b110 | 1 << 3 | 3 << 11 | 1 << 19
    assert LinkQos().to_u64() == 0b001 and LinkQos().exts() == (True, None)
    assert from_exts(False, None) is None and from_exts(False, 0) is None
    with pytest.raises(DecodeError):
        from_exts(True, 0b001)  # both extensions at once
    with pytest.raises(DecodeError):
        from_exts(False, 0b010 | 5 << 3 | 2 << 11)  # a range that ends before it starts


def test_negotiation() -> None:
    # the acceptor takes the opener's range within its own; the opener keeps its own
    assert negotiate(LinkQos((0, 7)), LinkQos((1, 3)), acceptor=True) == LinkQos((1, 3))
    assert negotiate(LinkQos((1, 3)), LinkQos((1, 3)), acceptor=False) == LinkQos((1, 3))
    assert negotiate(LinkQos(), LinkQos((2, 2), False), acceptor=True) == LinkQos((2, 2), False)
    assert negotiate(None, LinkQos((1, 3)), acceptor=True) is None  # QoS off on one side: off
    with pytest.raises(DecodeError):
        negotiate(LinkQos((1, 3)), LinkQos((0, 7)), acceptor=True)
    with pytest.raises(DecodeError):
        negotiate(LinkQos(None, True), LinkQos(None, False), acceptor=False)


def test_endpoint_metadata() -> None:
    ep = Endpoint.parse("tcp/127.0.0.1:7447?prio=6-7;rel=0")
    assert str(ep) == "tcp/127.0.0.1:7447" and ep == Endpoint.parse("tcp/127.0.0.1:7447")
    assert from_metadata(dict(ep.metadata), str(ep)) == LinkQos((6, 7), False)
    assert from_metadata({"prio": "4"}, "x") == LinkQos((4, 4))
    for bad in ({"prio": "3-1"}, {"prio": "8"}, {"prio": "x"}, {"rel": "2"}):
        with pytest.raises(UsageError):
            from_metadata(bad, "x")
    config = config_for_kind(ep, LinkConfig(ZenohId.from_str("a1"), WhatAmI.PEER))
    assert config.link_qos == LinkQos((6, 7), False)


def test_a_handshake_negotiates_the_range() -> None:
    opener = LinkConfig(ZenohId.from_str("c1"), WhatAmI.PEER, link_qos=LinkQos((1, 3), True))
    _, _, ea, eb = pair(opener=opener)
    for events in (ea, eb):
        est = next(e for e in events if isinstance(e, Established))
        assert est.qos and est.link_qos == LinkQos((1, 3), True)
    # QoS off on the opener: none at all
    _, _, ea, eb = pair(opener=LinkConfig(ZenohId.from_str("c1"), WhatAmI.PEER, qos=False))
    assert next(e for e in eb if isinstance(e, Established)).link_qos is None
