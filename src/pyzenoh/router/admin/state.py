"""The admin space's fields and counters, shared by its parts: :mod:`.answers` (what it
answers) and :mod:`.face` (the local face that receives queries and replies).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyzenoh.router.admin.router_info import admin_root
from pyzenoh.router.key_ids import KeyIds

if TYPE_CHECKING:
    from pyzenoh.router.daemon import RouterDaemon


@dataclass(slots=True)
class AdminStats:
    queries: int = 0
    replies: int = 0
    errors: int = 0
    unresolved: int = 0
    writes: int = 0
    writes_refused: int = 0


class AdminBase:
    """The fields and constructor of an :class:`~pyzenoh.router.admin.AdminSpace`."""

    def __init__(self, daemon: RouterDaemon) -> None:
        self.daemon = daemon
        self.face_id: int | None = None
        self.stats = AdminStats()
        self._key_ids = KeyIds()  # key ids the router declared to our face
        #: The plugin host (pyzenoh.plugins.PluginHost) when the router runs plugins.
        self.plugins: Any = None
        #: Called with (config path, JSON5 payload or None for a DELETE) on an admin-space
        #: write the router's permissions allow (set by the router app).
        self.on_config: Callable[[str, bytes | None], None] | None = None

    @property
    def zid(self) -> str:
        return str(self.daemon.zid)

    @property
    def root(self) -> str:
        return admin_root(self.zid)
