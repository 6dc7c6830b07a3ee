"""The router region: links to router neighbours (the mesh rules are :mod:`pyzenoh.routing.routers`).

A router face's entities are not its own: they belong to the routers that own them, held
by the pseudo-face NORTH, and its declarations, LINKSTATE, opening and closing go to the
mesh rules. Messages from it carry the NodeId of the router where they entered the mesh,
and requests to it carry one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from typing_extensions import override

from pyzenoh.codec import Declare, ZenohId
from pyzenoh.routing.network import Network
from pyzenoh.routing.regions import Region
from pyzenoh.routing.types import UnsupportedFace

if TYPE_CHECKING:
    from pyzenoh.routing.faces import Face


class Routers(Region):
    """Router neighbour faces (and NORTH, which stands for remote routers' entities)."""

    __slots__ = ("_added", "_declare", "_linkstate", "_net", "_removed", "_zid")

    def __init__(
        self,
        zid: ZenohId,
        net: Network,
        added: Callable[[Face], None],
        removed: Callable[[Face], None],
        linkstate: Callable[[Face, bytes], None],
        declare: Callable[[Face, Declare], None],
    ) -> None:
        """``net`` is the router graph; the callables are the mesh rules for a router face
        opening, closing, sending LINKSTATE and DECLARE."""
        self._zid = zid
        self._net = net
        self._added = added
        self._removed = removed
        self._linkstate = linkstate
        self._declare = declare

    @override
    def face_added(self, f: Face) -> None:
        if f.zid == self._zid:
            raise UnsupportedFace("a router with our own zid")
        self._added(f)

    @override
    def face_removed(self, f: Face) -> None:
        self._removed(f)

    @override
    def on_linkstate(self, f: Face, body: bytes) -> bool:
        self._linkstate(f, body)
        return True

    @override
    def on_declare(self, f: Face, msg: Declare) -> None:
        self._declare(f, msg)

    @override
    def wants_every_keyexpr(self) -> bool:
        return True  # routers declare every prefix to each other (checked on the wire)

    @override
    def links_routers(self) -> bool:
        return True

    @override
    def source_index(self, f: Face, node_id: int | None) -> int | None:
        # The NodeId, mapped to our numbering (0, omitted: the neighbour itself).
        return self._net.local_index_of_psid(f.fid, node_id or 0)

    @override
    def request_node(self, node: int | None) -> int | None:
        return node
