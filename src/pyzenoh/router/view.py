"""What the admin space reads of a router: :class:`RouterView`, read only.

The admin space answers from the router's state but never changes it; it sees the router
through this view (faces as read-only mappings, the core through its query methods), so
that what it can touch is written down in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyzenoh.codec import NetworkMessage, ZenohId
from pyzenoh.router.state import DaemonFace, DaemonFaces, RouterStats
from pyzenoh.routing import RoutingCore, RoutingStats
from pyzenoh.routing.access_control import AccessControl, FaceAcl
from pyzenoh.routing.faces import FaceView

if TYPE_CHECKING:
    from pyzenoh.router.config import RouterConfig


@dataclass(frozen=True, slots=True)
class GroupView:
    """A multicast group the router joined, for reading: its locator (``udp/<group>:<port>``),
    the router's own sending end, its members (zid, the member's locator) and counters."""

    locator: str
    own: str
    members: tuple[tuple[str, str], ...]
    counters: Mapping[str, int]


class RouterView:
    """A router's state, for reading: its id and config, its faces, counters and tables."""

    __slots__ = ("_acl", "_core", "_faces", "_groups", "_locators", "config", "stats", "zid")

    def __init__(
        self,
        zid: ZenohId,
        config: RouterConfig,
        stats: RouterStats,
        faces: DaemonFaces,
        core: RoutingCore,
        locators: Callable[[], list[str]],
        access_control: AccessControl | None,
        groups: Callable[[], Sequence[GroupView]] = tuple,
    ) -> None:
        self.zid = zid
        self._groups = groups
        self.config = config
        self.stats = stats
        self._faces = faces
        self._core = core
        self._locators = locators
        self._acl = access_control

    def faces(self) -> Mapping[int, DaemonFace]:
        """The daemon's faces: links and local faces (the admin space, plugins, bridges)."""
        return self._faces.view()

    def core_faces(self) -> Mapping[int, FaceView]:
        """The routing core's faces, with what each declared."""
        return self._core.faces_view()

    def key_of(self, face_id: int, message: NetworkMessage, *, incoming: bool) -> str | None:
        """The full key a message received from or sent to ``face_id`` names."""
        return self._core.key_of(face_id, message, incoming=incoming)

    def face_acl(self, face_id: int) -> FaceAcl | None:
        return self._core.face_acl(face_id)

    @property
    def routing_stats(self) -> RoutingStats:
        return self._core.stats

    def router_entities(self, kind: str) -> dict[str, list[ZenohId]]:
        return self._core.router_entities(kind)

    def linkstate_dot(self) -> str:
        """The router graph in Graphviz text."""
        return self._core.network.dot()

    def route_successors(self) -> list[tuple[ZenohId, ZenohId, ZenohId]]:
        return list(self._core.network.route_successors())

    def locators(self) -> list[str]:
        return self._locators()

    def groups(self) -> Sequence[GroupView]:
        """The multicast groups joined (:mod:`pyzenoh.router.multicast`)."""
        return self._groups()

    def access_control(self) -> dict[str, Any] | None:
        """Access control's counters and rules (None: it is off)."""
        return None if self._acl is None else self._acl.snapshot()
