"""Closing a session: connectors stopped, the core closed and its last messages sent,
every link closed with CLOSE, listeners shut, the callback thread let go; or, in tests,
connections dropped without CLOSE as by a crashed process.
"""

from __future__ import annotations

import asyncio

from pyzenoh.errors import CloseReason
from pyzenoh.session.core import SessionCore
from pyzenoh.session.runtime.callbacks import Callbacks
from pyzenoh.session.runtime.handoff import Handoff
from pyzenoh.session.runtime.pump import CorePump
from pyzenoh.session.runtime.state import RuntimeState


class Closing:
    """A session closed (or its connections dropped): sets ``s.closed``, ends the state's
    tasks, links and listeners, the core (its last output through ``pump``), the
    callback thread, and lets go of threads waiting in ``handoff`` for room."""

    def __init__(
        self, s: RuntimeState, core: SessionCore, pump: CorePump, handoff: Handoff, callbacks: Callbacks
    ) -> None:
        self.s = s
        self.core = core
        self.pump = pump
        self.handoff = handoff
        self.callbacks = callbacks

    async def aclose(self) -> None:
        s = self.s
        if s.closed:
            return
        s.closed = True
        await s.cancel_tasks()
        self.core.close()
        self.pump.pump()
        self.pump.stop_timer()
        for lst in s.listeners:
            lst.server.close()
        links = s.all_links()
        if links:
            await asyncio.gather(*(link.aclose(CloseReason.GENERIC) for link in links), return_exceptions=True)
        for lst in s.listeners:
            await lst.close(close_links=True)  # links accepted but not yet established
        s.listeners.clear()
        dispatcher = self.callbacks.started
        if dispatcher is not None:
            # never wait here: a callback may be the one closing the session
            dispatcher.stop(0)
        self.handoff.release_waiters()

    def abort(self) -> None:
        """Drop the connections without CLOSE (tests: a crashed process)."""
        for link in self.s.all_links():
            link.abort()
