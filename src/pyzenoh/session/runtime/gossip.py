"""Gossip autoconnect: a peer dials the peers that the link states it receives name
with locators, as zenoh's peers do; only the node with the greater zid dials, so two
pyzenoh peers connect once.
"""

from __future__ import annotations

import asyncio
import logging

from typing_extensions import override

from pyzenoh.codec import NetworkOam, WhatAmI, ZenohId
from pyzenoh.codec.network import OAM_LINKSTATE
from pyzenoh.session.runtime.links import Links
from pyzenoh.session.runtime.state import DIAL_ERRORS
from pyzenoh.transport.tcp import connect

log = logging.getLogger(__name__)


#: A peer learnt of by gossip is dialled this long after (if it has not connected to us
#: by then: real peers, "always" autoconnecting, usually have).
GOSSIP_DIAL_DELAY_S = 1.0


class Gossip(Links):
    """Peers learnt of by gossip, dialled."""

    @override
    def _on_gossip(self, msg: NetworkOam) -> None:
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
            zid = st.zid
            if (
                zid is None
                or st.whatami is not WhatAmI.PEER
                or not st.locators
                or zid.value >= self.zid.value
                or zid in self._gossip_dials
                or any(p.zid == zid for p in self.peers.values())
            ):
                continue
            self._gossip_dials.add(zid)
            self._spawn(self._dial_gossiped(zid, [loc for loc in st.locators if loc.startswith(("tcp/", "tls/"))]))

    async def _dial_gossiped(self, zid: ZenohId, locators: list[str]) -> None:
        try:
            await asyncio.sleep(GOSSIP_DIAL_DELAY_S)
            for loc in locators:
                if self.closed or any(p.zid == zid for p in self.peers.values()):
                    return
                try:
                    await connect(
                        loc.split("?", 1)[0],
                        self._link_cfg_(),
                        self._on_link_event,
                        max_queue_bytes=self.config.max_queue_bytes,
                        keep_raw=False,
                        tls=self.config.tls,
                    )
                    log.info("connected to gossiped peer %s at %s", zid, loc)
                    return
                except DIAL_ERRORS as exc:
                    log.debug("gossiped peer %s at %s: %s", zid, loc, exc)
        finally:
            self._gossip_dials.discard(zid)
