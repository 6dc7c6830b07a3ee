"""Zenoh scouting: find nodes with SCOUT/HELLO over UDP multicast (or unicast).

* :mod:`.core`: sans-IO (settings, which interfaces, what a HELLO lists, the responder's
  and the scouter's decisions); no sockets, no clock.
* :mod:`.udp`: the asyncio glue (:func:`start_udp_responder`, :func:`scout`).

The messages themselves are in :mod:`pyzenoh.codec.scouting`.
"""

from pyzenoh.codec.scouting import Hello, Scout, ScoutingDecodeError, WhatAmIMatcher
from pyzenoh.scouting.core import (
    Interface,
    ResponderCore,
    ScouterCore,
    ScoutingSettings,
    hello_locators,
    multicast_interfaces,
    parse_scouting,
)
from pyzenoh.scouting.udp import (
    UdpResponder,
    UdpScouter,
    list_interfaces,
    scout,
    start_udp_responder,
)

__all__ = [
    "Hello",
    "Interface",
    "ResponderCore",
    "Scout",
    "ScouterCore",
    "ScoutingDecodeError",
    "ScoutingSettings",
    "UdpResponder",
    "UdpScouter",
    "WhatAmIMatcher",
    "hello_locators",
    "list_interfaces",
    "multicast_interfaces",
    "parse_scouting",
    "scout",
    "start_udp_responder",
]
