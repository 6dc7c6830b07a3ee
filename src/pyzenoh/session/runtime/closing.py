"""Closing a session: connectors stopped, the core closed and its last messages sent,
every link closed with CLOSE, listeners shut, the callback thread let go; or, in tests,
connections dropped without CLOSE as by a crashed process.
"""

from __future__ import annotations

import asyncio

from pyzenoh.errors import CloseReason
from pyzenoh.session.runtime.pump import Pump


class Closing(Pump):
    """A session closed (or its connections dropped)."""

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)  # let them end before the loop stops
        self.core.close()
        self.pump()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for lst in self._listeners:
            lst.server.close()
        links = list(self.links.values())
        if links:
            await asyncio.gather(*(link.aclose(CloseReason.GENERIC) for link in links), return_exceptions=True)
        for lst in self._listeners:
            await lst.close(close_links=True)  # links accepted but not yet established
        self._listeners.clear()
        if self._dispatcher is not None:
            # never wait here: a callback may be the one closing the session
            self._dispatcher.stop(0)
        self._ops_room.set()

    def abort(self) -> None:
        """Drop the connections without CLOSE (tests: a crashed process)."""
        for link in list(self.links.values()):
            link.abort()
