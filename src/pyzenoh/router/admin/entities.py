"""``@/<zid>/router/{subscriber,publisher,queryable,querier,token}/<key>``: who holds a
key, as ``{"routers", "peers", "clients"}``, the router listing itself once per south
region holding it, as zenohd does; admin-space entities are never listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pyzenoh.codec import WhatAmI
from pyzenoh.router.admin.router_info import admin_root

ENTITY_KINDS = ("subscriber", "publisher", "queryable", "querier", "token")
#: Kinds that routers propagate to each other (publishers and queriers are only interests).
MESH_KINDS = frozenset({"subscriber", "queryable", "token"})

Sources = dict[str, list[str]]


def _is_admin_key(key: str, router: str) -> bool:
    root = admin_root(router)
    return key in (f"{root}/**", f"{root}/config/**")


def entity_sources(
    self_zid: str,
    local: Iterable[tuple[str, WhatAmI, str]],
    remote: Mapping[str, Iterable[str]] | None = None,
    *,
    north_source: bool = True,
) -> dict[str, Sources]:
    """Key -> ``{"routers", "peers", "clients"}`` for one entity kind.

    ``local``: ``(key, whatami, zid)`` of this router's clients and peers (a face counts
    once per key however many entities it has there); ``remote``: key -> routers of the
    mesh holding it. With ``north_source`` (subscribers, queryables, tokens) the router
    adds itself to ``routers`` once per region (clients, peers) that holds the key, as
    zenohd does; the other routers come first.
    """
    out: dict[str, Sources] = {}

    def entry(key: str) -> Sources:
        return out.setdefault(key, {"routers": [], "peers": [], "clients": []})

    for key, routers in (remote or {}).items():
        others = [r for r in routers if r != self_zid and not _is_admin_key(key, r)]
        if others:
            entry(key)["routers"].extend(others)
    holders = list(local)
    for whatami, field_name in ((WhatAmI.CLIENT, "clients"), (WhatAmI.PEER, "peers")):
        per_key: dict[str, list[str]] = {}
        for key, kind, zid in holders:
            if kind == whatami:
                zids = per_key.setdefault(key, [])
                if zid not in zids:
                    zids.append(zid)
        for key, zids in per_key.items():
            e = entry(key)
            e[field_name].extend(zids)
            if north_source:
                e["routers"].append(self_zid)
    return dict(sorted(out.items()))
