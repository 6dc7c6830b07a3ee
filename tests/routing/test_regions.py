"""The regions (routing/regions/): each face holds the region of its kind, and what the
rules ask of a region is what that kind does on the wire."""

from __future__ import annotations

import pytest

from pyzenoh.codec import NetworkOam, WhatAmI
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE
from pyzenoh.routing import RoutingCore
from pyzenoh.routing.regions import REGION_CLIENTS, REGION_PEERS
from pyzenoh.routing.regions.clients import Clients
from pyzenoh.routing.regions.peers import Peers
from pyzenoh.routing.regions.routers import Routers
from pyzenoh.routing.types import Dropped, UnsupportedFace
from tests.routing.support import CF, ROUTER_ZID, Harness, S, T, d_sub, d_token, interest, msgs, put

KINDS = [(WhatAmI.CLIENT, Clients), (WhatAmI.PEER, Peers), (WhatAmI.ROUTER, Routers)]


@pytest.mark.parametrize(("whatami", "region"), KINDS)
def test_each_face_holds_the_region_of_its_kind(whatami: WhatAmI, region: type) -> None:
    h = Harness()
    h.open(1, whatami=whatami)
    assert type(h.core._tables.faces[1].region) is region
    h.open(2, whatami=whatami)
    # one region object per kind and core, shared by its faces
    assert h.core._tables.faces[1].region is h.core._tables.faces[2].region


def test_what_each_region_answers() -> None:
    h = Harness()
    for fid, (whatami, _) in enumerate(KINDS, 1):
        h.open(fid, whatami=whatami)
    client, peer, router = (h.core._tables.faces[i].region for i in (1, 2, 3))
    assert [r.group for r in (client, peer, router)] == [REGION_CLIENTS, REGION_PEERS, REGION_CLIENTS]
    assert [r.sees(peer) for r in (client, peer, router)] == [True, False, True]
    assert [r.echoes_own_tokens() for r in (client, peer, router)] == [True, False, True]
    assert [r.aggregates_interests() for r in (client, peer, router)] == [True, False, True]
    assert [r.keeps_interest_declarations() for r in (client, peer, router)] == [True, False, True]
    assert [r.wants_every_keyexpr() for r in (client, peer, router)] == [False, False, True]
    assert [r.request_node(5) for r in (client, peer, router)] == [None, None, 5]


def test_a_router_with_our_own_zid_is_refused_and_leaves_nothing() -> None:
    core = RoutingCore(ROUTER_ZID)
    with pytest.raises(UnsupportedFace):
        core.add_face(1, ROUTER_ZID, WhatAmI.ROUTER, 0.0)
    assert core.faces() == [] and core.is_empty()


def test_a_clients_linkstate_is_dropped() -> None:
    h = Harness()
    events: list[object] = []
    h.core.observer = events.append
    h.open(1)
    oam = NetworkOam(OAM_LINKSTATE, b"", QOS_DECLARE)
    assert h.send(1, oam) == []
    assert [e.reason for e in events if isinstance(e, Dropped)] == ["unexpected OAM"]


def test_two_peers_do_not_hear_of_each_other_a_client_hears_of_both() -> None:
    h = Harness()
    h.open(1, whatami=WhatAmI.PEER)
    h.open(2, whatami=WhatAmI.PEER)
    h.open(3)
    for fid in (1, 2, 3):
        h.send(fid, interest(1, CF, S | T, None))
    out = h.send(1, d_sub(1, "a/b"), d_token(2, "a/t"))
    assert msgs(out, 2) == []
    assert len(msgs(out, 3)) == 2
    assert [s.face for s in h.send(3, put("a/b"))] == [1]
