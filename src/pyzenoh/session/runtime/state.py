"""What a :class:`~pyzenoh.session.runtime.Runtime`'s parts share: :class:`RuntimeState`,
the session's identity, its open links and their peers, its listeners, the background
tasks it spawns (dials, reconnections), whether it is closed; and the plumbing every part
uses: running a function in the loop, spawning a task, the link configuration.

What only one part touches lives in that part (the pump's timer and paused flows, the
hand-off's queue, the dialler's client endpoints, gossip's dials).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from pyzenoh.codec import WhatAmI, ZenohId
from pyzenoh.errors import CloseReason, PyZenohError
from pyzenoh.session.config import Config
from pyzenoh.session.runtime.intercepting import LinkPolicies
from pyzenoh.session.runtime.multicast import GroupLink, SessionGroup
from pyzenoh.transport.link import Established, LinkClosed, LinkConfig
from pyzenoh.transport.listener import TcpListener
from pyzenoh.transport.tcp import TcpLink

log = logging.getLogger(__name__)


#: Operations handed over by other threads and not yet run; a sync publisher blocks
#: (or drops, with congestion control Drop) past this many.
MAX_PENDING_OPS = 10_000
DEFAULT_ENDPOINT = "tcp/127.0.0.1:7447"
#: What a failed dial raises.
DIAL_ERRORS = (OSError, ConnectionError, TimeoutError, PyZenohError)


class RuntimeState:
    """The fields of a session's event-loop side that more than one part reads or writes.

    ``links`` and ``peers`` are only changed by :class:`~.links.LinkFaces`; ``closed`` is
    set by opening (a failed open) and closing.
    """

    def __init__(self, config: Config, loop: asyncio.AbstractEventLoop, *, threaded: bool) -> None:
        self.config = config
        self.loop = loop
        self.threaded = threaded
        zid_text = config.zid
        self.zid = ZenohId.from_str(zid_text) if zid_text else ZenohId.random(os.urandom(16))
        self.whatami = WhatAmI.CLIENT if config.mode == "client" else WhatAmI.PEER
        #: the first open link and its peer (flow control; a client's only link)
        self.link: TcpLink | None = None
        self.peer: Established | None = None
        #: every open link and its peer, by face id (a multicast group's face has a link
        #: and no peer: its members are in ``groups``)
        self.links: dict[int, TcpLink | GroupLink] = {}
        self.peers: dict[int, Established] = {}
        #: a session's links after its first (``links[fid]``), by face id: zenoh's
        #: multilink (transport/unicast/max_links above 1)
        self.extra_links: dict[int, list[TcpLink]] = {}
        self.groups: list[SessionGroup] = []
        #: the interceptors per link (None: none configured), see :mod:`.intercepting`
        self.policies: LinkPolicies | None = None
        #: the last link close seen
        self.close_event: LinkClosed | None = None
        self.listeners: list[TcpListener] = []
        self.tasks: set[asyncio.Task[None]] = set()
        self._link_config: LinkConfig | None = None
        self.closed = False
        #: the loop's thread: known now when the caller runs the loop, else once it opens
        self.loop_thread: int | None = None if threaded else threading.get_ident()

    # --- the loop ------------------------------------------------------------------------------

    def on_loop(self) -> bool:
        return threading.get_ident() == self.loop_thread

    def in_loop(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the loop: now if already there, else soon (thread-safe)."""
        if self.on_loop():
            fn()
        else:
            try:
                self.loop.call_soon_threadsafe(fn)
            except RuntimeError:  # the loop is closed: the session is over
                pass

    def spawn(self, coro: Any) -> None:
        """A background task of this session, cancelled when it closes."""
        task: asyncio.Task[None] = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("session connector failed: %s", task.exception())

    async def cancel_tasks(self) -> None:
        """Cancel the background tasks (not the one calling) and let them end."""
        tasks = [task for task in self.tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)  # let them end before the loop stops

    # --- links ---------------------------------------------------------------------------------

    @property
    def link_config(self) -> LinkConfig:
        """The handshake's parameters, set when the session opens."""
        assert self._link_config is not None
        return self._link_config

    @link_config.setter
    def link_config(self, value: LinkConfig) -> None:
        self._link_config = value

    def peer_connected(self, zid: ZenohId) -> bool:
        return any(p.zid == zid for p in self.peers.values())

    def all_links(self) -> list[TcpLink | GroupLink]:
        """Every open link, a session's extra links included."""
        out = list(self.links.values())
        for extra in self.extra_links.values():
            out += extra
        return out

    def joins(self, zid: ZenohId, multilink: bytes | None) -> int | None:
        """The face a new link of ``zid`` joins (its session proved the same MultiLink
        key and has fewer than max_links links), if any."""
        if multilink is None:
            return None
        for fid, peer in self.peers.items():
            if peer.zid == zid and peer.multilink == multilink:
                if 1 + len(self.extra_links.get(fid, ())) < self.config.max_links:
                    return fid
                return None
        return None

    def refusal(self, zid: ZenohId, multilink: bytes | None) -> int | None:
        """Why a link with ``zid`` may not open (the acceptor's gate): one session per
        node, with up to max_links links when it proves its MultiLink key."""
        if self.peer_connected(zid) and self.joins(zid, multilink) is None:
            return CloseReason.MAX_LINKS
        return None
