"""The peer region's gossip: what a router tells the peers connected to it.

Like zenohd, the router does not route between two of its peers: it tells each peer the
others' locators (LINKSTATE, single-hop gossip) and the peers connect to each other
directly. With gossip off (``scouting/gossip/enabled: false``) a new peer still hears the
zids of the peers already there, without their locators, and nothing is passed on later:
peers connected only through the router do not meet -- zenohd's behaviour too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyzenoh.codec import NetworkOam, WhatAmI
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE
from pyzenoh.routing.faces import Face, RoutingTables
from pyzenoh.routing.network import Network


class PeerRegion(RoutingTables):
    """Gossip with the peers connected to this router."""

    _gossip: Network

    def _init_peers(self, locators: Callable[[], Sequence[str]]) -> None:
        self._gossip = Network(
            self.zid,
            WhatAmI.ROUTER,
            full_linkstate=False,
            gossip=self.config.gossip,
            gossip_multihop=False,
            locators=locators,
            gateway=True,
            max_nodes=self.config.max_routers,
        )

    def _peer_linkstate(self, link: int, body: bytes) -> None:
        if link in self._faces and self._faces[link] is not self._closing:
            self._emit(link, NetworkOam(OAM_LINKSTATE, body, QOS_DECLARE), QOS_DECLARE)

    def _peer_face_added(self, f: Face) -> None:
        for link, body in self._gossip.add_link(f.fid, f.zid, f.whatami):
            self._peer_linkstate(link, body)

    def _peer_face_removed(self, f: Face) -> None:
        _, sends = self._gossip.remove_link(f.fid)
        for link, body in sends:
            self._peer_linkstate(link, body)

    def _on_peer_linkstate(self, f: Face, body: bytes) -> None:
        _, sends = self._gossip.link_states(f.fid, body)
        for link, out in sends:
            self._peer_linkstate(link, out)
