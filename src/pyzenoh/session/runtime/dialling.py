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
from pyzenoh.session.runtime.links import Links
from pyzenoh.session.runtime.state import DIAL_ERRORS
from pyzenoh.transport.link import Event, LinkClosed
from pyzenoh.transport.tcp import TcpLink, connect

log = logging.getLogger(__name__)


class Dialling(Links):
    """Dials, retries, and redials of lost links."""

    async def _dial(self, ep: str) -> TcpLink:
        """One attempt at ``ep``; the link's face opens (Established) before it returns."""
        cfg = self.config
        on_event = functools.partial(self._on_dialled_event, ep)
        return await connect(
            ep, self._link_cfg_(), on_event, max_queue_bytes=cfg.max_queue_bytes, keep_raw=False, tls=cfg.tls
        )

    async def _try_all(self, eps: list[str], errors: list[str]) -> bool:
        """Each endpoint in turn until one opens."""
        for ep in eps:
            try:
                await self._dial(ep)
                return True
            except DIAL_ERRORS as exc:
                errors.append(f"{ep}: {exc or type(exc).__name__}")
        return False

    async def _retry(self, eps: list[str], conf: RetryConf, errors: list[str] | None = None) -> bool:
        """Try ``eps`` now, then after each wait of the backoff, until one opens (True)
        or the backoff says never again (False)."""
        period = conf.period()
        while not self.closed:
            round_errors: list[str] = []
            if await self._try_all(eps, round_errors):
                return True
            if errors is not None:
                errors[:] = round_errors
            log.debug("could not connect (%s); retrying", "; ".join(round_errors))
            wait = period.next_s()
            if wait is None:
                return False
            await asyncio.sleep(wait)
        return False

    def _background(self, ep: str, conf: RetryConf) -> asyncio.Event:
        connected = asyncio.Event()

        async def run() -> None:
            if await self._retry([ep], conf):
                connected.set()

        self._spawn(run())
        return connected

    async def _reconnect(self, eps: list[str], client: bool) -> None:
        conf = retry_conf(self.config, eps[0])
        try:
            if await self._retry(eps, conf):
                log.info("session link re-established (%s)", self.peer.zid if self.peer else "?")
        finally:
            if client:
                self._reconnecting = False

    def _on_dialled_event(self, endpoint: str, link: TcpLink, ev: Event) -> None:
        """Events of a link this session dialled: when it is lost, it is dialled again."""
        if ev.__class__ is LinkClosed:
            was_open = link in self._fids
            self._link_closed(link, ev, dialled=True)
            if was_open and not self.closed:
                self._link_lost(endpoint)
            return
        self._on_link_event(link, ev)

    def _link_lost(self, endpoint: str) -> None:
        """A dialled link is gone: a client dials its endpoints again, a peer that one,
        at once and then with the connect/retry backoff, until the session closes."""
        if self.config.mode == "client":
            if self._reconnecting or self.links:
                return
            self._reconnecting = True
            self._spawn(self._reconnect(self._client_eps or [endpoint], client=True))
        else:
            self._spawn(self._reconnect([endpoint], client=False))
