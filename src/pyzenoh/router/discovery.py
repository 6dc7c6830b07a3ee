"""A router's multicast autoconnect, as zenohd's: with ``scouting/multicast/autoconnect``
listing kinds for a router (zenohd's default lists none), the router scouts for them on
zenoh's schedule and dials each node it finds that it has no session with, by the first
of its locators that connects (zenoh's ``Runtime::autoconnect_all`` and ``connect_peer``).
``autoconnect_strategy`` "greater-zid" leaves the dial to the node with the greater zid.

Whom to dial is :meth:`ScoutingSettings.should_autoconnect`; this part only runs the
scouter and the dials. A node dialled is not dialled again while that dial or its link
lasts; once the link is gone, the node's next HELLO dials it again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pyzenoh.codec import Hello, ZenohId
from pyzenoh.errors import UsageError
from pyzenoh.scouting.core import ScoutingSettings
from pyzenoh.scouting.udp import UdpScouter
from pyzenoh.transport.endpoint import dialable

log = logging.getLogger(__name__)

#: Errors a dial of one scouted locator can end with; the next locator is tried.
DIAL_ERRORS = (OSError, ConnectionError, TimeoutError, UsageError)


class RouterDiscovery:
    """The router's scouter and the dials of what it finds.

    ``connected(zid)``: whether a session with ``zid`` is open; ``dial(locator)`` opens a
    link (raising one of :data:`DIAL_ERRORS`) and returns a future that ends with it.
    """

    def __init__(
        self,
        settings: ScoutingSettings,
        zid: ZenohId,
        connected: Callable[[ZenohId], bool],
        dial: Callable[[str], Awaitable[asyncio.Future[Any]]],
    ) -> None:
        self.settings = settings
        self.zid = zid
        self._connected = connected
        self._dial = dial
        self._dialling: dict[ZenohId, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None
        self.dials = 0  # dials started, for the logs and tests

    @property
    def enabled(self) -> bool:
        return self.settings.enabled and bool(self.settings.autoconnect)

    def start(self) -> None:
        """Begin scouting, when autoconnect lists a kind; call in the router's loop."""
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._scout())

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        for task in self._dialling.values():
            task.cancel()
        self._dialling.clear()

    async def aclose(self) -> None:
        """:meth:`close`, then wait for what it cancelled: their cleanups (the scouter's
        socket) run in this loop, not when the collector finalizes them after it closed."""
        tasks = [t for t in (self._task, *self._dialling.values()) if t is not None]
        self.close()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _scout(self) -> None:
        st = self.settings
        try:
            scouter = UdpScouter(st.autoconnect, address=st.address, interface=st.interface, ttl=st.ttl)
            await scouter.start()
        except OSError as exc:
            log.warning("multicast autoconnect unavailable: %s", exc)
            return
        try:
            async for hello in scouter:
                self.on_hello(hello)
        finally:
            scouter.close()

    def on_hello(self, hello: Hello) -> None:
        """A scouted node: dialled unless the rule says no, a dial is under way, or a
        session with it is open."""
        zid = hello.zid
        if not self.settings.should_autoconnect(self.zid, zid, hello.whatami):
            return
        if zid in self._dialling or self._connected(zid):
            return
        locators = dialable(hello.locators)
        if not locators:
            log.debug("scouted %s has no locator of a link kind this router dials: %s", zid, hello.locators)
            return
        self.dials += 1
        task = asyncio.get_running_loop().create_task(self._dial_first(zid, locators))
        self._dialling[zid] = task
        task.add_done_callback(functools.partial(self._dialled, zid))

    def _dialled(self, zid: ZenohId, _task: asyncio.Task[None]) -> None:
        self._dialling.pop(zid, None)

    async def _dial_first(self, zid: ZenohId, locators: list[str]) -> None:
        for locator in locators:
            try:
                closed = await self._dial(locator)
            except DIAL_ERRORS as exc:
                log.debug("autoconnect to %s via %s failed: %s", zid, locator, exc)
                continue
            log.info("autoconnect: dialled scouted %s via %s", zid, locator)
            await closed  # while the link lasts, this node is not dialled again
            return
        log.warning("Unable to connect to any locator of scouted peer %s: %s", zid, locators)
