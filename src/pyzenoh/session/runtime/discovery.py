"""Multicast scouting for a peer, as zenoh's peers do it: the peer answers SCOUTs with
its listeners' locators, and scouts (on zenoh's schedule) for the kinds in
``scouting/multicast/autoconnect``. The nodes it finds are dialled by the gossip rule
(:class:`~.gossip.GossipDials`): once, and between two peers by the greater zid only.
So two peers opened with zenoh's default configuration find each other. All of it runs
in one task of the session, whose end closes the sockets.
"""

from __future__ import annotations

import asyncio
import logging

from pyzenoh.codec import WhatAmI
from pyzenoh.router.scouting import start_responder
from pyzenoh.scouting.core import ScoutingSettings, parse_scouting
from pyzenoh.scouting.udp import UdpScouter
from pyzenoh.session.runtime.gossip import GossipDials
from pyzenoh.session.runtime.state import RuntimeState

log = logging.getLogger(__name__)

#: How long after its HELLO a scouted node is dialled (it may dial us first).
SCOUTED_DIAL_DELAY_S = 0.1


class MulticastDiscovery:
    """A peer's SCOUT responder and scouter; what it finds goes to ``dials``."""

    def __init__(self, s: RuntimeState, dials: GossipDials) -> None:
        self.s = s
        self.dials = dials

    def start(self) -> None:
        """Begin, when ``scouting/multicast/enabled`` (zenoh's default); idempotent per open."""
        cfg = self.s.config
        settings = parse_scouting(cfg.to_dict(), "peer")
        if settings.enabled:
            self.s.spawn(self._run(settings))

    def _locators(self) -> list[str]:
        return [str(ep) for lst in self.s.listeners for ep in lst.endpoints]

    async def _run(self, settings: ScoutingSettings) -> None:
        s = self.s
        responder = await start_responder(settings, s.zid, WhatAmI.PEER, self._locators) if settings.listen else None
        try:
            if settings.autoconnect:
                await self._scout(settings)
            await asyncio.Future()  # answer SCOUTs until the session closes (cancels this)
        finally:
            if responder is not None:
                responder.close()

    async def _scout(self, settings: ScoutingSettings) -> None:
        try:
            scouter = UdpScouter(
                settings.autoconnect, address=settings.address, interface=settings.interface, ttl=settings.ttl
            )
            await scouter.start()
        except OSError as exc:
            log.warning("multicast scouting unavailable: %s", exc)
            return
        try:
            async for hello in scouter:
                if not self.s.closed:
                    self.dials.consider(hello.zid, hello.whatami, hello.locators, SCOUTED_DIAL_DELAY_S)
        finally:
            scouter.close()
