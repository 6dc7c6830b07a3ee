"""Dialling: one attempt at an endpoint, each endpoint in turn, again after each wait of
the connect/retry backoff (its numbers: :mod:`pyzenoh.session.connector`); and a dialled
link that is lost dialled again, a client's endpoints or a peer's one, until the
session closes.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from pyzenoh.session.connector import RetryConf, retry_conf
from pyzenoh.session.runtime.links import LinkFaces
from pyzenoh.session.runtime.state import DIAL_ERRORS, RuntimeState
from pyzenoh.transport.dial import connect
from pyzenoh.transport.link import Event, LinkClosed
from pyzenoh.transport.tcp import TcpLink

log = logging.getLogger(__name__)


class Dialler:
    """Dials, retries, and redials of lost links: owns a client's endpoints and whether
    it is reconnecting; its links' events go to ``faces``; its retries run as the
    state's tasks."""

    def __init__(self, s: RuntimeState, faces: LinkFaces) -> None:
        self.s = s
        self.faces = faces
        #: a client's endpoints, tried in turn when its link is lost
        self.client_endpoints: list[str] = []
        self._reconnecting = False

    async def dial(self, ep: str) -> TcpLink:
        """One attempt at ``ep``; the link's face opens (Established) before it returns,
        and the link is dialled again if it is lost."""
        cfg = self.s.config
        on_event = functools.partial(self._on_dialled_event, ep)
        return await connect(
            ep, self.s.link_config, on_event, max_queue_bytes=cfg.max_queue_bytes, keep_raw=False, tls=cfg.tls
        )

    async def dial_once(self, ep: str) -> TcpLink:
        """One attempt at ``ep``, a link that is not dialled again once lost."""
        cfg = self.s.config
        return await connect(
            ep,
            self.s.link_config,
            self.faces.on_link_event,
            max_queue_bytes=cfg.max_queue_bytes,
            keep_raw=False,
            tls=cfg.tls,
        )

    async def try_all(self, eps: list[str], errors: list[str]) -> bool:
        """Each endpoint in turn until one opens."""
        for ep in eps:
            try:
                await self.dial(ep)
                return True
            except DIAL_ERRORS as exc:
                errors.append(f"{ep}: {exc or type(exc).__name__}")
        return False

    async def retry(self, eps: list[str], conf: RetryConf, errors: list[str] | None = None) -> bool:
        """Try ``eps`` now, then after each wait of the backoff, until one opens (True)
        or the backoff says never again (False)."""
        period = conf.period()
        while not self.s.closed:
            round_errors: list[str] = []
            if await self.try_all(eps, round_errors):
                return True
            if errors is not None:
                errors[:] = round_errors
            log.debug("could not connect (%s); retrying", "; ".join(round_errors))
            wait = period.next_s()
            if wait is None:
                return False
            await asyncio.sleep(wait)
        return False

    def background(self, ep: str, conf: RetryConf) -> asyncio.Event:
        """Retry ``ep`` in a task; the event is set once it opens."""
        connected = asyncio.Event()

        async def run() -> None:
            if await self.retry([ep], conf):
                connected.set()

        self.s.spawn(run())
        return connected

    async def _reconnect(self, eps: list[str], client: bool) -> None:
        conf = retry_conf(self.s.config, eps[0])
        try:
            if await self.retry(eps, conf):
                peer = self.s.peer
                log.info("session link re-established (%s)", peer.zid if peer else "?")
        finally:
            if client:
                self._reconnecting = False

    def _on_dialled_event(self, endpoint: str, link: TcpLink, ev: Event) -> None:
        """Events of a link this session dialled: when it is lost, it is dialled again."""
        if isinstance(ev, LinkClosed):
            was_open = self.faces.is_open(link)
            self.faces.link_closed(link, ev, dialled=True)
            if was_open and not self.s.closed:
                self._link_lost(endpoint)
            return
        self.faces.on_link_event(link, ev)

    def _link_lost(self, endpoint: str) -> None:
        """A dialled link is gone: a client dials its endpoints again, a peer that one,
        at once and then with the connect/retry backoff, until the session closes."""
        s = self.s
        if s.config.mode == "client":
            if self._reconnecting or s.links:
                return
            self._reconnecting = True
            s.spawn(self._reconnect(self.client_endpoints or [endpoint], client=True))
        else:
            s.spawn(self._reconnect([endpoint], client=False))
