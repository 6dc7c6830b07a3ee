"""Scouting for the router daemon: zenohd's ``scouting`` keys and the SCOUT responder.

A router (zenohd's defaults) answers SCOUTs that ask for routers on 224.0.0.224:7446 and
never sends HELLOs on its own. Dialling what it scouts (``autoconnect``) is
:mod:`pyzenoh.router.discovery`.
Recognised keys::

    scouting: {
      timeout: 3000, delay: 500,
      multicast: { enabled: true, address: "224.0.0.224:7446", interface: "auto",
                   ttl: 1, listen: true },          // listen may be {router: .., ..}
    },
    // optional, pyzenoh only: also answer SCOUTs sent straight to this UDP address
    // (use a port other than the group's: a wildcard socket on it would see the group too)
    pyzenoh: { scouting: { unicast: "0.0.0.0:7448" } }

Wiring (daemon)::

    scouting = scouting_settings(tree)                           # when reading the config
    self._scouting = await start_responder(scouting, self.zid, WhatAmI.ROUTER,
        lambda: [str(ep) for lst in self.listeners for ep in lst.endpoints])  # start()
    self._scouting.close()                                       # stop()
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyzenoh.codec.primitives import WhatAmI, ZenohId
from pyzenoh.scouting.core import ScoutingSettings, parse_scouting
from pyzenoh.scouting.udp import UdpResponder, start_udp_responder

__all__ = ["Responder", "ScoutingSettings", "scouting_settings", "start_responder"]

log = logging.getLogger(__name__)


class Responder:
    """A running scouting responder (or a no-op when scouting is off); close() stops it."""

    def __init__(self, udp: UdpResponder | None) -> None:
        self.udp = udp

    @property
    def running(self) -> bool:
        return self.udp is not None and not self.udp.closed

    def close(self) -> None:
        if self.udp is not None:
            self.udp.close()


def scouting_settings(tree: Mapping[str, Any]) -> ScoutingSettings:
    """zenohd's scouting keys for a router; bad values raise UsageError."""
    return parse_scouting(tree, "router")


async def start_responder(
    settings: ScoutingSettings,
    zid: ZenohId,
    whatami: WhatAmI,
    locators: Callable[[], Sequence[str]],
    *,
    required: bool = False,
) -> Responder:
    """Start answering SCOUTs as ``settings`` say; ``locators()`` returns the listen
    endpoints (wildcard addresses are expanded per SCOUT). Call it, and ``close()``, in
    the router's event loop.

    Returns an idle Responder when scouting or listening is off, and also (with a
    warning) when the sockets cannot be opened, e.g. no interface can join the group:
    a router is still useful without scouting. ``required=True`` raises OSError instead,
    as zenohd refuses to start.
    """
    multicast = settings.enabled and settings.listen
    if not multicast and settings.unicast is None:
        return Responder(None)
    try:
        udp = await start_udp_responder(
            zid,
            whatami,
            locators,
            address=settings.address,
            interface=settings.interface,
            ttl=settings.ttl,
            multicast=multicast,
            unicast=settings.unicast,
        )
    except OSError as exc:
        if required:
            raise
        log.warning(
            "scouting disabled: cannot answer SCOUTs on %s (interface %s): %s",
            settings.address,
            settings.interface,
            exc,
        )
        return Responder(None)
    return Responder(udp)
