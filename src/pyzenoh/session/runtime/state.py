"""The fields of a :class:`~pyzenoh.session.runtime.Runtime`, and the plumbing its parts
share: the link configuration, the background tasks it spawns (dials, reconnections),
and whether a peer dials the peers gossip tells it of (decided at construction).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyzenoh.codec import NetworkOam, WhatAmI, ZenohId
from pyzenoh.errors import PyZenohError
from pyzenoh.session import types as t
from pyzenoh.session.config import Config
from pyzenoh.session.core import SessionCore
from pyzenoh.session.handlers import Dispatcher
from pyzenoh.transport.link import Established, LinkClosed, LinkConfig
from pyzenoh.transport.tcp import TcpLink, TcpListener

log = logging.getLogger(__name__)


#: Operations handed over by other threads and not yet run; a sync publisher blocks
#: (or drops, with congestion control Drop) past this many.
MAX_PENDING_OPS = 10_000
DEFAULT_ENDPOINT = "tcp/127.0.0.1:7447"
#: What a failed dial raises.
DIAL_ERRORS = (OSError, ConnectionError, TimeoutError, PyZenohError)


class RuntimeBase:
    """The fields and constructor of a :class:`~pyzenoh.session.runtime.Runtime`, and what
    its parts share."""

    def __init__(self, config: Config, loop: asyncio.AbstractEventLoop, *, threaded: bool) -> None:
        self.config = config
        self.loop = loop
        self.threaded = threaded
        zid_text = config.zid
        self.zid = ZenohId.from_str(zid_text) if zid_text else ZenohId.random(os.urandom(16))
        self.whatami = WhatAmI.CLIENT if config.mode == "client" else WhatAmI.PEER
        self.core = SessionCore(self.zid, self.whatami, self, query_timeout_s=config.queries_default_timeout_s)
        #: the first open link and its peer (flow control; a client's only link)
        self.link: TcpLink | None = None
        self.peer: Established | None = None
        #: every open link and its peer, by face id
        self.links: dict[int, TcpLink] = {}
        self.peers: dict[int, Established] = {}
        self._fids: dict[TcpLink, int] = {}
        self._next_fid = 1
        self._cur_link: TcpLink | None = None  # the link whose face the core has selected
        self._listeners: list[TcpListener] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._link_cfg: LinkConfig | None = None
        #: a client's endpoints, tried in turn when its link is lost
        self._client_eps: list[str] = []
        self._reconnecting = False
        #: peers learnt of by gossip being dialled (their zids)
        self._gossip_dials: set[ZenohId] = set()
        self._autoconnect = self.whatami is WhatAmI.PEER and _gossip_autoconnect(config)
        self.closed = False
        self.close_event: LinkClosed | None = None
        self.loop_thread: int | None = None if threaded else threading.get_ident()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_when = 0.0
        self._pumping = False
        self._pump_scheduled = False
        self._blocked: set[int] = set()
        self._ops: deque[Callable[[], None]] = deque()
        self._wakeup = False
        self._ops_room = threading.Event()
        self._dispatcher: Dispatcher | None = None

    def _link_cfg_(self) -> LinkConfig:
        assert self._link_cfg is not None
        return self._link_cfg

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("session connector failed: %s", task.exception())

    if TYPE_CHECKING:
        # Defined by a part that the caller's part does not build on (links.py calls
        # gossip.py, pump.py calls handoff.py), or by the last part while the constructor
        # already hands the runtime to the core as its t.Responder (responder.py).
        def in_loop(self, fn: Callable[[], None]) -> None: ...
        def _on_gossip(self, msg: NetworkOam) -> None: ...
        def query_reply(
            self,
            qref: int,
            key: str,
            body: Any,
            priority: t.Priority | None,
            express: bool,
            block: bool,
        ) -> None: ...
        def query_finalize(self, qref: int) -> None: ...


def _gossip_autoconnect(config: Config) -> bool:
    """``scouting/gossip``: enabled (default) and peers among this peer's autoconnect
    kinds (zenoh's default for a peer: router, peer, client)."""
    if config.get("scouting/gossip/enabled") is False:
        return False
    kinds = config.get("scouting/gossip/autoconnect")
    if isinstance(kinds, dict):
        kinds = kinds.get("peer")
    return kinds is None or "peer" in kinds
