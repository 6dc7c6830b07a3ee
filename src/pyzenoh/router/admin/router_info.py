"""``@/<zid>/router``: the router's own description (locators, metadata, sessions with
their links, region and weight, version, zid), as zenohd's JSON has it.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pyzenoh.codec import WhatAmI

#: The zenoh release whose router this one stands in for (the ``version`` prefix).
ZENOH_VERSION = "1.10.2"

#: zenohd's default link weight, shown for router sessions.
DEFAULT_LINK_WEIGHT = 100

NORTH = "north"
SOUTH_PEER = "south:0:peer"


def admin_root(zid: str) -> str:
    return f"@/{zid}/router"


def version_string() -> str:
    """zenohd says ``v1.10.2-<commit> built with rustc ...``; keep the ``v1.10.2`` prefix."""
    from pyzenoh import __version__

    python = f"{platform.python_implementation()} {platform.python_version()}"
    return f"v{ZENOH_VERSION}-pyzenoh-{__version__} built with {python}"


def region_of(whatami: WhatAmI) -> str:
    if whatami == WhatAmI.ROUTER:
        return NORTH
    return f"south:0:{whatami}"


def locator(address: tuple[Any, ...] | None, protocol: str = "tcp") -> str:
    """A socket address as a zenoh locator (``tcp/1.2.3.4:5``, ``udp/[::1]:5``)."""
    if not address:
        return ""
    host, port = str(address[0]), address[1]
    return f"{protocol}/[{host}]:{port}" if ":" in host else f"{protocol}/{host}:{port}"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One transport of the router, for ``@/<zid>/router``."""

    zid: str
    whatami: WhatAmI
    links: tuple[tuple[str, str], ...] = ()  # (src: our end, dst: the remote end)
    weight: int | None = None  # routers only
    group: str | None = None  # a multicast group's member: the group's locator

    def to_json(self) -> dict[str, Any]:
        if self.group is not None:  # zenohd's shape for a group member (measured)
            return {
                "group": self.group,
                "links": [{"dst": dst, "src": src} for src, dst in self.links],
                "peer": self.zid,
                "whatami": str(self.whatami),
            }
        weight = None
        if self.whatami == WhatAmI.ROUTER:
            actual = DEFAULT_LINK_WEIGHT if self.weight is None else self.weight
            weight = {"actual_weight": actual, "dst_weight": None, "src_weight": None}
        return {
            "links": [{"dst": dst, "src": src} for src, dst in self.links],
            "peer": self.zid,
            "region": region_of(self.whatami),
            "shm": False,  # pyzenoh never negotiates shared memory
            "weight": weight,
            "whatami": str(self.whatami),
        }


def router_info(
    zid: str,
    locators: Sequence[str],
    sessions: Iterable[SessionInfo],
    *,
    version: str | None = None,
    metadata: Any = None,
    plugins: Any = None,
) -> dict[str, Any]:
    return {
        "locators": list(locators),
        "metadata": metadata,
        "plugins": plugins,
        "sessions": [s.to_json() for s in sessions],
        "version": version_string() if version is None else version,
        "zid": zid,
    }


def dump_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """serde_json's compact form (zenohd's maps come out key-sorted, its structs do not)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys).encode()


def router_json(
    zid: str,
    locators: Sequence[str],
    sessions: Iterable[SessionInfo],
    *,
    version: str | None = None,
    metadata: Any = None,
    plugins: Any = None,
) -> bytes:
    info = router_info(zid, locators, sessions, version=version, metadata=metadata, plugins=plugins)
    return dump_json(info, sort_keys=True)
