"""The runtime's parts as it composes them: which session dials what gossip names, and
which gossiped peers it dials (no link is opened here: the dials are cancelled during
their first wait)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pyzenoh.codec import NetworkOam, WhatAmI, ZenohId
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.routing.linkstate import LinkState, encode_linkstates
from pyzenoh.session.config import Config
from pyzenoh.session.runtime import Runtime

OWN_ZID = "80"


def runtime(tree: dict[str, Any], loop: asyncio.AbstractEventLoop) -> Runtime:
    return Runtime(Config.from_dict({"id": OWN_ZID, **tree}), loop, threaded=False)


@pytest.mark.parametrize(
    ("tree", "dials"),
    [
        ({"mode": "client"}, False),
        ({"mode": "peer"}, True),
        ({"mode": "peer", "scouting": {"gossip": {"enabled": False}}}, False),
        ({"mode": "peer", "scouting": {"gossip": {"autoconnect": {"peer": ["router"]}}}}, False),
        ({"mode": "peer", "scouting": {"gossip": {"autoconnect": ["router", "peer"]}}}, True),
    ],
)
def test_only_a_peer_autoconnecting_to_peers_dials_what_gossip_names(tree: dict[str, Any], dials: bool) -> None:
    loop = asyncio.new_event_loop()
    try:
        rt = runtime(tree, loop)
        assert (rt.gossip is not None) is dials
        assert (rt.faces.on_gossip is not None) is dials
    finally:
        loop.close()


def linkstate(zid: str, whatami: WhatAmI, locators: tuple[str, ...] | None) -> LinkState:
    return LinkState(0, 1, ZenohId.from_str(zid), whatami, locators, (), None, False)


def test_gossip_dials_each_lesser_peer_with_locators_once() -> None:
    loop = asyncio.new_event_loop()
    try:
        rt = runtime({"mode": "peer"}, loop)
        gossip = rt.gossip
        assert gossip is not None
        states = [
            linkstate("10", WhatAmI.PEER, ("tcp/127.0.0.1:1",)),  # dialled
            linkstate("90", WhatAmI.PEER, ("tcp/127.0.0.1:2",)),  # the greater zid dials
            linkstate("11", WhatAmI.ROUTER, ("tcp/127.0.0.1:3",)),  # not a peer
            linkstate("12", WhatAmI.PEER, None),  # nowhere to dial
        ]
        msg = NetworkOam(OAM_LINKSTATE, encode_linkstates(states))
        gossip.on_gossip(msg)
        gossip.on_gossip(msg)  # named again while its dial waits: not dialled twice
        assert gossip._dialling == {ZenohId.from_str("10")}
        assert len(rt.state.tasks) == 1
        loop.run_until_complete(rt.state.cancel_tasks())
        assert not gossip._dialling and not rt.state.tasks
    finally:
        loop.close()
