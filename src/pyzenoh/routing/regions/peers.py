"""The peer region: peer sessions, and the gossip a router tells the peers connected to it.

Like zenohd, the router does not route between two of its peers: it tells each peer the
others' locators (LINKSTATE, single-hop gossip) and the peers connect to each other
directly. With gossip off (``scouting/gossip/enabled: false``) a new peer still hears the
zids of the peers already there, without their locators, and nothing is passed on later:
peers connected only through the router do not meet -- zenohd's behaviour too.

What else differs from clients (checked on the wire against a 1.10.2 router): two peers
never hear of each other's entities through the router, a peer is not told about its own
tokens, its interests do not aggregate, and INTEREST Final forgets what the interest alone
had declared to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from typing_extensions import override

from pyzenoh.codec import Declare, NetworkOam, WhatAmI, ZenohId
from pyzenoh.codec.network import OAM_LINKSTATE, QOS_DECLARE
from pyzenoh.routing.network import Network
from pyzenoh.routing.regions import REGION_PEERS, Region
from pyzenoh.routing.types import RoutingConfig

if TYPE_CHECKING:
    from pyzenoh.routing.faces import Face


class Peers(Region):
    """Peer faces and the gossip network of this router's peers."""

    __slots__ = ("_can_send", "_declare", "_emit", "gossip")

    group = REGION_PEERS

    def __init__(
        self,
        zid: ZenohId,
        config: RoutingConfig,
        locators: Callable[[], Sequence[str]],
        can_send: Callable[[int], bool],
        emit: Callable[[int, NetworkOam, int], None],
        declare: Callable[[Face, Declare], None],
    ) -> None:
        """``can_send(link)``: the face is open and not closing; ``emit`` sends to it;
        ``declare`` is the south's declaration rules."""
        self._can_send = can_send
        self._emit = emit
        self._declare = declare
        self.gossip = Network(
            zid,
            WhatAmI.ROUTER,
            full_linkstate=False,
            gossip=config.gossip,
            gossip_multihop=False,
            locators=locators,
            gateway=True,
            max_nodes=config.max_routers,
        )

    def _send_linkstate(self, link: int, body: bytes) -> None:
        if self._can_send(link):
            self._emit(link, NetworkOam(OAM_LINKSTATE, body, QOS_DECLARE), QOS_DECLARE)

    @override
    def face_added(self, f: Face) -> None:
        for link, body in self.gossip.add_link(f.fid, f.zid, f.whatami):
            self._send_linkstate(link, body)

    @override
    def face_removed(self, f: Face) -> None:
        _, sends = self.gossip.remove_link(f.fid)
        for link, body in sends:
            self._send_linkstate(link, body)

    @override
    def on_linkstate(self, f: Face, body: bytes) -> bool:
        _, sends = self.gossip.link_states(f.fid, body)
        for link, out in sends:
            self._send_linkstate(link, out)
        return True

    @override
    def on_declare(self, f: Face, msg: Declare) -> None:
        self._declare(f, msg)

    @override
    def sees(self, src: Region) -> bool:
        # Like zenohd, never between two peers: they meet directly through gossip.
        return src is not self

    @override
    def echoes_own_tokens(self) -> bool:
        return False

    @override
    def aggregates_interests(self) -> bool:
        return False

    @override
    def keeps_interest_declarations(self) -> bool:
        return False
