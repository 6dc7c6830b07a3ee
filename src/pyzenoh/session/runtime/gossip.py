"""Gossip autoconnect: a peer dials the peers that the link states it receives name
with locators, as zenoh's peers do; only the node with the greater zid dials, so two
pyzenoh peers connect once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from pyzenoh.codec import NetworkOam, WhatAmI, ZenohId
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.session.config import Config
from pyzenoh.session.runtime.dialling import Dialler
from pyzenoh.session.runtime.state import DIAL_ERRORS, RuntimeState

log = logging.getLogger(__name__)


#: A peer learnt of by gossip is dialled this long after (if it has not connected to us
#: by then: real peers, "always" autoconnecting, usually have).
GOSSIP_DIAL_DELAY_S = 1.0


def gossip_autoconnect(config: Config) -> bool:
    """``scouting/gossip``: enabled (default) and peers among this peer's autoconnect
    kinds (zenoh's default for a peer: router, peer, client)."""
    if config.get("scouting/gossip/enabled") is False:
        return False
    kinds = config.get("scouting/gossip/autoconnect")
    if isinstance(kinds, dict):
        kinds = kinds.get("peer")
    return kinds is None or "peer" in kinds


class GossipDials:
    """Peers learnt of by gossip, dialled once each (the dials under way are its own);
    reads who is connected from the state's peers."""

    def __init__(self, s: RuntimeState, dialler: Dialler) -> None:
        self.s = s
        self.dialler = dialler
        #: peers learnt of by gossip being dialled (their zids)
        self._dialling: set[ZenohId] = set()

    def on_gossip(self, msg: NetworkOam) -> None:
        """A link state from a router or peer: peers it names with locators are dialled
        (zenoh's gossip autoconnect), by the node with the greater zid only, so two
        pyzenoh peers dial each other once; a link that comes second is refused."""
        body = msg.body
        if msg.oam_id != OAM_LINKSTATE or not isinstance(body, bytes | bytearray):
            return
        from pyzenoh.routing.linkstate import LinkStateDecodeError, decode_linkstates

        try:
            states = decode_linkstates(bytes(body))
        except LinkStateDecodeError as exc:
            log.debug("undecodable link state: %s", exc)
            return
        for st in states:
            if st.zid is not None and st.whatami is WhatAmI.PEER:
                self.consider(st.zid, st.whatami, st.locators or ())

    def consider(
        self, zid: ZenohId, whatami: WhatAmI, locators: Sequence[str], delay: float = GOSSIP_DIAL_DELAY_S
    ) -> None:
        """A node learnt of (by gossip or by scouting) is dialled, once, unless it is
        connected already; of two peers only the one with the greater zid dials."""
        s = self.s
        usable = [loc for loc in locators if loc.startswith(("tcp/", "tls/", "ws/"))]
        if (
            zid == s.zid
            or not usable
            or (whatami is WhatAmI.PEER and zid.value >= s.zid.value)
            or zid in self._dialling
            or s.peer_connected(zid)
        ):
            return
        self._dialling.add(zid)
        s.spawn(self._dial(zid, usable, delay))

    async def _dial(self, zid: ZenohId, locators: list[str], delay: float) -> None:
        try:
            await asyncio.sleep(delay)
            for loc in locators:
                if self.s.closed or self.s.peer_connected(zid):
                    return
                try:
                    await self.dialler.dial_once(loc.split("?", 1)[0])
                    log.info("connected to %s at %s", zid, loc)
                    return
                except DIAL_ERRORS as exc:
                    log.debug("%s at %s: %s", zid, loc, exc)
        finally:
            self._dialling.discard(zid)
