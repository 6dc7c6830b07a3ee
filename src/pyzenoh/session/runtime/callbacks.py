"""The thread that runs a session's sync callbacks: started on first use, so a session
whose handlers are all channels (or the asyncio API's) never starts one."""

from __future__ import annotations

from pyzenoh.codec import ZenohId
from pyzenoh.session.handlers import Dispatcher


class Callbacks:
    """The session's callback thread, if started (its own)."""

    def __init__(self, zid: ZenohId) -> None:
        self._name = f"pyzenoh-callbacks-{zid}"
        #: the thread, once started (closing stops it; None: nothing to stop)
        self.started: Dispatcher | None = None

    def dispatcher(self) -> Dispatcher:
        """The thread that runs this session's sync callbacks (started on first use)."""
        if self.started is None:
            self.started = Dispatcher(self._name)
        return self.started
